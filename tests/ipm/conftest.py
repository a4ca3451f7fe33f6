"""Shared data for the low-rank IPM tests (tests/ipm)."""

from __future__ import annotations

import pytest

from benchmarks.ipm_bench import two_class_data


@pytest.fixture(scope="session")
def data():
    """The data factory :func:`benchmarks.ipm_bench.two_class_data`."""
    return two_class_data
