"""The estimators page (docs/estimators.md) names every parameter of JokerRegressor and JokerClassifier.

Tester report: ``fit_intercept`` was not mentioned in the user docs. A parameter added to
the estimators without a word on that page fails here. (The README's estimator section
moved to the documentation site's page "The estimators", issue 44.)
"""

from __future__ import annotations

import inspect
from pathlib import Path

import pytest

from joker import JokerClassifier, JokerRegressor
from joker.estimators import _JokerBase

PAGE = Path(__file__).resolve().parents[2] / "docs" / "estimators.md"


def _estimator_section():
    return PAGE.read_text()


@pytest.mark.parametrize("estimator", [JokerRegressor, JokerClassifier])
def test_every_parameter_is_named(estimator):
    section = _estimator_section()
    params = [p for p in inspect.signature(estimator.__init__).parameters if p != "self"]
    assert len(params) >= 20
    assert [p for p in params if f"`{p}`" not in section and f"{p}=" not in section] == []


def test_fit_intercept_says_what_and_default():
    section = " ".join(_estimator_section().split())
    assert "`fit_intercept` (default False" in section
    assert "constant s^2 added to the kernel" in section and "[the dual, s.5](dual.md)" in section


def test_c_of_the_squared_hinge_is_one_over_two_lam():
    # the numbers behind it: test_solver_rff_linear (LinearSVC(loss="squared_hinge", C=1/(2 lam)) = Joker's theta)
    section = " ".join(_estimator_section().split())
    assert "`squared_hinge` at C = 1/(2 lam)" in section and "SVC at C = 1/lam" in section
    assert "(C = 1/lam);" not in section  # the old sentence that said C = 1/lam for every loss
    for doc in (JokerClassifier.__doc__, _JokerBase.__doc__):
        assert "C = 1 / (2 lam)" in " ".join(doc.split())
