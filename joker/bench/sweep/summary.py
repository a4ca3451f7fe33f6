"""What a sweep prints: one line per trial, a live indicator, a closing table.

The progress counter and the closing table read the per-job summaries of
:mod:`joker.bench.sweep.sweep_state`, so they work with every launcher (basic,
joblib, submitit) without talking to MLflow.
"""

from __future__ import annotations

import sys
import textwrap
import time
from typing import Any

#: Width of a console line; a longer reason wraps under the trial's line (never cut).
WIDTH = 100
#: Mark of a trial whose fit time was measured on a busy machine (``contended``).
CONTENDED_MARK = "†"
#: Word after ``ok`` of a trial whose model is no better than the trivial predictor (tag ``trivial_model``).
TRIVIAL_MARK = "trivial"


def _fmt_metric(name: str | None, value: Any) -> str:
    if not name or value is None:
        return "-"
    short = name.replace("test_", "")
    v = float(value)
    if short in ("accuracy", "auc", "f1"):
        return f"{short}={100 * v:.2f}%"
    return f"{short}={v:.4g}"


def _rows(n: Any) -> str:
    """Training rows in short, four significant digits: 500, 5k, 20k, 49.99k, 1.844M, 999.9k, 1000M."""
    n = int(n)
    for unit, size in (("M", 1_000_000), ("k", 1000)):
        if n >= size:
            v = n / size
            text = f"{v:.4g}" if v < 1000 else f"{v:.0f}"  # .4g of 999.96 would read 1000, not 1e+03
            return f"{text}{unit}"
    return str(n)


def dataset_label(s: dict[str, Any]) -> str:
    """``hepc`` for a data set's whole training split, ``hepc/20k`` for its first ``n_train`` rows.

    Parameters
    ----------
    s : dict
        A trial summary (keys ``dataset`` and, for a subset, ``n_train``).

    Returns
    -------
    str
    """
    name = str(s.get("dataset", "?"))
    return f"{name}/{_rows(s['n_train'])}" if s.get("n_train") else name


#: Widths of the method and dataset columns of a console line (:func:`format_line`, :func:`table`).
METHOD_WIDTH, DATASET_WIDTH = 14, 15


def fit_column(text: str, width: int) -> str:
    """``text`` cut to at most ``width`` characters, its middle replaced by "…" (start and end kept).

    A data set given by path (``file:household_power_consumption.txt/20k``)
    would push the line's other columns out of place; its start (the kind)
    and end (the size) say the most. The full name is in the record.

    Examples
    --------
    >>> fit_column("file:household_power_consumption.txt/20k", 15)
    'file:ho…txt/20k'
    """
    if len(text) <= width:
        return text
    head = (width - 1) // 2
    return text[:head] + "…" + text[len(text) - (width - 1 - head):]


def format_line(s: dict[str, Any], done: int | None = None, total: int | None = None) -> str:
    """A trial's console line: progress, method, dataset, status, metric, fit seconds, fit MiB; then its reason.

    Parameters
    ----------
    s : dict
        A trial summary (keys method, dataset, n_train, status, metric, value,
        fit_seconds, fit_rss_mib, cached, reason, contended, trivial).
    done, total : int, optional
        Trials finished so far and in the sweep.

    Returns
    -------
    str
        One line, then, for a failed or skipped trial, its whole reason
        wrapped at :data:`WIDTH` columns under it with a hanging indent (a
        reason is never cut); an ``ok`` trial with a trivial model
        (``trivial``: its reason) reads ``ok trivial`` with the reason
        under it. A contended fit time carries
        :data:`CONTENDED_MARK`. The memory column is the method's fit
        memory (``fit_rss_mib``), blank for a trial that did not run.
        A method or data set name longer than its column is cut in the
        middle (:func:`fit_column`), so the columns stay in place.
    """
    prog = ""
    if done is not None:
        prog = f"[{done:>3}/{total}] " if total else f"[{done:>3}] "
    secs = s.get("fit_seconds")
    mib = s.get("fit_rss_mib")
    mark = CONTENDED_MARK if s.get("contended") else ""
    status = str(s.get("status", "?")) + (" " + TRIVIAL_MARK if s.get("trivial") else "")
    line = (
        f"{prog}{fit_column(str(s.get('method', '?')), METHOD_WIDTH):<{METHOD_WIDTH}} "
        f"{fit_column(dataset_label(s), DATASET_WIDTH):<{DATASET_WIDTH}} "
        f"{status:<11} {_fmt_metric(s.get('metric'), s.get('value')):<22} "
        f"{'fit ' + format(secs, '.2f') + ' s' + mark if secs is not None else '-':<13} "
        f"{format(mib, '.0f') + ' MiB' if mib is not None else '-':>9}"
    )
    if s.get("cached"):
        line += "  (cached)"
    if s.get("status") not in ("ok", None) and s.get("reason"):
        line += "\n" + wrap(str(s["reason"]))
    elif s.get("trivial"):
        line += "\n" + wrap(f"{TRIVIAL_MARK} model: {s['trivial']}")
    return line


