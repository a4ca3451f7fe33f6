"""The tuned-settings table of one scale (``conf/tuned/<scale>.yaml``): read, look up, apply, write.

The paper ran every method at per-dataset tuned settings (its Table A.3).
This module keeps such a table per scale, one row per (dataset, method,
budget): the bandwidth as a factor of the dataset's ``sigma`` (the median
heuristic unless the dataset gives a number), ``lam``, the SVR tube as a
factor of the method's ``epsilon`` where it applies, and optional adapter
``options`` (the knobs a method has alone), each row with its provenance:
the MLflow run ids of the tuned cell, its final fit and its chosen search
configuration, the validation metric and its value, the date and the git
commit of the final fit. The file is YAML (PyYAML, no Hydra, no pandas)::

    scale: local
    version: 3                  # +1 on every write that changes a row
    updated: 2026-12-05T13:40:00+00:00
    rows:
      - {dataset: a9a, method: falkon, budget: cpu-4g, sigma_factor: 0.5, lam: 0.01, ...}
    history:                    # one entry per version: what it wrote, and what it replaced
      - {version: 3, date: ..., commit: ..., experiment: table4, tracking_uri: ...,
         rows: [a9a/falkon/cpu-4g], replaced: [{...the old row...}]}

A table is written by :func:`merge_rows` (``python -m joker.bench.records.settings_writer``,
from a ``tune=true`` sweep's records) and read by :func:`apply_settings`
for every untuned trial of a sweep with ``settings_source=tuned``. A cell
with no row (a new method, a scale without a file) runs untuned and its
record says so (tag ``settings_source``); nothing falls back silently.

No Hydra, MLflow or pandas here: :mod:`joker.bench.records.settings_writer`
reads the store. The tags a record gets are
:data:`joker.bench.records.record.SETTINGS_TAGS`.
"""

from __future__ import annotations

import dataclasses
import datetime as _dt
import hashlib
import math
from pathlib import Path
from typing import Any

from .spec import ConfigError, TrialSpec

__all__ = ["SOURCES", "ROW_KEYS", "PROVENANCE_KEYS", "default_path", "load_table", "find_row",
           "settings_for",
           "check_row", "apply_settings", "merge_rows", "dump_table", "row_key"]

#: Values of the sweep key ``settings_source``: ``tuned`` reads the table, ``untuned`` the dataset's own setting.
SOURCES = ("tuned", "untuned")

#: The settings keys of a row (what a trial uses).
SETTING_KEYS = ("sigma_factor", "lam", "epsilon_factor", "options")
#: The provenance keys of a row (where its settings come from); informational, never applied.
PROVENANCE_KEYS = ("sigma", "epsilon", "val_metric", "val_value", "date", "commit", "git_dirty", "experiment",
                   "cell_run", "final_run", "chosen_run", "repetition", "n_configs", "search_rows", "version",
                   "note")
#: Every key a row may have.
ROW_KEYS = ("dataset", "method", "budget") + SETTING_KEYS + PROVENANCE_KEYS


def default_path(scale: str, root: Path | None = None) -> Path:
    """The table of ``scale``: ``<repo>/conf/tuned/<scale>.yaml``.

    Parameters
    ----------
    scale : str
        The sweep's scale (``local``, ``full``, ``paper``, ...).
    root : pathlib.Path, optional
        Repository root; default :func:`joker.bench.config.paths.repo_root`.
    """
    from .paths import repo_root

    return Path(root or repo_root()) / "conf" / "tuned" / f"{scale}.yaml"


def row_key(row: dict[str, Any]) -> str:
    """A row's identity: ``dataset/method/budget``."""
    return f"{row['dataset']}/{row['method']}/{row['budget']}"


def _positive(where: str, value: Any) -> float:
    try:
        x = float(value)
    except (TypeError, ValueError):
        raise ConfigError(f"{where} must be a positive number, got {value!r}") from None
    if not (x > 0 and math.isfinite(x)):
        raise ConfigError(f"{where} must be a positive number, got {value!r}")
    return x


