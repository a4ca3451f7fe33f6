"""Run small operations on one intra-op thread.

A block step's inner solve (CG on a |B| x |B| block Hessian, a few hundred
vector operations per visit) is made of operations far too small to share
between threads: a 256 x 256 matrix-vector product takes about 20 us on one
core, while the same product split over two threads waits for them at every
call. Measured on the project's 2-core machine while other processes ran:
``torch.mv`` on a 256 x 256 float64 matrix took 18 us with one thread and
5-20 ms with two (the threads' barriers wait for a core). The kernel rows,
which are large products, keep every thread.
"""

from __future__ import annotations

import contextlib

import torch

__all__ = ["SERIAL_FLOPS", "serial_below", "one_thread"]

SERIAL_FLOPS = 2**20
"""Operations of at most this many flops run on one thread (a 724 x 724 matrix-vector product)."""


@contextlib.contextmanager
def serial_below(flops, device):
    """Run the block on one torch thread when its typical operation is small and on the CPU.

    Parameters
    ----------
    flops : int
        Flops of the block's typical operation (e.g. one block Hessian product).
    device : torch.device or str
        Where the operations run; on an accelerator nothing changes.

    Notes
    -----
    ``torch.set_num_threads`` is process-wide: do not run other torch work
    from another Python thread meanwhile. The previous count is restored on
    exit, also after an exception.
    """
    with one_thread(device, flops <= SERIAL_FLOPS):
        yield


@contextlib.contextmanager
def one_thread(device, when=True):
    """Run the block on one torch thread (CPU, ``when`` true); else change nothing.

    For memory-bound work too (a gather of kernel rows, a matrix-vector
    product with them): a second thread gains little there and, on shared
    cores, loses much.

    Parameters
    ----------
    device : torch.device or str
    when : bool
    """
    before = torch.get_num_threads()
    if not when or torch.device(device).type != "cpu" or before == 1:
        yield
        return
    torch.set_num_threads(1)
    try:
        yield
    finally:
        torch.set_num_threads(before)
