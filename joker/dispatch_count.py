"""Count the aten operations and host syncs of a solve, per block step.

On an accelerator every aten operation is (at least) one kernel launch, and
every operation that hands a tensor's value to Python (``float(t)``,
``bool(t)``, ``t.item()``, ``t.tolist()``: ``aten::_local_scalar_dense``) or
whose output shape depends on tensor values (``nonzero`` behind boolean-mask
indexing) waits for the device to finish. Both can be counted exactly on a
CPU with a :class:`torch.utils._python_dispatch.TorchDispatchMode`, which
sees every aten call below the Python API (views and in-place updates
included), so the counts of a block step are a deterministic, noise-free
proxy of its cost on a GPU (issue 25).

:func:`count_block_steps` counts inside the solver's block steps
(``_Run.block_step``: everything repeated per block between two certificate
checks) and, separately, over the whole solve (certificates included), as
the issue's table did. ``python -m joker.dispatch_count`` prints the counts
of the default inner solver and of the direct step on :func:`fixed_problem`
(the ``make bench-solver`` table).
"""

from __future__ import annotations

import collections
import contextlib
import dataclasses
import sys
import warnings

import numpy as np
from torch.utils._python_dispatch import TorchDispatchMode

__all__ = ["SYNC_OPS", "ISSUE_TARGETS", "OpCounter", "BlockCounts", "count_block_steps", "fixed_problem",
           "count_fit", "main"]

SYNC_OPS = frozenset({"_local_scalar_dense", "equal", "is_nonzero", "nonzero", "masked_select", "item",
                      "_unique", "_unique2", "unique_dim", "unique_consecutive"})
"""aten operations that make the host wait for the device: a value read on the host
(``_local_scalar_dense``, ``equal``, ``is_nonzero``, ``item``) or an output shape that
depends on the values (``nonzero`` behind boolean-mask indexing, ``masked_select``,
``unique``). A superset of issue 25's count, which was ``_local_scalar_dense`` alone."""


class OpCounter(TorchDispatchMode):
    """A dispatch mode counting aten calls by name while :attr:`active` is true.

    Attributes
    ----------
    active : bool
        Count only while true (the mode stays installed; calls are passed on
        either way).
    ops : collections.Counter
        Calls per aten operation name (overload packet, e.g. ``"mm"``).
    """

    def __init__(self):
        super().__init__()
        self.active = True
        self.ops = collections.Counter()

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        if self.active:
            self.ops[func.overloadpacket.__name__] += 1
        return func(*args, **(kwargs or {}))

    @property
    def total(self):
        """Every counted call."""
        return sum(self.ops.values())

    @property
    def syncs(self):
        """Counted calls of :data:`SYNC_OPS`."""
        return sum(n for name, n in self.ops.items() if name in SYNC_OPS)


@dataclasses.dataclass
class BlockCounts:
    """Aten calls of one solve, per block step.

    Attributes
    ----------
    blocks : int
        Block steps run.
    ops, syncs : float
        Aten calls and host syncs (:data:`SYNC_OPS`) per block step, counted
        inside the block steps only (mean over the blocks).
    max_ops, max_syncs : int
        The largest counts of one block step.
    fit_ops, fit_syncs : float
        The same over the whole solve (certificates, epoch set-up), divided by
        the block steps (the measure of issue 25's table).
    top : list of (str, int)
        The most frequent operations inside the block steps, with their
        totals.
    result : object
        What the counted call returned.
    """

    blocks: int
    ops: float
    syncs: float
    max_ops: int
    max_syncs: int
    fit_ops: float
    fit_syncs: float
    top: list
    result: object

    def line(self):
        """One line: ops and syncs per block step (mean, largest), and over the whole fit."""
        return (f"{self.ops:.1f} aten ops (at most {self.max_ops}), {self.syncs:.1f} host syncs (at most "
                f"{self.max_syncs}) per block step; {self.fit_ops:.1f} and {self.fit_syncs:.1f} over the whole fit, "
                f"{self.blocks} blocks")


@contextlib.contextmanager
def _counting_block_steps(counter, per_block):
    """Switch ``counter`` on inside ``_Run.block_step`` only, appending (ops, syncs) of each call to ``per_block``."""
    from . import solver

    original = solver._Run.block_step

    def counted(self, B):
        ops, syncs = counter.total, counter.syncs
        counter.active = True
        try:
            return original(self, B)
        finally:
            counter.active = False
            per_block.append((counter.total - ops, counter.syncs - syncs))

    solver._Run.block_step = counted
    try:
        yield
    finally:
        solver._Run.block_step = original


