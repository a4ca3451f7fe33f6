"""The end-of-sweep check: exactly one finished record per trial in the store.

With many jobs writing to one tracking server, a lost write, a duplicate
after a retry, or a run that went to the wrong experiment would otherwise
go unnoticed until a table came out wrong. The sweep's process runs this
check once every job has ended (:meth:`joker.bench.sweep.callbacks.BenchCallback.on_multirun_end`).
"""

from __future__ import annotations

from typing import Any, Dict, List, Optional, Tuple


def check_records(
    store: Any, summaries: List[Dict[str, Any]], n_jobs: Optional[int]
) -> Tuple[bool, str]:
    """Check that the store holds exactly one finished, current run per trial of the sweep.

    Parameters
    ----------
    store : joker.bench.records.tracking.Store
        The sweep's experiment.
    summaries : list of dict
        One summary per ended job (``config_hash`` of its trial), as
        :func:`joker.bench.sweep.summary.read_done` returns them.
    n_jobs : int or None
        Jobs the sweep launched (``None``: unknown, not checked).

    Returns
    -------
    ok : bool
        True when every trial has exactly one finished run (superseded runs
        excluded) and every job left a summary.
    message : str
        One line: ``"store check: 14 trials, one finished record each"`` or
        what is wrong.
    """
    problems = []
    if n_jobs is not None and len(summaries) != n_jobs:
        problems.append(f"{n_jobs - len(summaries)} of {n_jobs} jobs left no summary")
    for s in summaries:
        chash = s.get("config_hash")
        n = len(store.runs_with_hash(chash)) if chash else 0
        if n != 1:
            problems.append(f"{s.get('method')} on {s.get('dataset')} (hash {chash}): {n} finished records")
    if problems:
        return False, "store check FAILED: " + "; ".join(problems[:10]) + (
            f" (+{len(problems) - 10} more)" if len(problems) > 10 else "")
    return True, f"store check: {len(summaries)} trials, one finished record each"
