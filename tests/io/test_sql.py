"""calibdash.calibrators.sql and calibdash.io.sql: every calibrator's SQL, run in DuckDB (and Spark), equals its
predict."""
import math

import duckdb
import numpy as np
import pandas as pd
import pytest

from tests.conftest import start_spark

from calibdash import calibrators
from calibdash.io import export, sql
from calibdash.core import sql_forms
from calibdash.core.sql_forms.forms import linear_sql, step_sql
from calibdash.core.step_maps import interp
from calibdash.calibrators import sql as calibrator_sql
from calibdash.calibrators.base import Calibrator
from calibdash.core.errors import DataError, SettingsError

RNG = np.random.default_rng(20261123)
N = 2500
#: Scores with many ties (3 decimals) and the ends 0 and 1 among them.
S_FIT = np.r_[0.0, 1.0, 0.0, 1.0, 0.5, np.round(RNG.uniform(size=N - 5), 3)]
Y_FIT = (RNG.uniform(size=N) < 0.1 + 0.8 * S_FIT ** 2).astype(int)
FEATS = pd.DataFrame({"age": np.where(RNG.uniform(size=N) < 0.05, np.nan, np.round(RNG.normal(40, 10, N))),
                      "site": RNG.choice(np.array(["north", "south", "o'hare"], dtype=object), N)})
FEATS.loc[RNG.uniform(size=N) < 0.03, "site"] = None

#: (registry name, hyperparameters) fitted below; every other registered method is fitted with its defaults.
VARIANTS = [
    ("platt", {}), ("histogram", {}), ("histogram", {"n_bins": 200}), ("isotonic", {}),
    ("isotonic", {"interpolation": "linear"}), ("bbq", {}), ("bbq", {"variant": "authors"}), ("sbb", {}),
    ("abb", {"max_positions": 300}), ("elite", {}), ("mbct", {"bin_size": 100, "n_trees": 3}),
    ("beta", {}), ("temperature", {}), ("enir", {}), ("venn_abers", {}), ("venn_abers", {"merge": "brier"}),
]
CLOSED = {"platt", "beta", "temperature"}          # formulas with exp/ln: equal to rounding


def _cases():
    names = calibrators.available()
    cases = [(n, p) for n, p in VARIANTS if n in names]
    cases += [(n, {}) for n in names if n not in {c[0] for c in cases}]
    return cases


def _numbers(state) -> np.ndarray:
    """Every number in a state (cuts, knots, ...), to test scores exactly on them."""
    out = []

    def walk(v):
        if isinstance(v, dict):
            for x in v.values():
                walk(x)
        elif isinstance(v, list):
            for x in v:
                walk(x)
        elif isinstance(v, float):
            out.append(v)
    walk(state)
    return np.asarray(out, dtype=float)


def _test_scores(cal) -> np.ndarray:
    """Training scores, the state's numbers in [0, 1] and their neighbouring doubles, 0, 1, a grid, uniforms."""
    pts = _numbers(cal._export_state())
    pts = pts[(pts >= 0) & (pts <= 1)]
    s = np.r_[S_FIT, pts, np.nextafter(pts, -1.0), np.nextafter(pts, 2.0), np.linspace(0, 1, 401),
              RNG.uniform(size=1000), 5e-324, 1e-13, 1 - 1e-13]
    return np.unique(s[(s >= 0) & (s <= 1)])


def _fit(name, params):
    cal = calibrators.get(name, **params)
    return cal.fit(S_FIT, Y_FIT, FEATS if cal.uses_features else None)


def _table(cal, s):
    df = pd.DataFrame({"rid": np.arange(s.size + 1), "score": np.r_[s, np.nan]})
    feats = None
    if cal.uses_features:
        feats = FEATS.sample(s.size, replace=True, random_state=1).reset_index(drop=True)
        df = pd.concat([df, pd.concat([feats, FEATS.iloc[:1]], ignore_index=True)], axis=1)
    return df, feats


def _run_duckdb(con, m, df):
    con.register("scores_t", df)
    out = con.sql(m.select("scores_t", ["rid"])).df().sort_values("rid")
    return out["calibrated"].to_numpy(dtype=float, na_value=np.nan)


