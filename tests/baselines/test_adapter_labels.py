"""Any two labels work for every classifier adapter; ``decision_function > 0`` means ``classes_[1]``.

300 HIGGS-head rows (the first 300 of the contract problem), label sets
{0, 1}, {-1, 1}, {"a", "b"} and the swapped {"b", "a"}: the decision values
must not depend on how the labels are spelled, only on which one sorts last.
"""

from __future__ import annotations

import numpy as np
import pytest

from adapterutil import CONTRACT_CASES, contract_adapter, require

N = 300
ENCODINGS = {
    "zero-one": (0, 1),
    "minus-plus": (-1, 1),
    "strings": ("a", "b"),
}


def _relabel(y: np.ndarray, negative, positive) -> np.ndarray:
    return np.where(y > 0, positive, negative)


@pytest.fixture(scope="module")
def small(higgs):
    return higgs.Xtr[:N], higgs.ytr[:N], higgs.Xte[:100]


@pytest.mark.parametrize("method", sorted(CONTRACT_CASES))
def test_any_two_labels(method, small, higgs):
    require(method)
    X, y, X_new = small
    scores = {}
    for name, (negative, positive) in ENCODINGS.items():
        labels = _relabel(y, negative, positive)
        adapter = contract_adapter(method, higgs.sigma).fit(X, labels)
        assert list(adapter.classes_) == sorted([negative, positive]), name
        decision = adapter.decision_function(X_new)
        predicted = adapter.predict(X_new)
        assert set(np.unique(predicted)) <= {negative, positive}
        np.testing.assert_array_equal(predicted, np.where(decision > 0, adapter.classes_[1], adapter.classes_[0]))
        scores[name] = decision
    reference = scores["minus-plus"]
    for name, decision in scores.items():
        np.testing.assert_allclose(decision, reference, rtol=1e-6, atol=1e-6, err_msg=name)

    # Swap which label is "positive": "b" now marks y = -1, so the decision must flip sign.
    swapped = contract_adapter(method, higgs.sigma).fit(X, _relabel(y, "b", "a"))
    assert list(swapped.classes_) == ["a", "b"]
    agree = np.mean(np.sign(swapped.decision_function(X_new)) == -np.sign(reference))
    assert agree >= 0.99, f"{method}: only {agree:.1%} of decisions flipped with the labels"


@pytest.mark.parametrize("method", sorted(CONTRACT_CASES))
def test_wrong_number_of_labels_is_a_clear_error(method, small, higgs):
    X, y, _ = small
    adapter = contract_adapter(method, higgs.sigma)
    with pytest.raises(ValueError, match="exactly 2 distinct labels"):
        adapter.fit(X, np.zeros(len(y)))
    with pytest.raises(ValueError, match="exactly 2 distinct labels"):
        adapter.fit(X, np.arange(len(y)) % 3)
