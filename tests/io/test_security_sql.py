"""Generated SQL holds a name from the data or a model file only as a quoted identifier or an escaped literal.

Every place calibdash writes SQL over names it did not choose (the SQL maps of :mod:`calibdash.io.sql` and the
``export-sql`` command, MBCT's categories, the DuckDB engines' aggregations, ``apply --engine duckdb``, the
K-class rows) is run here with column names and values holding newlines, quotes, backticks, ``--``, ``/*``,
``;`` and backslashes: the text must parse as exactly one statement and compute over the column so named
(the result is checked against ``predict`` or against the same data under plain names). Spark SQL is
parsed by Spark's own parser.
"""
import json

import duckdb
import numpy as np
import pandas as pd
import pytest

from tests.conftest import start_spark

from calibdash import calibrators
from calibdash.io import export, sql
from calibdash.cli import main
from calibdash.core.errors import DataError
from calibdash.core.sql_forms.writer import string_literal

#: Names an attacker may give a column (a CSV header) or write into a model file.
NASTY = ["score\nDROP TABLE scores; --", 'sc"ore', "sc`ore", "sc--ore", "sc/*ore", "sc;ore", "sc'ore",
         "sc\\", "sc\r\nore */", "DROP TABLE scores; --\n"]
#: Category values of the same kind (MBCT writes them as string literals).
NASTY_VALUES = ["a\\", "b'--", "c\n;DROP TABLE scores", "d''", "e`\"/*"]

RNG = np.random.default_rng(7)
N = 1200
S = np.round(RNG.uniform(size=N), 3)
Y = (RNG.uniform(size=N) < S).astype(int)
SITE = RNG.choice(np.array(NASTY_VALUES, dtype=object), N)
#: (method, params, form): a flat CASE, a lookup table, a nested CASE, a closed form, MBCT's trees.
FITS = [("histogram", {"n_bins": 10}, "case"), ("histogram", {"n_bins": 150}, "lookup"),
        ("isotonic", {"interpolation": "linear"}, "bisect"), ("isotonic", {"interpolation": "linear"}, "lookup"),
        ("platt", {}, "auto"), ("mbct", {"bin_size": 100, "n_trees": 2}, "auto")]


def _fit(method, params, feature):
    cal = calibrators.get(method, **params)
    feats = pd.DataFrame({feature: SITE}) if cal.uses_features else None
    return cal.fit(S, Y, feats)


def _one_statement(text: str) -> None:
    assert len(duckdb.extract_statements(text)) == 1, text


@pytest.mark.parametrize("name", NASTY)
@pytest.mark.parametrize("method,params,form", FITS)
def test_sql_maps_are_one_statement_over_the_named_column(method, params, form, name):
    feature = name + "_site"
    cal = _fit(method, params, feature)
    m = sql.to_sql(cal, score_column=name, form=form, feature_columns={feature: feature})
    text = m.standalone("scores")
    _one_statement(text)
    s = np.r_[S[:200], 0.0, 1.0]
    con = duckdb.connect()
    try:
        frame = pd.DataFrame({"rid": np.arange(s.size), name: s, feature: SITE[:s.size]})
        con.register("scores", frame)
        got = con.execute(text).df().sort_values("rid")
        assert list(got.columns) == ["rid", name, feature, "calibrated"]
        want = cal.predict(s, pd.DataFrame({feature: SITE[:s.size]}) if cal.uses_features else None)
        np.testing.assert_allclose(got["calibrated"].to_numpy(), want, rtol=4e-15, atol=0)
        assert con.execute("SELECT count(*) FROM scores").fetchone()[0] == s.size        # the table is still there
    finally:
        con.close()