def _check(name, expected, got):
    assert np.isnan(got[-1]), "a NULL score must give NULL"
    got = got[:-1]
    assert not np.isnan(got).any()
    if name in CLOSED:
        np.testing.assert_allclose(got, expected, rtol=4e-15, atol=0)
    else:                                     # step and linear maps: the same IEEE operations, the same doubles
        np.testing.assert_array_equal(got, expected)


@pytest.fixture(scope="module")
def con():
    c = duckdb.connect()
    yield c
    c.close()


@pytest.mark.parametrize("name,params", _cases(), ids=lambda v: v if isinstance(v, str) else
                         ",".join(f"{k}={x}" for k, x in v.items()) or "default")
def test_sql_equals_predict(con, name, params):
    cal = _fit(name, params)
    s = _test_scores(cal)
    df, feats = _table(cal, s)
    if cal.sql_map() is None:
        with pytest.raises(sql.SqlUnsupported, match="cannot be written as SQL"):
            sql.to_sql(cal)
        return
    expected = cal.predict(s, feats)
    for dialect in ("duckdb", "ansi"):
        for form in ("case", "bisect", "lookup"):
            m = sql.to_sql(cal, dialect=dialect, form=form)
            _check(name, expected, _run_duckdb(con, m, df))
    # the same through the model file
    m = sql.to_sql(export.dumps(cal))
    _check(name, expected, _run_duckdb(con, m, df))


def test_mbct_trees_are_routed_on_features(con):
    """The MBCT case is not trivial: several leaves, and rows whose features differ get different values."""
    cal = _fit("mbct", {"bin_size": 100, "n_trees": 3})
    assert sum(t.n_leaves for t in cal.trees_) > len(cal.trees_)
    used = {int(f) for t in cal.trees_ for f in t.feature if f > 0}
    assert used, "no tree splits on a feature: the test would not check feature coding"
    s = np.full(4, 0.3)
    feats = pd.DataFrame({"age": [20.0, 60.0, np.nan, 40.0], "site": ["north", "south", None, "unseen"]})
    df = pd.concat([pd.DataFrame({"rid": range(5), "score": np.r_[s, np.nan]}),
                    pd.concat([feats, feats.iloc[:1]], ignore_index=True)], axis=1)
    for dialect in ("duckdb", "ansi"):
        got = _run_duckdb(con, sql.to_sql(cal, dialect=dialect), df)
        if dialect == "ansi":           # ANSI has no NaN: pandas' NaN reaches DuckDB as NULL, the same here
            pass
        _check("mbct", cal.predict(s, feats), got)
    # absent features are coded unseen, as predict without features codes them
    s2 = _test_scores(cal)
    m = sql.to_sql(cal, feature_columns={"age": None, "site": None})
    _check("mbct", cal.predict(s2), _run_duckdb(con, m, pd.DataFrame({"rid": range(s2.size + 1),
                                                                       "score": np.r_[s2, np.nan]})))
    # renamed columns
    m = sql.to_sql(cal, feature_columns={"age": "Age (y)", "site": "Site"})
    renamed = df.rename(columns={"age": "Age (y)", "site": "Site"})
    _check("mbct", cal.predict(s, feats), _run_duckdb(con, m, renamed))


def test_step_boundaries_by_hand(con):
    """A score on a cut takes the upper piece (searchsorted side='right'); repeated cuts; point overrides."""
    step = sql_forms.StepMap(cuts=[0.25, 0.5, 0.5, 0.75], levels=[0.1, 0.2, 0.3, 0.4, 0.5],
                       point_x=[0.6, 0.6], point_value=[0.9, 0.0])
    s = np.array([0.0, 0.25, np.nextafter(0.25, 0), 0.5, np.nextafter(0.5, 0), 0.6, np.nextafter(0.6, 1), 0.75, 1.0])
    hand = [0.1, 0.2, 0.1, 0.4, 0.2, 0.9, 0.4, 0.5, 0.5]
    np.testing.assert_array_equal(step.evaluate(s), hand)
    for form in ("case", "bisect", "lookup"):
        for dialect in ("duckdb", "ansi"):
            w = sql.SqlWriter(dialect, sql.quote("score", dialect))
            m = step_sql(step, w, form, "test", "score")
            got = _run_duckdb(con, m, pd.DataFrame({"rid": range(s.size + 1), "score": np.r_[s, np.nan]}))
            assert np.isnan(got[-1])
            np.testing.assert_array_equal(got[:-1], hand)


