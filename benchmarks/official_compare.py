"""Joker against the official implementation: the anchor figures, the ratios and their table (issue 13).

The official code's figures below are the corrected ones of
``docs/anchors.md`` ("The official Joker implementation on 5,000 points"),
re-measured side by side with our solver on a quiet machine (the first
measurements were taken under load and were up to 48 times too slow). They
are used only when the official code is not timed in the same run
(``OFFICIAL_JOKER_ROOT`` unset, or the checkout unusable), and every row
built from them says so.

Two ratios, official time over ours, with the targets of issue 13:

* to a relative gap of 1e-3: (official seconds to a gap of 1e-3) / (Joker
  seconds to a gap of 1e-3), target at least 20x. Both are timed by the
  same rule: the solver's own time until the first certificate whose gap
  is at most 1e-3 (the official code: after a chunk of 100 blocks; Joker:
  after an epoch, from its ``history_``). Joker's own stopping rule also
  asks for a KKT residual of at most sqrt(tol), which the official code's
  timing does not; its full fit time is reported beside;
* per epoch: (official seconds per epoch) / (Joker fit seconds / Joker
  epochs). Its target of at least 10x is judged on the HEPC random-feature
  epoch, where issue 13 sets it (at most 1.6 s per epoch); on the
  5,000-point problems it is shown for information: an epoch of either
  solver is a different amount of work (the official code runs up to 50
  trust-region iterations per block of 512), so the time to the same gap
  is the comparison there.

Both solvers run at the same precision: the official code in float32 (its
settings, :data:`benchmarks.official_joker.SETTINGS`), and for this table
Joker too (``matched``: a second fit of the problem in the official
dtype; the anchor rows keep float64, whose optima ``docs/anchors.md``
gives). Where no matched fit exists (results of older runs), Joker's own
fit is used.

Where the anchors give a range (KRR: 0.69-0.79 s) the ratio uses its low
end, the official code at its fastest.
"""

from __future__ import annotations

__all__ = ["OFFICIAL_ANCHORS", "PER_EPOCH_TARGET", "TO_GAP_TARGET", "ANCHOR_LABEL", "figures", "anchor_figures",
           "to_gap_seconds", "compared", "ratios", "verdict", "table"]

#: The official code on the comparison problems (docs/anchors.md, corrected figures).
#: ``blocks_s``: (low, high) seconds for ``blocks`` blocks; ``epochs``: the epochs those blocks make;
#: ``gap``: relative gap after them; ``to_gap_s``: seconds to a gap of 1e-3 (None: not measured);
#: ``joker_s``: our solver in the same session (to 1e-3, or per epoch for HEPC);
#: ``optimum``: float64 optimal primal; ``metric``: test metric at the optimum.
OFFICIAL_ANCHORS = {
    "krr-5k": dict(blocks=100, epochs=10.0, blocks_s=(0.69, 0.79), gap=1.4e-2, to_gap_s=8.8, joker_s=0.17,
                   optimum=266.551, metric="MSE 0.0810"),
    "l2svc-5k": dict(blocks=100, epochs=10.0, blocks_s=(3.47, 3.47), gap=6.4e-3, to_gap_s=10.3, joker_s=0.46,
                     optimum=838.649, metric="acc 93.0%"),
    "klr-5k": dict(blocks=100, epochs=10.0, blocks_s=(2.79, 2.79), gap=8.8e-3, to_gap_s=None, joker_s=0.53,
                   optimum=1828.702, metric="acc 91.6%"),
    "rffkrr-5k": dict(blocks=100, epochs=10.0, blocks_s=(2.10, 2.10), gap=1.5e-2, to_gap_s=None, joker_s=0.24,
                      optimum=269.514, metric="MSE 0.0855 (another RFF draw)"),
    "hepc-rff2048": dict(blocks=None, epochs=1.0, blocks_s=(16.4, 16.4), gap=0.34, to_gap_s=None, joker_s=2.23,
                         optimum=None, metric=None),
}
PER_EPOCH_TARGET = 10.0
TO_GAP_TARGET = 20.0
ANCHOR_LABEL = "anchors (docs/anchors.md), not this run"


