"""K-class engines at scale: K = 10 Parquet rows aggregated into multi-class score cells, DuckDB vs memory.

Writes N rows of Parquet (10 float32 probability columns ``p_0..p_9`` from an overconfident Dirichlet model, an
int8 label; files of at most 5e6 rows written in chunks with pyarrow), then prints, for 1e6 and 1e7 rows, the
wall time (best of ``REPEAT``) of :func:`calibdash.engines.classes.aggregate_classes` (every row in one part,
as :func:`calibdash.multiclass.large.evaluate_class_source` measures a source) with DuckDB and the in-memory
engine, the time of every measure computed from the cells, and two floors: DuckDB's ``count(*)`` (Parquet
metadata only) and a plain Parquet read of every column (``pyarrow.parquet.read_table``).

Run: ``.venv/bin/python bench/bench_multiclass_engines.py [ROWS ...] [--threads T]`` (default 1e6 1e7).
"""
import os
import shutil
import sys
import tempfile
from pathlib import Path

import numpy as np

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from _timing import best_of  # noqa: E402

K = 10
FILE_ROWS = 5_000_000
CHUNK = 1_000_000
REPEAT = 2


def write_files(n: int, folder: Path) -> str:
    import pyarrow as pa
    import pyarrow.parquet as pq

    rng = np.random.default_rng(1)
    schema = pa.schema([(f"p_{k}", pa.float32()) for k in range(K)] + [("label", pa.int8())])
    done, f = 0, 0
    while done < n:
        rows = min(FILE_ROWS, n - done)
        with pq.ParquetWriter(folder / f"part-{f:04d}.parquet", schema) as w:
            for start in range(0, rows, CHUNK):
                m = min(CHUNK, rows - start)
                truth = rng.dirichlet(np.full(K, 0.3), m)
                y = (truth.cumsum(axis=1) < rng.random((m, 1))).sum(axis=1).clip(0, K - 1)
                P = truth ** 1.5
                P = (P / P.sum(axis=1, keepdims=True)).astype(np.float32)       # overconfident, sums ~1 in float32
                w.write_table(pa.table({**{f"p_{k}": P[:, k] for k in range(K)}, "label": y.astype(np.int8)},
                                       schema=schema))
        done += rows
        f += 1
    return str(folder / "part-*.parquet")


def main(sizes, threads):
    import duckdb
    import pyarrow.parquet as pq

    from calibdash.engines.classes import aggregate_classes, class_source
    from calibdash.multiclass.cells import cell_measures

    print(f"K = {K}, {threads} threads; best of {REPEAT}; seconds")
    print(f"{'rows':>11} {'count(*)':>9} {'pq read':>8} {'duckdb':>8} {'memory':>8} {'measures':>9} "
          f"{'cells':>9} {'exact':>6} {'same':>5}")
    for n in sizes:
        folder = Path(tempfile.mkdtemp(prefix="calibdash-mc-bench-"))
        try:
            glob = write_files(n, folder)
            files = sorted(folder.glob("part-*.parquet"))
            con = duckdb.connect(config={"threads": threads})
            listed = "[" + ", ".join(f"'{f}'" for f in files) + "]"
            t_count, _ = best_of(lambda: con.sql(f"SELECT count(*) FROM read_parquet({listed})").fetchall(), REPEAT)
            t_read, _ = best_of(lambda: [pq.read_table(f) for f in files], REPEAT)
            con.close()
            cs = class_source(glob)
            t_duck, duck = best_of(lambda: aggregate_classes(cs, engine="duckdb", threads=threads,
                                                             memory_limit="2GB"), REPEAT)
            t_mem, mem = best_of(lambda: aggregate_classes(cs, engine="memory"), 1)
            t_meas, got = best_of(lambda: cell_measures(duck), 1)
            same = all(np.array_equal(a.n, b.n) and np.array_equal(a.n_pos, b.n_pos)
                       for a, b in zip(duck.reductions, mem.reductions))
            print(f"{n:>11,} {t_count:>9.3f} {t_read:>8.2f} {t_duck:>8.2f} {t_mem:>8.2f} {t_meas:>9.2f} "
                  f"{len(duck):>9,} {str(duck.exact):>6} {str(same):>5}")
            print("            ECE {ECE:.5f}  cwECE {cwECE:.5f}  Brier {Brier:.5f}  LogLoss {LogLoss:.5f}  "
                  "Accuracy {Accuracy:.5f}".format(**got))
        finally:
            shutil.rmtree(folder, ignore_errors=True)


if __name__ == "__main__":
    args = sys.argv[1:]
    threads = os.cpu_count() or 1
    if "--threads" in args:
        i = args.index("--threads")
        threads = int(args[i + 1])
        del args[i:i + 2]
    main([int(float(a)) for a in args] or [1_000_000, 10_000_000], threads)
