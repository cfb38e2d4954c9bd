"""Speed of ELiTE: the whole 50-lambda ensemble at 10k, 100k and 1M rows.

Run on demand with the project venv::

    .venv/bin/python bench/bench_elite.py
    .venv/bin/python bench/bench_elite.py --sizes 1000000 --data wiggly --repeat 1

Targets (issue 4): 50 lambdas at 100,000 rows in under 3 s, at 1,000,000 rows
in under 30 s, on the project's 2-core machine.

Data (``--data``), ``N`` continuous scores (no ties, so N distinct points):

* ``smooth``: ``s ~ Beta(2, 2)``, ``P(y = 1) = s**2`` (the BBQ bench's data);
* ``wiggly``: ``s ~ U(0, 1)``, ``P(y = 1) = 0.5 + 0.45 sin(40 s)`` (many knots:
  the hardest shape we tried);
* ``calibrated``: ``s ~ U(0, 1)``, ``P(y = 1) = s`` (the line is right; the
  small lambdas fit noise with hundreds of knots).

``fit s`` is wall-clock seconds of ``calibrators.get("elite").fit(s, y)``
(merging ties, lambda_max, 50 exact trend filters warm-started down the path,
AICc weights, averaged map), the best of ``--repeat`` runs; ``predict s`` is
``predict`` on the same N rows. Also shown: the solver's work (KKT checks are
O(N) passes, face solves O(knots) once segments are known), knots of the
heaviest model and at 1e-4 lambda_max, and the largest KKT violation
``max |nu| / lambda - 1`` over the 50 fits (from ``calibdash.explain``, which
solves the path again after the timing: the fitted calibrator keeps only its
averaged map).
"""
from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from calibdash import calibrators  # noqa: E402
from calibdash.calibrators import _trend_filter  # noqa: E402
from calibdash.explain import explain  # noqa: E402


def sample(n: int, data: str, seed: int = 0):
    rng = np.random.default_rng(seed)
    if data == "smooth":
        s = rng.beta(2, 2, n)
        p = s ** 2
    elif data == "wiggly":
        s = rng.uniform(size=n)
        p = 0.5 + 0.45 * np.sin(40 * s)
    elif data == "calibrated":
        s = rng.uniform(size=n)
        p = s
    else:
        raise SystemExit(f"unknown --data {data!r}")
    y = (rng.uniform(size=n) < p).astype(np.int8)
    return s, y


class _Counter:
    """Counts the solver's work by wrapping TrendFilter.path (no change to the solver)."""

    def __init__(self):
        self.kkt = self.faces = 0
        self._orig = _trend_filter.TrendFilter.path

    def __enter__(self):
        counter = self

        def path(solver, lams):
            out = counter._orig(solver, lams)
            counter.kkt, counter.faces = solver.kkt_checks, solver.face_solves
            return out

        _trend_filter.TrendFilter.path = path
        return self

    def __exit__(self, *exc):
        _trend_filter.TrendFilter.path = self._orig


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sizes", type=int, nargs="+", default=[10_000, 100_000, 1_000_000])
    ap.add_argument("--data", nargs="+", default=["smooth", "wiggly", "calibrated"],
                    choices=["smooth", "wiggly", "calibrated"])
    ap.add_argument("--repeat", type=int, default=3, help="runs per size below 1M (1M: one run)")
    args = ap.parse_args(argv)

    rows = []
    for data in args.data:
        for n in args.sizes:
            s, y = sample(n, data)
            best_fit = best_pred = float("inf")
            for _ in range(args.repeat if n < 1_000_000 else 1):
                with _Counter() as work:
                    t0 = time.perf_counter()
                    cal = calibrators.get("elite").fit(s, y)
                    t1 = time.perf_counter()
                cal.predict(s)
                t2 = time.perf_counter()
                best_fit, best_pred = min(best_fit, t1 - t0), min(best_pred, t2 - t1)
            path = explain(cal, s, y).path          # the path solved again, outside the timing
            heavy = int(path["knots"].iloc[int(path["weight"].idxmax())])
            what = (f"{data}: 50 lambdas, {work.kkt} KKT checks, {work.faces} face solves, "
                    f"knots {heavy} (heaviest) / {int(path['knots'].iloc[-1])} (1e-4 lambda_max), "
                    f"max KKT violation {path['kkt'].max():.1e}, "
                    f"{int((~path['converged']).sum())} not converged")
            rows.append((n, best_fit, best_pred, what))
            print(f"  done {data} N={n:,}: fit {best_fit:.2f} s", file=sys.stderr, flush=True)

    print(f"{'N':>9}  {'fit s':>8}  {'predict s':>9}  measured")
    for n, f, p, what in rows:
        print(f"{n:>9,}  {f:8.3f}  {p:9.3f}  {what}")


if __name__ == "__main__":
    main()
