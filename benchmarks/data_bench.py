"""Cache benchmark: first (parse) versus second (cached) load of a dataset.

``python -m benchmarks.data_bench`` (``make bench-data``) loads HEPC's full
paper split into a fresh, temporary ``JOKER_DATA_HOME`` (hash, parse,
write the cache), then again from the cache, and prints both times and
their ratio; the target is a ratio of at least 20. It also times the
anchors' 200,000 / 50,000 subset from the cache. Exit status 1 when the
ratio is below ``--min-ratio``.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time

__all__ = ["main", "time_loads"]


def time_loads(name: str, repeat: int = 3, **kwargs) -> dict:
    """Time a cold load and ``repeat`` warm loads of one dataset.

    Parameters
    ----------
    name : str
        Registry name.
    repeat : int
        Warm loads after the first; the median is reported.
    **kwargs
        Passed to :func:`joker.data.load_dataset`.

    Returns
    -------
    dict
        ``first_s``, ``second_s`` (the first warm load), ``warm_median_s``,
        ``ratio`` (first / second), ``n_train``, ``n_test``, ``arrays`` of
        the first load ("parsed" or "cache").
    """
    from joker.data.loader import load_dataset

    t0 = time.perf_counter()
    ds = load_dataset(name, **kwargs)
    first = time.perf_counter() - t0
    warm = []
    for _ in range(max(1, repeat)):
        t0 = time.perf_counter()
        ds2 = load_dataset(name, **kwargs)
        warm.append(time.perf_counter() - t0)
    return {"first_s": first, "second_s": warm[0], "warm_median_s": statistics.median(warm),
            "ratio": first / warm[0], "n_train": ds.n_train, "n_test": ds.n_test,
            "arrays": ds.source["arrays"], "warm_arrays": ds2.source["arrays"]}


def main(argv=None) -> int:
    """Entry point of ``python -m benchmarks.data_bench``.

    Returns
    -------
    int
        0 when the ratio reaches ``--min-ratio``, else 1.
    """
    p = argparse.ArgumentParser(prog="python -m benchmarks.data_bench", description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--dataset", default="hepc")
    p.add_argument("--repeat", type=int, default=3, help="warm loads (median shown)")
    p.add_argument("--home", help="use this JOKER_DATA_HOME (default: a fresh temp dir; "
                                  "an existing cache makes the first load warm too)")
    p.add_argument("--min-ratio", type=float, default=20.0)
    args = p.parse_args(argv)

    with tempfile.TemporaryDirectory(prefix="joker-data-bench-") as tmp:
        os.environ["JOKER_DATA_HOME"] = args.home or tmp
        r = time_loads(args.dataset, repeat=args.repeat)
        print(f"{args.dataset} full split ({r['n_train']:,} train / {r['n_test']:,} test), "
              f"JOKER_DATA_HOME={os.environ['JOKER_DATA_HOME']}")
        print(f"  first load  ({r['arrays']}): {r['first_s']:8.3f} s")
        print(f"  second load ({r['warm_arrays']}): {r['second_s']:8.3f} s "
              f"(median of {args.repeat} warm loads {r['warm_median_s']:.3f} s)")
        print(f"  ratio first/second: {r['ratio']:.1f}x (target >= {args.min_ratio:g}x)")
        if args.dataset == "hepc":
            s = time_loads("hepc", repeat=args.repeat, n_train=200_000, n_test=50_000)
            print(f"  anchors' subset 200,000 / 50,000 from the cache: "
                  f"{s['warm_median_s']:.3f} s (median)")
    return 0 if r["ratio"] >= args.min_ratio else 1


if __name__ == "__main__":
    sys.exit(main())
