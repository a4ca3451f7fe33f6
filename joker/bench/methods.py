"""Compatibility import: the registry now lives in :mod:`baselines.registry`.

Kept so that code written against ``joker.bench.methods`` still runs; new
code imports ``from baselines import METHODS, get_adapter``.
"""

from baselines.registry import METHODS, get_adapter

__all__ = ["METHODS", "get_adapter"]