def test_the_comment_holds_no_name_and_the_source_only_as_a_plain_word():
    cal = _fit("histogram", {"n_bins": 5}, "f")
    for name in NASTY:
        text = sql.to_sql(cal, score_column=name).standalone("scores")
        comment = "".join(line for line in text.splitlines(keepends=True) if line.startswith("--"))
        assert name.strip() not in comment and "DROP" not in comment
        assert text.splitlines()[2].startswith("SELECT ")                  # two comment lines, then the statement
    text = sql.to_sql(cal).standalone("(SELECT 1 AS score) t")
    assert "the source query" in text.splitlines()[1]


@pytest.mark.parametrize("dialect", ["duckdb", "ansi", "spark"])
def test_string_literals_hold_any_text(dialect):
    for text in NASTY_VALUES + NASTY:
        lit = string_literal(text, dialect)
        if dialect == "spark":              # backslash escapes: every quote inside is escaped, every \\ doubled
            body = lit[1:-1]
            assert body.replace("\\\\", "").replace("\\'", "").count("'") == 0
        else:
            assert duckdb.execute(f"SELECT {lit} AS v").fetchone()[0] == text


def _write_csv(path, name):
    # the CSV writer quotes a header holding a newline, as any spreadsheet would
    pd.DataFrame({name: S, "label": Y}).to_csv(path, index=False)


@pytest.mark.parametrize("name", NASTY[:2] + ["sc`ore;--"])
def test_export_sql_of_a_model_fitted_on_a_nasty_header(tmp_path, name, capsys):
    data, model, out = tmp_path / "d.csv", tmp_path / "m.json", tmp_path / "m.sql"
    _write_csv(data, name)
    assert main(["fit", str(data), "--method", "histogram", "--score", name, "--label", "label",
                 "--out", str(model)]) == 0
    assert json.loads(model.read_text())["fitted_on"]["score"] == name
    assert main(["export-sql", str(model), "--out", str(out)]) == 0
    text = out.read_text()
    _one_statement(text)
    con = duckdb.connect()
    try:
        con.register("scores", pd.DataFrame({name: S}))
        got = con.execute(text).df()
        np.testing.assert_array_equal(got["calibrated"].to_numpy(), export.loads(model.read_bytes()).predict(S))
        assert con.execute("SELECT count(*) FROM scores").fetchone()[0] == N
    finally:
        con.close()


def _model_doc(**fitted_on):
    cal = calibrators.get("histogram", n_bins=2).fit([0.1, 0.2, 0.3, 0.4], [0, 0, 1, 1])
    return json.loads(export.dumps(cal, fitted_on=fitted_on or None))


def test_export_sql_of_a_crafted_model_file_writes_no_second_statement(tmp_path):
    """A hand-written model naming its score column ``x"; COPY ...`` and margins: the name stays one identifier."""
    evil = 'x" FROM scores; COPY (SELECT 1) TO \'/tmp/pwned.csv\'; --\n'
    doc = _model_doc(score=evil, score_transform="logistic", features=[])
    model, out = tmp_path / "m.json", tmp_path / "m.sql"
    model.write_text(json.dumps(doc))
    assert main(["export-sql", str(model), "--out", str(out)]) == 0
    text = out.read_text()
    _one_statement(text)
    con = duckdb.connect()
    try:
        con.register("scores", pd.DataFrame({evil: [-2.0, 0.0, 3.0]}))
        got = con.execute(text).df()
        assert list(got.columns) == [evil, evil + "_probability", "calibrated"]
        np.testing.assert_allclose(got[evil + "_probability"], 1 / (1 + np.exp([2.0, 0.0, -3.0])), rtol=1e-15)
    finally:
        con.close()