def test_linear_map_matches_np_interp_on_repeated_knots(con):
    """At a repeated knot the last copy's value (as np.interp); ends held; knots closer than 1e-308 interpolate
    instead of overflowing as np.interp's slope does (predict's ``step_maps.interp``)."""
    x = [0.0, 0.5, 0.5, 1.0]
    y = [0.0, 0.2, 0.8, 1.0]
    tiny = 5e-324
    lin = sql_forms.LinearMap(x, y)
    s = np.array([0.0, 0.25, 0.5, np.nextafter(0.5, 0), 0.75, 1.0])
    np.testing.assert_array_equal(np.interp(s, x, y), [0.0, 0.1, 0.8, np.interp(np.nextafter(0.5, 0), x, y), 0.9, 1.0])
    steep = sql_forms.LinearMap([0.0, 2 * tiny, 1e-310, 0.6], [0.0, 1.0, 1.0, 1.0])   # np.interp's slope overflows
    s_steep = np.array([0.0, tiny, 2 * tiny, 4e-314, 0.45, 0.6, 0.9])
    exp_steep = np.clip(interp(s_steep, steep.x, steep.y), 0, 1)
    assert exp_steep[1] == 0.5 and np.all(np.diff(exp_steep) >= 0)          # halfway between 0 and 1e-323
    ext = sql_forms.LinearMap([0.2, 0.4, 0.9], [0.3, 0.5, 0.6], left="extend", right="extend")
    s_ext = np.array([0.0, 0.1, 0.2, 0.3, 0.9, 0.95, 1.0])
    for lm, ss, expected in ((lin, s, np.interp(s, x, y)), (steep, s_steep, exp_steep),
                             (ext, s_ext, np.clip(ext.evaluate(s_ext), 0, 1))):
        for form in ("case", "bisect", "lookup"):
            w = sql.SqlWriter("duckdb", sql.quote("score", "duckdb"))
            m = linear_sql(lm, w, form, "test", "score")
            got = _run_duckdb(con, m, pd.DataFrame({"rid": range(ss.size + 1), "score": np.r_[ss, np.nan]}))
            np.testing.assert_array_equal(got[:-1], expected)
    # ELiTE-style extension below 0.2: 0.3 + (0 - 0.2) * 0.2 / 0.2 = 0.1 (by hand)
    assert ext.evaluate(np.array([0.0]))[0] == pytest.approx(0.1, abs=1e-15)


def test_literals_read_back_exactly(con):
    vals = np.r_[RNG.uniform(size=300), RNG.normal(size=100) * 1e-300, RNG.normal(size=100) * 1e300,
                 5e-324, -5e-324, 0.1, 1 / 3, 1 - 1e-12, 1e-12, -0.0, 2.0 ** 60, np.finfo(float).max]
    got = con.sql("SELECT " + ", ".join(sql.literal(v) for v in vals)).fetchall()[0]
    assert [float(g) for g in got] == vals.tolist()
    assert con.sql(f"SELECT typeof({sql.literal(0.1)})").fetchall()[0][0] == "DOUBLE"
    assert con.sql(f"SELECT 1.0E0 - {sql.literal(-0.5)}").fetchall()[0][0] == 1.5      # never "--"
    with pytest.raises(sql.SqlUnsupported):
        sql.literal(math.inf)


def test_forms_thresholds_and_standalone(con, tmp_path):
    small = _fit("histogram", {"n_bins": 10})
    big = _fit("histogram", {"n_bins": 200})
    assert sql.to_sql(small).form == "case" and not sql.to_sql(small).lookups
    m = sql.to_sql(big)
    assert m.form == "lookup" and "cd_steps" in m.lookups
    assert sql.to_sql(big, form="scalar").form == "bisect"
    assert sql.to_sql(_fit("platt", {})).form == "closed"
    # standalone: one statement over a table named scores, from the model file's path
    path = tmp_path / "model.json"
    path.write_text(export.dumps(big))
    s = _test_scores(big)
    con.register("scores", pd.DataFrame({"score": s}))
    text = sql.to_sql(str(path)).standalone()
    assert text.lstrip().startswith("-- calibdash") and "VALUES" in text
    got = con.sql(text.rstrip().rstrip(";") + " ORDER BY score").df()
    np.testing.assert_array_equal(got["calibrated"].to_numpy(), big.predict(got["score"].to_numpy()))
    # a spark version of the same model names columns with backticks and reads back
    assert "`score`" in sql.to_sql(big, dialect="spark").expression


