"""Foundation speed: load a 100,000-row CSV, fit + predict each classic calibrator, compute all metrics.

Target (issue 2): the whole pipeline under 1 s at 100,000 rows. Run: `.venv/bin/python bench/bench_foundation.py`.
"""
import os
import platform
import sys
import tempfile
from pathlib import Path

import numpy as np
import pandas as pd

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
sys.path.insert(0, str(Path(__file__).resolve().parent))
from _timing import best_of as _best_of  # noqa: E402


def best_of(fn):
    return _best_of(fn, repeat=5)
from calibdash import calibrators, load_scores, metrics  # noqa: E402



def main(n=100_000):
    rng = np.random.default_rng(0)
    s = rng.uniform(size=n)
    y = (rng.uniform(size=n) < s ** 2).astype(int)
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "scores.csv")
        pd.DataFrame({"score": np.round(s, 6), "label": y}).to_csv(path, index=False)
        t_load, ss = best_of(lambda: load_scores(path))
    rows = [("load CSV + validate", t_load)]
    total = t_load
    for name in ("platt", "histogram", "isotonic"):
        t, _ = best_of(lambda: calibrators.get(name).fit(ss.scores, ss.labels).predict(ss.scores))
        rows.append((f"{name}: fit + predict", t))
        total += t
    t_m, _ = best_of(lambda: metrics.summary(ss.scores, ss.labels))
    rows.append(("all metrics (summary, MVCE 100 views)", t_m))
    total += t_m
    rows.append(("TOTAL", total))
    print(f"machine: {platform.processor() or platform.machine()}, {os.cpu_count()} cores, Python {platform.python_version()}")
    print(f"N = {n:,} rows, best of 5\n")
    print(f"{'step':<42}{'seconds':>10}")
    for step, t in rows:
        print(f"{step:<42}{t:>10.3f}")
    print(f"\ntarget < 1 s: {'met' if total < 1 else 'NOT met'}")


if __name__ == "__main__":
    main()
