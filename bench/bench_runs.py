"""Saving and opening a run of a 1e6-row upload, beside Parquet's own write and read of the same rows.

    .venv/bin/python bench/bench_runs.py [--rows N] [--repeat R] [--catalog URL] [--page] [--large]

Rows: a score, a label, two numeric features and a 20-value segment (an upload as the pages hold it). ``save``
is :meth:`calibdash.io.runs.Workspace.save` with the rows, an ``evaluate --json`` document and three models'
JSON (files written and flushed, the folder renamed, one catalog transaction); ``open`` is what a ``?run=`` link
costs before the page computes: the catalog lookup, ``run.json``, the rows read back, written as the session's
Parquet upload and parsed as the pages parse an upload (:func:`calibdash.data.read_table`). ``--page`` also times
the whole link in Streamlit's AppTest: open the run and draw Compare (three calibrators, on score cells).
Issue 28 asks for a save under 3 s and an open under 5 s at 1e6 rows. ``--large``: a run of a large source instead,
the rows written as a 4-file Parquet lake and aggregated by DuckDB (the all-rows cells and a random split's, what
Compare reads); ``save`` keeps those cells and the source's spec, ``open`` reads them back; their size beside the
lake's.
"""
from __future__ import annotations

import argparse
import io
import os
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import pandas as pd

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from bench._timing import best_of_both  # noqa: E402
from calibdash.data import read_table  # noqa: E402
from calibdash.io.runs import Workspace  # noqa: E402


def make_rows(n: int, seed: int = 0) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    s = rng.beta(2, 5, n)
    return pd.DataFrame({"score": np.round(s, 6), "label": (rng.random(n) < s).astype(np.int64),
                         "x1": rng.normal(size=n), "x2": rng.normal(size=n),
                         "segment": pd.Categorical(rng.integers(0, 20, n).astype(str))})


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--rows", type=int, default=1_000_000)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--catalog", help="a postgresql:// URL (default: the workspace's SQLite file)")
    ap.add_argument("--page", action="store_true", help="also time the link in AppTest")
    ap.add_argument("--large", action="store_true", help="a run of a large source (its cells) instead")
    args = ap.parse_args()
    rows = make_rows(args.rows)
    if args.large:
        return large(rows, args)
    results = {"file": "upload.csv", "metrics": {m: {"ECE": 0.01, "Brier": 0.2, "AUC": 0.8}
                                                 for m in ("uncalibrated", "platt", "histogram", "isotonic")}}
    models = {m: {"format": "calibdash-model", "version": 2, "state": list(range(200))}
              for m in ("platt", "histogram", "isotonic")}
    with tempfile.TemporaryDirectory() as tmp:
        ws = Workspace(Path(tmp) / "ws", catalog=args.catalog)
        floor_write, _, _ = best_of_both(lambda: rows.to_parquet(Path(tmp) / "floor.parquet", index=False),
                                         args.repeat)
        floor_read, _, _ = best_of_both(lambda: pd.read_parquet(Path(tmp) / "floor.parquet"), args.repeat)
        save_wall, save_cpu, rec = best_of_both(
            lambda: ws.save(name="bench", kind="evaluate", dataset="upload.csv", results=results, models=models,
                            view={"page": "compare", "state": {"compare.methods": ["platt", "histogram",
                                                                                    "isotonic"]}},
                            rows=rows), args.repeat)

        def open_run():
            run = ws.open(rec.id)
            buf = io.BytesIO()
            run.rows().to_parquet(buf, index=False)
            return read_table(buf.getvalue(), filename="upload.csv.parquet")

        open_wall, open_cpu, (table, _) = best_of_both(open_run, args.repeat)
        assert len(table) == args.rows
        print(f"calibdash runs: {args.rows:,} rows, {rec.bytes / 2**20:.1f} MB a run, catalog "
              f"{ws.catalog.kind}, best of {args.repeat}, load {os.getloadavg()[0]:.1f}")
        print(f"{'step':<34}{'wall s':>9}{'cpu s':>9}")
        for name, wall, cpu in (("save (files + catalog)", save_wall, save_cpu),
                                ("open (catalog, rows, parse)", open_wall, open_cpu),
                                ("floor: pandas to_parquet", floor_write, None),
                                ("floor: pandas read_parquet", floor_read, None)):
            print(f"{name:<34}{wall:>9.2f}{'' if cpu is None else f'{cpu:9.2f}'}")
        if args.page:
            from streamlit.testing.v1 import AppTest
            os.environ["CALIBDASH_WORKSPACE"] = str(ws.folder)
            repo = Path(__file__).resolve().parents[1]
            t0 = time.perf_counter()
            at = AppTest.from_file(str(repo / "app.py"), default_timeout=600)
            at.query_params["run"] = rec.id
            at.run()
            at.run()
            assert not at.exception, at.exception
            print(f"{'the link in AppTest (Compare drawn)':<34}{time.perf_counter() - t0:>9.2f}")


def large(rows: pd.DataFrame, args) -> None:
    from calibdash.data.guard import DataRoot
    from calibdash.engines.plan import NO_JOB, LargeSource, aggregate_plan
    from calibdash.evaluation.scheme import Scheme

    with tempfile.TemporaryDirectory() as tmp:
        lake = Path(tmp) / "lake"
        lake.mkdir()
        for i, part in enumerate(np.array_split(np.arange(len(rows)), 4)):
            rows.iloc[part].to_parquet(lake / f"part-{i}.parquet", index=False)
        spec = {"kind": "files", "path": "part-*.parquet", "roles": {"score": "score", "label": "label", "split": ""}}
        src = LargeSource.resolve(DataRoot(lake), spec)
        t0 = time.perf_counter()
        got = aggregate_plan(NO_JOB, src.root, src.plan, src.roles, Scheme(), need_all=True)
        aggregated = time.perf_counter() - t0
        cells = {src.key(): got["all"]["cells"], src.key(Scheme()): got["cells"]}
        ws = Workspace(Path(tmp) / "ws", catalog=args.catalog)
        save_wall, save_cpu, rec = best_of_both(
            lambda: ws.save(name="bench", kind="evaluate", dataset="part-*.parquet", results={"metrics": {}},
                            source={"spec": spec}, cells=cells), args.repeat)
        open_wall, open_cpu, back = best_of_both(lambda: ws.open(rec.id).cells(), args.repeat)
        assert sum(len(c) for c in back.values()) == sum(len(c) for c in cells.values())
        lake_mb = sum(f.stat().st_size for f in lake.iterdir()) / 2**20
        print(f"calibdash runs of a large source: {args.rows:,} rows in a {lake_mb:.1f} MB lake, "
              f"{sum(len(c) for c in cells.values()):,} cells kept in a {rec.bytes / 2**20:.2f} MB run, "
              f"catalog {ws.catalog.kind}, best of {args.repeat}, load {os.getloadavg()[0]:.1f}")
        print(f"{'step':<34}{'wall s':>9}{'cpu s':>9}")
        for name, wall, cpu in (("DuckDB aggregation (once)", aggregated, None),
                                ("save (cells + catalog)", save_wall, save_cpu),
                                ("open (catalog, cells)", open_wall, open_cpu)):
            print(f"{name:<34}{wall:>9.2f}{'' if cpu is None else f'{cpu:9.2f}'}")


if __name__ == "__main__":
    main()
