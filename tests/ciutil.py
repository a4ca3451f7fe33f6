"""What the tests do differently under CI (``.ci/run`` sets ``CI=true``).

In CI every service and every baseline is installed by ``.ci/run`` itself,
so a test that would skip for a missing one fails instead: a green CI
that silently skipped them would say nothing.
"""

from __future__ import annotations

import os

import pytest

__all__ = ["in_ci", "skip_or_fail"]


def in_ci() -> bool:
    """``CI`` is set to a true value (``1``, ``true``, ``yes``, any case)."""
    return os.environ.get("CI", "").lower() in ("1", "true", "yes")


def skip_or_fail(reason: str, fix: str) -> None:
    """Skip the test with ``reason``; in CI fail with ``reason`` and how CI should have provided it (``fix``)."""
    if in_ci():
        pytest.fail(f"CI: {reason}; {fix}", pytrace=False)
    pytest.skip(reason)
