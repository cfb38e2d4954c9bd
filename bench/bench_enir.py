"""Speed of ENIR: the whole near-isotonic path, BIC weights and averaged map at 10k, 100k and 1M rows.

Run on demand with the project venv::

    .venv/bin/python bench/bench_enir.py
    .venv/bin/python bench/bench_enir.py --sizes 100000 --repeat 5 --data calibrated

Target: 100,000 rows in under 2 s (netcal's ENIR took 222 s there), on the
project's 2-core machine.

Data (``--data``), ``N`` continuous scores (no ties, so N distinct points):

* ``smooth``: ``s ~ Beta(2, 3)``, ``P(y = 1) = s**1.5`` (the conventions tests' data);
* ``calibrated``: ``s ~ U(0, 1)``, ``P(y = 1) = s``;
* ``noisy``: ``s ~ U(0, 1)``, ``P(y = 1) = 0.15 + 0.7 s`` (a weak score: long runs of
  violations, the longest paths).

Columns: ``fit s`` is wall-clock seconds of ``calibrators.get("enir").fit(s, y)``
(sort and merge ties, the whole path, up to 100 models scored and smoothed,
averaged map), the best of ``--repeat`` runs, and ``cpu s`` the process time of
that run (the wall clock includes waiting when other jobs share the cores);
``sort s`` is ``np.sort`` of the same scores, the floor any calibrator that
sorts pays; ``path s`` the heap-driven path alone. Then the path's breakpoints,
the models with positive weight and the knots of the fitted map.
"""
from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from calibdash import calibrators  # noqa: E402
from calibdash.calibrators._nearly_isotonic import breakpoints, near_isotonic_path  # noqa: E402
from calibdash.calibrators.enir import merge_points  # noqa: E402


def sample(n: int, data: str, seed: int = 0):
    rng = np.random.default_rng(seed)
    if data == "smooth":
        s = rng.beta(2, 3, n)
        p = s ** 1.5
    elif data == "calibrated":
        s = rng.uniform(size=n)
        p = s
    elif data == "noisy":
        s = rng.uniform(size=n)
        p = 0.15 + 0.7 * s
    else:
        raise SystemExit(f"unknown --data {data!r}")
    y = (rng.uniform(size=n) < p).astype(np.int8)
    return s, y


def best_of(repeat: int, fn):
    """(best wall seconds, process seconds of that run, last result)."""
    best, cpu, out = np.inf, np.inf, None
    for _ in range(repeat):
        w0, c0 = time.perf_counter(), time.process_time()
        out = fn()
        wall, proc = time.perf_counter() - w0, time.process_time() - c0
        if wall < best:
            best, cpu = wall, proc
    return best, cpu, out


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sizes", type=int, nargs="+", default=[10_000, 100_000, 1_000_000])
    ap.add_argument("--data", default="smooth", choices=["smooth", "calibrated", "noisy"])
    ap.add_argument("--repeat", type=int, default=3)
    args = ap.parse_args(argv)
    print(f"ENIR fit time, data = {args.data}, best of {args.repeat}")
    head = (f"{'rows':>10} {'fit s':>8} {'cpu s':>8} {'sort s':>8} {'fit/sort':>9} {'path s':>8} "
            f"{'breakpoints':>12} {'models':>7} {'knots':>7}")
    print(head)
    print("-" * len(head))
    for n in args.sizes:
        s, y = sample(n, args.data)
        fit, cpu, cal = best_of(args.repeat, lambda: calibrators.get("enir").fit(s, y))
        srt, _, _ = best_of(args.repeat, lambda: np.sort(s))
        x, pos, wt = merge_points(s, y)
        pth, _, path = best_of(1, lambda: near_isotonic_path(pos, wt))
        print(f"{n:>10,} {fit:>8.3f} {cpu:>8.3f} {srt:>8.4f} {fit / srt:>9.0f} {pth:>8.3f} "
              f"{breakpoints(path).size:>12,} {cal.n_models_:>7} {cal.knots_.size:>7,}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