@pytest.mark.parametrize("change,match", [
    (lambda d: d["fitted_on"].update(extra="x"), "entries calibdash does not write: 'extra'"),
    (lambda d: d["fitted_on"].update(score=["a"]), "'score' must be a string"),
    (lambda d: d["fitted_on"].update(score_transform="exp"), "'score_transform' must be null or 'identity'"),
    (lambda d: d["fitted_on"].update(features="a"), "'features' must be a list of strings"),
    (lambda d: d["fitted_on"].update(score="s" * 5000), "string of 5,000 characters"),
    (lambda d: d.update(run="rm -rf /"), "top-level entries the format does not have: 'run'"),
    (lambda d: d["state"].update(sql="DROP TABLE x"), "entries its method does not know: 'sql'"),
    (lambda d: d["state"].update(cuts=[0.25, 0.5]), "'estimates' must hold 3 numbers"),
    (lambda d: d["params"].update(n_bins=1e309), "non-finite number"),
])
def test_a_model_file_is_checked_on_read(change, match):
    doc = _model_doc(score="s", score_transform="identity", features=[])
    change(doc)
    text = json.dumps(doc)
    with pytest.raises(DataError, match=match):
        export.read_model(text)


def test_deep_or_non_finite_model_files_are_data_errors(tmp_path, capsys):
    with pytest.raises(DataError, match="more than 32 deep"):
        export.read_model('{"format": "calibdash-calibrator", "version": 1, "x": ' + "[" * 40 + "]" * 40 + "}")
    with pytest.raises(DataError, match="not valid JSON|deep"):
        export.read_model("[" * 100_000)
    deep = tmp_path / "deep.json"
    deep.write_text("[" * 100_000)
    assert main(["export-sql", str(deep)]) != 0                 # a message, not a RecursionError's traceback
    assert "more than 32 deep" in capsys.readouterr().err
    doc = _model_doc()
    text = json.dumps(doc).replace("0.25", "NaN")
    with pytest.raises(DataError, match="'cuts' holds a non-finite number"):
        export.read_model(text)


# ---------------------------------------------------------------------------------------------------------
# the DuckDB engines: aggregations and apply over nasty column names equal those over plain names
# ---------------------------------------------------------------------------------------------------------
def _frame(names):
    score, label, split = names
    return pd.DataFrame({score: S, label: Y, split: np.where(np.arange(N) % 3 == 0, "test", "train")})


@pytest.mark.parametrize("names", [(NASTY[0], NASTY[1], NASTY[2]), (NASTY[6], NASTY[7], NASTY[8])])
def test_duckdb_aggregate_over_nasty_names(tmp_path, names):
    from calibdash.engines import Source, aggregate
    from calibdash.evaluation.holdout import Scheme
    plain, evil = tmp_path / "plain.parquet", tmp_path / "evil.parquet"
    _frame(("s", "y", "split")).to_parquet(plain)
    _frame(names).to_parquet(evil)
    scheme = Scheme(kind="column", train_value="train")
    a = aggregate(Source(path=str(plain), score="s", label="y", split="split"), scheme, engine="duckdb")
    b = aggregate(Source(path=str(evil), score=names[0], label=names[1], split=names[2]), scheme, engine="duckdb")
    for col in ("score", "n", "n_pos", "score_sum", "part"):
        np.testing.assert_array_equal(getattr(a, col), getattr(b, col))


def _cells_equal(a, b, rtol=0.0):
    """Equal cells; ``rtol`` for the sums of scores, which two engines may add in another order (n <= 1,200
    doubles in [0, 1]: at most n * 2**-53 = 1.3e-13 relative apart)."""
    for col in ("n", "n_pos", "part"):
        np.testing.assert_array_equal(getattr(a, col), getattr(b, col))
    for col in ("score", "score_sum"):
        np.testing.assert_allclose(getattr(a, col), getattr(b, col), rtol=rtol, atol=0)


