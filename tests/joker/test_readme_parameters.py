"""README's estimator section names every parameter of JokerRegressor and JokerClassifier.

Tester report: ``fit_intercept`` was not mentioned there. A parameter added to
the estimators without a word in the README fails here.
"""

from __future__ import annotations

import inspect
from pathlib import Path

import pytest

from joker import JokerClassifier, JokerRegressor
from joker.estimators import _JokerBase

README = Path(__file__).resolve().parents[2] / "README.md"


def _estimator_section():
    text = README.read_text()
    start = text.index("## Joker in scikit-learn code")
    return text[start:text.index("\n## ", start + 1)]


@pytest.mark.parametrize("estimator", [JokerRegressor, JokerClassifier])
def test_every_parameter_is_named(estimator):
    section = _estimator_section()
    params = [p for p in inspect.signature(estimator.__init__).parameters if p != "self"]
    assert len(params) >= 20
    assert [p for p in params if f"`{p}`" not in section and f"{p}=" not in section] == []


def test_fit_intercept_says_what_and_default():
    section = " ".join(_estimator_section().split())
    assert "`fit_intercept` (default False" in section
    assert "constant s^2 added to the kernel" in section and "docs/dual.md s.5" in section


def test_c_of_the_squared_hinge_is_one_over_two_lam():
    # the numbers behind it: test_solver_rff_linear (LinearSVC(loss="squared_hinge", C=1/(2 lam)) = Joker's theta)
    section = " ".join(_estimator_section().split())
    assert "`squared_hinge` at C = 1/(2 lam)" in section and "SVC at C = 1/lam" in section
    assert "(C = 1/lam);" not in section  # the old sentence that said C = 1/lam for every loss
    for doc in (JokerClassifier.__doc__, _JokerBase.__doc__):
        assert "C = 1 / (2 lam)" in " ".join(doc.split())
