"""calibdash.engines.apply: DuckDB's forms of a model (SQL, a lookup join, a UDF) equal applying it in memory; model
files are applied by calibdash.io.export.apply_model.

Every engine's applied model (predict on every row) is checked in ``tests/engines/test_engine_contract.py``."""
import time

import numpy as np
import pandas as pd
import pytest
from scipy.special import expit

from calibdash import calibrators
from calibdash.io import export
from calibdash.engines.apply import apply_model, source_files
from calibdash.core.errors import DataError, EnvironmentProblem, SettingsError

N = 100_000


@pytest.fixture(scope="module")
def data(tmp_path_factory):
    """1e5 rows in two Parquet files: probabilities with ties and missing values, margins, features,
    and a column already named 'calibrated'."""
    rng = np.random.default_rng(7)
    prob = np.round(rng.uniform(size=N), 4)
    prob[rng.uniform(size=N) < 0.01] = np.nan
    prob[:4] = [0.0, 1.0, 0.5, np.nan]
    margin = rng.normal(size=N) * 3
    margin[::101] = np.nan
    site = rng.choice(np.array(["north", "south", "west"], dtype=object), N)
    p = np.nan_to_num(prob, nan=0.5)
    label = (rng.uniform(size=N) < np.where(site == "north", p ** 3, np.sqrt(p))).astype(int)   # site matters
    df = pd.DataFrame({"id": np.arange(N), "prob": prob, "margin": margin, "label": label,
                       "age": np.where(rng.uniform(size=N) < 0.05, np.nan, np.round(rng.normal(40, 10, N))),
                       "site": site, "calibrated": -1.0})
    d = tmp_path_factory.mktemp("apply")
    df.iloc[: N // 2].to_parquet(d / "part-0.parquet", index=False)
    df.iloc[N // 2:].to_parquet(d / "part-1.parquet", index=False)
    fit = df.iloc[:20_000]
    ok = fit["prob"].notna().to_numpy()
    models = {}
    iso = calibrators.get("isotonic").fit(fit["prob"][ok], fit["label"][ok])
    models["isotonic"] = d / "isotonic.json"
    models["isotonic"].write_text(export.dumps(iso, fitted_on={"score": "prob", "score_transform": "identity",
                                                               "features": []}))
    okm = fit["margin"].notna().to_numpy()
    hist = calibrators.get("histogram", n_bins=200).fit(expit(fit["margin"][okm]), fit["label"][okm])
    models["histogram"] = d / "histogram.json"
    models["histogram"].write_text(export.dumps(hist, fitted_on={"score": "margin", "score_transform": "logistic",
                                                                 "features": []}))
    mb = calibrators.get("mbct", bin_size=200, n_trees=2).fit(fit["prob"][ok], fit["label"][ok],
                                                               fit.loc[ok, ["age", "site"]])
    models["mbct"] = d / "mbct.json"
    models["mbct"].write_text(export.dumps(mb, fitted_on={"score": "prob", "score_transform": "identity",
                                                          "features": ["age", "site"]}))
    return {"dir": d, "df": df, "glob": str(d / "part-*.parquet"), "models": models,
            "cals": {"isotonic": iso, "histogram": hist, "mbct": mb}}


def _apply(data, model, engine, **kw):
    out = data["dir"] / f"out-{model}-{engine}-{time.perf_counter_ns()}.parquet"
    res = export.apply_model(data["models"][model], data["glob"], out, engine=engine, **kw)
    return res, pd.read_parquet(out)


def test_duckdb_equals_memory_and_predict(data):
    res, got = _apply(data, "isotonic", "duckdb")
    ref_res, ref = _apply(data, "isotonic", "memory")
    assert (res.via, ref_res.via, res.score_column, res.mapped) == ("sql", "predict", "prob", False)
    assert res.n_rows == ref_res.n_rows == N
    df = data["df"]
    ok = df["prob"].notna().to_numpy()
    assert res.n_calibrated == ref_res.n_calibrated == int(ok.sum())
    assert "its column 'calibrated' was replaced" in res.notes
    assert list(got.columns) == list(df.columns)                       # 'calibrated' replaced in place
    pd.testing.assert_frame_equal(got.drop(columns="calibrated"), df.drop(columns="calibrated"))
    np.testing.assert_array_equal(got["calibrated"].to_numpy(), ref["calibrated"].to_numpy())
    # and independently of the memory engine: predict on the rows with a score, NULL elsewhere
    direct = np.full(N, np.nan)
    direct[ok] = data["cals"]["isotonic"].predict(df["prob"].to_numpy()[ok])
    np.testing.assert_array_equal(got["calibrated"].to_numpy(), direct)


def test_margins_are_mapped_as_the_model_says(data):
    res, got = _apply(data, "histogram", "duckdb")
    _, ref = _apply(data, "histogram", "memory")
    assert res.mapped and res.score_column == "margin" and res.via == "sql"
    assert any("logistic" in n for n in res.notes)
    a, b = got["calibrated"].to_numpy(), ref["calibrated"].to_numpy()
    assert np.array_equal(np.isnan(a), np.isnan(b)) and np.isnan(a).sum() == data["df"]["margin"].isna().sum()
    assert np.nanmax(np.abs(a - b)) <= 1e-12


def test_mbct_reads_its_features(data):
    res, got = _apply(data, "mbct", "duckdb")
    _, ref = _apply(data, "mbct", "memory")
    assert res.via == "sql"
    np.testing.assert_array_equal(got["calibrated"].to_numpy(), ref["calibrated"].to_numpy())
    # the features matter: the same score at other sites gets other values
    cal = data["cals"]["mbct"]
    s = np.full(3, 0.5)
    assert np.unique(cal.predict(s, pd.DataFrame({"age": [40.0] * 3, "site": ["north", "south", "west"]}))).size > 1


@pytest.mark.parametrize("model", ["isotonic", "mbct"])
def test_udf_fallback_when_no_sql(data, monkeypatch, model):
    monkeypatch.setattr(calibrators.get_class(model), "sql_map", lambda self: None)
    res, got = _apply(data, model, "duckdb")
    _, ref = _apply(data, model, "memory")
    assert res.via == "udf"
    np.testing.assert_array_equal(got["calibrated"].to_numpy(), ref["calibrated"].to_numpy())


def test_csv_and_guessed_score(data, tmp_path):
    """A CSV without a model file's fitted_on: the score column is guessed, as `apply` guesses it."""
    df = data["df"].iloc[:3000][["id", "prob", "label"]].rename(columns={"prob": "score"})
    df.to_csv(tmp_path / "rows.csv", index=False)
    cal = data["cals"]["isotonic"]
    outs = {}
    for engine in ("duckdb", "memory"):
        res = apply_model(cal, tmp_path / "rows.csv", tmp_path / f"{engine}.parquet", engine=engine)
        assert res.score_column == "score"
        outs[engine] = pd.read_parquet(tmp_path / f"{engine}.parquet")
    np.testing.assert_array_equal(outs["duckdb"]["calibrated"].to_numpy(), outs["memory"]["calibrated"].to_numpy())
    np.testing.assert_array_equal(outs["duckdb"]["id"].to_numpy(), df["id"].to_numpy())


def test_errors(data, tmp_path):
    # a model fitted on probabilities refuses margins
    with pytest.raises(DataError, match="fitted on probabilities"):
        export.apply_model(data["models"]["isotonic"], data["glob"], tmp_path / "x.parquet", score_column="margin")
    # MBCT without its feature columns
    data["df"][["id", "prob"]].iloc[:100].to_parquet(tmp_path / "nofeat.parquet", index=False)
    with pytest.raises(DataError, match="feature column"):
        export.apply_model(data["models"]["mbct"], tmp_path / "nofeat.parquet", tmp_path / "y.parquet")
    with pytest.raises(EnvironmentProblem, match="no file matches"):
        source_files(str(tmp_path / "none-*.parquet"))
    with pytest.raises(SettingsError, match="engine"):
        export.apply_model(data["models"]["isotonic"], data["glob"], tmp_path / "z.parquet", engine="polars")
    with pytest.raises(DataError, match="not found"):
        export.apply_model(data["models"]["isotonic"], data["glob"], tmp_path / "z.parquet", score_column="nope")


def test_the_engines_take_a_calibrator_and_its_fitted_on_and_io_reads_the_file(data, tmp_path):
    """calibdash.engines.apply.apply_model applies a fitted calibrator with the fitted_on it is given (here the
    margins' mapping); calibdash.io.export.apply_model reads the file and hands both over: the same rows."""
    fitted_on = {"score": "margin", "score_transform": "logistic", "features": []}
    res = apply_model(data["cals"]["histogram"], data["glob"], tmp_path / "c.parquet", "duckdb", fitted_on=fitted_on)
    ref_res, ref = _apply(data, "histogram", "duckdb")
    assert (res.score_column, res.mapped, res.notes) == ("margin", True, ref_res.notes)
    np.testing.assert_array_equal(pd.read_parquet(tmp_path / "c.parquet")["calibrated"], ref["calibrated"])
    with pytest.raises(SettingsError, match=r"fitted calibrator \(a model file: calibdash.io.export.apply_model\)"):
        apply_model(data["models"]["histogram"], data["glob"], tmp_path / "x.parquet")
    with pytest.raises(SettingsError, match="apply_model takes a fitted calibrator, an exported model or a model "
                                            "file, not int"):
        export.apply_model(3, data["glob"], tmp_path / "x.parquet")


def test_a_callers_connection_is_left_as_it_was(data, tmp_path, monkeypatch):
    import duckdb
    con = duckdb.connect()
    res = export.apply_model(data["models"]["histogram"], data["glob"], tmp_path / "a.parquet", connection=con,
                             form="lookup")
    assert res.form == "lookup"
    _, ref = _apply(data, "histogram", "memory")           # the join's rows sorted back into file order
    a, b = pd.read_parquet(tmp_path / "a.parquet")["calibrated"].to_numpy(), ref["calibrated"].to_numpy()
    assert np.array_equal(np.isnan(a), np.isnan(b)) and np.nanmax(np.abs(a - b)) <= 1e-12
    with pytest.raises(duckdb.Error):
        con.sql("SELECT * FROM cd_steps").fetchall()
    monkeypatch.setattr(calibrators.get_class("histogram"), "sql_map", lambda self: None)
    res = export.apply_model(data["models"]["histogram"], data["glob"], tmp_path / "b.parquet", connection=con)
    assert res.via == "udf" and not con.sql("SELECT * FROM duckdb_functions() WHERE function_name LIKE "
                                             "'calibdash_predict%'").fetchall()
