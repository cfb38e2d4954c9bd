"""Engines at scale: Parquet rows aggregated into score cells by DuckDB, Spark and the in-memory engine.

Issue "Scale II" target: 1e8 rows aggregated by DuckDB in under 60 s on 2 cores with a peak RSS under 2 GB.

Writes N rows of Parquet (float32 score, int8 label, two categorical features; files of at most 1e7 rows,
written in chunks with pyarrow so this script's memory stays small), then prints, per engine, the wall time of
``calibdash.engines.aggregate`` under 5-fold hashed parts and the peak RSS of the process that ran it (each run is
its own subprocess, measured with ``resource.getrusage(RUSAGE_SELF).ru_maxrss`` at its end, plus the peak RSS
(``VmHWM``) of its live children: Spark's JVM), beside two floors:
DuckDB's ``count(*)`` (Parquet metadata only) and a DuckDB scan summing the score and label columns.

Run: ``.venv/bin/python bench/bench_engines.py [ROWS] [--keep DIR]`` (default 1e7 rows). The in-memory engine is
skipped above 2e7 rows (it holds the rows), Spark above 1e8 unless ``--spark`` is given.
"""
import json
import os
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

FILE_ROWS = 10_000_000
CHUNK = 2_000_000


def write_files(n: int, folder: Path) -> str:
    """Click-like rows: scores crowded near 0 (float32), ~8% positives, device (3) and site (50) categories."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    rng = np.random.default_rng(1)
    devices = np.array(["mobile", "desktop", "tablet"])
    sites = np.array([f"site{i:02d}" for i in range(50)])
    done, k = 0, 0
    while done < n:
        rows = min(FILE_ROWS, n - done)
        with pq.ParquetWriter(folder / f"part-{k:04d}.parquet", pa.schema([
                ("score", pa.float32()), ("label", pa.int8()), ("device", pa.dictionary(pa.int32(), pa.string())),
                ("site", pa.dictionary(pa.int32(), pa.string()))])) as w:
            for start in range(0, rows, CHUNK):
                m = min(CHUNK, rows - start)
                s = rng.beta(1.2, 20, m).astype(np.float32)
                d = rng.integers(0, 3, m)
                y = (rng.random(m) < np.clip(1.4 * s * np.where(d == 0, 1.2, 0.9), 0, 1)).astype(np.int8)
                w.write_table(pa.table({"score": s, "label": y,
                                        "device": pa.DictionaryArray.from_arrays(d.astype(np.int32), devices),
                                        "site": pa.DictionaryArray.from_arrays(
                                            rng.integers(0, 50, m).astype(np.int32), sites)}),
                              row_group_size=1_000_000)
        done += rows
        k += 1
    return str(folder / "part-*.parquet")


def run_one(engine: str, glob: str, features: str) -> dict:
    """In a child: aggregate and report wall time, cells and this process's peak RSS."""
    from calibdash.engines import Source, aggregate
    from calibdash.evaluation.holdout import Scheme

    feats = tuple(f for f in features.split(",") if f)
    src = Source(glob, features=feats)
    opts = {}
    t_start = time.perf_counter()
    if engine == "spark":
        from pyspark.sql import SparkSession

        opts["spark"] = (SparkSession.builder.master("local[2]").config("spark.ui.enabled", "false")
                         .config("spark.ui.showConsoleProgress", "false").config("spark.driver.memory", "2g")
                         .getOrCreate())
        opts["spark"].sparkContext.setLogLevel("ERROR")
    t0 = time.perf_counter()
    c = aggregate(src, Scheme("kfold", n_folds=5), engine=engine, memory_limit="1GB", threads=2, **opts)
    t1 = time.perf_counter()
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    np.savez(Path(glob).parent / f"cells-{engine}-{features or 'none'}.npz", part=c.part, n=c.n, n_pos=c.n_pos,
             score_sum=c.score_sum)
    return {"seconds": t1 - t0, "with_startup": t1 - t_start, "cells": len(c), "rows": c.n_rows, "exact": c.exact,
            "peak_rss_mb": peak + _children_peak_mb()}


