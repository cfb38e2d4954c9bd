"""Venn-Abers (IVAP): fit on N calibration rows and predict N test rows, beside a numpy sort of the same scores.

    .venv/bin/python bench/bench_venn_abers.py [--sizes 10000 100000 1000000] [--repeat 3]

Data: N calibration scores drawn from Beta(2, 3) (all distinct, the worst
case: the CSD has N points), labels with true probability ``score**1.4``,
and N fresh test scores from the same distribution. For each N: the best of
``--repeat`` runs of ``fit`` (tie collapsing, the CSD, the two GCM stacks
and sweeps of Algorithms 1 to 4) and of ``predict`` (one binary search per
test score, then the log-loss merge) and of ``predict_interval``, beside
``np.sort`` and ``np.argsort`` of the N calibration scores (the floor any
method built on sorted scores pays). Target at N = 1e6: fit + predict under
5 s on 2 cores (the ``venn-abers`` PyPI package took 19 s there).
"""
from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))      # run as a script, as `make bench` does
from calibdash import calibrators  # noqa: E402


def sample(n: int, seed: int = 0):
    rng = np.random.default_rng(seed)
    s = rng.beta(2, 3, n)
    y = (rng.random(n) < s ** 1.4).astype(np.int8)
    return s, y, rng.beta(2, 3, n)


def best(repeat: int, fn) -> tuple[float, object]:
    out, t = None, float("inf")
    for _ in range(repeat):
        t0 = time.perf_counter()
        out = fn()
        t = min(t, time.perf_counter() - t0)
    return t, out


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sizes", type=int, nargs="+", default=[10_000, 100_000, 1_000_000])
    ap.add_argument("--repeat", type=int, default=3)
    args = ap.parse_args(argv)

    print(f"{'N':>10}  {'fit s':>7}  {'predict s':>9}  {'fit+pred s':>10}  {'interval s':>10}  "
          f"{'np.sort s':>9}  {'argsort s':>9}  distinct  mean width")
    for n in args.sizes:
        s, y, test = sample(n)
        t_fit, cal = best(args.repeat, lambda: calibrators.get("venn_abers").fit(s, y))
        t_pred, _ = best(args.repeat, lambda: cal.predict(test))
        t_int, (p0, p1) = best(args.repeat, lambda: cal.predict_interval(test))
        t_sort, _ = best(args.repeat, lambda: np.sort(s))
        t_arg, _ = best(args.repeat, lambda: np.argsort(s))
        print(f"{n:>10,}  {t_fit:7.3f}  {t_pred:9.3f}  {t_fit + t_pred:10.3f}  {t_int:10.3f}  "
              f"{t_sort:9.4f}  {t_arg:9.4f}  {cal.scores_.size:>8,}  {np.mean(p1 - p0):.3g}")


if __name__ == "__main__":
    main()
