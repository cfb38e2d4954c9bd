"""The four large command-line runs whose speed is watched, each beside a floor, for one checkout or two.

    .venv/bin/python bench/bench_regressions.py [--data DIR] [--repo PATH ...] [--only NAME,...] [--repeat N]
                                                [--scale F]

Workloads (the data written once under ``--data`` by the other benches' generators, then reused):

========== =================================================================== ======================================
name       command                                                             floor (same data, own process)
========== =================================================================== ======================================
cells      ``evaluate FILE --methods platt,histogram,isotonic,bbq,elite,abb``   pandas reads the score and label
           on one 1e7-row Parquet (:func:`bench_cells.make_file`)               columns
engine     ``evaluate 'GLOB' --engine duckdb`` on a 1e8-row glob                DuckDB ``count(*)``; a scan
           (:func:`bench_engines.write_files`)                                  ``sum(score), sum(label)``
groups     ``groups 'GLOB' --by segment --engine duckdb`` on 1e8 rows of 50     DuckDB ``count(*)``; a scan
           segments (:func:`bench_keyed.write_files`)                           ``sum(score) GROUP BY segment``
classes    ``evaluate FILE --methods temperature,vector,dirichlet,ovr:isotonic   pandas reads the file and takes a
           --json`` on 1e6 rows x 10 classes (:func:`bench_multiclass_cli.      softmax of its K columns
           make_parquet`)
========== =================================================================== ======================================

Every command and floor runs in a fresh child process, measured by ``os.wait4``: wall seconds, CPU seconds
(user + system of the child and all its threads) and the child's own peak resident memory (``ru_maxrss``).
On a machine shared with other work the wall time grows with the load and the CPU time much less: compare
checkouts by CPU time, measured back to back. ``--repo`` runs another checkout's ``python -m calibdash`` (e.g. an
old commit extracted with ``git archive``) beside this one; a command that checkout lacks shows its error.
The table's header says the load average, the BLAS library that numpy runs (threadpoolctl) and any
``OPENBLAS_*``/``OMP_*``/``MKL_*`` variable set, which change the linear-algebra kernels' speed.

Not part of the test suite: it writes about 1.3 GB of Parquet and runs for minutes. ``--scale 0.01`` runs every
workload on a hundredth of the rows (its data in its own folders), to check the script itself.
"""
from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(REPO / "bench"))

WORKLOADS = ("cells", "engine", "groups", "classes")
ROWS = {"cells": 10_000_000, "engine": 100_000_000, "groups": 100_000_000, "classes": 1_000_000}
K = 10
CELL_METHODS = "platt,histogram,isotonic,bbq,elite,abb"
CLASS_METHODS = "temperature,vector,dirichlet,ovr:isotonic"

_MEASURE = """import json, os, subprocess, sys, time
t0 = time.perf_counter()
child = subprocess.Popen(sys.argv[1:], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
err = child.stderr.read().decode(errors="replace").strip().splitlines()
_, status, ru = os.wait4(child.pid, 0)
row = {"wall": time.perf_counter() - t0, "cpu": ru.ru_utime + ru.ru_stime, "rss": ru.ru_maxrss / 1024}
if os.waitstatus_to_exitcode(status) != 0:
    row["error"] = err[-1][:90] if err else f"exit status {os.waitstatus_to_exitcode(status)}"
print(json.dumps(row))"""
_PANDAS_READ = "import sys, pandas as pd; pd.read_parquet(sys.argv[1], columns=['score', 'label'])"
_SOFTMAX = """import sys, numpy as np, pandas as pd
from scipy.special import softmax
df = pd.read_parquet(sys.argv[1])
P = df[[c for c in df.columns if c.startswith("p_")]].to_numpy()
print(float(softmax(np.log(np.maximum(P, 1e-300)), axis=1).sum()))"""
_DUCK = """import os, sys, duckdb
con = duckdb.connect(config={"threads": os.cpu_count() or 1, "memory_limit": "1GB"})
con.execute(sys.argv[1]).fetchall()"""


def prepare(name: str, n: int, data: Path) -> str:
    """The workload's file or glob under ``data``, written first when missing (a DONE mark says complete)."""
    folder = data / f"{name}-{n}"
    done = folder / "DONE"
    folder.mkdir(parents=True, exist_ok=True)
    t0 = time.perf_counter()
    if name == "cells":
        import bench_cells
        path = folder / f"scores_{n}.parquet"
        if not done.exists():
            bench_cells.make_file(n, str(folder))
    elif name == "engine":
        import bench_engines
        path = folder / "part-*.parquet"
        if not done.exists():
            bench_engines.write_files(n, folder)
    elif name == "groups":
        import bench_keyed
        return bench_keyed.write_files(n, folder)          # keeps its own DONE mark
    else:
        import bench_multiclass_cli
        path = folder / f"classes_{n}_{K}.parquet"
        if not done.exists():
            bench_multiclass_cli.make_parquet(n, K, path)
    if not done.exists():
        done.write_text(str(n))
        print(f"  wrote {name} data ({n:,} rows) in {time.perf_counter() - t0:.0f} s")
    return str(path)