def wrap(text: str, indent: int = 6) -> str:
    """``text`` on lines of at most :data:`WIDTH` columns, each indented by ``indent`` spaces (whole words)."""
    pad = " " * indent
    return textwrap.fill(" ".join(text.split()), width=WIDTH, initial_indent=pad, subsequent_indent=pad,
                         break_long_words=False, break_on_hyphens=False)


def contended_warning(summaries: list[dict[str, Any]]) -> str:
    """The warning a sweep prints at its end when some fit times were measured on a busy machine ("" if none)."""
    busy = [q for q in summaries if q.get("contended")]
    if not busy:
        return ""
    lines = [f"warning: {len(busy)} trial(s) ran on a busy machine; their fit times ({CONTENDED_MARK}) "
             "are not comparable (re-run them with rerun=true on an idle machine):"]
    for q in busy:
        lines.append(f"  {q.get('method', '?')} on {dataset_label(q)} (repetition {q.get('repetition', 0)})")
        lines.append(wrap(str(q["contended"])))
    return "\n".join(lines)


def table(summaries: list[dict[str, Any]]) -> str:
    """The closing table of a sweep (one line per trial in the order given, then status counts)."""
    if not summaries:
        return "no trial finished"
    header = (
        f"{'method':<{METHOD_WIDTH}} {'dataset':<{DATASET_WIDTH}} {'status':<11} {'metric':<22} "
        f"{'fit time':<13} {'fit mem':>9}"
    )
    lines = [header, "-" * len(header)]
    for s in summaries:  # sweep order (job number), as the report's datasets
        lines.append(format_line(s))
    counts: dict[str, int] = {}
    for s in summaries:
        counts[s.get("status", "?")] = counts.get(s.get("status", "?"), 0) + 1
    trivial = sum(1 for s in summaries if s.get("trivial"))
    lines.append(
        f"{len(summaries)} trials: " + ", ".join(f"{v} {k}" for k, v in sorted(counts.items()))
        + (f" (of which {trivial} {TRIVIAL_MARK}: no better than the trivial predictor)" if trivial else "")
    )
    return "\n".join(lines)


class Ticker:
    """A live "running for N s" indicator of the current trial.

    Drawn with tqdm on a terminal (stderr); silent when stderr is not a TTY
    (CI logs get the one-line summaries only). Its width is the terminal's,
    or 80 x 24 when the terminal reports none (a pseudo-terminal of size
    0 x 0, as ``script`` or an ssh session without a size give): tqdm read
    0 columns and -1 rows there and drew nothing (issue 43).
    """

    def __init__(self, label: str, timeout_s: float, enabled: bool | None = None) -> None:
        self.bar = None
        if enabled is None:
            enabled = sys.stderr.isatty()
        if enabled:
            import shutil

            from tqdm import tqdm

            size = shutil.get_terminal_size((80, 24))  # a 0 x 0 pty: 80 x 24, not tqdm's 0 x -1
            self.bar = tqdm(
                total=round(timeout_s), desc=label, unit="s", leave=False, file=sys.stderr,
                ncols=min(WIDTH, size.columns), nrows=size.lines,
                bar_format="{desc} {elapsed} (limit {total} s) {bar}",
            )
        self._last = 0.0
        self._t0 = time.monotonic()

    def __call__(self, elapsed: float) -> None:
        """Advance to ``elapsed`` seconds."""
        if self.bar is not None and elapsed - self._last >= 0.5:
            self.bar.update(round(elapsed) - self.bar.n)
            self._last = elapsed

    def close(self) -> None:
        """Remove the indicator."""
        if self.bar is not None:
            self.bar.close()
