"""Command line: ``python -m joker.data list | info NAME | fetch NAME | verify NAME``.

``list``    the registered datasets, their split sizes and where their files are.
``info``    one dataset: task, n, d, split sizes, notes, where each file came from
            (parses and caches the files when they are local; never downloads).
``fetch``   obtain the files (mirror, cache or download) and build the array cache.
``verify``  check every local file against its known sha256, and the dataset's
            parsed-array cache (file sizes against their headers, sha256 of
            the data as written), and the bandwidth (sigma) cache; exit
            status 1 on a mismatch, a missing file or a damaged cache entry.
            Every file is hashed from its bytes: the memo of hashes by size
            and modification time (joker.data.hashing), which a byte
            flipped in place does not change, is not trusted, and is
            rewritten.
"""

from __future__ import annotations

import argparse
import sys

from .errors import ChecksumError, DataError
from .registry import get_spec, list_datasets

__all__ = ["main"]


def _where(spec) -> str:
    from .sources import find_local

    origins = []
    for f in spec.files:
        loc = find_local(spec, f, verify=False)
        origins.append(loc.origin if loc else ("remote" if f.sources else "missing"))
    order = ["missing", "remote", "cache", "mirror"]
    return min(origins, key=order.index)


def _cmd_list(args) -> int:
    """Print one line per dataset."""
    rows = [("name", "task", "d", "n_train", "n_test", "split", "files")]
    for name in list_datasets(args.task):
        s = get_spec(name)
        rows.append((name, s.task, str(s.n_features), f"{s.n_train:,}", f"{s.n_test:,}",
                     s.split, _where(s)))
    widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]))]
    for r in rows:
        print("  ".join(c.ljust(w) for c, w in zip(r, widths)).rstrip())
    return 0


def _cmd_info(args) -> int:
    """Print a dataset's description, sizes and provenance."""
    from .loader import prepare
    from .sources import find_local
    from .splits import make_split

    s = get_spec(args.name)
    print(f"{s.name}: {s.title}")
    print(f"  task: {s.task}" + (f" ({s.n_classes} classes)" if s.n_classes else ""))
    print(f"  d (features): {s.n_features}")
    print(f"  split: {s.split}; official sizes train {s.n_train:,} / test {s.n_test:,}")
    if s.homepage:
        print(f"  homepage: {s.homepage}")
    local = [find_local(s, f, verify=False) for f in s.files]
    for f, loc in zip(s.files, local):
        where = f"{loc.origin}: {loc.path}" if loc else "not local"
        print(f"  file [{f.role}] {f.name}: {where}")
        for url in f.urls:
            print(f"      url: {url}")
    if args.no_parse or not all(local):
        if not all(local):
            print(f"  (files not local: `python -m joker.data fetch {s.name}` downloads them)")
    else:
        prep = prepare(s, download=False)
        split = make_split(s, prep.n_rows)
        n = sum(prep.n_rows.values())
        print(f"  n (rows parsed): {n:,}")
        print(f"  split used by default: train {split.info['n_train']:,} / test "
              f"{split.info['n_test']:,}" + (f" ({split.info['rule']})"
                                            if "rule" in split.info else ""))
        origin = {loc.origin for loc in prep.located}
        print(f"  file origin: {', '.join(sorted(origin))}; arrays: "
              f"{'cache' if prep.from_cache else 'parsed now'} at {prep.directory}")
        for fname, fm in prep.meta.get("files", {}).items():
            counts = ", ".join(f"{k}={v}" for k, v in fm.items() if k not in ("features",))
            print(f"  {fname}: {counts}")
    print("  notes: " + s.notes)
    return 0


def _cmd_fetch(args) -> int:
    """Obtain a dataset's files and build its array cache."""
    from .loader import prepare
    from .sources import locate

    s = get_spec(args.name)
    if args.no_parse:
        for f in s.files:
            loc = locate(s, f, download=True, progress=not args.quiet)
            print(f"{loc.origin}: {loc.path}")
        return 0
    prep = prepare(s, download=True, progress=not args.quiet, verify=True)  # a corrupt entry is rebuilt
    for loc in prep.located:
        print(f"{loc.origin}: {loc.path}")
    print(f"arrays ({'cached' if prep.from_cache else 'parsed now'}): {prep.directory} "
          f"rows {prep.n_rows}")
    return 0


