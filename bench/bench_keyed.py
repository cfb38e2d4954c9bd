"""Keyed cells at scale: a Parquet glob aggregated by segment and by week with DuckDB, beside a DuckDB scan.

Issue 20 target (on a 2-core machine): 1e8 rows, a 50-value segment column and 90 days, ``groups --by segment``
and ``drift --period week`` with DuckDB each under 30 s and 2 GB peak RSS.

Writes ROWS rows once into 20 Parquet files under a cache directory in /tmp (continuous float32 scores, int8
labels, a 50-value dictionary-encoded ``segment``, a ``day`` DATE column over 90 days; written in chunks with
pyarrow so this script stays small), then prints, per task, the wall time of one run in its own subprocess and
that subprocess's peak RSS (``resource.getrusage(RUSAGE_SELF).ru_maxrss`` at its end), and the cells made:

* floor: DuckDB ``count(*)`` (Parquet metadata) and a plain scan ``SELECT sum(score)``;
* ``aggregate_keyed(source, Key("segment", max_groups=50), engine="duckdb")``;
* ``aggregate_keyed(source, Key("day", kind="period", freq="W"), engine="duckdb")``.

Run: ``.venv/bin/python bench/bench_keyed.py [--rows 1e8] [--cache DIR] [--memory-limit 1GB]``.
"""
import argparse
import json
import subprocess
import sys
import time
from pathlib import Path

import numpy as np

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

N_FILES = 20
CHUNK = 1_000_000
DAYS = 90
SEGMENTS = 50


def write_files(n: int, folder: Path) -> str:
    """ROWS rows in N_FILES Parquet files (skipped when the folder already holds them complete)."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    done_mark = folder / "DONE"
    if done_mark.exists():
        return str(folder / "part-*.parquet")
    folder.mkdir(parents=True, exist_ok=True)
    rng = np.random.default_rng(20)
    segments = np.array([f"seg{i:02d}" for i in range(SEGMENTS)])
    start_day = np.datetime64("2025-01-01", "D").astype(np.int32)
    per_file = -(-n // N_FILES)
    schema = pa.schema([("score", pa.float32()), ("label", pa.int8()),
                        ("segment", pa.dictionary(pa.int32(), pa.string())), ("day", pa.date32())])
    written = 0
    for k in range(N_FILES):
        rows = min(per_file, n - written)
        if rows <= 0:
            break
        with pq.ParquetWriter(folder / f"part-{k:04d}.parquet", schema) as w:
            for at in range(0, rows, CHUNK):
                m = min(CHUNK, rows - at)
                s = rng.beta(2, 6, m).astype(np.float32)
                seg = rng.integers(0, SEGMENTS, m).astype(np.int32)
                day = (start_day + rng.integers(0, DAYS, m)).astype(np.int32)
                drift = 1 + 0.3 * (day - start_day) / DAYS
                y = (rng.random(m) < np.clip(s * drift, 0, 1)).astype(np.int8)
                w.write_table(pa.table({"score": s, "label": y,
                                        "segment": pa.DictionaryArray.from_arrays(seg, segments),
                                        "day": pa.array(day, pa.date32())}), row_group_size=CHUNK)
        written += rows
    done_mark.write_text(str(n))
    return str(folder / "part-*.parquet")


CHILD = r"""
import json, resource, sys, time
sys.path.insert(0, {repo!r})
task, glob, limit = {task!r}, {glob!r}, {limit!r}
t0 = time.perf_counter()
if task.startswith("floor"):
    import duckdb
    con = duckdb.connect(config={{"memory_limit": limit}})
    sql = "count(*)" if task == "floor count(*)" else "sum(score)"
    con.execute(f"SELECT {{sql}} FROM read_parquet('{{glob}}')").fetchall()
    cells = 0
else:
    from calibdash.engines import Source, aggregate_keyed
    from calibdash.monitoring.keyed import Key
    key = Key("segment", max_groups={segments}) if task == "by segment" else Key("day", kind="period", freq="W")
    kc = aggregate_keyed(Source(glob), key, engine="duckdb", memory_limit=limit)
    cells = len(kc)
wall = time.perf_counter() - t0
print("RESULT " + json.dumps({{"wall": wall, "rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
                  "cells": cells}}))
"""


def run(task: str, glob: str, limit: str) -> dict:
    code = CHILD.format(repo=str(REPO), task=task, glob=glob, limit=limit, segments=SEGMENTS)
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    line = out.stdout[out.stdout.rindex("RESULT ") + 7:].splitlines()[0]      # past DuckDB's progress bar
    return json.loads(line)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rows", type=float, default=1e8)
    ap.add_argument("--cache", default=None, help="folder of the generated files (default /tmp/calibdash-keyed-ROWS)")
    ap.add_argument("--memory-limit", default="1GB")
    args = ap.parse_args()
    n = int(args.rows)
    folder = Path(args.cache or f"/tmp/calibdash-keyed-{n}")
    t0 = time.perf_counter()
    glob = write_files(n, folder)
    print(f"{n:,} rows in {folder} (ready in {time.perf_counter() - t0:.1f} s)")
    print(f"{'task':<18}{'wall s':>10}{'peak RSS MB':>14}{'cells':>12}")
    for task in ("floor count(*)", "floor sum(score)", "by segment", "by week"):
        r = run(task, glob, args.memory_limit)
        print(f"{task:<18}{r['wall']:>10.2f}{r['rss_mb']:>14.0f}{r['cells']:>12,}")


if __name__ == "__main__":
    main()