@pytest.mark.parametrize("kind", ["group", "period"])
def test_duckdb_keyed_cells_over_a_nasty_key_column(tmp_path, kind):
    from calibdash.engines import Source, aggregate_keyed
    from calibdash.monitoring.keyed import Key
    rng = np.random.default_rng(5)
    values = (pd.Series(pd.date_range("2024-01-01", periods=N, freq="h")) if kind == "period"
              else pd.Series(rng.choice(np.array(NASTY_VALUES, dtype=object), N)))
    name = NASTY[0] + "`key'"
    got = {}
    for key_name, score, label, path in (("k", "s", "y", tmp_path / "plain.parquet"),
                                         (name, NASTY[2], NASTY[7], tmp_path / "evil.parquet")):
        pd.DataFrame({score: S, label: Y, key_name: values}).to_parquet(path)
        got[key_name] = aggregate_keyed(Source(path=str(path), score=score, label=label),
                                        Key(key_name, kind=kind, min_rows=1), engine="duckdb")
    a, b = got["k"], got[name]
    assert a.labels == b.labels and len(a.labels) == (len(NASTY_VALUES) if kind == "group" else len(a.labels))
    np.testing.assert_array_equal(a.key, b.key)
    _cells_equal(a.cells, b.cells)


def test_duckdb_class_cells_over_nasty_class_columns(tmp_path):
    from calibdash.engines.classes import aggregate_classes, class_source
    rng = np.random.default_rng(6)
    P = rng.dirichlet([1, 1, 1], size=N)
    labels = np.array(["a", "b", "c"], dtype=object)[rng.integers(0, 3, N)]
    got = []
    for cols, label, path in ((["p_a", "p_b", "p_c"], "label", tmp_path / "plain.parquet"),
                              ([NASTY[0] + "_a", NASTY[0] + "_b", NASTY[0] + "_c"], NASTY[7],
                               tmp_path / "evil.parquet")):
        pd.DataFrame({label: labels, **{c: P[:, j] for j, c in enumerate(cols)}}).to_parquet(path)
        got.append(aggregate_classes(class_source(str(path), label=label, probs=cols), engine="duckdb"))
    _cells_equal(got[0].top, got[1].top)
    for x, y in zip(got[0].classes, got[1].classes):
        _cells_equal(x, y)


@pytest.mark.parametrize("name", [NASTY[0], NASTY[2], NASTY[7]])
def test_apply_with_duckdb_over_a_nasty_score_column(tmp_path, name):
    from calibdash.engines.apply import apply_model
    cal = _fit("histogram", {"n_bins": 150}, "f")
    src, out = tmp_path / "in.parquet", tmp_path / "out.parquet"
    pd.DataFrame({name: S[:300]}).to_parquet(src)
    apply_model(cal, str(src), str(out), engine="duckdb", score_column=name)
    got = pd.read_parquet(out)
    np.testing.assert_array_equal(got["calibrated"].to_numpy(), cal.predict(S[:300]))
    assert list(got.columns) == [name, "calibrated"]


# ---------------------------------------------------------------------------------------------------------
# Spark SQL: Spark's own parser reads one statement
# ---------------------------------------------------------------------------------------------------------
@pytest.fixture(scope="module")
def spark():
    session = start_spark("calibdash-test-security-sql", **{"spark.sql.shuffle.partitions": "1",
                                                             "spark.driver.memory": "1g"})
    yield session
    session.stop()


def test_spark_sql_is_one_statement_over_the_named_column(spark, tmp_path):
    parser = spark._jsparkSession.sessionState().sqlParser()
    # export-sql of a crafted model (margins: the CLI writes the source query too)
    evil = 'x` FROM scores; DROP TABLE scores; --\n'
    model, out = tmp_path / "m.json", tmp_path / "m.sql"
    model.write_text(json.dumps(_model_doc(score=evil, score_transform="logistic", features=[])))
    assert main(["export-sql", str(model), "--dialect", "spark", "--out", str(out)]) == 0
    parser.parsePlan(out.read_text().rstrip().rstrip(";"))
    for method, params, form in FITS:
        for name in NASTY:
            feature = name + "_site"
            cal = _fit(method, params, feature)
            text = sql.to_sql(cal, score_column=name, dialect="spark", form=form,
                              feature_columns={feature: feature}).standalone("scores")
            parser.parsePlan(text.rstrip().rstrip(";"))            # a second statement is a ParseException
    # and computes over the column so named (a step map, MBCT's string literals)
    for method, params, form in (FITS[1], FITS[-1]):
        name = NASTY[0]
        feature = name + "_site"
        cal = _fit(method, params, feature)
        rows = [(i, float(S[i]), str(SITE[i])) for i in range(300)]
        spark.createDataFrame(rows, ["rid", name, feature]).createOrReplaceTempView("scores")
        text = sql.to_sql(cal, score_column=name, dialect="spark", form=form,
                          feature_columns={feature: feature}).standalone("scores")
        got = spark.sql(text.rstrip().rstrip(";")).toPandas().sort_values("rid")
        want = cal.predict(S[:300], pd.DataFrame({feature: SITE[:300]}) if cal.uses_features else None)
        np.testing.assert_allclose(got["calibrated"].to_numpy(), want, rtol=4e-15, atol=0)