def check_row(row: Any, where: str = "row") -> dict[str, Any]:
    """A row of the table, checked: its keys known, its settings positive numbers.

    Parameters
    ----------
    row : dict
        ``dataset``, ``method``, ``budget`` (str), ``sigma_factor`` and
        ``lam`` (> 0), optional ``epsilon_factor`` (> 0 or null) and
        ``options`` (a mapping of adapter options), and any of
        :data:`PROVENANCE_KEYS`.
    where : str
        Named in the error.

    Returns
    -------
    dict
        The row with ``sigma_factor``, ``lam`` (and ``epsilon_factor``) as
        floats and ``options`` a dict.

    Raises
    ------
    ConfigError
        On an unknown or missing key or a setting that is not a positive number.
    """
    if not isinstance(row, dict):
        raise ConfigError(f"{where} must be a mapping, got {row!r}")
    unknown = sorted(set(row) - set(ROW_KEYS))
    if unknown:
        raise ConfigError(f"{where} has unknown keys {unknown}; allowed: {list(ROW_KEYS)}")
    missing = [k for k in ("dataset", "method", "budget", "sigma_factor", "lam") if row.get(k) in (None, "")]
    if missing:
        raise ConfigError(f"{where} lacks {missing}")
    out = dict(row)
    for k in ("dataset", "method", "budget"):
        out[k] = str(out[k])
    out["sigma_factor"] = _positive(f"{where}.sigma_factor", row["sigma_factor"])
    out["lam"] = _positive(f"{where}.lam", row["lam"])
    if row.get("epsilon_factor") is not None:
        out["epsilon_factor"] = _positive(f"{where}.epsilon_factor", row["epsilon_factor"])
    opts = row.get("options") or {}
    if not isinstance(opts, dict):
        raise ConfigError(f"{where}.options must be a mapping of adapter options, got {opts!r}")
    out["options"] = dict(opts)
    return out


def load_table(path: Path) -> dict[str, Any] | None:
    """Read and check a settings table; ``None`` when the file does not exist.

    Parameters
    ----------
    path : pathlib.Path

    Returns
    -------
    dict or None
        ``scale``, ``version`` (int), ``updated``, ``rows`` (checked, see
        :func:`check_row`), ``history`` (list), ``sha256`` (of the file's
        bytes, the first 12 hex digits: which file a trial read) and ``path``.

    Raises
    ------
    ConfigError
        On a file that is not such a table (bad YAML, a bad row, a
        (dataset, method, budget) given twice).
    """
    import yaml

    path = Path(path)
    if not path.is_file():
        return None
    raw = path.read_bytes()
    try:
        data = yaml.safe_load(raw) or {}
    except yaml.YAMLError as exc:
        raise ConfigError(f"settings table {path} is not valid YAML: {exc}") from None
    if not isinstance(data, dict) or not isinstance(data.get("rows", []), list):
        raise ConfigError(f"settings table {path} must be a mapping with a list 'rows'")
    rows, seen = [], set()
    for i, row in enumerate(data.get("rows") or []):
        row = check_row(row, f"{path.name} rows[{i}]")
        if row_key(row) in seen:
            raise ConfigError(f"{path.name} gives {row_key(row)} twice")
        seen.add(row_key(row))
        rows.append(row)
    return {"scale": data.get("scale"), "version": int(data.get("version") or 0), "updated": data.get("updated"),
            "rows": rows, "history": list(data.get("history") or []),
            "sha256": hashlib.sha256(raw).hexdigest()[:12], "path": path}


def find_row(table: dict[str, Any] | None, dataset: str, method: str, budget: str) -> dict[str, Any] | None:
    """The row of (dataset, method, budget), or ``None`` (no table, or no such row)."""
    if not table:
        return None
    return next((r for r in table["rows"]
                 if (r["dataset"], r["method"], r["budget"]) == (dataset, method, budget)), None)


def _shown(path: Path) -> str:
    """``path`` relative to the repository root when inside it (what a record names)."""
    from .paths import repo_root

    try:
        return str(Path(path).resolve().relative_to(repo_root().resolve()))
    except ValueError:
        return str(path)


