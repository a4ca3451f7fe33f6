"""The problem a trial solves, stated: loss, regulariser, intercept, kernel, model, target, dtype, device.

The vocabulary is ``docs/contracts.md``, "Stated problems"; the harness
records :func:`stated_problem` in every trial (params ``problem.*`` and the
one-line tag ``problem``), and the report shows it beside the numbers, so
that two columns solving different problems (SVR against KRR, a fitted
bias against none) say so.
"""

from __future__ import annotations

from typing import Any

__all__ = ["INTERCEPTS", "PROBLEM_NAMES", "problem_text", "stated_problem"]

#: (task, loss) -> the problem's usual name.
PROBLEM_NAMES = {
    ("regression", "squared"): "KRR",
    ("regression", "epsilon_insensitive"): "SVR",
    ("regression", "huber"): "Huber kernel regression",
    ("binary", "hinge"): "L1-SVC",
    ("binary", "squared_hinge"): "L2-SVC",
    ("binary", "logistic"): "KLR",
    ("binary", "squared"): "KRR on -1/+1 labels",
    ("binary", "odm"): "ODM",
    ("multiclass", "hinge"): "L1-SVC (multiclass)",
    ("multiclass", "squared_hinge"): "L2-SVC (multiclass)",
    ("multiclass", "logistic"): "KLR (multiclass)",
    ("multiclass", "squared"): "KRR on one-hot -1/+1 labels",
}
#: How a model gets its intercept: none; an unregularised bias b fitted with the model; a regularised bias
#: (a constant added to the kernel); the harness's centring of a regression target (a bias fixed at the mean).
INTERCEPTS = ("none", "fitted bias", "regularised bias", "centred target")


def _intercept(adapter: Any, target: dict[str, Any] | None) -> str:
    kind = getattr(adapter, "intercept", "none")
    if adapter.options.get("fit_intercept") and getattr(adapter, "option_intercept", None):
        kind = adapter.option_intercept
    if target and target.get("transform") == "standardised":
        return "centred target" if kind == "none" else f"{kind} (on the centred target)"
    return kind


def _model(adapter: Any) -> str:
    own = adapter.stated_model() if adapter.plan_ is not None and hasattr(adapter, "stated_model") else None
    if own:
        return own[0]
    plan = adapter.plan_ or {}
    if plan.get("M") is not None:
        return f"Nystrom, M = {int(plan['M'])}"
    if plan.get("n_centers") is not None:
        return f"{int(plan['n_centers'])} centres"
    if plan.get("n_components") is not None:
        factor = adapter.options.get("factor", "rff")
        return f"{'Nystrom' if factor == 'nystroem' else 'random Fourier features'}, M = {int(plan['n_components'])}"
    return "exact kernel" if adapter.plan_ is not None else "not planned"


def stated_problem(adapter: Any, target: dict[str, Any] | None = None) -> dict[str, str]:
    """The problem ``adapter`` solves, as strings (params ``problem.<key>``).

    Parameters
    ----------
    adapter : baselines.base.Adapter
        Constructed (its plan, when made, names the model's size).
    target : dict or None
        The harness's target treatment (:meth:`joker.bench.trials.target.TargetScale.record`:
        ``transform``, ``mean``, ``std``); None for classification or a raw target.

    Returns
    -------
    dict of str
        ``name`` (:data:`PROBLEM_NAMES`), ``loss``, ``regulariser``,
        ``intercept`` (:data:`INTERCEPTS`), ``kernel``, ``sigma``, ``model``,
        ``target``, ``dtype``, ``device``; ``epsilon`` / ``delta`` for the
        SVR / Huber losses (in the units the method sees).
    """
    task, loss = adapter.task, adapter.loss
    if task == "regression":
        if target and target.get("transform") == "standardised":
            shown = (f"standardised on the training rows (mean {target['mean']:.6g}, std {target['std']:.6g}); "
                     "predictions mapped back, metrics in the target's unit")
        else:
            shown = "raw"
    else:
        shown = "labels -1/+1" if task == "binary" else "class labels"
    out = {
        "name": PROBLEM_NAMES.get((task, loss), loss),
        "loss": loss,
        "regulariser": ("lam/2 ||f||^2 on the summed loss" if getattr(adapter, "uses_lam", True)
                        else "none (early stopping by epochs)"),
        "intercept": _intercept(adapter, target),
        "kernel": adapter.kernel,
        "sigma": f"{adapter.sigma:.6g}",
        "model": _model(adapter),
        "target": shown,
        "dtype": adapter.dtype,
        "device": adapter.device,
    }
    own = adapter.stated_model() if adapter.plan_ is not None and hasattr(adapter, "stated_model") else None
    if own and own[1]:  # another kernel than the given sigma's: another problem, said in its name
        out["name"] += f" ({own[1]})"
        out["sigma"] = f"{own[1]}; the given {adapter.sigma:.6g} is not used"
    units = "standardised units" if target and target.get("transform") == "standardised" else "target units"
    for key, loss_name in (("epsilon", "epsilon_insensitive"), ("delta", "huber")):
        if loss == loss_name and adapter.options.get(key) is not None:
            out[key] = f"{float(adapter.options[key]):g} ({units})"
    return out


def problem_text(problem: dict[str, str]) -> str:
    """One line: ``"KRR (squared loss, lam/2 ||f||^2 ...), centred target, gaussian sigma=..., Nystrom, M = 64, float32, cpu"``."""
    loss = problem["loss"] + " loss" + (f", epsilon {problem['epsilon']}" if "epsilon" in problem else "") + (
        f", delta {problem['delta']}" if "delta" in problem else "")
    return (f"{problem['name']} ({loss}; regulariser {problem['regulariser']}); intercept: {problem['intercept']}; "
            f"{problem['kernel']} kernel, sigma {problem['sigma']}; {problem['model']}; {problem['dtype']}, "
            f"{problem['device']}")
