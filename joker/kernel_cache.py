"""A cache of kernel rows: computed once, kept while they are in use.

The exact solver needs, per block B, the block K_BB and, for the update of
f = K alpha, the kernel rows K[B', :] of the variables that moved
(docs/dual.md s.4). Without a cache both are recomputed every epoch, which
costs O(n |B| d) flops per block; the rows of the same variables are needed
again in every later epoch. LIBSVM keeps such rows in a cache of
``cache_size`` MB for the same reason (Chang and Lin, "LIBSVM: a library for
support vector machines", ACM TIST 2(3), 2011, s.5.1). Here the cache holds
up to ``slots`` rows of length n in one preallocated tensor; when all n rows
fit, the whole kernel matrix ends up cached after the first epoch and no
kernel entry is computed twice.
"""

from __future__ import annotations

import numpy as np
import torch

from .kernels import _gaussian_cancels, has_far_rows, kernel_block
from .sparse import is_sparse

try:  # pragma: no branch
    import numba
except ImportError:  # pragma: no cover - numba is a dependency; the torch gathers below work without it
    numba = None

__all__ = ["KernelRowCache", "warm_up"]


def _gather_block(storage, slots, idx, out):
    """out[i, j] = storage[slots[i], idx[j]]: K_BB read in place from the cached rows."""
    for i in range(slots.shape[0]):
        row = storage[slots[i]]
        for j in range(idx.shape[0]):
            out[i, j] = row[idx[j]]


def _add_rows(storage, slots, s, f):
    """f += storage[slots].T @ s for one output (s, f vectors): each cached row read once, no copy."""
    n = f.shape[0]
    for t in range(slots.shape[0]):
        w = s[t]
        if w != 0.0:
            row = storage[slots[t]]
            for j in range(n):
                f[j] += w * row[j]


_compiled = None


def _kernels():
    global _compiled
    if _compiled is None:
        jit = numba.njit(cache=True, nogil=True, fastmath=False)
        _compiled = (jit(_gather_block), jit(_add_rows))
    return _compiled


def _in_place(t):
    """Whether the compiled gathers can read ``t`` in place (Numba present, a CPU tensor)."""
    return numba is not None and t.device.type == "cpu"


def warm_up() -> None:
    """Load (or compile once per machine) the compiled gathers for float64 and float32 storage.

    About 0.1-0.3 s the first time in a process; benchmarks call it (through
    :func:`joker.block_cd.warm_up`) before the clock starts.
    """
    if numba is None:
        return
    gather, add = _kernels()
    i = np.zeros(1, dtype=np.int64)
    for dt in (np.float64, np.float32):
        st = np.ones((1, 1), dtype=dt)
        gather(st, i, i, np.empty((1, 1), dtype=dt))
        add(st, i, np.ones(1), np.zeros(1))


