"""Metrics speed: rows against score cells (issue "Scale I: score cells").

1,000,000 rows with scores rounded to 4 decimals, measured as rows (unweighted) and as
cells (one weighted row per distinct (score, label), ~20,000 of them), beside a floor: np.sort
of 1,000,000 floats. A third column measures the same cells with every count times 100
(N = 1e8 rows), where MVCE works on a sample of ``metrics.MVCE_MAX_ROWS`` rows.

Run: `.venv/bin/python bench/bench_metrics.py`.
"""
import os
import platform
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
sys.path.insert(0, str(Path(__file__).resolve().parent))
from _timing import best_of  # noqa: E402
from calibdash import metrics  # noqa: E402

N = 1_000_000



def data(n=N, seed=0):
    """Scores rounded to 4 decimals (ties), labels drawn with P = score**2 (over-confident)."""
    rng = np.random.default_rng(seed)
    s = np.round(rng.uniform(size=n), 4)
    y = (rng.uniform(size=n) < s ** 2).astype(np.int8)
    return s, y


def cells(s, y):
    """Rows -> (score, label, count): one weighted row per distinct (score, label)."""
    key, count = np.unique(np.round(s * 1e4).astype(np.int64) * 2 + y, return_counts=True)
    return key // 2 / 1e4, key % 2, count


def main():
    s, y = data()
    cs, cy, cn = cells(s, y)
    assert cn.sum() == N
    inputs = {
        "rows (1e6, unweighted)": (s, y, None),
        f"cells ({cs.size:,}, weighted)": (cs, cy, cn),
        "cells x100 (N = 1e8)": (cs, cy, cn * 100),
    }
    steps = {
        "AUC": lambda p, l, w: metrics.auc(p, l, sample_weight=w),
        "ECE (10 equal-count)": lambda p, l, w: metrics.ece(p, l, sample_weight=w),
        "MCE (10 equal-count)": lambda p, l, w: metrics.mce(p, l, sample_weight=w),
        "ECE (10 equal-width)": lambda p, l, w: metrics.ece(p, l, strategy="uniform", sample_weight=w),
        "Brier": lambda p, l, w: metrics.brier(p, l, sample_weight=w),
        "LogLoss": lambda p, l, w: metrics.log_loss(p, l, sample_weight=w),
        "reliability table": lambda p, l, w: metrics.reliability_table(p, l, sample_weight=w),
        "MVCE (100 views)": lambda p, l, w: metrics.mvce(p, l, sample_weight=w),
        "summary() (all, MVCE 100 views)": lambda p, l, w: metrics.summary(p, l, sample_weight=w),
        "summary() without MVCE (1 view)": lambda p, l, w: metrics.summary(p, l, mvce_views=1, sample_weight=w),
    }
    floor, _ = best_of(lambda: np.sort(np.random.default_rng(1).uniform(size=N)))
    print(f"machine: {platform.processor() or platform.machine()}, {os.cpu_count()} cores, "
          f"Python {platform.python_version()}, numpy {np.__version__}")
    print(f"{N:,} rows, {np.unique(s).size:,} distinct scores, {cs.size:,} cells; best of 3, seconds\n")
    names = list(inputs)
    print(f"{'step':<34}" + "".join(f"{n:>26}" for n in names))
    results = {}
    for step, fn in steps.items():
        row = []
        for name in names:
            t, out = best_of(lambda: fn(*inputs[name]))
            row.append(t)
            results[(step, name)] = out
        print(f"{step:<34}" + "".join(f"{t:>26.4f}" for t in row))
    print(f"{'floor: np.sort of 1e6 floats':<34}{floor:>26.4f}")
    rows, cell = (results[("summary() (all, MVCE 100 views)", name)] for name in names[:2])
    print("\nrows vs cells, largest difference outside MVCE:",
          f"{max(abs(rows[k] - cell[k]) for k in metrics.METRIC_NAMES if k != 'MVCE'):.1e};",
          f"MVCE {rows['MVCE']:.6f} (rows) vs {cell['MVCE']:.6f} (cells: the same rows in another order)")


if __name__ == "__main__":
    main()