def test_unsupported_and_register(con, monkeypatch):
    cal = _fit("isotonic", {})
    monkeypatch.setattr(type(cal), "sql_map", lambda self: None)       # a class saying it has no SQL form
    with pytest.raises(sql.SqlUnsupported, match="isotonic cannot be written as SQL"):
        sql.to_sql(cal)
    monkeypatch.undo()
    with pytest.raises(SettingsError, match="dialect"):
        sql.to_sql(_fit("platt", {}), dialect="oracle")
    with pytest.raises(DataError, match=r"to_sql takes a fitted calibrator \(a model file: calibdash.io.sql.to_sql\)"):
        calibrator_sql.to_sql(export.dumps(_fit("platt", {})))         # a model file is read in io, above
    with pytest.raises(DataError, match="to_sql takes a fitted calibrator, an exported model or a model file, not int"):
        sql.to_sql(3)
    # MBCT on a column mixing text and numbers: pandas matches by value and type; SQL cannot
    mixed = pd.DataFrame({"kind": np.array(["a", 1, "b", 2] * (N // 4) + ["a"] * (N % 4), dtype=object)})
    mb = calibrators.get("mbct", bin_size=100, n_trees=1).fit(S_FIT, Y_FIT, mixed)
    with pytest.raises(sql.SqlUnsupported, match="several types"):
        sql.to_sql(mb)

    class Halver(Calibrator):
        name = "halver_test"

        def _fit(self, s, y, features, w):
            pass

        def _predict(self, s, features):
            return s / 2

        def _export_state(self):
            return {}

    h = Halver().fit([0.2, 0.4], [0, 1])
    with pytest.raises(sql.SqlUnsupported):             # a class that declares no form has none
        sql.to_sql(h)
    monkeypatch.setitem(calibrator_sql._CONVERTERS, "halver_test", lambda state, params: sql_forms.ClosedForm(
        lambda w: f"{w.score} / 2.0E0"))
    s = np.array([0.0, 0.3, 1.0])
    got = _run_duckdb(con, sql.to_sql(h), pd.DataFrame({"rid": range(4), "score": np.r_[s, np.nan]}))
    _check("halver_test", h.predict(s), got)
    with pytest.raises(SettingsError):
        calibrator_sql.register_sql("x", 3)


# ---------------------------------------------------------------------------------------------------------
# Spark (local[1]): one step and one linear method, the literals
# ---------------------------------------------------------------------------------------------------------
@pytest.fixture(scope="module")
def spark():
    session = start_spark("calibdash-test-sql", **{"spark.sql.shuffle.partitions": "1", "spark.driver.memory": "1g"})
    yield session
    session.stop()


def _run_spark(spark, m, s):
    rows = [(i, float(v)) for i, v in enumerate(s)] + [(len(s), None)]        # None: a NULL score
    spark.createDataFrame(rows, "rid long, score double").createOrReplaceTempView("scores_t")
    out = spark.sql(m.select("scores_t", ["rid"])).toPandas().sort_values("rid")
    return out["calibrated"].to_numpy(dtype=float, na_value=np.nan)


@pytest.mark.parametrize("name,params,form", [("histogram", {"n_bins": 40}, "case"),
                                              ("histogram", {"n_bins": 150}, "lookup"),
                                              ("isotonic", {"interpolation": "linear"}, "bisect"),
                                              ("isotonic", {"interpolation": "linear"}, "lookup")])
def test_spark_sql_equals_predict(spark, name, params, form):
    """A step and a linear map in Spark SQL: flat CASE, nested CASE, range-joined lookup table."""
    cal = _fit(name, params)
    s = _test_scores(cal)
    m = sql.to_sql(cal, dialect="spark", form=form)
    assert m.form == form
    _check(name, cal.predict(s), _run_spark(spark, m, s))


def test_spark_literals(spark):
    vals = np.r_[RNG.uniform(size=50), 5e-324, 1e-300, 1e300, -0.25, 1 - 1e-12]
    row = spark.sql("SELECT " + ", ".join(f"{sql.literal(v)} AS c{i}" for i, v in enumerate(vals))).collect()[0]
    assert [float(v) for v in row] == vals.tolist()
