"""K-class engines at scale: K = 10 Parquet rows aggregated into multi-class score cells, DuckDB vs memory.

Writes N rows of Parquet (10 float32 probability columns ``p_0..p_9`` from an overconfident Dirichlet model, an
int8 label; files of at most 5e6 rows written in chunks with pyarrow), then prints, for 1e6 and 1e7 rows, the
wall time (best of ``REPEAT``) of :func:`calibdash.engines.classes.aggregate_classes` (every row in one part,
as :func:`calibdash.engines.class_fit.evaluate_class_source` measures a source) with DuckDB and the in-memory
engine, the time of every measure computed from the cells, and two floors: DuckDB's ``count(*)`` (Parquet
metadata only) and a plain Parquet read of every column (``pyarrow.parquet.read_table``).

With ``--evaluate`` it also times :func:`calibdash.engines.class_fit.evaluate_class_source` with DuckDB (methods
temperature, vector, dirichlet and ovr:isotonic; the default scheme of ``evaluate``, a 70/30 split by row hash; each
fitted on a content-keyed sample of 200,000 rows; the held-out rows streamed in batches into cells), each size in a
fresh process so that its peak RSS (``ru_maxrss``) is its own; it prints wall and CPU seconds, the peak RSS, the
seconds per stage and the ECE of each method, beside the floors above.

Run: ``.venv/bin/python bench/bench_multiclass_engines.py [ROWS ...] [--threads T] [--evaluate]`` (default 1e6 1e7).
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


EVAL_METHODS = "temperature,vector,dirichlet,ovr:isotonic"


class _Stages:
    """A job stand-in that keeps each stage's start time."""

    def __init__(self):
        self.t0, self.marks = time.perf_counter(), []

    def set_stage(self, stage, progress=None):
        self.marks.append((stage, time.perf_counter() - self.t0))

    def progress_from(self, probe):
        pass

    def interrupt_with(self, interrupt):
        import contextlib
        return contextlib.nullcontext()


def evaluate_one(glob: str, threads: int) -> dict:
    """One timed evaluate_class_source in this process: wall, CPU, peak RSS, stage times, ECEs."""
    from calibdash.engines.classes import class_source
    from calibdash.evaluation.scheme import Scheme
    from calibdash.engines.class_fit import evaluate_class_source

    cs = class_source(glob)
    job = _Stages()
    cpu0, t0 = time.process_time(), time.perf_counter()
    res = evaluate_class_source(cs, scheme=Scheme(), engine="duckdb", methods=EVAL_METHODS, threads=threads,
                                memory_limit="1GB", job=job)
    wall, cpu = time.perf_counter() - t0, time.process_time() - cpu0
    marks = job.marks + [("end", wall)]
    stages = {}
    for (name, at), (_, nxt) in zip(marks[:-1], marks[1:]):
        short = name.split(":")[0]
        stages[short] = stages.get(short, 0.0) + (nxt - at)
    return {"wall": wall, "cpu": cpu, "peak_rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
            "stages": stages, "ece": res.metrics["ECE"].to_dict(), "judged": res.cells.n_rows,
            "fit_rows": res.fit_rows, "exact": res.exact, "fit_seconds": res.fit_seconds}


def main(sizes, threads, evaluate=False):
    import duckdb
    import pyarrow.parquet as pq

    from calibdash.engines.classes import aggregate_classes, class_source
    from calibdash.evaluation.cells import cell_measures

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
            if evaluate:
                out = subprocess.run([sys.executable, __file__, "--evaluate-one", glob, "--threads", str(threads)],
                                     capture_output=True, text=True, check=True)
                r = json.loads(out.stdout.strip().splitlines()[-1])
                print(f"    evaluate ({EVAL_METHODS}; split 70/30, fit on {r['fit_rows']} rows, "
                      f"{r['judged']:,} judged, exact cells {r['exact']}): wall {r['wall']:.2f} s, "
                      f"CPU {r['cpu']:.2f} s, peak RSS {r['peak_rss_mb']:,.0f} MB")
                print("      stages: " + "; ".join(f"{k} {v:.2f} s" for k, v in r["stages"].items()))
                print("      fit seconds: " + ", ".join(f"{k} {v:.2f}" for k, v in r["fit_seconds"].items()))
                print("      ECE: " + ", ".join(f"{k} {v:.5f}" for k, v in r["ece"].items()))
        finally:
            shutil.rmtree(folder, ignore_errors=True)


if __name__ == "__main__":
    args = sys.argv[1:]
    threads = os.cpu_count() or 1
    if "--threads" in args:
        i = args.index("--threads")
        threads = int(args[i + 1])
        del args[i:i + 2]
    if "--evaluate-one" in args:
        print(json.dumps(evaluate_one(args[args.index("--evaluate-one") + 1], threads)))
        sys.exit(0)
    evaluate = "--evaluate" in args
    args = [a for a in args if a != "--evaluate"]
    main([int(float(a)) for a in args] or [1_000_000, 10_000_000], threads, evaluate)
