"""The one check of a ``device`` parameter of the core estimators (Joker, SODM, low-rank IPM).

A bad or unavailable device is reported before any data is moved, with one
ValueError naming the value, instead of torch's error from deep inside a fit.
"""

from __future__ import annotations

import torch

__all__ = ["check_device"]


def check_device(device):
    """``device`` as a torch.device, checked to exist on this machine.

    Parameters
    ----------
    device : str or torch.device
        "cpu", "cuda", "cuda:<index>" or another torch device type.

    Returns
    -------
    torch.device

    Raises
    ------
    ValueError
        When torch cannot parse ``device`` (e.g. "cuda:x", "gpu"), when it is
        a CUDA device and this torch build or machine has no CUDA device or
        fewer than index + 1 of them, for "meta" (no data), or when another
        device type cannot hold a tensor here.
    """
    try:
        dev = torch.device(device)
    except (RuntimeError, TypeError) as exc:
        raise ValueError(f"device={device!r} is not a torch device ('cpu', 'cuda', 'cuda:1', ...)") from exc
    if dev.type == "cuda":
        if not torch.cuda.is_available():
            raise ValueError(f"device={device!r} but this torch build or machine has no CUDA device; "
                             "use device='cpu'")
        count = torch.cuda.device_count()
        if dev.index is not None and dev.index >= count:
            raise ValueError(f"device={device!r} but this machine has {count} CUDA device(s), "
                             f"cuda:0 to cuda:{count - 1}")
    elif dev.type == "meta":
        raise ValueError(f"device={device!r} holds no data; use device='cpu' or 'cuda'")
    elif dev.type != "cpu":
        try:
            torch.empty(0, device=dev)
        except (RuntimeError, AssertionError) as exc:
            raise ValueError(f"device={device!r} is not available on this machine (torch cannot allocate a "
                             "tensor there); use device='cpu'") from exc
    return dev