class KernelRowCache:
    """Rows K[i, :] of the training kernel, computed on first use and kept.

    Parameters
    ----------
    X : tensor of shape (n, d)
        Training inputs.
    sq : tensor of shape (n,)
        Their squared row norms.
    kernel : {"gaussian", "laplacian"}
    sigma : float
    offset : float
        Constant added to every entry (the intercept term s^2; 0: none).
    slots : int
        Number of rows held (1 <= slots; at most n are used).
    max_entries : int
        Largest kernel chunk computed at once (entries).

    Attributes
    ----------
    storage : tensor of shape (slots, n), dtype of X
        The cached rows (slot j holds row ``owner[j]``).
    nbytes : int
        Bytes of ``storage`` (allocated up front; pages are touched as
        rows are filled).
    hits, misses : int
        Rows served from the cache / computed.

    Notes
    -----
    Eviction: when a request needs more free slots than there are, the
    rows used least recently (by request) give theirs; rows of the
    current request are never evicted by it. When the cache holds all n
    rows, row i has slot i (``slot_of``, ``owner`` and ``stamp`` are then
    unused) and a request costs one look-up in a boolean mask.

    The solver's own requests (:meth:`add_product`, one per block step)
    follow a stricter rule once the solver marks its epochs
    (:meth:`begin_epoch`): a row used in the current or the previous
    epoch is not evicted, and a missing row that finds no other slot is
    computed, used and not kept. An epoch reads the active rows once each
    in a random order; when they outnumber the slots, least-recently-used
    eviction throws out each row just before its next use (measured on
    ijcnn1, 49,990 rows, squared hinge, C = 10, 2,684 slots: 5 % of the
    requested rows were hits), where keeping the rows of the last two
    epochs serves about slots / active rows of them (25 % there).
    """

    def __init__(self, X, sq, kernel, sigma, offset, slots, max_entries=2**20):
        n = X.shape[0]
        slots = int(min(slots, n))
        if slots < 1:
            raise ValueError(f"a kernel row cache needs at least 1 slot, got {slots}")
        self.X, self.sq, self.kernel, self.sigma, self.offset = X, sq, kernel, float(sigma), float(offset)
        self.max_entries = int(max_entries)
        self.storage = torch.empty((slots, n), dtype=X.dtype, device=X.device)
        self.nbytes = self.storage.numel() * self.storage.element_size()
        self.slot_of = torch.full((n,), -1, dtype=torch.long, device=X.device)
        self.owner = torch.full((slots,), -1, dtype=torch.long, device=X.device)
        self.stamp = torch.full((slots,), -1, dtype=torch.long, device=X.device)  # last use; -1 free
        self.clock = 0
        self.protect_from = 0  # rows last used at this clock or later are kept by add_product (begin_epoch)
        self._aug_cols = self._scratch = None  # Gaussian rows by one GEMM (_row_chunks), made on first use
        self._far = has_far_rows(sq, self.sigma)  # rows computed from differences (kernels.far_threshold)
        self._one_gemm = kernel == "gaussian" and not is_sparse(X) and not self._far and not (
            X.dtype != torch.float64 and _gaussian_cancels(X, X, sq, sq, self.sigma))
        self._epoch_start = 0
        self.hits = self.misses = 0
        # Whole kernel: row i lives in slot i, nothing is ever evicted, and locate
        # needs no LRU bookkeeping (a topk over the stamps per request otherwise).
        self.whole = slots == n
        if self.whole:
            self.filled = torch.zeros(n, dtype=torch.bool, device=X.device)

    @property
    def slots(self):
        """Number of rows the cache can hold."""
        return self.storage.shape[0]

    def begin_epoch(self):
        """Mark the start of a solver epoch: rows not used since the previous epoch began may be evicted."""
        self.protect_from, self._epoch_start = self._epoch_start, self.clock + 1

    def locate(self, idx):
        """Slots holding rows ``idx`` (computing the missing ones).

        Parameters
        ----------
        idx : long tensor of shape (k,), distinct, k <= ``slots``

        Returns
        -------
        long tensor of shape (k,): ``storage[result]`` = K[idx, :].

        Raises
        ------
        ValueError
            More rows requested at once than the cache holds.
        """
        if len(idx) > self.slots:
            raise ValueError(f"{len(idx)} kernel rows requested at once from a cache of {self.slots}")
        if self.whole:
            missing = idx[~self.filled[idx]]
            self.hits += len(idx) - len(missing)
            if len(missing):
                self.misses += len(missing)
                self.filled[missing] = True
                self._fill(missing, missing)
            return idx
        self.clock += 1
        where = self.slot_of[idx]
        missing = idx[where < 0]
        self.hits += len(idx) - len(missing)
        self.stamp[where[where >= 0]] = self.clock  # rows of this request are never evicted by it
        if len(missing):
            self.misses += len(missing)
            self._place(torch.topk(self.stamp, len(missing), largest=False).indices, missing)  # free first, then LRU
        return self.slot_of[idx]

    def _place(self, free, rows):
        """Compute ``rows`` into the slots ``free`` (their former rows leave the cache), stamped now."""
        old = self.owner[free]
        self.slot_of[old[old >= 0]] = -1
        self.owner[free] = rows
        self.slot_of[rows] = free
        self.stamp[free] = self.clock
        self._fill(free, rows)

    def _row_chunks(self, rows):
        """Yield (j, K[rows[j:j + step], :]) over chunks of at most ``max_entries`` entries.

        Each chunk is computed into one scratch buffer that lives as long as
        the cache (valid until the next chunk). A fresh (k, n) tensor per
        chunk is page-faulted in anew each time once it is larger than the
        allocator keeps for reuse, and the distance form made four more
        passes over it (the norm sums, clamp, scale, exp). For the Gaussian
        kernel the exponent comes out of one GEMM of augmented rows,
        ``[x / sigma, -||x||^2 / (2 sigma^2), 1] . [z / sigma, 1, -||z||^2 / (2 sigma^2)]``
        = -||x - z||^2 / (2 sigma^2) (the expansion of :func:`joker.kernels.sq_dists`,
        clamped at 0 the same way), then one exp in place. Measured on 128
        rows of 49,990 x 22 (float64): 55 ms by :func:`kernel_block`, 9 ms so.
        Low-precision inputs whose distances kernel_block computes from
        float64 rows (the Laplacian kernel, or cancellation) keep that route,
        and so do sparse inputs (:mod:`joker.sparse`: K[:, rows] from
        sparse-dense products, transposed).
        """
        n = self.X.shape[0]
        step = max(1, self.max_entries // max(1, n))
        X, inv_s = self.X, 1.0 / self.sigma
        if self._aug_cols is None and self._one_gemm:  # (n, d + 2): [z / sigma, 1, -||z||^2 / (2 sigma^2)]
            u = (-0.5 * inv_s * inv_s) * self.sq.to(X.dtype)
            self._aug_cols = torch.cat([X * inv_s, torch.ones_like(u)[:, None], u[:, None]], 1)
        for j in range(0, len(rows), step):
            r = rows[j:j + step]
            if self._aug_cols is not None:
                if self._scratch is None or self._scratch.shape[0] < len(r):  # grows to the largest chunk
                    rows_kept = max(len(r), min(step, self.slots))
                    self._scratch = torch.empty((rows_kept, n), dtype=X.dtype, device=X.device)
                out = self._scratch[:len(r)]
                a = self._aug_cols[r]  # the rows' own [x / sigma, u, 1]: the last two columns swapped
                torch.mm(torch.cat([a[:, :-2], a[:, -1:], a[:, -2:-1]], 1), self._aug_cols.T, out=out)
                out.clamp_(max=0.0).exp_()
            elif is_sparse(self.X):  # the sparse rows go first (sparse-dense product), then transposed
                out = kernel_block(self.X, self.X[r], self.kernel, self.sigma, self.sq, self.sq[r], far=self._far).T
            else:
                out = kernel_block(self.X[r], self.X, self.kernel, self.sigma, self.sq[r], self.sq, far=self._far)
            if self.offset:
                out += self.offset
            yield j, out

    def _fill(self, slots, rows):
        step = max(1, self.max_entries // max(1, self.X.shape[0]))
        for j, block in self._row_chunks(rows):
            self.storage[slots[j:j + step]] = block

    def cached(self, idx):
        """Whether every row of ``idx`` is already held (a request for them computes nothing)."""
        held = self.filled[idx] if self.whole else self.slot_of[idx] >= 0
        return bool(held.all())

    def rows(self, idx):
        """K[idx, :] as a (k, n) tensor (a copy gathered from the cache)."""
        return self.storage[self.locate(idx)]

    def block(self, idx):
        """K[idx][:, idx] as a (k, k) tensor, from the cached rows.

        On the CPU the entries are read in place by a compiled loop: the
        torch route (one flat int64 index of k^2 entries, then ``take``)
        took 11.8 ms at k = 1,024 of n = 2,000 rows where the loop takes 2.2.
        """
        slots = self.locate(idx)
        if _in_place(self.storage):
            out = torch.empty((len(idx), len(idx)), dtype=self.storage.dtype)
            _kernels()[0](self.storage.numpy(), slots.numpy(), idx.numpy(), out.numpy())
            return out
        return torch.take(self.storage, slots[:, None] * self.storage.shape[1] + idx[None, :])

    def add_product(self, idx, S, f):
        """f += K[idx, :].T @ S (K symmetric: K[:, idx] @ S), from the cached rows.

        Parameters
        ----------
        idx : long tensor of shape (k,), distinct (any k: rows beyond what
            the cache may hold are computed for this product only)
        S : tensor of shape (k, C)
        f : tensor of shape (n, C), updated in place

        Notes
        -----
        For one output on the CPU each row is read in place by a compiled
        loop; gathering the rows into a (k, n) copy first cost 4x as much
        (0.8 against 0.2 ms at k = 256, n = 2,000; 4.0 against 1.0 ms at
        k = 1,024). With several outputs the product goes to BLAS on the
        gathered rows, which the loop does not beat.
        """
        if self.whole:
            slots = self.locate(idx)
        else:
            slots, idx, S, rest, S_rest = self._locate_kept(idx, S)
            if len(rest):  # rows that found no evictable slot: computed for this product only
                step = max(1, self.max_entries // max(1, self.X.shape[0]))
                for j, block in self._row_chunks(rest):
                    f += block.T @ S_rest[j:j + step].to(block.dtype)
            if not len(idx):
                return
        if S.shape[1] == 1 and _in_place(self.storage) and f.is_contiguous():
            s = np.ascontiguousarray(S[:, 0].numpy(), dtype=np.float64)
            _kernels()[1](self.storage.numpy(), slots.numpy(), s, f.numpy().reshape(-1))
            return
        f += self.storage[slots].T @ S.to(self.storage.dtype)

    def _locate_kept(self, idx, S):
        """Slots of the rows of ``idx`` that are or become cached, under the epoch rule of the class notes.

        Returns (slots, idx_kept, S_kept, idx_rest, S_rest): the rest found no
        slot that may be evicted and are left to the caller.
        """
        self.clock += 1
        where = self.slot_of[idx]
        held = where >= 0
        self.hits += int(held.sum())
        self.stamp[where[held]] = self.clock
        missing = torch.nonzero(~held).flatten()
        if len(missing):
            self.misses += len(missing)
            cand = torch.topk(self.stamp, min(len(missing), self.slots), largest=False).indices  # free (-1), then LRU
            free = cand[self.stamp[cand] < self.protect_from]  # free slots pass too (protect_from >= 0)
            take, rest = missing[:len(free)], missing[len(free):]
            self._place(free, idx[take])
            keep = torch.cat([torch.nonzero(held).flatten(), take])
            return self.slot_of[idx[keep]], idx[keep], S[keep], idx[rest], S[rest]
        return where, idx, S, idx[:0], S[:0]