def _children_peak_mb() -> float:
    """Peak RSS (VmHWM) of this process's live children, in MB: Spark's JVM (not in RUSAGE_SELF)."""
    total = 0.0
    me = str(os.getpid())
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            with open(f"/proc/{pid}/stat") as fh:
                ppid = fh.read().rsplit(")", 1)[1].split()[1]
            if ppid != me:
                continue
            with open(f"/proc/{pid}/status") as fh:
                total += sum(int(line.split()[1]) for line in fh if line.startswith("VmHWM:")) / 1024
        except (OSError, IndexError, ValueError):
            continue
    return total


def child(engine: str, glob: str, features: str = "") -> dict:
    out = subprocess.run([sys.executable, __file__, "--child", engine, glob, features],
                         capture_output=True, text=True)
    if out.returncode != 0:
        return {"error": out.stderr.strip().splitlines()[-1] if out.stderr.strip() else "failed"}
    return json.loads(out.stdout.strip().splitlines()[-1])


def same_as_duckdb(folder: Path, engine: str, features: str) -> str:
    """Whether an engine's cells equal DuckDB's: parts and counts exactly, score sums to 1e-9 relative."""
    if engine == "duckdb":
        return "(reference)"
    a = np.load(folder / f"cells-duckdb-{features or 'none'}.npz")
    b = np.load(folder / f"cells-{engine}-{features or 'none'}.npz")
    same = all(np.array_equal(a[k], b[k]) for k in ("part", "n", "n_pos")) and np.allclose(
        a["score_sum"], b["score_sum"], rtol=1e-9, atol=0)
    return "yes" if same else "NO"


def floors(glob: str) -> tuple[float, float]:
    import duckdb

    con = duckdb.connect(config={"threads": 2, "memory_limit": "1GB"})
    t0 = time.perf_counter()
    con.execute(f"SELECT count(*) FROM read_parquet('{glob}')").fetchall()
    t1 = time.perf_counter()
    con.execute(f"SELECT sum(score), sum(label) FROM read_parquet('{glob}')").fetchall()
    return t1 - t0, time.perf_counter() - t1


def main(argv):
    n = int(float(argv[0])) if argv and not argv[0].startswith("--") else 10_000_000
    keep = argv[argv.index("--keep") + 1] if "--keep" in argv else None
    with_spark = "--spark" in argv or n <= 100_000_000
    print(f"machine: {os.cpu_count()} cores, Python {sys.version.split()[0]}; {n:,} rows")
    folder = Path(keep) if keep else Path(tempfile.mkdtemp(prefix="bench-engines-"))
    folder.mkdir(parents=True, exist_ok=True)
    try:
        glob = str(folder / "part-*.parquet")
        if not list(folder.glob("part-*.parquet")):
            t0 = time.perf_counter()
            write_files(n, folder)
            size = sum(p.stat().st_size for p in folder.glob("part-*.parquet"))
            print(f"wrote {size / 1e6:,.0f} MB of Parquet in {time.perf_counter() - t0:.1f} s")
        t_count, t_scan = floors(glob)
        print(f"floors: DuckDB count(*) {t_count:.2f} s, DuckDB scan sum(score), sum(label) {t_scan:.2f} s")
        print(f"{'engine':<30} {'seconds':>8} {'+startup':>9} {'peak RSS MB':>12} {'cells':>9}  same cells as duckdb")
        runs = [("duckdb", ""), ("duckdb", "device")]
        if with_spark:
            runs.append(("spark", ""))
        if n <= 20_000_000:
            runs.append(("memory", ""))
        for engine, feats in runs:
            r = child(engine, glob, feats)
            name = engine + (f" (features {feats})" if feats else "")
            if "error" in r:
                print(f"{name:<30} failed: {r['error']}")
                continue
            print(f"{name:<30} {r['seconds']:>8.2f} {r['with_startup']:>9.2f} {r['peak_rss_mb']:>12,.0f} "
                  f"{r['cells']:>9,}  {same_as_duckdb(folder, engine, feats)}")
    finally:
        if not keep:
            shutil.rmtree(folder, ignore_errors=True)


if __name__ == "__main__":
    if len(sys.argv) > 1 and sys.argv[1] == "--child":
        print(json.dumps(run_one(sys.argv[2], sys.argv[3], sys.argv[4] if len(sys.argv) > 4 else "")))
    else:
        main(sys.argv[1:])
