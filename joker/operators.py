"""Kernel operators of the two Joker paths: exact kernel and random features.

Both keep what makes a block step cheap (docs/dual.md s.3-4):

- :class:`ExactKernelOperator` maintains f = K alpha (shape (n, C)); a block
  needs K_BB (|B|^2 d work) and the update f += K_{:,B'} s_{B'} costs
  O(n d |B'|) for the columns B' whose step is non-zero. Rows are produced
  in chunks of at most ``max_entries``; with ``cache_bytes`` > 0 they are
  kept in a :class:`joker.kernel_cache.KernelRowCache` and computed once
  (the whole n x n matrix when it fits).
- :class:`RFFOperator` maintains theta = Psi^T alpha (shape (M, C)); a block
  needs Psi_B = psi(X_B) (O(|B| M d)), (K alpha)_B = Psi_B theta and products
  with K_BB = Psi_B Psi_B^T in factored form (O(|B| M) each).
"""

from __future__ import annotations

import torch

from . import fast_cos
from .intraop import one_thread
from .kernel_cache import KernelRowCache
from .kernels import _gaussian_cancels, gaussian_factors, has_far_rows, kernel_block, kernel_matmul
from .sparse import is_sparse, sq_norms

__all__ = ["ExactKernelOperator", "RFFOperator"]


class _ExactBlock:
    dense = True  # K_BB is formed: the inner CG may gather its free block

    def __init__(self, op, B):
        self.op = op
        self.B = B
        self.f = op.f[B].to(op.X.dtype)
        self._K = None

    @property
    def K(self):
        cache = self.op.cache
        if self._K is None and cache is not None and cache.slots == self.op.X.shape[0]:
            self._K = cache.block(self.B)  # whole kernel cached: each row is computed once per solve
        if self._K is None:
            XB = self.op.X[self.B]
            sq = self.op.sq[self.B]
            self._K = kernel_block(XB, XB, self.op.kernel, self.op.sigma, sq, sq, self.op.cancels, self.op.far)
            if self.op.offset:
                self._K += self.op.offset
        return self._K

    def mv(self, P):
        return self.K @ P

    def gram(self, D=None):
        """K_BB + D (D: a b x b tensor or None; K_BB itself is shared: not to be modified)."""
        return self.K if D is None else self.K + D

    def f_plus(self, u):
        """(K alpha)_B + u (u: a tensor of shape (|B|, C))."""
        return self.f + u


