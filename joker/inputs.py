"""Array intake of the Joker core: any numpy or torch layout to a float64 tensor.

numpy arrays with negative or non-unit strides, Fortran order or read-only
memory, and non-contiguous torch tensors are all accepted; inputs are
brought to float64 first, so that centring (subtracting a large mean) is
done before any cast to float32 rounds them.
"""

from __future__ import annotations

import numpy as np
import torch

__all__ = ["as_float64"]


def as_float64(A, device=None):
    """A contiguous float64 copy (or view) of ``A`` as a torch tensor.

    Parameters
    ----------
    A : array-like or tensor
        Any shape, any layout (strides, order, read-only, non-contiguous).
    device : str or torch.device, optional
        Target device; None keeps a tensor's device (numpy input: CPU).

    Returns
    -------
    float64 tensor of A's shape, contiguous.
    """
    if torch.is_tensor(A):
        T = A.detach().to(dtype=torch.float64)
    else:
        a = np.ascontiguousarray(np.asarray(A, dtype=np.float64))
        if not a.flags.writeable:  # torch tensors must not alias read-only memory
            a = a.copy()
        T = torch.from_numpy(a)
    if device is not None:
        T = T.to(device=device)
    return T.contiguous()
