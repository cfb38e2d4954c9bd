"""Time loading a comma-separated CSV and building the ScoreSet.

    .venv/bin/python bench/bench_load.py [N ...]      (default: 10000 100000 1000000)

For each N, writes a CSV of N rows (id, 2 numeric + 2 text features, a score
in [0, 1], a logit score, a 0/1 label) to a temporary folder and reports the
best of 5 runs of: read_table (calibdash.data.read and .sniff: read + decode +
sniff + parse), build_score_set (calibdash.data.roles and .scoreset: guess
roles + map margins + validate), and load_scores (both, from the path).
"""
from __future__ import annotations

import sys
import tempfile
import timeit
from pathlib import Path

import numpy as np
import pandas as pd

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from calibdash.data import build_score_set, load_scores, read_table  # noqa: E402

REPEATS = 5


def make_csv(n: int, path: Path) -> int:
    rng = np.random.default_rng(0)
    p = rng.uniform(size=n)
    pd.DataFrame({
        "id": np.arange(n),
        "age": rng.integers(18, 80, n),
        "income": np.round(rng.lognormal(10, 1, n), 2),
        "device": rng.choice(["mobile", "desktop", "tablet"], n),
        "region": rng.choice([f"r{i}" for i in range(20)], n),
        "score": np.round(p, 6),
        "logit": np.round(np.log(p / (1 - p)), 6),
        "label": (rng.uniform(size=n) < p).astype(int),
    }).to_csv(path, index=False)
    return path.stat().st_size


def best(fn) -> float:
    """Best wall time of REPEATS single runs (seconds)."""
    return min(timeit.repeat(fn, number=1, repeat=REPEATS))


def main(sizes: list[int]) -> None:
    print(f"best of {REPEATS} runs; CSV: 8 columns (id, 4 features, 2 scores, label), comma-separated")
    print(f"{'N':>10} {'MB':>7} {'read_table s':>13} {'build_score_set s':>18} {'load_scores s':>14}")
    with tempfile.TemporaryDirectory() as tmp:
        for n in sizes:
            path = Path(tmp) / f"bench_{n}.csv"
            size = make_csv(n, path)
            df, info = read_table(path)
            t_read = best(lambda: read_table(path))
            t_build = best(lambda: build_score_set(df, info=info))
            t_load = best(lambda: load_scores(path))
            ss = load_scores(path)
            assert ss.n_rows == n and ss.score == "score"
            print(f"{n:>10,} {size / 1e6:>7.1f} {t_read:>13.3f} {t_build:>18.3f} {t_load:>14.3f}")


if __name__ == "__main__":
    main([int(a) for a in sys.argv[1:]] or [10_000, 100_000, 1_000_000])
