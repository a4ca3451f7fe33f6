"""``python -m joker.bench.settings --scale local``: write the tuned-settings table from a tune=true sweep.

Reads the tuned final fits of one experiment (default ``table4``) at one
scale from the MLflow store and merges them into ``conf/tuned/<scale>.yaml``
(:func:`joker.bench.settings.table.merge_rows`): new cells are added, a
cell tuned again replaces its row only with ``--replace`` (the default;
``--no-replace`` refuses), and every replaced row is kept whole in the
file's ``history`` with the new version's date, commit and store. Prints
what it added, changed and left out (cells whose final fit did not end ok).
Exit status 1 when nothing could be written (no tuned final fit ended ok),
2 on a bad store, experiment or table.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from ..config.spec import ConfigError
from ..records.provenance import git_info
from ..records.tracking import resolve_uri
from .collect import tuned_rows
from .table import default_path, merge_rows


def main(argv: list[str] | None = None) -> int:
    """Run the command line; return the exit status (0 written or unchanged, 1 no row, 2 error)."""
    ap = argparse.ArgumentParser(prog="python -m joker.bench.settings", description=__doc__.split("\n\n")[0])
    ap.add_argument("--scale", required=True, help="the sweep's scale (local, full, paper)")
    ap.add_argument("--experiment", default="table4", help="the tune=true sweep's experiment (default table4)")
    ap.add_argument("--uri", default=None, help="MLflow tracking URI (default: the harness's store)")
    ap.add_argument("--file", default=None, type=Path, help="the table (default conf/tuned/<scale>.yaml)")
    ap.add_argument("--no-replace", action="store_true", help="refuse to change an existing row")
    ap.add_argument("--dry-run", action="store_true", help="print the rows, write nothing")
    args = ap.parse_args(argv)
    uri = resolve_uri(args.uri)
    path = args.file or default_path(args.scale)
    try:
        rows, left_out = tuned_rows(uri, args.experiment, args.scale)
    except LookupError as exc:
        print(f"settings: {exc}", file=sys.stderr)
        return 2
    for line in left_out:
        print(f"settings: no row (cell stays untuned): {line}")
    if not rows:
        print(f"settings: no tuned final fit ended ok in experiment {args.experiment!r} at scale={args.scale} "
              f"({uri}); run the sweep with tune=true first", file=sys.stderr)
        return 1
    if args.dry_run:
        for r in rows:
            print(f"settings: would write {r['dataset']}/{r['method']}/{r['budget']}: sigma_factor="
                  f"{r['sigma_factor']} lam={r['lam']} epsilon_factor={r['epsilon_factor']} "
                  f"{r['val_metric']}={r['val_value']} (final run {r['final_run']})")
        return 0
    git = git_info()
    try:
        done = merge_rows(path, args.scale, rows, {"commit": git["git_commit"], "git_dirty": git["git_dirty"],
                                                   "experiment": args.experiment, "tracking_uri": uri},
                          replace=not args.no_replace)
    except ConfigError as exc:
        print(f"settings: {exc}", file=sys.stderr)
        return 2
    print(f"settings: {path} version {done['version']}: {len(done['added'])} added, {len(done['changed'])} "
          f"changed (old rows kept in its history), {len(done['unchanged'])} unchanged")
    return 0


if __name__ == "__main__":
    sys.exit(main())