def anchor_figures(name, note=""):
    """The official figures of one problem from :data:`OFFICIAL_ANCHORS`, labelled as anchors.

    Parameters
    ----------
    name : str
        A key of :data:`OFFICIAL_ANCHORS`.
    note : str
        Appended to the label (why this run's official figure is missing).

    Returns
    -------
    dict
        ``source, first_s, epochs_first, s_per_epoch, first_gap, to_gap_s, to_gap_at_least, first_text, load``
        (``to_gap_at_least``: seconds the official code ran without reaching 1e-3, a lower bound of
        its time to it; ``load``: the 1-minute load average when it started; None here).
    """
    a = OFFICIAL_ANCHORS[name]
    lo, hi = a["blocks_s"]
    return dict(source=ANCHOR_LABEL + (f"; {note}" if note else ""), first_s=lo, epochs_first=a["epochs"],
                s_per_epoch=lo / a["epochs"], first_gap=a["gap"], to_gap_s=a["to_gap_s"], to_gap_at_least=None,
                first_text=f"{lo:.2f}-{hi:.2f}" if hi != lo else f"{lo:.2f}", load=None)


def figures(name, official):
    """The official figures for Joker problem ``name``: this run's result when ok, else the anchors.

    Parameters
    ----------
    name : str
        A key of :data:`OFFICIAL_ANCHORS`.
    official : dict or None
        The result of the official problem in this run (``status`` ``ok``, ``unavailable``, ``error``...).

    Returns
    -------
    dict
        As :func:`anchor_figures`, with ``source`` ``this run`` when measured now.
    """
    if official is None or official.get("status") != "ok":
        note = "" if official is None or official.get("status") == "anchors" else \
            f"this run's official {official.get('status')}"
        return anchor_figures(name, note)
    reached = official["to_gap_s"] is not None
    ran_on = official["blocks"] > official["blocks_first"]  # it kept going after the first chunk, without reaching 1e-3
    return dict(source="this run", first_s=official["first_s"], epochs_first=official["epochs_first"],
                s_per_epoch=official["s_per_epoch"], first_gap=official["first_gap"], to_gap_s=official["to_gap_s"],
                to_gap_at_least=official["fit_s"] if not reached and ran_on else None,
                first_text=f"{official['first_s']:.2f}", load=official.get("load_1min"))


def to_gap_seconds(history, tol=1e-3):
    """Seconds to the first certificate whose relative gap is at most ``tol``, or None.

    Parameters
    ----------
    history : list of dict
        A solver's certificates in order (Joker's ``history_``: ``seconds``
        since the solve began, ``gap``).
    tol : float
        The gap both solvers are timed to (:data:`benchmarks.official_joker.GAP_TOL`).

    Returns
    -------
    float or None
    """
    for row in history or ():
        if row.get("gap") is not None and float(row["gap"]) <= tol:
            return float(row["seconds"])
    return None


def compared(joker):
    """The Joker fit the official code is compared with: the precision-matched one when it ran.

    Parameters
    ----------
    joker : dict or None
        Our result; its ``matched`` entry (a fit in the official code's dtype), when present, is used.

    Returns
    -------
    dict or None
        ``status, fit_s, epochs, gap, to_gap_s, dtype`` (``to_gap_s`` from the history; the fit time
        when a result has no history and its gap is at most 1e-3).
    """
    if joker is None or joker.get("status") != "ok":
        return None
    j = joker.get("matched") or joker
    if j.get("status", "ok") != "ok":
        return None
    to_gap = j.get("to_gap_s")
    if to_gap is None and "history" in j:
        to_gap = to_gap_seconds(j["history"])
    if to_gap is None and "history" not in j and j.get("gap", 1.0) <= 1e-3:
        to_gap = j.get("fit_s")
    return dict(status="ok", fit_s=j.get("fit_s"), epochs=j.get("epochs"), gap=j.get("gap"), to_gap_s=to_gap,
                dtype=j.get("dtype", joker.get("dtype")))


def ratios(joker, fig):
    """Per-epoch and time-to-1e-3 ratios (official / Joker); None where a figure is missing.

    Parameters
    ----------
    joker : dict or None
        Our result (``fit_s``, ``epochs``, ``gap``, ``status``, optionally ``history``,
        ``to_gap_s`` and ``matched``; see :func:`compared`).
    fig : dict
        :func:`figures`.

    Returns
    -------
    (per_epoch, to_gap, lower) : (float or None, float or None, bool)
        ``to_gap`` is None unless Joker reached a gap of 1e-3 and the official time to it is known;
        ``lower`` is True when ``to_gap`` is only a lower bound (the official code stopped short of 1e-3).
    """
    j = compared(joker)
    if j is None or not j.get("fit_s"):
        return None, None, False
    per_epoch = fig["s_per_epoch"] / (j["fit_s"] / max(1, j["epochs"] or 0))
    official_s = fig["to_gap_s"] or fig.get("to_gap_at_least")
    if not official_s or j["to_gap_s"] is None:
        return per_epoch, None, False
    to_gap = official_s / j["to_gap_s"] if j["to_gap_s"] > 0 else float("inf")  # certified at its start
    return per_epoch, to_gap, not fig["to_gap_s"]


