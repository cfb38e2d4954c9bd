"""The command line on large sources: evaluate and fit through DuckDB give what the in-memory path gives."""
import json

import numpy as np
import pandas as pd
import pytest

from calibdash import cli, export


@pytest.fixture(scope="module")
def glob(tmp_path_factory):
    """Three Parquet parts of 30,000 rows (rounded scores: exact cells) and the same rows as one CSV."""
    d = tmp_path_factory.mktemp("lake")
    rng = np.random.default_rng(5)
    s = np.round(rng.beta(2, 5, 30_000), 3)
    y = (rng.random(s.size) < np.clip(1.2 * s, 0, 1)).astype(int)
    df = pd.DataFrame({"pred": s, "clicked": y})
    for i, part in enumerate(np.array_split(np.arange(s.size), 3)):
        df.iloc[part].to_parquet(d / f"part-{i}.parquet", index=False)
    df.to_csv(d / "all.csv", index=False)
    return d


def _run(capsys, *argv):
    assert cli.main(list(argv)) == 0
    return capsys.readouterr().out


def test_evaluate_on_a_glob_through_duckdb_equals_the_in_memory_cells(glob, capsys):
    mem = json.loads(_run(capsys, "evaluate", str(glob / "all.csv"), "--methods", "platt,isotonic,bbq",
                          "--scheme", "kfold", "--cells", "always", "--json"))
    duck = json.loads(_run(capsys, "evaluate", str(glob / "part-*.parquet"), "--methods", "platt,isotonic,bbq",
                           "--scheme", "kfold", "--json"))
    assert duck["engine"] == "duckdb" and duck["score"] == "pred"        # the roles were guessed from a sample
    assert duck["rows_judged"] == mem["rows_judged"] == 30_000
    for method, row in mem["metrics"].items():
        for name, value in row.items():
            assert duck["metrics"][method][name] == pytest.approx(value, rel=1e-9, abs=1e-12), (method, name)


def test_fit_through_duckdb_gives_the_model_of_the_rows(glob, tmp_path, capsys):
    out = tmp_path / "iso.json"
    assert cli.main(["fit", str(glob / "part-*.parquet"), "--method", "isotonic", "--engine", "duckdb",
                     "--out", str(out)]) == 0
    assert "aggregated by duckdb" in capsys.readouterr().err
    on_cells = export.loads(out.read_text())
    df = pd.concat(pd.read_parquet(glob / f"part-{i}.parquet") for i in range(3))
    from calibdash.calibrators import get
    on_rows = get("isotonic").fit(df["pred"], df["clicked"])
    grid = np.linspace(0, 1, 1001)
    np.testing.assert_array_equal(on_cells.predict(grid), on_rows.predict(grid))


def test_a_feature_aware_method_or_a_query_without_roles_is_refused(glob, capsys):
    assert cli.main(["evaluate", str(glob / "part-*.parquet"), "--methods", "mbct"]) == 2
    assert "needs the rows" in capsys.readouterr().err
    assert cli.main(["evaluate", "x", "--query", "SELECT 1"]) == 2
    assert "--score and --label" in capsys.readouterr().err


def test_benchmark_on_a_glob_through_duckdb_equals_the_in_memory_cells(glob, capsys):
    """One data set kept in Parquet: each repeat's folds are aggregated by DuckDB; the means equal the cells
    evaluation of the same rows read into memory (the same hashed folds)."""
    out = json.loads(_run(capsys, "benchmark", str(glob / "part-*.parquet"), "--engine", "duckdb", "--methods",
                          "platt,isotonic", "--folds", "3", "--repeats", "2", "--json"))
    from calibdash import cells
    from calibdash.evaluation import Scheme, cell_parts, evaluate_cells
    df = pd.concat(pd.read_parquet(glob / f"part-{i}.parquet") for i in range(3))
    expect = []
    for seed in (0, 1):
        scheme = Scheme("kfold", n_folds=3, seed=seed)
        c = cells.aggregate(df["pred"].to_numpy(), df["clicked"].to_numpy(), cell_parts(len(df), scheme))
        expect.append(evaluate_cells(c, "platt,isotonic", scheme).metrics["ECE"])
    mean = (expect[0] + expect[1]) / 2
    (means,) = out["means"].values()                                   # the one data set
    for method in ("uncalibrated", "platt", "isotonic"):
        assert means[method]["ECE"] == pytest.approx(mean[method], rel=1e-9)


def test_a_glob_defaults_to_duckdb_for_apply_and_benchmark(glob, tmp_path, capsys):
    """Without --engine, a glob is applied and benchmarked where it lies (a file under 200 MB stays in memory)."""
    model = tmp_path / "platt.json"
    assert cli.main(["fit", str(glob / "all.csv"), "--method", "platt", "--out", str(model)]) == 0
    capsys.readouterr()
    out = tmp_path / "calibrated.parquet"
    assert cli.main(["apply", str(model), str(glob / "part-*.parquet"), "--out", str(out)]) == 0
    assert "with duckdb" in capsys.readouterr().err
    rows = pd.read_parquet(out)
    assert len(rows) == 30_000 and "calibrated" in rows
    assert cli.main(["apply", str(model), str(glob / "part-*.parquet")]) == 2            # Parquet needs --out
    assert "--out" in capsys.readouterr().err
    res = json.loads(_run(capsys, "benchmark", str(glob / "part-*.parquet"), "--methods", "platt", "--folds", "2",
                          "--repeats", "1", "--json"))
    assert res["datasets"] == ["3 files (" + str(glob / "part-0.parquet") + ", ...)"]
