"""Count the aten operations and host syncs of a solve, per block step.

On an accelerator every aten operation is (at least) one kernel launch, and
every operation that hands a tensor's value to Python (``float(t)``,
``bool(t)``, ``t.item()``, ``t.tolist()``: ``aten::_local_scalar_dense``) or
whose output shape depends on tensor values (``nonzero``, boolean-mask
indexing) waits for the device to finish. Both can be counted exactly on a
CPU with a :class:`torch.utils._python_dispatch.TorchDispatchMode`, which
sees every aten call below the Python API (views and in-place updates
included), so the counts of a block step are a deterministic, noise-free
proxy of its cost on a GPU (issue 25).

:func:`count_block_steps` counts only inside the solver's block steps
(``_Run.block_step``, everything between two certificate checks that is
repeated per block) and, separately, over the whole solve (certificates
included), as the issue's table did.
"""

from __future__ import annotations

import collections
import contextlib
import dataclasses

import torch
from torch.utils._python_dispatch import TorchDispatchMode

__all__ = ["SYNC_OPS", "OpCounter", "BlockCounts", "count_block_steps"]

SYNC_OPS = frozenset({"_local_scalar_dense", "equal", "is_nonzero", "nonzero", "masked_select", "item",
                      "_unique", "_unique2", "unique_dim", "unique_consecutive"})
"""aten operations that make the host wait for the device: a value read on the host
(``_local_scalar_dense``, ``equal``, ``is_nonzero``, ``item``) or an output shape that
depends on the values (``nonzero`` behind boolean-mask indexing, ``masked_select``,
``unique``)."""


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
        Block steps run (``stats["blocks"]`` of the solve).
    ops, syncs : float
        Aten calls and host syncs (:data:`SYNC_OPS`) per block step, counted
        inside the block steps only.
    fit_ops, fit_syncs : float
        The same over the whole solve (certificates, epoch set-up), divided by
        the block steps (the measure of issue 25's table).
    top : list of (str, int)
        The most frequent operations inside the block steps, with their
        totals.
    result : joker.solver.SolveResult
        The solve itself.
    """

    blocks: int
    ops: float
    syncs: float
    fit_ops: float
    fit_syncs: float
    top: list
    result: object

    def line(self):
        """One line: ops and syncs per block step, in the block steps and over the fit."""
        return (f"{self.ops:.1f} aten ops, {self.syncs:.1f} host syncs per block step "
                f"({self.fit_ops:.1f} and {self.fit_syncs:.1f} over the whole fit, {self.blocks} blocks)")


@contextlib.contextmanager
def _counting_block_steps(block_counter):
    """Switch ``block_counter`` on inside ``_Run.block_step`` only (the method is wrapped, then restored)."""
    from . import solver

    original = solver._Run.block_step

    def counted(self, B):
        block_counter.active = True
        try:
            return original(self, B)
        finally:
            block_counter.active = False

    solver._Run.block_step = counted
    try:
        yield
    finally:
        solver._Run.block_step = original


def count_block_steps(solve):
    """Run ``solve()`` (a call of :func:`joker.solver.dbcd_tr`) and count its aten calls per block step.

    Parameters
    ----------
    solve : callable
        No arguments; returns the :class:`joker.solver.SolveResult` of one
        solve. Its inputs should be prepared beforehand (the counts include
        everything it calls).

    Returns
    -------
    BlockCounts

    Raises
    ------
    ValueError
        The solve ran no block step.
    """
    fit, block = OpCounter(), OpCounter()
    block.active = False
    with _counting_block_steps(block), fit, block:
        result = solve()
    n = int(result.stats["blocks"])
    if n == 0:
        raise ValueError("the solve ran no block step: nothing to count per block")
    return BlockCounts(blocks=n, ops=block.total / n, syncs=block.syncs / n, fit_ops=fit.total / n,
                       fit_syncs=fit.syncs / n, top=block.ops.most_common(8), result=result)