# ---------------------------------------------------------------------------------------------------------
# errors: a query source's error never shows the data, the spill path or a value, whatever the quoting
# ---------------------------------------------------------------------------------------------------------
SECRETS = ["hunter2", "it's \"quoted\" 4111", "2024-13-45"]


@pytest.fixture
def data_root(tmp_path):
    from calibdash.data.guard import DataRoot
    root, spill = tmp_path / "root", tmp_path / "spill"
    root.mkdir()
    spill.mkdir(mode=0o700)
    pd.DataFrame({"name": ["alice", "bob", "carol"], "pw": SECRETS, "segment": ["2024-01-02", "2024-13-45", "x"],
                  "p": [0.1, 0.5, 0.9], "y": [0, 1, 1]}).to_parquet(root / "users.parquet")
    return DataRoot(root, spill_directory=spill), root


def _query_error(data_root, query):
    from calibdash.engines.plan import NO_JOB, aggregate_plan, read_schema, resolve_plan
    from calibdash.core.errors import CalibdashError
    from calibdash.evaluation.holdout import Scheme
    dr, root = data_root
    plan = resolve_plan(dr, {"kind": "query", "query": query.format(root=root.resolve())})
    with pytest.raises(CalibdashError) as err:
        read_schema(NO_JOB, dr, plan)
        aggregate_plan(NO_JOB, dr, plan, {"score": "p", "label": "y"}, Scheme(kind="insample"), True)
    return str(err.value)


@pytest.mark.parametrize("query,kind", [
    ("SELECT error(current_setting('temp_directory')) AS p, 1 AS y", "Invalid Input Error"),
    ("SELECT error((SELECT string_agg(name || ':' || pw, ',') FROM read_parquet('{root}/users.parquet'))) AS p, "
     "1 AS y", "Invalid Input Error"),
    ("SELECT CAST(segment::DATE AS VARCHAR) AS s, p, y FROM read_parquet('{root}/users.parquet')",
     "Conversion Error"),
    ("SELECT CAST(pw AS DOUBLE) AS p, y FROM read_parquet('{root}/users.parquet')", "Conversion Error"),
    ("SELECT CAST((SELECT string_agg(pw, ',') FROM read_parquet('{root}/users.parquet')) AS INT) AS p, 1 AS y",
     "Conversion Error"),
    ("SELECT p, (SELECT string_agg(pw, ',') FROM read_parquet('{root}/users.parquet')) AS y "
     "FROM read_parquet('{root}/users.parquet')", "label column 'y' holds one class only"),
    ("SELECT p, pw AS y FROM read_parquet('{root}/users.parquet')", "label column 'y' has more than two values"),
    ("SELECT p, 'alice' AS y FROM read_parquet('{root}/users.parquet')", "label column 'y' holds one class only"),
])
def test_a_query_source_error_shows_the_kind_and_no_data(data_root, query, kind):
    dr, root = data_root
    msg = _query_error(data_root, query)
    assert kind in msg
    for secret in SECRETS + ["alice", "4111", "2024-13", str(dr.spill_directory or "spill"), str(root.parent)]:
        assert secret not in msg, msg