class ExactKernelOperator:
    """Exact-kernel state for DBCD: the data and f = K alpha.

    Parameters
    ----------
    X : tensor of shape (n, d) or joker.sparse.SparseRows
        Training inputs (centring them first helps float32 distances);
        sparse rows give kernel rows by sparse-dense products, and the
        blocks' rows are gathered dense (|B| x d).
    kernel : {"gaussian", "laplacian"}
    sigma : float
    n_outputs : int
    max_entries : int
        Largest kernel chunk formed at once (entries); bounds memory at
        ``max_entries * itemsize`` bytes.
    offset : float
        Constant added to every kernel entry (k + s^2 for an intercept with
        ``intercept_scaling`` s; 0: none).
    cache_bytes : int
        Memory for a cache of kernel rows (:class:`joker.kernel_cache.KernelRowCache`),
        in bytes; it holds ``cache_bytes // (n * itemsize)`` rows, at most n.
        0 (or less than one row): no cache, every row is recomputed when
        needed. When all n rows fit, the blocks K_BB are read from the
        cached rows too; otherwise only the rows of moved variables are
        cached (:class:`joker.kernel_cache.KernelRowCache`'s eviction rule).

    Attributes
    ----------
    cache : KernelRowCache or None
    """

    default_min_cg_iter = 50
    maintains_decision = True  # f = K alpha is kept up to date: a certificate costs O(nC), no kernel pass

    def __init__(self, X, kernel, sigma, n_outputs, max_entries=2**20, offset=0.0, cache_bytes=0):
        self.X = X
        self.offset = float(offset)
        self.kernel = kernel
        self.sigma = float(sigma)
        self.sq = sq_norms(X)
        self.max_entries = int(max_entries)
        # row factors of the factored Gaussian products (None: not safe or not Gaussian)
        self.fac = gaussian_factors(self.sq, self.sigma) if kernel == "gaussian" else None
        # whether float32 Gaussian distances cancel (kernels.kernel_block), decided once from the largest row
        # norm for every block: a block then costs no host read
        self.cancels = (kernel == "gaussian" and X.dtype != torch.float64 and X.shape[0] > 0
                        and _gaussian_cancels(X, X, self.sq, self.sq, self.sigma))
        # rows whose expanded distances cancel even in float64 (kernels.far_threshold): computed from
        # differences; decided once, so that a block of an ordinary data set costs no host read
        self.far = has_far_rows(self.sq, self.sigma)
        # f accumulates in float64 even when the kernel is float32: the updates
        # then add no drift of their own, so f stays as exact as a fresh
        # float32 pass and no refresh pass is needed before a certificate.
        acc = torch.float64 if X.dtype in (torch.float16, torch.bfloat16, torch.float32) else X.dtype
        self.f = torch.zeros((X.shape[0], n_outputs), dtype=acc, device=X.device)
        slots = int(cache_bytes) // max(1, X.shape[0] * X.element_size())
        self.cache = (KernelRowCache(X, self.sq, kernel, self.sigma, self.offset, slots, self.max_entries)
                      if slots >= 1 else None)

    def _kmv(self, rows_X, rows_sq, cols, A):
        """K[all rows, cols] @ A, chunked over rows (rows_X is the whole training set)."""
        fac = self.fac
        out = kernel_matmul(rows_X, self.X[cols], A, self.kernel, self.sigma, rows_sq, self.sq[cols],
                            max_entries=self.max_entries, X_fac=fac, Z_fac=None if fac is None else fac[cols],
                            cancels=self.cancels, far=self.far)
        return out + self.offset * A.sum(0) if self.offset else out

    def reset(self, alpha):
        """Recompute f = K alpha from scratch (one pass over the kernel)."""
        self.f.zero_()
        nz = torch.nonzero(alpha.abs().sum(1) > 0).flatten()
        step = max(1, self.max_entries // max(1, self.X.shape[0]))
        for j in range(0, len(nz), step):
            cols = nz[j:j + step]
            self.f += self._kmv(self.X, self.sq, cols, alpha[cols].to(self.X.dtype))

    def block(self, B):
        """Block view: ``.f`` = (K alpha)_B, ``.mv(P)`` = K_BB @ P (lazy)."""
        return _ExactBlock(self, B)

    def begin_epoch(self):
        """The solver starts an epoch (the row cache's eviction rule, :meth:`KernelRowCache.begin_epoch`)."""
        if self.cache is not None:
            self.cache.begin_epoch()

    def commit(self, blk, S):
        """Apply alpha_B += S to the state: f += K_{:,B} S (non-zero rows only)."""
        nz = torch.nonzero(S.abs().sum(1) > 0).flatten()
        if len(nz) == 0:
            return
        cols = blk.B[nz]
        if self.cache is not None:  # (rows beyond what a partial cache may hold are computed for this product)
            # K symmetric: the columns K[:, cols] are the cached rows K[cols, :], transposed.
            # Once cached, gathering them and the product are memory-bound: one thread.
            with one_thread(self.X.device, self.cache.cached(cols)):
                self.cache.add_product(cols, S[nz], self.f)
            return
        self.f += self._kmv(self.X, self.sq, cols, S[nz])

    def commit_all(self, blk, S, alpha=1.0):
        """Apply alpha_B += alpha S with the kernel columns of every row of the block, moved or not.

        No selection of the moved rows, hence no host sync (the block step
        of :mod:`joker.direct_step`); the kernel-row cache is not used.
        """
        self.f.add_(self._kmv(self.X, self.sq, blk.B, S), alpha=alpha)

    @property
    def diag_bound(self):
        """An upper bound of k(x, x): 1 for the Gaussian and Laplacian kernels, plus the intercept offset."""
        return 1.0 + self.offset

    def row_work(self, b):
        """Flops of the kernel rows K_{:,B} of a block of size b (about 2 n d b)."""
        return 2 * self.X.shape[0] * self.X.shape[1] * b

    def product_work(self, b, C):
        """Flops of one product K_BB P, P of shape (b, C)."""
        return 2 * b * b * C

    def decision(self):
        """f = K alpha on the training set, shape (n, C)."""
        return self.f

    def sq_norms(self, alpha):
        """||theta_c||^2 = alpha_c^T K alpha_c of each output.

        Parameters
        ----------
        alpha : tensor of shape (n, C)
            The dual point whose f = K alpha this operator maintains.

        Returns
        -------
        float64 tensor of shape (C,)
        """
        return (alpha.to(self.f.dtype) * self.f).sum(0)


class _RFFBlock:
    """Block view of :class:`RFFOperator`: ``Psi`` = psi(X_B); ``f`` = Psi_B theta, formed at its first read.

    ``f`` (or ``f_plus``) is read before the block's step is committed
    (``commit_all`` updates theta in place); a caller that needs
    (K alpha)_B + u only (the direct step) gets it from one fused product.
    """

    def __init__(self, op, B):
        self.B = B
        self.Psi = op.features(op.X[B], scratch=True)
        self.PsiT = self.Psi.T  # one transposed view for every product of the block
        self._theta = op.theta
        self._f = None
        self._K = None

    @property
    def K(self):
        """K_BB = Psi_B Psi_B^T, shape (|B|, |B|), formed at its first read (b^2 M flops; the exact block solver's matrix)."""
        if self._K is None:
            self._K = self.Psi @ self.PsiT
        return self._K

    @property
    def f(self):
        """Psi_B theta, shape (|B|, C)."""
        if self._f is None:
            self._f = self.Psi @ self._theta
        return self._f

    def f_plus(self, u):
        """Psi_B theta + u (one ``addmm`` unless ``f`` was formed already)."""
        return self._f + u if self._f is not None else torch.addmm(u, self.Psi, self._theta)

    def mv(self, P):
        return self.Psi @ (self.PsiT @ P)

    def gram(self, D=None):
        """K_BB + D = Psi_B Psi_B^T + D, formed (b^2 M flops; D: a b x b tensor or None)."""
        return self.Psi @ self.PsiT if D is None else torch.addmm(D, self.Psi, self.PsiT)


class RFFOperator:
    """Random-feature state for inexact DBCD: theta = Psi^T alpha.

    Parameters
    ----------
    X : tensor of shape (n, d) or joker.sparse.SparseRows
        Centred inputs (sparse: psi from sparse X W^T products).
    fmap : joker.features.RandomFourierFeatures (fitted)
    n_outputs : int
    chunk : int
        Rows of psi(X) formed at once for full passes.
    intercept_scaling : float or None
        When given, a constant feature of this value is appended to psi
        (theta then has M + 1 rows, the last one the intercept weight).
    """

    default_min_cg_iter = 10
    maintains_decision = False  # only theta is kept: a certificate needs psi(X) theta, one feature pass

    def __init__(self, X, fmap, n_outputs, chunk=4096, intercept_scaling=None):
        self.X = X
        self.fmap = fmap
        self.chunk = int(chunk)
        self.centred = not is_sparse(X)  # sparse rows (and dense rows gathered from them) are not centred
        self.intercept_scaling = intercept_scaling
        M = fmap.n_components + (intercept_scaling is not None)
        self.theta = torch.zeros((M, n_outputs), dtype=X.dtype, device=X.device)
        self._scratch = None  # the reused feature buffer of blocks and passes (features(scratch=True))

    def features(self, Xc, scratch=False):
        """psi(Xc) of centred inputs, with the constant intercept feature when there is one.

        Parameters
        ----------
        Xc : tensor of shape (k, d)
        scratch : bool
            Write dense CPU features (the compiled path, :func:`joker.fast_cos.available`)
            into the operator's one reused buffer
            (grown to the largest k asked for): valid until the next
            ``scratch`` call. The solver forms one block (or one chunk of a
            pass) at a time and drops it before the next; a fresh tensor per
            block costs its page faults again (``transform_tensor``'s
            ``out``: about 2.7 s of each 11 s epoch on full HEPC, M = 2,048,
            blocks of 2,048).

        Returns
        -------
        tensor of shape (k, M), or (k, M + 1) with the intercept feature
        """
        if scratch and self.intercept_scaling is None and not is_sparse(Xc) and fast_cos.available(Xc):
            k, M = Xc.shape[0], self.fmap.n_components
            if self._scratch is None or self._scratch.shape[0] < k:
                self._scratch = torch.empty((k, M), dtype=self.theta.dtype)
            return self.fmap.transform_tensor(Xc, centred=self.centred, out=self._scratch[:k])
        Psi = self.fmap.transform_tensor(Xc, centred=self.centred)
        if self.intercept_scaling is None:
            return Psi
        const = torch.full((Psi.shape[0], 1), float(self.intercept_scaling), dtype=Psi.dtype, device=Psi.device)
        return torch.cat([Psi, const], dim=1)

    def reset(self, alpha):
        """Recompute theta = Psi^T alpha (one pass over the features)."""
        self.theta.zero_()
        for i in range(0, self.X.shape[0], self.chunk):
            Psi = self.features(self.X[i:i + self.chunk], scratch=True)
            self.theta += Psi.T @ alpha[i:i + self.chunk]

    def block(self, B):
        """Block view: ``.f`` = Psi_B theta, ``.mv(P)`` = Psi_B Psi_B^T P."""
        return _RFFBlock(self, B)

    def begin_epoch(self):
        """The solver starts an epoch (nothing to do: no row cache)."""

    def commit(self, blk, S):
        """theta += Psi_B^T S."""
        self.theta += blk.PsiT @ S

    def commit_all(self, blk, S, alpha=1.0):
        """theta += alpha Psi_B^T S, in place (one fused product; no host sync)."""
        self.theta.addmm_(blk.PsiT, S, alpha=alpha)

    @property
    def diag_bound(self):
        """An upper bound of ||psi(x)||^2: 2 (M cosines of weight 2 / M), plus the intercept feature's s^2."""
        return 2.0 + (0.0 if self.intercept_scaling is None else float(self.intercept_scaling) ** 2)

    def row_work(self, b):
        """Flops of Psi_B for a block of size b (about 2 b M d)."""
        return 2 * b * self.fmap.n_components * self.X.shape[1]

    def product_work(self, b, C):
        """Flops of one product Psi_B Psi_B^T P (about 4 b M C)."""
        return 4 * b * self.fmap.n_components * C

    def decision(self):
        """f = Psi theta on the training set, shape (n, C) (one pass; none when theta = 0)."""
        return self.certificate_pass(None)[0]

    def certificate_pass(self, alpha):
        """One feature pass for a rigorous certificate of (theta, alpha).

        Parameters
        ----------
        alpha : tensor of shape (n, C) or None

        Returns
        -------
        f : tensor of shape (n, C)
            Psi theta, the decision values of the maintained theta.
        sq_norms_dual : float64 tensor of shape (C,) or None
            ||Psi^T alpha_c||^2 computed afresh (theta drifts from Psi^T alpha
            by rounding, mostly in float32); None when alpha is None.
        """
        n, C = self.X.shape[0], self.theta.shape[1]
        out = torch.zeros((n, C), dtype=self.X.dtype, device=self.X.device)
        fresh = torch.zeros_like(self.theta) if alpha is not None else None
        if not bool(self.theta.any()) and (alpha is None or not bool(alpha.any())):
            return out, (torch.zeros(C, dtype=torch.float64) if alpha is not None else None)
        for i in range(0, n, self.chunk):
            Psi = self.features(self.X[i:i + self.chunk], scratch=True)
            out[i:i + self.chunk] = Psi @ self.theta
            if fresh is not None:
                fresh += Psi.T @ alpha[i:i + self.chunk]
        return out, ((fresh * fresh).sum(0).to(torch.float64) if fresh is not None else None)

    def lag_rows(self, blk, theta, alpha_B, fresh):
        """Rows of a lagged certificate from a block's features (no new feature pass).

        Parameters
        ----------
        blk : block view (its ``Psi`` = psi(X_B) is reused)
        theta : tensor of shape (M, C)
            theta of the iterate being certified.
        alpha_B : tensor of shape (|B|, C)
            That iterate's alpha on the block.
        fresh : tensor of shape (M, C)
            The sum of Psi_B^T alpha_B over the blocks so far; Psi_B^T alpha_B
            is added to it in place.

        Returns
        -------
        tensor of shape (|B|, C): Psi_B theta.
        """
        fresh.addmm_(blk.PsiT, alpha_B)
        return blk.Psi @ theta

    def snapshot(self):
        """Copy of the state (theta), for :meth:`restore`."""
        return self.theta.clone()

    def restore(self, state):
        """Return to a :meth:`snapshot`."""
        self.theta.copy_(state)

    def theta_sq_norms(self):
        """||theta_c||^2 of the maintained theta, one per output.

        theta is Psi^T alpha up to the rounding of its updates; the dual side
        of a certificate recomputes ||Psi^T alpha_c||^2 afresh
        (:meth:`certificate_pass`).

        Returns
        -------
        float64 tensor of shape (C,)
        """
        return (self.theta * self.theta).sum(0).to(torch.float64)
