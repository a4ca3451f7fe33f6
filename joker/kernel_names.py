"""The kernel names the solver knows, importable without torch (the harness's config check reads them)."""

__all__ = ["KERNELS"]

KERNELS = ("gaussian", "laplacian")
"""tuple of str: the shift-invariant kernels of :mod:`joker.kernels` (Gaussian and Laplacian)."""
