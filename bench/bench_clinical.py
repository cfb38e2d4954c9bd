"""Speed of the clinical / ML calibration statistics (calibdash.measures) on score cells and rows.

Three inputs: 65,536 score cells (one weighted point per distinct score, weights 1..99, so N is about
3.3 million rows: the product's largest exact cell table), 65,536 unweighted rows, and 1,000,000 unweighted
rows with scores rounded to 4 decimals (10,001 distinct scores). The target is under 0.5 s per statistic on
the 65,536 weighted points. A last line compares ICI from the 500 interpolation nodes with the loess fitted
exactly at every one of 10,000 distinct scores.

Run: `.venv/bin/python bench/bench_clinical.py`.
"""
import os
import platform
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
sys.path.insert(0, str(Path(__file__).resolve().parent))
from _timing import best_of  # noqa: E402
from calibdash.measures import binned, decomposition, hypothesis, recalibration, smoother  # noqa: E402

TARGET = 0.5



def inputs():
    rng = np.random.default_rng(0)
    p = rng.beta(1.2, 3.0, size=65_536)
    y = (rng.uniform(size=p.size) < p ** 1.3).astype(np.int8)
    w = rng.integers(1, 100, size=p.size)
    big = np.round(rng.beta(1.2, 3.0, size=1_000_000), 4)
    big_y = (rng.uniform(size=big.size) < big ** 1.3).astype(np.int8)
    return {
        f"65,536 cells (N = {int(w.sum()):,})": (p, y, w),
        "65,536 rows": (p, y, None),
        "1,000,000 rows (10,001 scores)": (big, big_y, None),
    }


STEPS = {
    "calibration_intercept_slope": lambda p, y, w: recalibration.calibration_intercept_slope(p, y, sample_weight=w),
    "ici (loess, 500 nodes)": lambda p, y, w: smoother.ici(p, y, sample_weight=w),
    "smoothed_calibration_curve": lambda p, y, w: smoother.smoothed_calibration_curve(p, y, sample_weight=w),
    "spiegelhalter_z": lambda p, y, w: hypothesis.spiegelhalter_z(p, y, sample_weight=w),
    "hosmer_lemeshow (10 groups)": lambda p, y, w: hypothesis.hosmer_lemeshow(p, y, sample_weight=w),
    "brier_decomposition (distinct)": lambda p, y, w: decomposition.brier_decomposition(p, y, sample_weight=w),
    "brier_decomposition (10 bins)": lambda p, y, w: decomposition.brier_decomposition(p, y, sample_weight=w, n_bins=10),
    "debiased_l2_ce (15 bins)": lambda p, y, w: binned.debiased_l2_ce(p, y, sample_weight=w),
    "adaptive_ece (15 bins)": lambda p, y, w: binned.adaptive_ece(p, y, sample_weight=w),
}


def interpolation_check(n=10_000):
    rng = np.random.default_rng(1)
    p = rng.beta(0.5, 3.0, size=n)
    y = (rng.uniform(size=n) < np.sqrt(p)).astype(int)
    t_fast, fast = best_of(lambda: smoother.ici(p, y), repeat=1)
    t_exact, exact = best_of(lambda: smoother.ici(p, y, max_points=None), repeat=1)
    diff = ", ".join(f"{k} {abs(fast[k] - exact[k]):.1e}" for k in fast)
    print(f"\nICI with 500 nodes ({t_fast:.3f} s) vs loess fitted at all {n:,} distinct scores ({t_exact:.2f} s): "
          f"absolute differences {diff}")


def main():
    data = inputs()
    names = list(data)
    print(f"machine: {platform.processor() or platform.machine()}, {os.cpu_count()} cores, "
          f"Python {platform.python_version()}, numpy {np.__version__}; best of 3, seconds\n")
    print(f"{'statistic':<32}" + "".join(f"{n:>34}" for n in names))
    slow = []
    for step, fn in STEPS.items():
        row = []
        for name in names:
            t, _ = best_of(lambda: fn(*data[name]))
            row.append(t)
        if row[0] >= TARGET:
            slow.append(step)
        print(f"{step:<32}" + "".join(f"{t:>34.4f}" for t in row))
    print(f"\ntarget: under {TARGET} s each on the 65,536 weighted cells -> "
          + ("all met" if not slow else "missed by " + ", ".join(slow)))
    interpolation_check()


if __name__ == "__main__":
    main()