def apply_settings(spec: TrialSpec, source: str, path: Path | None = None,
                   tune: bool = False) -> tuple[TrialSpec, dict[str, str]]:
    """The trial at the table's settings for its cell, and the tags that say which settings it used.

    Parameters
    ----------
    spec : TrialSpec
        The untuned trial (:func:`joker.bench.config.schema.resolve_trial`).
    source : {"tuned", "untuned"}
        The sweep's ``settings_source``.
    path : pathlib.Path, optional
        The table; default :func:`default_path` of ``spec.scale``.
    tune : bool
        ``tune=true``: the search starts from the untuned setting, so the
        table is not read (the untuned trial is returned, tagged so).

    Returns
    -------
    spec : TrialSpec
        ``spec`` itself (the same hash as before this table existed) unless
        a row applies; then ``lam`` is the row's, ``tuning`` is
        ``{"stage": "settings", "sigma_factor"[, "epsilon_factor"]}``
        (the trial child multiplies the dataset's bandwidth and the
        method's ``epsilon`` by them, as for a tuned final fit) and the
        row's ``options`` are merged over the method's.
    tags : dict
        :data:`joker.bench.records.record.SETTINGS_TAGS`: ``settings_source`` (``tuned``, or
        ``untuned (...)`` with the reason: ``settings_source=untuned``,
        ``no settings file <path>``, ``no tuned row for <key> in <path>``,
        ``tune=true``), and for a tuned trial the file, its version and
        sha256, the row's final-fit run id and its validation metric.

    Raises
    ------
    ConfigError
        On an unknown ``source``, a malformed table, or a table whose
        ``scale`` is not the trial's.
    """
    if source not in SOURCES:
        raise ConfigError(f"settings_source must be one of {list(SOURCES)}, got {source!r}")
    if tune:
        return spec, {"settings_source": "untuned (tune=true: the search starts from the untuned setting)"}
    if source == "untuned":
        return spec, {"settings_source": "untuned (settings_source=untuned)"}
    path = Path(path) if path else default_path(spec.scale)
    table = load_table(path)
    shown = _shown(path)
    if table is None:
        return spec, {"settings_source": f"untuned (no settings file {shown})", "settings_file": shown}
    if table["scale"] is not None and spec.scale is not None and str(table["scale"]) != str(spec.scale):
        # settings tuned on another scale's rows would be reported as this scale's tuned settings
        raise ConfigError(f"settings table {shown} is the table of scale {table['scale']!r}, not {spec.scale!r} "
                          f"(the trial's); run with settings_source=untuned, or tune=true at scale={spec.scale}")
    key = f"{spec.dataset.name}/{spec.method.name}/{spec.budget.name}"
    row = find_row(table, spec.dataset.name, spec.method.name, spec.budget.name)
    file_tags = {"settings_file": shown, "settings_version": str(table["version"]),
                 "settings_sha256": table["sha256"]}
    if row is None:
        return spec, {"settings_source": f"untuned (no tuned row for {key} in {shown})", **file_tags}
    tuning: dict[str, Any] = {"stage": "settings", "sigma_factor": row["sigma_factor"]}
    if row.get("epsilon_factor") is not None:
        tuning["epsilon_factor"] = row["epsilon_factor"]
    method = spec.method
    if row["options"]:
        method = dataclasses.replace(method, options={**method.options, **row["options"]})
    val = (f"{row.get('val_metric')}={row.get('val_value')}" if row.get("val_metric") else "")
    tags = {"settings_source": "tuned", **file_tags, "settings_row_run": str(row.get("final_run") or ""),
            "settings_row_val": val}
    return dataclasses.replace(spec, lam=row["lam"], tuning=tuning, method=method), tags


def _now() -> str:
    return _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds")


