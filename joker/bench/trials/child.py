"""The trial process's entry point: a plain trial or a tuned cell's search.

Usage (started by :mod:`joker.bench.trials.runner` or forked by
:mod:`joker.bench.trials.zygote`, not by hand)::

    python -m joker.bench.trials.child SPEC_JSON RESULT_JSON

It sits above :mod:`joker.bench.trials.trial` (the steps of one fit) and
:mod:`joker.bench.trials.tuning` (the search, which runs those steps once per
configuration), so that neither of the two imports the other's caller: the
choice between them is made here.
"""

from __future__ import annotations

import sys
import time
import traceback
from pathlib import Path
from typing import Any

from ..atomic import write_json_atomic
from ..config.spec import SPEC_DIGEST_KEY, TrialSpec, spec_digest
from ..measure.fitmem import rss_bytes
from ..records.record import MIB
from . import trial
from .tuning import run_search


def run(spec: TrialSpec, progress: trial.Progress, res: dict[str, Any]) -> dict[str, Any]:
    """Run the trial of ``spec``: its search when ``spec.tuning["stage"]`` is ``"search"``, else one fit.

    Parameters
    ----------
    spec : TrialSpec
        The trial.
    progress : joker.bench.trials.trial.Progress
        Where the phases are written.
    res : dict
        The result, filled as the trial goes (:func:`joker.bench.trials.trial.run`).

    Returns
    -------
    dict
        ``res``.
    """
    search = bool(spec.tuning) and spec.tuning.get("stage") == "search"
    return trial.run(spec, progress, res, body=run_search if search else None)


def main(argv: list[str] | None = None) -> int:
    """Run the spec of ``argv[1]``, always write the result to ``argv[2]``; return 0.

    A failure (an exception the trial did not classify) is a result too:
    status and reason from :func:`joker.bench.trials.trial._failure`. The
    result also carries ``wall_seconds``, the child's peak RSS in MiB and the
    heavy modules (MLflow, Hydra, pandas) the process imported (none expected).
    """
    argv = sys.argv if argv is None else argv
    spec_path, result_path = Path(argv[1]), Path(argv[2])
    progress = trial.Progress(result_path.with_name("progress.json"))
    t0 = time.perf_counter()
    result: dict[str, Any] = {"status": "ok", "reason": "", "metrics": {}}
    try:
        text = spec_path.read_text()
        result[SPEC_DIGEST_KEY] = spec_digest(text)  # which spec this result is of (the parent checks)
        run(TrialSpec.from_json(text), progress, result)
    except Exception as exc:  # a failed trial is a result
        traceback.print_exc()
        result.update(trial._failure(exc))
    result["wall_seconds"] = time.perf_counter() - t0
    result["child_peak_rss_mib"] = rss_bytes()[1] / MIB
    result["heavy_modules"] = sorted(m for m in ("mlflow", "hydra", "pandas") if m in sys.modules)
    write_json_atomic(result_path, result, default=trial._json_default)
    sys.stdout.flush()
    sys.stderr.flush()
    return 0


if __name__ == "__main__":
    sys.exit(main())
