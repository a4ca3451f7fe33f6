"""Links to the MLflow UI's runs table of each experiment (``make ui``, a sweep's closing lines).

MLflow 3's UI opens an experiment, when its name is clicked, on the GenAI
"Overview" page (traces, sessions: empty for the harness's runs), whatever
the experiment's ``mlflow.experimentKind`` tag says; the runs table, where
a sweep's parent run folds its trials, is at ``#/experiments/<id>/runs``.
``make ui`` prints that link for every experiment of the store before it
starts the UI::

    python -m joker.bench.records.ui_links --uri sqlite:///results/mlflow.db --port 5000
"""

from __future__ import annotations

import argparse
import sys

from .redact import redact_uri

__all__ = ["experiment_links", "main", "runs_url", "ui_base"]


def ui_base(uri: str, port: int = 5000) -> str:
    """Where the UI of a store is served: the server itself for ``http(s)://``, else ``make ui``'s address."""
    if uri.startswith(("http://", "https://")):
        return redact_uri(uri.rstrip("/"))
    return f"http://127.0.0.1:{int(port)}"


def runs_url(uri: str, experiment_id: str, port: int = 5000) -> str:
    """The runs-table page of one experiment, e.g. ``http://127.0.0.1:5000/#/experiments/1/runs``."""
    return f"{ui_base(uri, port)}/#/experiments/{experiment_id}/runs"


def experiment_links(uri: str, port: int = 5000) -> list[tuple[str, str]]:
    """``(experiment name, runs-table link)`` of every active experiment of the store, by name.

    A SQLite file that does not exist yet has none (it is not created here).
    """
    from pathlib import Path

    from mlflow.tracking import MlflowClient

    if uri.startswith("sqlite:///") and not Path(uri[len("sqlite:///"):]).exists():
        return []
    exps = MlflowClient(tracking_uri=uri).search_experiments(max_results=1000)
    return sorted((e.name, runs_url(uri, e.experiment_id, port)) for e in exps)


def main(argv: list[str] | None = None) -> int:
    """Print one ``<link>  <experiment>`` line per experiment; exit status 0 (1 when the store cannot be read)."""
    p = argparse.ArgumentParser(prog="python -m joker.bench.records.ui_links", description=__doc__.split("\n\n")[0])
    p.add_argument("--uri", required=True, help="tracking URI of the store the UI serves")
    p.add_argument("--port", type=int, default=5000, help="port of the UI (make ui: UI_PORT)")
    args = p.parse_args(argv)
    try:
        links = experiment_links(args.uri, args.port)
    except Exception as exc:  # the UI itself will say more; do not stop `make ui`
        print(f"ui_links: cannot list the experiments of {redact_uri(args.uri)}: {exc}".splitlines()[0],
              file=sys.stderr)
        return 1
    if not links:
        print(f"no experiments yet in {redact_uri(args.uri)} (run a sweep first: make smoke)")
        return 0
    print("runs tables (MLflow 3 opens an experiment on its GenAI overview; these links open its runs):")
    width = max(len(name) for name, _ in links)
    for name, url in links:
        print(f"  {name.ljust(width)}  {url}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
