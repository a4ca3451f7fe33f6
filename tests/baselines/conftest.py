"""Fixtures of the adapter tests: the HIGGS-head problem every adapter is checked on.

Data come from the shared mirror through ``joker.data`` (``../shared/data``
next to the clone, or ``JOKER_DATA_MIRROR``); nothing is downloaded.
"""

from __future__ import annotations

from types import SimpleNamespace

import numpy as np
import pytest

from adapterutil import higgs_problem


@pytest.fixture(scope="session")
def higgs() -> SimpleNamespace:
    """First 2,000 HIGGS-head rows: 1,500 train / 500 test, standardised, median-heuristic sigma."""
    return higgs_problem()
