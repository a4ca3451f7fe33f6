"""Report generator: the paper's Table 4 and figures, rebuilt from MLflow.

Run it as ``python -m reports`` (``make report``). It reads only the MLflow
store the harness writes (runs, their tags, params, metrics, metric
histories and artifacts), never logs or side files; see
``docs/contracts.md``, "One trial's MLflow record".

Modules
-------
vocab     the record's tag, metric and status names; metric units; install hints
load      find the store and the experiment, fetch and select trial runs
table     Table 4: one cell per (dataset, method, budget): median, range, mean, std
published reference numbers from ``reports/published.csv``
render    Markdown, LaTeX (booktabs) and CSV writers
curves    Joker convergence histories (``history.csv`` or ``curve_*``)
figures   the four figures (seaborn), each returning its plotted data
html      one self-contained HTML page (figures embedded as base64 PNG)
cli       the command line (``python -m reports``); one folder per experiment

Nothing here is imported by ``import joker``; mlflow, pandas, matplotlib
and seaborn are imported by these modules only.
"""

__all__ = ["build_report"]


def build_report(*args, **kwargs):
    """Build the whole report; see :func:`reports.cli.build_report`."""
    from .cli import build_report as _build

    return _build(*args, **kwargs)
