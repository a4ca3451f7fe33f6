"""The issue-13 verdict of the SVC ratio benchmark (benchmarks.svc_ratio)."""

from __future__ import annotations

import pytest

from benchmarks import svc_ratio


def _row(fit_s, acc, converged=True):
    return dict(fit_s=fit_s, accuracy=acc, converged=converged)


@pytest.mark.parametrize("joker, svc, want", [
    (_row(1.5, 0.84), _row(1.0, 0.84), "PASS"),  # exactly 1.5x
    (_row(1.51, 0.84), _row(1.0, 0.84), "MISS (slow)"),
    (_row(0.19, 0.9), _row(0.05, 0.9), "PASS"),  # SVC under 0.1 s: Joker under 0.2 s
    (_row(0.21, 0.9), _row(0.05, 0.9), "MISS (slow)"),
    (_row(0.5, 0.8372), _row(1.0, 0.84), "PASS"),  # -0.28 pt is within the target
    (_row(0.5, 0.835, converged=False), _row(1.0, 0.84), "MISS (acc -0.50 pt, not converged)"),
])
def test_verdict(joker, svc, want):
    assert svc_ratio.verdict(joker, svc) == want


def test_multiclass_miss_names_the_one_vs_rest_difference():
    # the target stays SVC's (one-vs-one) accuracy; the one-vs-rest SVC row explains a model difference
    joker, svc, ovr = _row(0.1, 0.9673), _row(0.02, 0.9798), _row(0.2, 0.9622)
    assert svc_ratio.verdict(joker, svc, ovr) == "MISS (acc -1.25 pt; +0.51 vs one-vs-rest SVC)"
    assert svc_ratio.verdict(_row(0.1, 0.9798), svc, ovr) == "PASS"


def test_an_exact_problem_name_selects_itself_only():
    # ratio-a9a-2k-C1 is also a prefix of ratio-a9a-2k-C10; a prefix that is no name still selects all it starts
    from benchmarks.solver_bench import select

    assert select(["ratio-a9a-2k-C1"], False) == ["ratio-a9a-2k-C1"]
    assert select(["ratio-a9a-2k"], False) == ["ratio-a9a-2k-C1", "ratio-a9a-2k-C10"]
    assert select(["ratio-digits-C1,ratio-a9a-2k-C10"], False) == ["ratio-a9a-2k-C10", "ratio-digits-C1"]


def test_one_vs_rest_rows_of_a_multiclass_set_are_information():
    # the judged rows fit SVC's decomposition (one-vs-one); one-vs-rest is shown against both SVCs
    joker, svc, ovr = _row(0.1, 0.9849), _row(0.02, 0.9899), _row(0.2, 0.9899)
    assert svc_ratio.info_one_vs_rest(joker, svc, ovr) == (
        "info: one-vs-rest (the default), acc -0.50 pt vs SVC, -0.50 vs one-vs-rest SVC")
    assert svc_ratio.info_one_vs_rest(_row(0.1, 0.99, converged=False), svc, ovr).endswith(", not converged")
