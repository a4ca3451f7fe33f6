"""Joker: certified dual block-coordinate descent with a trust region for kernel machines.

Zhang, Liu et al., "Joker: Joint Optimization Framework for Lightweight
Kernel Machines", ICML 2025, arXiv:2505.17765. The estimators are imported
lazily so that ``import joker`` stays fast (torch loads on first use).
"""

__version__ = "0.1.0"
__all__ = ["JokerRegressor", "JokerClassifier", "ConvergenceWarning", "TrivialModelWarning", "DivergedError", "__version__"]


def __getattr__(name):
    if name in ("JokerRegressor", "JokerClassifier", "ConvergenceWarning", "TrivialModelWarning"):
        from . import estimators

        return getattr(estimators, name)
    if name == "DivergedError":
        from .solver import DivergedError

        return DivergedError
    raise AttributeError(f"module 'joker' has no attribute {name!r}")