def _cmd_verify(args) -> int:
    """Check local copies against known checksums; 1 on any problem."""
    from .sources import find_local

    s = get_spec(args.name)
    status = 0
    located = []
    for f in s.files:
        try:
            loc = find_local(s, f, rehash=True)  # the bytes, not the memo (a flip in place keeps size and time)
        except ChecksumError as exc:
            print(f"MISMATCH {f.name}: {exc}")
            status = 1
            continue
        if loc is None:
            print(f"MISSING  {f.name} (not in a mirror nor in the cache)")
            status = 1
        elif loc.verified:
            print(f"OK       {loc.path} sha256 {loc.sha256} ({loc.origin})")
        else:
            print(f"UNKNOWN  {loc.path} sha256 {loc.sha256} ({loc.origin}; no published "
                  "checksum to compare with)")
        located.append(loc)
    if status == 0:
        status = _verify_arrays(s, located)
    return max(status, _verify_sigma_cache())


def _verify_sigma_cache() -> int:
    """Check every file of the bandwidth cache (``<home>/sigma``, shared by all datasets); 1 when one is damaged."""
    from .cache_check import damaged_json
    from .sources import data_home

    folder = data_home() / "sigma"
    damaged = damaged_json(folder)
    for p in damaged:
        print(f"CORRUPT  {p}: its check does not match its contents (or it has none); delete it, the next "
              "trial computes the bandwidth again")
    if not damaged and folder.is_dir():
        print(f"OK       {folder} sigma: {len(list(folder.glob('*.json')))} files, checks match")
    return 1 if damaged else 0


def _verify_arrays(spec, located) -> int:
    """Check the dataset's parsed-array cache entry (sizes, and sha256 where recorded); 1 when damaged."""
    from .cache import cache_key, entry_dir
    from .cache_check import ARRAYS_KEY, entry_problems, read_meta
    from .sources import data_home

    d = entry_dir(data_home(), spec, cache_key(spec, [loc.sha256 for loc in located]))
    if not d.is_dir():
        print(f"NOCACHE  {d} (the arrays are parsed on first use)")
        return 0
    problems = entry_problems(d, full=True)
    for p in problems:
        print(f"CORRUPT  {p}")
    if problems:
        print(f"         rebuild it: python -m joker.data fetch {spec.name} (a load rebuilds a cut-short or "
              "unreadable entry by itself; damage that keeps the sizes only fetch and verify find)")
        return 1
    meta = read_meta(d)
    how = "sizes and sha256 as written" if meta.get(ARRAYS_KEY) else "sizes (no checksum recorded: an older entry)"
    print(f"OK       {d} arrays: {len(meta['roles']) * 2} files, {how}")
    return 0


def main(argv=None) -> int:
    """Entry point of ``python -m joker.data``.

    Parameters
    ----------
    argv : list of str, optional
        Arguments (default: ``sys.argv[1:]``).

    Returns
    -------
    int
        Exit status: 0 success, 1 a data error (message on stderr), 2 usage.
    """
    p = argparse.ArgumentParser(prog="python -m joker.data", description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = p.add_subparsers(dest="command", required=True)
    pl = sub.add_parser("list", help="registered datasets")
    pl.add_argument("--task", choices=["regression", "binary", "multiclass"])
    pl.set_defaults(func=_cmd_list)
    pi = sub.add_parser("info", help="one dataset: n, d, task, split, provenance")
    pi.add_argument("name")
    pi.add_argument("--no-parse", action="store_true", help="do not parse local files")
    pi.set_defaults(func=_cmd_info)
    pf = sub.add_parser("fetch", help="download (if needed) and cache a dataset")
    pf.add_argument("name")
    pf.add_argument("--no-parse", action="store_true", help="only obtain the files")
    pf.add_argument("-q", "--quiet", action="store_true", help="no progress bar")
    pf.set_defaults(func=_cmd_fetch)
    pv = sub.add_parser("verify", help="check local files against known sha256")
    pv.add_argument("name")
    pv.set_defaults(func=_cmd_verify)
    args = p.parse_args(argv)
    try:
        return args.func(args)
    except DataError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1


if __name__ == "__main__":
    sys.exit(main())
