"""Time ``python -m calibdash evaluate`` on a large K-class Parquet file, beside a floor.

    .venv/bin/python bench/bench_multiclass_cli.py [N [K]]      (default: 1000000 10)

Writes a Parquet file of N rows (a label of K classes and K probability columns ``p_0`` ...
``p_{K-1}`` of an over-confident model: logits ``z = 2 * (x M)`` with the true posterior
``softmax(x M)``, x standard normal in 8 dimensions) to a temporary folder, then runs, each in a
fresh process whose wall time and peak resident memory (``ru_maxrss`` of the child) are measured:

* floor: reading the Parquet file with pandas and a softmax over its K columns (what any
  evaluation pays before it fits anything);
* evaluate: ``python -m calibdash evaluate FILE --methods temperature,vector,dirichlet,ovr:isotonic
  --json`` (the methods this calibdash has; the scaling family fitted on a 200,000-row sample, as
  :data:`calibdash.evaluation.holdout.MAX_FIT_ROWS` says, ovr:isotonic on every fitting row,
  every method judged on the 30% held out).

Target: evaluate under 30 s wall and 2 GB peak resident memory for N = 1e6, K = 10.
"""
from __future__ import annotations

import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import pandas as pd

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from calibdash import calibrators  # noqa: E402

WANTED = ("temperature", "vector", "dirichlet", "ovr:isotonic")

_MEASURED = """
import resource, subprocess, sys, time
t0 = time.perf_counter()
done = subprocess.run(sys.argv[1:], capture_output=True, text=True)
wall = time.perf_counter() - t0
ru = resource.getrusage(resource.RUSAGE_CHILDREN)
print(wall, ru.ru_maxrss, ru.ru_utime + ru.ru_stime, done.returncode)
sys.stderr.write(done.stderr[-2000:])
sys.stdout.write("\\n" + done.stdout)
"""

_FLOOR = """
import sys
import numpy as np, pandas as pd
from scipy.special import softmax
df = pd.read_parquet(sys.argv[1])
P = df[[c for c in df.columns if c.startswith("p_")]].to_numpy()
Q = softmax(np.log(np.maximum(P, 1e-300)), axis=1)
print(float(Q.sum()))
"""


def make_parquet(n: int, k: int, path: Path) -> None:
    rng = np.random.default_rng(0)
    m = rng.normal(size=(8, k))
    true_logits = rng.normal(size=(n, 8)) @ m
    true = np.exp(true_logits - true_logits.max(axis=1, keepdims=True))
    true /= true.sum(axis=1, keepdims=True)
    y = (rng.uniform(size=(n, 1)) > np.cumsum(true, axis=1)).sum(axis=1)
    z = 2.0 * true_logits
    p = np.exp(z - z.max(axis=1, keepdims=True))
    p /= p.sum(axis=1, keepdims=True)
    df = pd.DataFrame(p, columns=[f"p_{j}" for j in range(k)])
    df.insert(0, "label", y)
    df.to_parquet(path, index=False)


def measured(argv: list[str]) -> tuple[float, float, float, str]:
    """(wall seconds, peak resident MB, CPU seconds, stdout) of ``argv`` run in a fresh child process (CPU:
    user + system of the process and its threads; on a shared machine wall time grows with the load)."""
    out = subprocess.run([sys.executable, "-c", _MEASURED, *argv], capture_output=True, text=True, cwd=REPO)
    head, _, rest = out.stdout.partition("\n")
    wall, rss_kb, cpu, rc = head.split()
    if int(rc) != 0:
        raise SystemExit(f"{' '.join(argv)} failed:\n{out.stderr}")
    return float(wall), int(rss_kb) / 1024, float(cpu), rest


def main() -> None:
    n = int(float(sys.argv[1])) if len(sys.argv) > 1 else 1_000_000
    k = int(sys.argv[2]) if len(sys.argv) > 2 else 10
    have = set(calibrators.available("classes"))
    methods = [m for m in WANTED if m in have]
    missing = [m for m in WANTED if m not in have]
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / f"classes_{n}_{k}.parquet"
        t0 = time.perf_counter()
        make_parquet(n, k, path)
        print(f"{n:,} rows, K = {k}: Parquet of {path.stat().st_size / 1e6:.1f} MB written in "
              f"{time.perf_counter() - t0:.1f} s")
        if missing:
            print(f"(this calibdash has no {', '.join(missing)}: timed without them)")
        floor = measured([sys.executable, "-c", _FLOOR, str(path)])
        ev = measured([sys.executable, "-m", "calibdash", "evaluate", str(path), "--methods", ",".join(methods),
                       "--json"])
        out = json.loads(ev[3])
        rows = [("floor: read Parquet + softmax", *floor[:3]), (f"evaluate {','.join(methods)}", *ev[:3])]
        print(f"{'step':<58} {'wall s':>8} {'CPU s':>8} {'peak MB':>9}")
        for name, wall, mb, cpu in rows:
            print(f"{name:<58} {wall:>8.1f} {cpu:>8.1f} {mb:>9.0f}")
        print(f"judged {out['rows_judged']:,} rows; notes: {'; '.join(out['notes']) or 'none'}")
        for key, row in out["metrics"].items():
            print(f"  {key:<16} ECE {row['ECE']:.4f}  cwECE {row['cwECE']:.4f}  LogLoss {row['LogLoss']:.4f}")


if __name__ == "__main__":
    main()