def measured(argv: list[str], cwd: Path, env: dict | None = None) -> dict:
    """Run ``argv`` in a fresh child; its wall and CPU seconds, peak RSS (MB) and, when it failed, its error.

    A small interpreter starts the child and reads its rusage: a child forked by this process would count this
    process's pages (Linux keeps the pre-exec peak in ``ru_maxrss``).
    """
    out = subprocess.run([sys.executable, "-c", _MEASURE, *argv], cwd=cwd, env=env, capture_output=True, text=True)
    return json.loads(out.stdout)


def floors(name: str, target: str) -> list[tuple[str, list[str]]]:
    py = sys.executable
    if name == "cells":
        return [("floor: pandas reads score, label", [py, "-c", _PANDAS_READ, target])]
    if name == "classes":
        return [("floor: pandas read + softmax", [py, "-c", _SOFTMAX, target])]
    scan, tail, shown = (("sum(score), sum(label)", "", "sum(score), sum(label)") if name == "engine" else
                         ("segment, sum(score)", " GROUP BY segment", "sum(score) by segment"))
    return [("floor: DuckDB count(*)", [py, "-c", _DUCK, f"SELECT count(*) FROM read_parquet('{target}')"]),
            (f"floor: DuckDB scan {shown}", [py, "-c", _DUCK, f"SELECT {scan} FROM read_parquet('{target}'){tail}"])]


def command(name: str, target: str) -> list[str]:
    cli = [sys.executable, "-m", "calibdash"]
    if name == "cells":
        return [*cli, "evaluate", target, "--methods", CELL_METHODS]
    if name == "engine":
        return [*cli, "evaluate", target, "--engine", "duckdb"]
    if name == "groups":
        return [*cli, "groups", target, "--by", "segment", "--engine", "duckdb"]
    return [*cli, "evaluate", target, "--methods", CLASS_METHODS, "--json"]


def environment() -> str:
    import numpy  # noqa: F401  (loads the BLAS that threadpoolctl then names)
    from threadpoolctl import threadpool_info

    blas = "; ".join(f"{i.get('internal_api')} {i.get('version')} {i.get('architecture', '')} "
                     f"{i.get('num_threads')} threads" for i in threadpool_info())
    env = {k: v for k, v in os.environ.items() if k.startswith(("OPENBLAS_", "OMP_", "MKL_", "GOTO"))}
    return (f"{os.cpu_count()} cores, load {' '.join(f'{x:.1f}' for x in os.getloadavg())}; BLAS: {blas or 'none'};"
            f" BLAS variables: {env or 'none set'}")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--data", type=Path, default=Path(tempfile.gettempdir()) / "calibdash-regressions",
                    help="folder of the generated data, kept for the next run (default: TMPDIR/calibdash-regressions)")
    ap.add_argument("--repo", type=Path, action="append", default=[],
                    help="another checkout whose `python -m calibdash` runs too (repeatable)")
    ap.add_argument("--only", default=",".join(WORKLOADS), help=f"workloads to run, of {','.join(WORKLOADS)}")
    ap.add_argument("--repeat", type=int, default=1, help="runs of each command per checkout, back to back")
    ap.add_argument("--scale", type=float, default=1.0, help="multiply every workload's rows (e.g. 0.01)")
    args = ap.parse_args()
    names = [w.strip() for w in args.only.split(",") if w.strip()]
    unknown = sorted(set(names) - set(WORKLOADS))
    if unknown:
        raise SystemExit(f"unknown workload(s) {unknown}; choose from {', '.join(WORKLOADS)}")
    repos = [REPO, *[r.resolve() for r in args.repo]]
    print(f"machine: {environment()}")
    print(f"{'workload':<17} {'what':<46} {'wall s':>8} {'CPU s':>8} {'peak MB':>8}")
    for name in names:
        n = max(1_000, int(ROWS[name] * args.scale))
        target = prepare(name, n, args.data)
        label = f"{name} {n:.0e} rows".replace("e+0", "e")
        for what, argv in floors(name, target):
            r = measured(argv, REPO)
            print(f"{label:<17} {what:<46} {r['wall']:>8.1f} {r['cpu']:>8.1f} {r['rss']:>8.0f}"
                  + (f"  FAILED: {r['error']}" if "error" in r else ""))
        for _ in range(args.repeat):
            for repo in repos:
                env = dict(os.environ, PYTHONPATH=str(repo))
                r = measured(command(name, target), repo, env)
                shown = f"calibdash at {repo}"[-46:]
                print(f"{label:<17} {shown:<46} {r['wall']:>8.1f} {r['cpu']:>8.1f} {r['rss']:>8.0f}"
                      + (f"  FAILED: {r['error']}" if "error" in r else ""), flush=True)
    print(f"machine at the end: load {' '.join(f'{x:.1f}' for x in os.getloadavg())}")


if __name__ == "__main__":
    main()
