"""Score cells at scale: read a Parquet file, aggregate its rows into cells, evaluate six calibrators on them.

Issue "Scale I" targets, measured here beside their floors (a numpy sort and a Parquet read of the same rows):
`python -m calibdash evaluate` on a 10,000,000-row Parquet file with platt,histogram,isotonic,bbq,elite,abb in under
20 s wall, read included, at a peak RSS under 1.5 GB (the last table runs the command itself and reads its peak RSS).

Run: `.venv/bin/python bench/bench_cells.py [ROWS ...]` (default 1e6 and 1e7 rows).
"""
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import pandas as pd

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from calibdash.evaluation import cells
from calibdash import load_scores  # noqa: E402
from calibdash.evaluation.holdout import Scheme, cell_parts, evaluate_cells  # noqa: E402

METHODS = "platt,histogram,isotonic,bbq,elite,abb"


def timed(fn):
    t0 = time.perf_counter()
    out = fn()
    return time.perf_counter() - t0, out


def make_file(n: int, folder: str) -> str:
    """A click-like data set: float32 scores crowded near 0, 8% positives, two categorical features."""
    rng = np.random.default_rng(1)
    s = rng.beta(1.2, 20, n).astype(np.float32)
    device = rng.choice(["mobile", "desktop", "tablet"], n)
    y = (rng.random(n) < np.clip(1.4 * s * np.where(device == "mobile", 1.2, 0.9), 0, 1)).astype(np.int8)
    path = os.path.join(folder, f"scores_{n}.parquet")
    pd.DataFrame({"score": s, "label": y, "device": pd.Categorical(device),
                  "site": pd.Categorical(rng.integers(0, 50, n).astype(str))}).to_parquet(path, index=False)
    return path


def main(sizes):
    print(f"machine: {os.cpu_count()} cores, Python {sys.version.split()[0]}")
    print(f"{'rows':>12} {'cells':>8} {'sort':>7} {'read pq':>8} {'load':>7} {'aggregate':>10} "
          f"{'evaluate 6':>11} {'CLI wall':>9} {'CLI peak RSS':>13}")
    with tempfile.TemporaryDirectory() as tmp:
        for n in sizes:
            path = make_file(n, tmp)
            t_sort, _ = timed(lambda: np.sort(np.random.default_rng(0).random(n)))
            t_read, _ = timed(lambda: pd.read_parquet(path, columns=["score", "label"]))
            t_load, ss = timed(lambda: load_scores(path))
            scheme = Scheme()
            t_agg, c = timed(lambda: cells.aggregate(ss.scores, ss.labels, cell_parts(ss.n_rows, scheme)))
            t_eval, _ = timed(lambda: evaluate_cells(c, METHODS, scheme))
            # GNU time reports the command's own peak (a forked child's rusage would count the parent's pages)
            cmd = ["/usr/bin/time", "-f", "%M", sys.executable, "-m", "calibdash", "evaluate", path,
                   "--methods", METHODS]
            t_cli, done = timed(lambda: subprocess.run(cmd, capture_output=True, text=True, check=True))
            peak = int(done.stderr.strip().splitlines()[-1]) / 1024 ** 2
            print(f"{n:>12,} {len(c):>8,} {t_sort:>7.2f} {t_read:>8.2f} {t_load:>7.2f} {t_agg:>10.2f} "
                  f"{t_eval:>11.2f} {t_cli:>9.2f} {peak:>10.2f} GB")
            del ss, c
    print("seconds; 'evaluate 6': fit + judge the six methods on the cells (split 70/30) with all metrics; "
          "'CLI wall' and 'CLI peak RSS': `python -m calibdash evaluate FILE --methods ...` as a command.")


if __name__ == "__main__":
    main([int(float(a)) for a in sys.argv[1:]] or [1_000_000, 10_000_000])