def test_a_conversion_error_still_names_the_column():
    from calibdash.data.guard import safe_message
    con = duckdb.connect()
    try:
        con.execute("CREATE TABLE t AS SELECT * FROM (VALUES ('2024-13-45'), ('x''\"y')) v(segment)")
        for value in ("2024-13-45", "x'\"y"):
            with pytest.raises(duckdb.ConversionException) as raw:
                con.execute("SELECT segment::DATE FROM t WHERE segment = ?", [value]).fetchall()
            msg = safe_message(raw.value)
            assert msg.startswith("Conversion Error: ") and msg.endswith("source column segment"), msg
            assert "2024" not in msg and "13" not in msg and "x'" not in msg
    finally:
        con.close()


# ---------------------------------------------------------------------------------------------------------
# commands calibdash shows: a shell word per argument, whatever the column names hold
# ---------------------------------------------------------------------------------------------------------
SHELL_NAMES = ["it's a \"p\" ", "`id` $(rm -rf x) ", "a\nb ", "p; echo pwned "]


@pytest.mark.parametrize("prefix", SHELL_NAMES)
def test_the_logits_hint_is_a_command_that_splits_back_into_its_arguments(prefix):
    import re
    import shlex

    from calibdash.data import build_class_set
    cols = [prefix + c for c in ("cat", "dog", "emu")]
    df = pd.DataFrame({"label": ["cat", "dog", "emu"] * 10, cols[0]: [2.0, -1.0, 0.5] * 10,
                       cols[1]: [-1.0, 2.0, 0.25] * 10, cols[2]: [0.0, 0.0, 0.25] * 10})
    with pytest.raises(DataError) as err:
        build_class_set(df, label="label", probs=cols)
    m = re.search(r"\(--logits (.*), or logits in the Data page", str(err.value), re.S)
    assert m, str(err.value)
    assert shlex.split("--logits " + m.group(1)) == ["--logits", prefix]


def test_spark_engines_over_nasty_names(spark, tmp_path):
    """The Spark engines name columns through the DataFrame API: a dot, a backtick or a newline in a name is
    the name, not a path into a struct; the cells equal DuckDB's."""
    from calibdash.engines import Source, aggregate, aggregate_keyed
    from calibdash.engines.classes import aggregate_classes, class_source
    from calibdash.evaluation.holdout import Scheme
    from calibdash.monitoring.keyed import Key
    score, label, split, key = NASTY[0] + ".x", "a.b`c", NASTY[2], "k.`y'"
    path = tmp_path / "evil.parquet"
    frame = _frame((score, label, split))
    frame[key] = np.array(NASTY_VALUES, dtype=object)[np.arange(N) % len(NASTY_VALUES)]
    frame.to_parquet(path)
    src = Source(path=str(path), score=score, label=label, split=split)
    scheme = Scheme(kind="column", train_value="train")
    _cells_equal(aggregate(src, scheme, engine="spark", spark=spark), aggregate(src, scheme, engine="duckdb"),
                 1e-12)
    k = Key(key, min_rows=1)
    a, b = (aggregate_keyed(src, k, engine=e, **({"spark": spark} if e == "spark" else {}))
            for e in ("spark", "duckdb"))
    assert a.labels == b.labels
    _cells_equal(a.cells, b.cells, 1e-12)
    cols = [NASTY[0] + ".p_a", NASTY[0] + ".p_b", NASTY[0] + ".p_c"]
    rng = np.random.default_rng(8)
    P = rng.dirichlet([1, 1, 1], size=N)
    cpath = tmp_path / "classes.parquet"
    pd.DataFrame({label: np.array(["a", "b", "c"], dtype=object)[rng.integers(0, 3, N)],
                  **{c: P[:, j] for j, c in enumerate(cols)}}).to_parquet(cpath)
    csrc = class_source(str(cpath), label=label, probs=cols)
    x, y = aggregate_classes(csrc, engine="spark", spark=spark), aggregate_classes(csrc, engine="duckdb")
    _cells_equal(x.top, y.top, 1e-12)
