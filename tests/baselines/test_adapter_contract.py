"""The adapter contract, run for every solver id (a mixin, like GPyTorch's base test cases).

Each ``Test<Id>Contract`` class only names its solver id; the checks live in
:class:`AdapterContract`. The problem: first 2,000 rows of the HIGGS head
(1,500 train / 500 test, standardised), median-heuristic sigma, lam = 0.1.
Adapters whose library is missing skip with their own ``available()``
reason ("falkon is not installed", ...).
"""

from __future__ import annotations

import numpy as np
import pytest

from adapterutil import BUDGET_256, CONTRACT_CASES, contract_adapter, require
from baselines.base import AdapterError, Budget
from baselines import METHODS

DESCRIBE_KEYS = {"method", "library", "version", "task", "loss", "kernel", "sigma", "lam", "seed", "dtype",
                 "device", "n_threads", "options", "plan", "conversions"}
CONVERGENCE_KEYS = {"signal", "converged", "diverged", "reason", "history", "final"}
#: knobs each adapter's plan must choose from the budget
PLAN_KNOBS = {
    "joker-exact": {"block_size"},
    "joker-inexact": {"block_size", "n_components"},
    "falkon": {"M", "max_cpu_mem"},
    "logfalkon": {"M", "max_cpu_mem", "penalty_list", "iter_list"},
    "eigenpro3": {"n_centers", "epochs"},
    "eigenpro4": {"n_centers", "epochs", "n_nystrom_data", "data_level", "n_nystrom_model", "model_level", "max_batch"},
    "thundersvm": {"max_mem_size_mib", "n_jobs"},
    "libsvm": {"cache_size_mib", "shrinking"},
    "ipm-lowrank": {"n_components"},
    "sodm": {"block_size", "n_components", "levels", "n_jobs"},
    "askotch": {"block_size", "rank"},
    "torchkm": {"mode", "num_landmarks", "nys_k"},
}