def merge_rows(path: Path, scale: str, new_rows: list[dict[str, Any]], provenance: dict[str, Any],
               replace: bool = True) -> dict[str, Any]:
    """Write ``new_rows`` into the table at ``path``, keeping what it replaces; never a silent overwrite.

    Rows of other (dataset, method, budget) are kept as they are (with their
    own provenance). A row whose settings and final-fit run are the same as
    the one in the file is left alone. When any row is added or changed,
    the version goes up by one and ``history`` gets an entry with the date,
    ``provenance`` (commit, experiment, tracking URI) and, for each
    replaced row, the whole old row: the previous provenance is never lost
    (and git keeps the older files).

    Parameters
    ----------
    path : pathlib.Path
        The table (created when missing, with its folder).
    scale : str
        The table's scale; a file of another scale is refused.
    new_rows : list of dict
        Checked rows (:func:`check_row`).
    provenance : dict
        ``commit``, ``experiment``, ``tracking_uri`` (and anything else to
        keep in the history entry).
    replace : bool, default True
        False: refuse (ConfigError) to change an existing row; only new
        rows are added.

    Returns
    -------
    dict
        ``version`` (the file's, new or unchanged), ``added``, ``changed``,
        ``unchanged`` (lists of row keys), ``path``.

    Raises
    ------
    ConfigError
        On a table of another scale, a malformed table, or a change refused by ``replace=False``.
    """
    path = Path(path)
    old = load_table(path)
    if old is not None and old["scale"] not in (None, scale):
        raise ConfigError(f"{path} is the table of scale {old['scale']!r}, not {scale!r}")
    rows = {row_key(r): r for r in (old["rows"] if old else [])}
    version = (old["version"] if old else 0) + 1
    added, changed, unchanged, replaced = [], [], [], []
    for r in new_rows:
        r = check_row(r, f"new row {row_key(r)}")
        k = row_key(r)
        prev = rows.get(k)
        same = prev is not None and all(prev.get(x) == r.get(x) for x in SETTING_KEYS + ("final_run",))
        if same:
            unchanged.append(k)
            continue
        if prev is not None and not replace:
            raise ConfigError(f"{path} already has a row for {k} (final run {prev.get('final_run')}); "
                              "pass --replace to replace it (the old row is kept in the history)")
        (changed if prev is not None else added).append(k)
        if prev is not None:
            replaced.append(prev)
        rows[k] = {**r, "version": version}
    if not (added or changed):
        return {"version": old["version"] if old else 0, "added": [], "changed": [], "unchanged": unchanged,
                "path": path}
    history = (old["history"] if old else []) + [{
        "version": version, "date": _now(), **provenance, "rows": added + changed, "replaced": replaced}]
    table = {"scale": scale, "version": version, "updated": _now(),
             "rows": sorted(rows.values(), key=lambda r: (r["dataset"], r["method"], r["budget"])),
             "history": history}
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(".yaml.tmp")
    tmp.write_text(dump_table(table), encoding="utf-8")
    tmp.replace(path)
    return {"version": version, "added": added, "changed": changed, "unchanged": unchanged, "path": path}


def _plain_row(row: dict[str, Any]) -> dict[str, Any]:
    """A row in the file's key order, without empty optional keys."""
    out = {k: row[k] for k in ROW_KEYS if k in row and row[k] is not None and row[k] != ""}
    out.setdefault("options", {})
    return out


def dump_table(table: dict[str, Any]) -> str:
    """The YAML text of a table: a header comment, the header keys, one flow-style line per row, the history."""
    import yaml

    def one(obj: Any) -> str:
        return yaml.safe_dump(obj, default_flow_style=True, sort_keys=False, width=10**6).strip()

    lines = [f"# Tuned settings at scale={table['scale']} (Table A.3 of the paper, here): written by",
             "# `python -m joker.bench.records.settings_writer` from a tune=true sweep's records; read by every untuned",
             "# trial of a sweep with settings_source=tuned (docs/benchmark/tuning.md). Edit a row by hand only with a note.",
             f"scale: {table['scale']}", f"version: {table['version']}", f"updated: '{table['updated']}'", "rows:"]
    lines += [f"  - {one(_plain_row(r))}" for r in table["rows"]]
    lines.append("history:")
    for h in table["history"]:
        lines.append(f"  - {one(h)}")
    return "\n".join(lines) + "\n"


def settings_for(cfg: Any, spec: TrialSpec) -> tuple[TrialSpec, dict[str, str]]:
    """:func:`apply_settings` with the sweep's ``settings_source``, ``settings_file`` and ``tune``.

    Parameters
    ----------
    cfg : omegaconf.DictConfig or dict
        The composed job config.
    spec : TrialSpec
        Its untuned trial.

    Returns
    -------
    (TrialSpec, dict)
        See :func:`apply_settings`.
    """
    path = cfg.get("settings_file") or None
    return apply_settings(spec, str(cfg.get("settings_source") or "untuned"), Path(path) if path else None,
                          tune=bool(cfg.get("tune")))
