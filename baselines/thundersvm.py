"""``thundersvm``: ThunderSVM's ``SVC`` / ``SVR`` (PyPI ``thundersvm-cpu``).

Conversions (``baselines.conventions``): ``gamma = 1 / (2 sigma^2)``,
``C = 1 / lam``, ``n_jobs = n_threads``. Memory knob: ``max_mem_size``
(MiB) from the budget.

Upstream failure modes this adapter turns into :class:`AdapterError`:

- an unknown kernel name makes ThunderSVM call ``exit()``: the kernel name
  is checked against ``thundersvm.thundersvm.KERNEL_TYPE`` first;
- a failed training prints "Training failed!" and returns ``None`` with no
  model: detected from the return value and the ``_train_succeed`` flag.

Convergence signal: ThunderSVM's own log (it logs to the C-level stdout when
``verbose=True``; captured during ``fit``): the SMO KKT violation ``diff``
every 100 global iterations and at exit, the iteration counts, the dual
objective and the exit state (``diff < tol``: converged; ``iter ==
max_iter``: stopped; otherwise it stopped because ``diff`` stalled).
``diff`` is the maximal KKT violation of the working set, not a duality
gap (the word "gap" is kept out of the signal name: the harness reads a
signal named "gap" as Joker's duality gap).
"""

from __future__ import annotations

import importlib
import math
import re
from typing import Any

import numpy as np

from .base import MIB, Adapter, AdapterError, Budget, capture_output
from .conventions import rbf_gamma, svm_C

__all__ = ["ThunderSVMAdapter", "parse_thundersvm_log"]

_ITER = re.compile(r"global iter = (\d+), total local iter = (\d+), diff = (\S+)")
_OBJ = re.compile(r"\bobj = (\S+)")
_NSV = re.compile(r"#sv = (\d+)")
#: benchmark kernel name -> ThunderSVM kernel name
_KERNELS = {"gaussian": "rbf"}


def parse_thundersvm_log(lines: list[str]) -> dict[str, Any]:
    """Parse ThunderSVM's INFO log of one fit.

    Parameters
    ----------
    lines : list of str
        Captured stdout lines.

    Returns
    -------
    dict
        ``history`` (list of dicts: global_iter, local_iter, diff),
        ``obj`` (float or None), ``n_sv`` (int or None), ``finished`` (bool:
        the "training finished" line was seen).
    """
    history = []
    for line in lines:
        m = _ITER.search(line)
        if m:
            history.append({"global_iter": int(m.group(1)), "local_iter": int(m.group(2)),
                            "diff": float(m.group(3))})
    obj = next((float(m.group(1)) for m in map(_OBJ.search, reversed(lines)) if m), None)
    n_sv = next((int(m.group(1)) for m in map(_NSV.search, reversed(lines)) if m), None)
    return {"history": history, "obj": obj, "n_sv": n_sv,
            "finished": any("training finished" in line for line in lines)}