def _verdict_one(ratio, target, lower=False):
    if ratio is None:
        return "-"
    if lower:  # only "at least": a pass if the bound already meets the target, undecided otherwise
        return f"> {ratio:.1f}x {'PASS' if ratio >= target else 'undecided'}"
    return f"{ratio:.1f}x {'PASS' if ratio >= target else 'MISS'}"


def verdict(joker, fig):
    """One-line verdict of a 5,000-point problem against the official figures (to 1e-3: target 20x)."""
    per_epoch, to_gap, lower = ratios(joker, fig)
    j = compared(joker) or {}
    return (f"to 1e-3 {_verdict_one(to_gap, TO_GAP_TARGET, lower)} (>= {TO_GAP_TARGET:g}x, Joker "
            f"{j.get('dtype') or '?'}); per epoch {_f(per_epoch, '.1f')}x (information); official: {fig['source']}")


def _f(x, spec):
    return "-" if x is None else format(x, spec)


def table(results, counterpart):
    """Headers and rows of the side-by-side table.

    Parameters
    ----------
    results : list of dict
        Every result of the run (Joker problems and ``official-*`` problems).
    counterpart : dict
        Joker problem name -> its official problem name.

    Returns
    -------
    (headers, rows)
        One row per Joker problem of :data:`OFFICIAL_ANCHORS` that ran or whose official counterpart ran.
    """
    by_name = {r["problem"]: r for r in results}
    headers = ["problem", "official: source", "official first blocks s (epochs)", "official gap then",
               "official s/epoch", "official to 1e-3 s", "official metric", "Joker dtype", "Joker to 1e-3 s",
               "Joker fit s (epochs)", "Joker s/epoch", "Joker gap", "per-epoch ratio",
               f"to-1e-3 ratio (>= {TO_GAP_TARGET:g}x)", "load at start (Joker / official)"]
    rows = []
    for name in OFFICIAL_ANCHORS:
        joker, official = by_name.get(name), by_name.get(counterpart.get(name))
        if joker is None and official is None:
            continue
        fig = figures(name, official)
        per_epoch, to_gap, lower = ratios(joker, fig)
        measured = fig["source"] == "this run"
        if measured:
            to_gap_text = _f(fig["to_gap_s"], ".2f") if fig["to_gap_s"] is not None else \
                f"> {official['fit_s']:.1f} (gap {official['gap']:.1e} after {official['blocks']} blocks)"
            metric = official.get("metric")
            metric_text = "" if not metric else (f"acc {100 * metric[1]:.2f}%" if metric[0] == "accuracy"
                                                 else f"{metric[0]} {metric[1]:.4f}")
        else:
            to_gap_text = _f(fig["to_gap_s"], ".1f") if fig["to_gap_s"] else "not measured"
            metric_text = ""
        j = compared(joker)
        ok = j is not None
        epoch_target = PER_EPOCH_TARGET if name.startswith("hepc") else None  # issue 13 sets it on HEPC
        rows.append([
            name, fig["source"], f"{fig['first_text']} ({fig['epochs_first']:.1f})",
            _f(fig["first_gap"], ".1e") + (" (ours)" if measured else ""), _f(fig["s_per_epoch"], ".3f"),
            to_gap_text, metric_text, (j or {}).get("dtype") or "-",
            _f(j["to_gap_s"], ".2f") if ok else "-",
            f"{j['fit_s']:.2f} ({j['epochs']})" if ok else (joker or {}).get("status", "not run"),
            _f(j["fit_s"] / max(1, j["epochs"]), ".3f") if ok else "-",
            _f(j["gap"], ".1e") if ok else "-",
            _verdict_one(per_epoch, epoch_target) if epoch_target else f"{_f(per_epoch, '.1f')}x",
            _verdict_one(to_gap, TO_GAP_TARGET, lower),
            f"{_f((joker or {}).get('load_1min'), '.1f')} / {_f(fig['load'], '.1f')}",
        ])
    return headers, rows