def count_block_steps(fn):
    """Run ``fn()`` (a fit or a :func:`joker.solver.dbcd_tr` call) and count its aten calls per block step.

    Parameters
    ----------
    fn : callable
        No arguments. Everything it calls is counted (prepare its inputs
        beforehand); solves in other threads or processes are not seen.

    Returns
    -------
    BlockCounts

    Raises
    ------
    ValueError
        ``fn`` ran no block step.
    """
    fit, block, per_block = OpCounter(), OpCounter(), []
    block.active = False
    with _counting_block_steps(block, per_block), fit, block:
        result = fn()
    n = len(per_block)
    if n == 0:
        raise ValueError("the call ran no block step: nothing to count per block")
    return BlockCounts(blocks=n, ops=block.total / n, syncs=block.syncs / n, max_ops=max(o for o, _ in per_block),
                       max_syncs=max(s for _, s in per_block), fit_ops=fit.total / n, fit_syncs=fit.syncs / n,
                       top=block.ops.most_common(8), result=result)


def fixed_problem(loss, n=4096, d=7, seed=0):
    """A deterministic synthetic problem for the counts: inputs N(0, I), a smooth target, or its sign.

    Parameters
    ----------
    loss : str
        A loss name; classification losses get labels in {-1, +1}.
    n, d : int
        Rows and features.
    seed : int

    Returns
    -------
    (X, y) : float64 arrays of shape (n, d) and (n,)
    """
    from .losses import CLASSIFICATION_LOSSES

    rng = np.random.default_rng(seed)
    X = rng.standard_normal((n, d))
    y = np.sin(X[:, 0]) + 0.5 * X[:, 1] * X[:, 2] + 0.1 * rng.standard_normal(n)
    if loss in CLASSIFICATION_LOSSES and loss != "squared":
        y = np.where(y > 0, 1.0, -1.0)
    return X, y


def count_fit(loss, inner, n_components=2048, block_size=2048, n=4096, epochs=2, dtype="float32", sigma=2.0):
    """Counts of one fit of :func:`fixed_problem` (tol 1e-12, so no certificate stops it before ``epochs``).

    Parameters
    ----------
    loss : str
    inner : {"auto", "cg", "cd", "direct"}
        ``SolverOptions.inner``.
    n_components : int or None
        Random features M (None: the exact kernel).
    block_size, n, epochs : int
        With two epochs or more the lagged certificate of random features
        runs in the block steps from the second one.
    dtype : str
    sigma : float

    Returns
    -------
    BlockCounts
        ``result`` is the fitted estimator.

    Notes
    -----
    The counts are those of an accelerator's path: random features are
    formed whole, as on a GPU, not in the CPU's cache-sized chunks
    (:data:`joker.features.CHUNK_ROWS`, one ``addmm``/``cos_``/``mul_``
    triple per chunk), and their cosines are torch's, not the CPU's
    compiled loop (:mod:`joker.fast_cos`, whose per-row range bound ends in
    a host read of the far rows), and no reused CPU feature buffer.
    """
    from unittest import mock

    from . import features
    from .estimators import JokerClassifier, JokerRegressor

    X, y = fixed_problem(loss, n)
    Est = JokerRegressor if loss in ("squared", "huber", "epsilon_insensitive") else JokerClassifier
    est = Est(loss=loss, n_components=n_components, block_size=block_size, sigma=sigma, lam=1.0, tol=1e-12,
              max_epochs=epochs, dtype=dtype, random_state=0, solver_options={"inner": inner})
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # the fit stops on its epoch budget by design
        with mock.patch.object(features, "CHUNK_ROWS", n), \
                mock.patch.object(features.fast_cos, "available", lambda t: False):
            return count_block_steps(lambda: est.fit(X, y))


ISSUE_TARGETS = {"squared": 40, "squared_hinge": 40, "logistic": 80}
"""Issue 25's ceilings on the aten operations of one ``inner="direct"`` block step (and no host sync),
random features M = 2,048, blocks of 2,048."""


def main(argv=None):
    """Print the counts per block step of the default inner solver and of the direct step, per loss.

    ``python -m joker.dispatch_count`` (a ``make bench-solver`` table):
    ``inner="auto"`` (the default; CG with random features on a CPU) and
    ``inner="direct"``, on :func:`fixed_problem` at the issue's setting,
    with the issue's targets for the direct step.
    """
    losses = ("squared", "squared_hinge", "logistic")
    print("[block step] aten ops and host syncs per block step (mean, largest), RFF M=2048, blocks of 2048, "
          "4,096 rows, float32, 2 epochs (joker.dispatch_count)", flush=True)
    print(f"[block step] {'loss':13s}  {'inner':18s}  {'ops':>14s}  {'host syncs':>12s}  issue target", flush=True)
    for loss in losses:
        for inner in ("auto", "direct"):
            c = count_fit(loss, inner)
            ran = "direct" if "direct_visits" in c.result.solver_stats_ else "cg"
            label = inner if inner == ran else f"{inner} ({ran}, default)"
            target = ""
            if inner == "direct":
                ok = c.max_ops <= ISSUE_TARGETS[loss] and c.max_syncs == 0
                target = f"<= {ISSUE_TARGETS[loss]} ops, 0 syncs: {'met' if ok else 'MISSED'}"
            print(f"[block step] {loss:13s}  {label:18s}  {c.ops:7.1f} ({c.max_ops:4d})  "
                  f"{c.syncs:5.1f} ({c.max_syncs:3d})  {target}", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
