"""Bootstrap speed: the paired Poisson bootstrap over score cells (issue "Scale I: score cells").

For 1e5, 1e6 and 1e7 rows: scores rounded to 4 decimals, labels drawn with P = score**2,
rows divided into 5 hashed folds (``cells.parts_for(n, "kfold")``, as 5-fold cross-fitting
judges every row) and aggregated into (fold, score) cells, about 50,000 of them. Five methods:
the raw scores and four stand-in calibrations that differ per fold (two smooth, one step
function with heavy ties, one squeezed). Measured: ``bootstrap_cells`` with 200 resamples and
every metric (points included), on all cores and on one, beside a floor: ``np.sort`` of as
many floats as there are rows. At 1e5 rows the row path (``bootstrap_metrics``) is timed on
20 resamples and scaled to 200.

Run: `.venv/bin/python bench/bench_bootstrap.py`.
"""
import os
import platform
import sys
from pathlib import Path

import numpy as np
import pandas as pd

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
sys.path.insert(0, str(Path(__file__).resolve().parent))
from _timing import best_of  # noqa: E402
from calibdash.evaluation import cells  # noqa: E402
from calibdash.evaluation.bootstrap import bootstrap_cells, bootstrap_metrics  # noqa: E402

SIZES = (100_000, 1_000_000, 10_000_000)
N_BOOT = 200



def data(n, seed=0):
    """Scores rounded to 4 decimals (ties), labels drawn with P = score**2 (over-confident)."""
    rng = np.random.default_rng(seed)
    s = np.round(rng.uniform(size=n), 4)
    y = (rng.uniform(size=n) < s ** 2).astype(np.int8)
    return s, y


def methods(score, part):
    """Five prediction columns for cells (or rows) of these scores and folds; calibrations differ per fold."""
    shift = 0.004 * part
    return pd.DataFrame({
        "uncalibrated": score,
        "smooth": np.clip(score ** 2 + shift, 0, 1),
        "steps": np.clip(np.round(score ** 2 * 20) / 20 + shift, 0, 1),
        "smooth2": np.clip(score ** 1.8 - shift, 0, 1),
        "squeezed": 0.2 + 0.6 * score ** 2,
    })


def main():
    print(f"python {platform.python_version()}, numpy {np.__version__}, {os.cpu_count()} cores")
    print(f"{'rows':>12} {'cells':>8} {'cells path':>11} {'1 worker':>9} {'floor sort':>11} {'x floor':>8}"
          f" {'row path':>9}")
    for n in SIZES:
        s, y = data(n)
        part = cells.parts_for(n, "kfold")
        c = cells.aggregate(s, y, part)
        pred = methods(c.score, c.part)
        t_all, boot = best_of(lambda: bootstrap_cells(pred, c.n, c.n_pos, n_boot=N_BOOT))
        t_one, _ = best_of(lambda: bootstrap_cells(pred, c.n, c.n_pos, n_boot=N_BOOT, workers=1))
        t_sort, _ = best_of(lambda: np.sort(s))
        row = "-"
        if n <= 100_000:
            t_rows, _ = best_of(lambda: bootstrap_metrics(methods(s, part), y, n_boot=20), repeat=1)
            row = f"{t_rows * N_BOOT / 20:.1f} s"
        print(f"{n:>12,} {len(c):>8,} {t_all:>9.3f} s {t_one:>7.3f} s {t_sort:>9.4f} s {t_all / t_sort:>8.1f}"
              f" {row:>9}")
    lo, hi = boot.interval("uncalibrated", "ECE")
    print(f"(last run: uncalibrated ECE {boot.table.loc['uncalibrated', ('ECE', 'value')]:.4f} "
          f"[{lo:.4f}, {hi:.4f}], {boot.n_boot} resamples x {boot.table.shape[0]} methods)")


if __name__ == "__main__":
    main()
