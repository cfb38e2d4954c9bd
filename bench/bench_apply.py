"""Applying a saved calibrator where the data lives: DuckDB with the calibrator's SQL, against the floor.

Target: `calibdash.io.export.apply_model(..., engine="duckdb")` on a 10,000,000-row Parquet file within 3x the
time DuckDB takes to read and write the same Parquet file (`COPY (SELECT * FROM read_parquet(...)) TO ...`), for
every method with a SQL form. Also shown: the Python UDF fallback (the calibrator's predict called by DuckDB on
Arrow batches, what a method without SQL gets), and the in-memory path (pandas read, predict, pyarrow write) for
scale. Each row is timed once after a warm-up run of the floor (so the file is in the page cache for all).

Run: `.venv/bin/python bench/bench_apply.py [ROWS]` (default 1e7).
"""
import os
import sys
import tempfile
import time
from pathlib import Path

import duckdb
import numpy as np
import pandas as pd

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from calibdash import calibrators
from calibdash.io import export  # noqa: E402
from calibdash.io.export import apply_model  # noqa: E402

#: (label, registry name, hyperparameters): one of each SQL form.
METHODS = [
    ("platt (closed form)", "platt", {}),
    ("histogram 10 bins (CASE)", "histogram", {}),
    ("histogram 1000 bins (lookup)", "histogram", {"n_bins": 1000}),
    ("isotonic step", "isotonic", {}),
    ("isotonic linear", "isotonic", {"interpolation": "linear"}),
    ("bbq", "bbq", {}),
    ("abb (linear, many knots)", "abb", {}),
    ("elite (linear, extended)", "elite", {}),
    ("mbct (trees on 2 features)", "mbct", {}),
]


def make_file(n: int, folder: str) -> str:
    """Click-like rows: float scores near 0, a label, two features, an id."""
    rng = np.random.default_rng(3)
    s = rng.beta(1.2, 20, n)
    device = rng.choice(np.array(["mobile", "desktop", "tablet"], dtype=object), n)
    y = (rng.random(n) < np.clip(1.4 * s * np.where(device == "mobile", 1.2, 0.9), 0, 1)).astype(np.int8)
    path = os.path.join(folder, f"rows_{n}.parquet")
    pd.DataFrame({"id": np.arange(n), "score": s, "label": y, "device": device,
                  "age": rng.integers(18, 80, n).astype(float)}).to_parquet(path, index=False, row_group_size=1 << 20)
    return path


def fit_models(path: str, folder: str, n_fit: int = 200_000) -> dict:
    df = pd.read_parquet(path).iloc[:n_fit]
    models = {}
    for label, name, params in METHODS:
        cal = calibrators.get(name, **params)
        feats = df[["device", "age"]] if cal.uses_features else None
        cal.fit(df["score"].to_numpy(), df["label"].to_numpy(), feats)
        out = os.path.join(folder, f"{name}_{len(models)}.json")
        used = ["device", "age"] if feats is not None else []
        Path(out).write_text(export.dumps(cal, fitted_on={"score": "score", "score_transform": "identity",
                                                           "features": used}))
        models[label] = (out, cal)
    return models


def floor(path: str, out: str) -> float:
    t = time.perf_counter()
    con = duckdb.connect()
    con.execute(f"COPY (SELECT * FROM read_parquet('{path}')) TO '{out}' (FORMAT parquet)")
    return time.perf_counter() - t


def main(n: int) -> None:
    with tempfile.TemporaryDirectory() as folder:
        t = time.perf_counter()
        path = make_file(n, folder)
        print(f"{n:,} rows, {os.path.getsize(path) / 2 ** 20:.0f} MB Parquet, written in "
              f"{time.perf_counter() - t:.1f} s; {os.cpu_count()} cores")
        models = fit_models(path, folder)
        out = os.path.join(folder, "out.parquet")
        floor(path, out)                                   # warm the page cache
        base = floor(path, out)
        rows = [("DuckDB read + write (floor)", "", base, 1.0)]
        for label, (model, cal) in models.items():
            res = apply_model(model, path, out, engine="duckdb")
            rows.append((label, f"{res.via}/{res.form}", res.seconds, res.seconds / base))
        # the UDF fallback and the in-memory path, for one method
        label, (model, cal) = "isotonic step", models["isotonic step"]
        iso = calibrators.get_class("isotonic")
        saved = vars(iso)["sql_map"]
        iso.sql_map = lambda self: None                    # as a class without a SQL form
        try:
            res = apply_model(model, path, out, engine="duckdb")
            rows.append((f"{label}, predict as DuckDB UDF", res.via, res.seconds, res.seconds / base))
        finally:
            iso.sql_map = saved
        res = apply_model(model, path, out, engine="memory")
        rows.append((f"{label}, in memory (pandas)", res.via, res.seconds, res.seconds / base))
        table = pd.DataFrame(rows, columns=["what", "via/form", "seconds", "x floor"])
        print(table.to_string(index=False, float_format=lambda v: f"{v:.2f}"))
        sql_rows = table[table["via/form"].str.startswith("sql")]
        worst = sql_rows["x floor"].max()
        verdict = "MET" if worst <= 3 else "NOT MET"
        print(f"target: every SQL apply within 3x the floor -> worst {worst:.2f}x: {verdict}")


if __name__ == "__main__":
    main(int(float(sys.argv[1])) if len(sys.argv) > 1 else 10_000_000)
