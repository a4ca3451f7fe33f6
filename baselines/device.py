"""The compute device of a trial or an adapter, parsed once.

A device string is ``"cpu"``, ``"cuda"`` or ``"cuda:<index>"`` (torch's
spelling). :meth:`Device.parse` checks it when a config is resolved or an
adapter is built; everything downstream asks ``device.is_cuda`` and
``device.index`` instead of testing the string again.
"""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["Device", "indexed_torch_device"]


@dataclass(frozen=True)
class Device:
    """A parsed device.

    Parameters
    ----------
    kind : {"cpu", "cuda"}
    index : int or None, default None
        CUDA device ordinal (``None``: the current one, torch's ``"cuda"``);
        always ``None`` for the CPU.

    Raises
    ------
    ValueError
        On another kind, a negative index or an index on the CPU.
    """

    kind: str
    index: int | None = None

    def __post_init__(self) -> None:
        if self.kind not in ("cpu", "cuda"):
            raise ValueError(f"device must be 'cpu', 'cuda' or 'cuda:<index>', got kind {self.kind!r}")
        if self.index is not None and (self.kind == "cpu" or isinstance(self.index, bool)
                                       or not isinstance(self.index, int) or self.index < 0):
            raise ValueError(f"device index must be a non-negative int on 'cuda', got {self.kind}:{self.index!r}")

    @classmethod
    def parse(cls, text: str | Device) -> Device:
        """Parse ``"cpu"``, ``"cuda"`` or ``"cuda:<k>"`` (a :class:`Device` is returned as is).

        Raises
        ------
        ValueError
            For any other value, e.g. ``"gpu"`` or ``"cuda:x"``.
        """
        if isinstance(text, Device):
            return text
        if not isinstance(text, str):
            raise ValueError(f"device must be a string like 'cpu' or 'cuda:0', got {text!r}")
        kind, sep, index = text.strip().partition(":")
        if kind not in ("cpu", "cuda") or (sep and not index.isdigit()):
            raise ValueError(f"device must be 'cpu', 'cuda' or 'cuda:<index>', got {text!r}")
        return cls(kind, int(index) if sep else None)

    @property
    def is_cuda(self) -> bool:
        """bool: whether this is a CUDA device."""
        return self.kind == "cuda"

    @property
    def ordinal(self) -> int:
        """int: the CUDA ordinal to query (``index``, 0 when unset); 0 on the CPU."""
        return self.index or 0

    def __str__(self) -> str:
        return self.kind if self.index is None else f"{self.kind}:{self.index}"


def indexed_torch_device(device):
    """``torch.device`` of ``device`` with its CUDA ordinal filled in (the current device for ``"cuda"``).

    Libraries that broadcast to a list of devices (EigenPro 4's ``Device``
    calls ``torch.cuda.comm.broadcast``) need an ordinal: with a bare
    ``"cuda"`` every EigenPro 4 trial of the H200 check failed with
    "Expected a torch.device with a specified index or an integer, but got:cuda".

    Parameters
    ----------
    device : str, Device or torch.device
        ``"cpu"``, ``"cuda"`` or ``"cuda:<k>"``.

    Returns
    -------
    torch.device
        ``cpu``, or ``cuda:<k>`` (``k`` = ``torch.cuda.current_device()`` when none was given).

    Raises
    ------
    ValueError
        For a device :meth:`Device.parse` refuses.
    """
    import torch

    parsed = Device.parse(str(device))
    if not parsed.is_cuda:
        return torch.device("cpu")
    return torch.device("cuda", parsed.index if parsed.index is not None else torch.cuda.current_device())