class AdapterContract:
    """Checks every adapter must pass; subclasses set ``method``."""

    method: str = ""

    @pytest.fixture(scope="class")
    @classmethod
    def fitted(cls, higgs):
        require(cls.method)
        adapter = contract_adapter(cls.method, higgs.sigma)
        adapter.plan(BUDGET_256, *higgs.Xtr.shape)
        return adapter.fit(higgs.Xtr, higgs.ytr)

    def test_available_gives_a_reason(self):
        ok, reason = METHODS[self.method].available()
        assert isinstance(ok, bool) and isinstance(reason, str)
        assert ok or reason, "an unavailable adapter must say why"

    def test_supports_binary_and_rejects_one_class(self):
        cls = METHODS[self.method]
        assert cls.supports("binary", 2) == (True, "")
        ok, reason = cls.supports("binary", 3)
        assert not ok and "2 classes" in reason

    def test_plan_respects_a_256_mib_budget(self, higgs):
        adapter = contract_adapter(self.method, higgs.sigma)
        plan = adapter.plan(BUDGET_256, *higgs.Xtr.shape)
        assert PLAN_KNOBS[self.method] <= set(plan), plan
        assert 0 < plan["est_bytes"] <= BUDGET_256.host_bytes
        assert adapter.plan_ == plan and plan["budget"] == BUDGET_256.name

    def test_plan_fits_or_refuses_a_large_problem(self, higgs):
        """200,000 x 28 in 256 MiB: the knobs are chosen to fit, or plan() refuses; never over budget."""
        adapter = contract_adapter(self.method, higgs.sigma)
        try:
            plan = adapter.plan(BUDGET_256, 200_000, 28)
        except AdapterError as exc:
            assert "cannot hold" in str(exc)
            return
        assert plan["est_bytes"] <= BUDGET_256.host_bytes

    def test_plan_refuses_a_budget_too_small(self, higgs):
        adapter = contract_adapter(self.method, higgs.sigma)
        with pytest.raises(AdapterError, match="cannot hold"):
            adapter.plan(Budget("tiny", 1024), *higgs.Xtr.shape)

    def test_shapes_labels_and_finite_predictions(self, fitted, higgs):
        scores = fitted.decision_function(higgs.Xte)
        labels = fitted.predict(higgs.Xte)
        assert scores.shape == (len(higgs.Xte),) and scores.dtype == np.float64
        assert labels.shape == (len(higgs.Xte),)
        assert np.all(np.isfinite(scores))
        assert list(fitted.classes_) == [-1.0, 1.0]
        np.testing.assert_array_equal(labels, np.where(scores > 0, 1.0, -1.0))

    def test_test_accuracy_above_060(self, fitted, higgs):
        accuracy = np.mean(fitted.predict(higgs.Xte) == higgs.yte)
        assert accuracy > 0.60, f"{self.method}: test accuracy {accuracy:.3f}"

    def test_deterministic_under_a_seed(self, fitted, higgs):
        again = contract_adapter(self.method, higgs.sigma)
        again.plan(BUDGET_256, *higgs.Xtr.shape)
        again.fit(higgs.Xtr, higgs.ytr)
        np.testing.assert_allclose(again.decision_function(higgs.Xte), fitted.decision_function(higgs.Xte),
                                   rtol=1e-9, atol=1e-9)

    def test_describe_is_complete(self, fitted):
        info = fitted.describe()
        assert DESCRIBE_KEYS <= set(info)
        assert info["method"] == self.method
        assert info["version"] not in ("", "unknown")
        assert info["loss"] == CONTRACT_CASES[self.method][0]
        assert info["plan"] == fitted.plan_
        conversions = info["conversions"]
        assert conversions["formulas"] and set(conversions["formulas"]) <= set(conversions)

    def test_convergence_report(self, fitted):
        report = fitted.convergence()
        assert CONVERGENCE_KEYS <= set(report)
        assert report["signal"] == type(fitted).signal and report["signal"]
        assert report["diverged"] is False
        assert report["converged"] in (True, False, None)
        assert isinstance(report["reason"], str) and report["reason"]
        assert isinstance(report["history"], list)
        assert report["final"] is None or np.isfinite(report["final"])


class TestJokerExactContract(AdapterContract):
    method = "joker-exact"


class TestJokerInexactContract(AdapterContract):
    method = "joker-inexact"


class TestFalkonContract(AdapterContract):
    method = "falkon"


class TestLogFalkonContract(AdapterContract):
    method = "logfalkon"


class TestEigenPro3Contract(AdapterContract):
    method = "eigenpro3"


class TestEigenPro4Contract(AdapterContract):
    method = "eigenpro4"


class TestThunderSVMContract(AdapterContract):
    method = "thundersvm"


class TestLibSVMContract(AdapterContract):
    method = "libsvm"


class TestIPMLowRankContract(AdapterContract):
    method = "ipm-lowrank"


class TestSODMContract(AdapterContract):
    method = "sodm"


class TestASkotchContract(AdapterContract):
    method = "askotch"


class TestTorchKMContract(AdapterContract):
    method = "torchkm"


def test_every_solver_id_has_a_contract_class():
    tested = {cls.method for cls in AdapterContract.__subclasses__()}
    assert tested == set(METHODS) == set(CONTRACT_CASES)


@pytest.mark.parametrize("method", sorted(CONTRACT_CASES))
def test_fit_on_fewer_rows_than_planned(method, higgs):
    """The harness plans for the full data and may fit a small warm-up subset with another instance;
    a plan made for more rows than the fit sees must still work."""
    require(method)
    adapter = contract_adapter(method, higgs.sigma)
    adapter.plan(BUDGET_256, *higgs.Xtr.shape)
    adapter.fit(higgs.Xtr[:120], higgs.ytr[:120])
    assert adapter.predict(higgs.Xte[:10]).shape == (10,)