class ThunderSVMAdapter(Adapter):
    """ThunderSVM (CPU build) C-SVC (hinge) and epsilon-SVR.

    Options
    -------
    epsilon : float, default 0.1
        SVR tube half-width (regression only), in units of the y the adapter is given (through
        the harness: the target standardised on the training rows, so standard deviations of
        ``y_train``; ``docs/contracts.md``, "Stated problems").
    tol : float, default 1e-3
        Stopping tolerance of ThunderSVM's SMO (``diff < tol``).
    max_iter : int, default -1
        Cap on global iterations (-1: none).
    max_mem_size_mib : int or None, default None
        ThunderSVM's ``max_mem_size`` in MiB; None: chosen by :meth:`plan`.

    Notes
    -----
    Binary and regression only: ThunderSVM's multiclass decision function is
    one-vs-one. The ``thundersvm-cpu`` wheel has no GPU code.
    """

    name = "thundersvm"
    module = "thundersvm"
    distribution = "thundersvm-cpu"
    losses = {"regression": ("epsilon_insensitive",), "binary": ("hinge",)}
    intercept = "fitted bias"  # LIBSVM's unpenalised b, as ThunderSVM solves the same dual
    option_defaults = {"epsilon": 0.1, "tol": 1e-3, "max_iter": -1, "max_mem_size_mib": None}
    option_kinds = {"max_mem_size_mib": "number"}
    signal = "ThunderSVM SMO maximal KKT violation (diff) and exit state"

    @classmethod
    def supports(cls, task: str, n_classes: int | None = None) -> tuple[bool, str]:
        if task == "multiclass":
            return False, ("thundersvm adapter: binary and regression only "
                           "(ThunderSVM's decision_function is one-vs-one)")
        return super().supports(task, n_classes)

    def _work(self, n: int, d: int, plan: dict[str, Any]) -> tuple[float, str]:
        # SMO takes two kernel columns per iteration (2 n d flops each, fewer once cached) and needs
        # at least about n iterations (Chang and Lin, LIBSVM, ACM TIST 2011, s. 4 and 5.1; measured
        # iterations grow faster than n): a lower bound of 2 n^2 d
        return 2.0 * n * n * d, f"SMO, about n iterations of kernel columns: >= 2 n^2 d (n = {n}, d = {d})"

    def _work_entries(self, n: int, d: int, plan: dict[str, Any]) -> float:
        return float(n) * n  # the n^2 kernel entries of that work

    def _plan(self, budget: Budget, n: int, d: int) -> dict[str, Any]:
        # our float64 X, the wrapper's float32 copy, ThunderSVM's own float32
        # dataset, and ~10 float32/int work arrays of length n.
        fixed = n * d * (8 + 4 + 4) + 10 * 4 * n
        mem = self.options["max_mem_size_mib"]
        if mem is None:
            mem = max(1, math.floor((budget.host_bytes - fixed) / MIB))
        return {"max_mem_size_mib": int(mem), "n_jobs": self.n_threads, "est_bytes": int(fixed + mem * MIB)}

    def _fit(self, X: np.ndarray, target: np.ndarray) -> None:
        # ``thundersvm.thundersvm`` as an attribute is the package's CDLL handle: take the module itself.
        upstream = importlib.import_module("thundersvm.thundersvm")
        SVC, SVR = upstream.SVC, upstream.SVR
        upstream_kernel = _KERNELS[self.kernel]
        if upstream_kernel not in upstream.KERNEL_TYPE:  # ThunderSVM would call exit()
            raise AdapterError(f"thundersvm: kernel {upstream_kernel!r} is not one of {upstream.KERNEL_TYPE}")
        common = dict(
            kernel=upstream_kernel,
            gamma=rbf_gamma(self.sigma),
            C=svm_C(self.lam),
            tol=self.options["tol"],
            max_iter=self.options["max_iter"],
            n_jobs=self.n_threads,
            max_mem_size=self.plan_["max_mem_size_mib"],
            verbose=True,
        )
        model = SVR(epsilon=self.options["epsilon"], **common) if self.task == "regression" else SVC(**common)
        with capture_output(keep_lines=400) as lines:
            returned = model.fit(X, target)
        self._upstream_log = lines
        succeeded = getattr(model, "_train_succeed", [0])[0] != -1
        if returned is None or not succeeded or not hasattr(model, "n_sv"):
            tail = " | ".join(lines[-3:])
            raise AdapterError(f"thundersvm: training failed and returned no model (log: {tail})")
        model.verbose = False  # predict would log every call
        self.model_ = model
        self._log = parse_thundersvm_log(lines)
        self._sign = 1.0
        if self.task == "binary":
            self._sign = self._orientation(X, target)

    def _orientation(self, X: np.ndarray, target: np.ndarray) -> float:
        """Sign that makes ``decision > 0`` mean +1 (``classes_[1]``).

        ThunderSVM 0.3.3 orders classes by first appearance in y, so its
        positive side is the label of the first training row; this is
        checked against its own ``predict`` on training rows.
        """
        sign = 1.0 if target[0] > 0 else -1.0
        rows = X[: min(len(X), 512)]
        with capture_output(keep_lines=0):
            raw = np.asarray(self.model_.decision_function(rows), dtype=np.float64)[:, 0]
            labels = np.asarray(self.model_.predict(rows), dtype=np.float64)
        decided = np.abs(raw) > 1e-6
        if decided.any() and not np.all((sign * raw[decided] > 0) == (labels[decided] > 0)):
            raise AdapterError("thundersvm: decision_function sign disagrees with predict; cannot orient classes")
        return sign

    def _decision(self, X: np.ndarray) -> np.ndarray:
        # ThunderSVM's C++ logger stays on after a verbose fit: keep its lines off stdout.
        with capture_output(keep_lines=0):
            if self.task == "regression":  # ThunderSVM's decision_function refuses SVR
                return np.asarray(self.model_.predict(X), dtype=np.float64)
            raw = self.model_.decision_function(X)
        if raw is None:
            raise AdapterError("thundersvm: decision_function returned nothing")
        return self._sign * np.asarray(raw, dtype=np.float64)[:, 0]

    @property
    def n_support_vectors_(self) -> int:
        """Number of support vectors of the fitted model."""
        return int(self.model_.n_sv)

    def _describe(self) -> dict[str, Any]:
        return {
            "conversions": {
                "gamma": rbf_gamma(self.sigma),
                "C": svm_C(self.lam),
                "n_jobs": self.n_threads,
                "max_mem_size": self.plan_["max_mem_size_mib"] if self.plan_ else None,
                "formulas": {"gamma": "1 / (2 sigma^2)", "C": "1 / lam", "n_jobs": "n_threads",
                             "max_mem_size": "MiB, from the budget (plan)"},
            },
            "notes": "ThunderSVM fits an unpenalised intercept; computes in float32 whatever dtype is asked",
        }

    def _convergence(self) -> dict[str, Any]:
        log = self._log
        history = log["history"]
        tol, max_iter = self.options["tol"], self.options["max_iter"]
        if not history or not log["finished"]:
            return {"converged": None, "reason": "ThunderSVM log had no exit line", "history": history,
                    "final": None}
        last = history[-1]
        if last["diff"] < tol:
            converged, reason = True, f"diff {last['diff']:.3g} < tol {tol}"
        elif max_iter != -1 and last["global_iter"] >= max_iter:
            converged, reason = False, f"stopped at max_iter={max_iter} with diff {last['diff']:.3g}"
        else:
            converged, reason = False, f"stopped because diff stalled at {last['diff']:.3g} (tol {tol})"
        return {"converged": converged, "reason": reason, "history": history, "final": last["diff"],
                "n_iter": last["global_iter"], "local_iter": last["local_iter"], "dual_objective": log["obj"],
                "n_support": self.n_support_vectors_}
