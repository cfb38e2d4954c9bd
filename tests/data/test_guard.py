"""Tests of calibdash.data.guard: large sources confined to the data root, and typed SQL locked down.

Each refused case is checked three ways where it applies: the error type and
its message (clear, naming no path outside the root), what DuckDB itself
refuses on the locked connection (so the module docstring's claims are
checked against the installed DuckDB), and the file system left exactly as
it was (nothing written under the root, nothing written outside it).
"""
from __future__ import annotations

import os
import threading
import time
import uuid
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from calibdash import DataError, EnvironmentProblem, SettingsError
from calibdash.data.guard import (ENV_SPILL_LIMIT, ENV_VAR, AccessDenied, DataRoot, data_root_from_env,
                                  engine_error, quote_identifier, safe_message)
from calibdash.engines.duckdb.rows import literal_path
from calibdash.engines.plan import NO_JOB, aggregate_plan, read_schema, resolve_plan
from calibdash.core.errors import CalibdashError
from calibdash.evaluation.holdout import Scheme
from tests.conftest import APPTEST_TIMEOUT

duckdb = pytest.importorskip("duckdb")


def _frame(n: int, seed: int) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    s = np.round(rng.uniform(size=n), 6)
    return pd.DataFrame({"score": s, "label": (rng.uniform(size=n) < s).astype(np.int64)})


@pytest.fixture
def tree(tmp_path):
    """root/ (parts/*.parquet, t.csv, db.duckdb, links) beside outside/ (secret.csv, a DuckDB file)."""
    root, outside = tmp_path / "root", tmp_path / "outside"
    (root / "parts").mkdir(parents=True)
    outside.mkdir()
    parts = [_frame(50, 0), _frame(70, 1)]
    for i, part in enumerate(parts):
        part.to_parquet(root / "parts" / f"part-{i}.parquet", index=False)
    table = _frame(40, 2)
    table.to_csv(root / "t.csv", index=False)
    preds = _frame(30, 3)
    with duckdb.connect(str(root / "db.duckdb")) as con:
        con.register("preds_df", preds)
        con.execute("CREATE TABLE preds AS SELECT * FROM preds_df")
    (outside / "secret.csv").write_text("password,x\nhunter2,1\n")
    with duckdb.connect(str(outside / "other.duckdb")) as con:
        con.execute("CREATE TABLE s AS SELECT 42 AS answer")
    (root / "link_out").symlink_to(outside, target_is_directory=True)
    (root / "link_file.csv").symlink_to(outside / "secret.csv")
    (root / "link_in.csv").symlink_to(root / "t.csv")
    return {"root": root, "outside": outside, "parts": parts, "table": table, "preds": preds,
            "tmp": tmp_path}


def _snapshot(*dirs: Path) -> dict:
    """Every entry under ``dirs`` (links not followed): path -> (kind, size, mtime)."""
    snap = {}
    for d in dirs:
        for base, subdirs, files in os.walk(d, followlinks=False):
            for name in subdirs + files:
                p = Path(base) / name
                st = p.lstat()
                snap[str(p)] = (st.st_mode >> 12, st.st_size, st.st_mtime_ns)
    return snap


def _no_leak(msg: str, tree) -> None:
    """The message names no path outside the root (nor the root's own absolute location), no file content."""
    assert str(tree["outside"]) not in msg and str(tree["tmp"]) not in msg
    assert "hunter2" not in msg and "passwd" not in msg.replace("'/etc/passwd'", "")


# ---------------------------------------------------------------------------
# the root itself
# ---------------------------------------------------------------------------
def test_data_root_from_env_is_off_unless_set_and_an_explicit_value_wins(tree, tmp_path):
    assert data_root_from_env(environ={}) is None
    assert data_root_from_env(environ={ENV_VAR: "  "}) is None
    dr = data_root_from_env(environ={ENV_VAR: str(tree["root"])}, threads=1, memory_limit="256MB")
    assert isinstance(dr, DataRoot) and dr.root == tree["root"].resolve()
    assert (dr.threads, dr.memory_limit) == (1, "256MB")
    explicit = data_root_from_env(tree["outside"], environ={ENV_VAR: str(tree["root"])})
    assert explicit.root == tree["outside"].resolve()
    assert data_root_from_env("", environ={ENV_VAR: str(tree["root"])}).root == tree["root"].resolve()
    # the root is resolved once: a link to it gives the same root
    alias = tmp_path / "alias"
    alias.symlink_to(tree["root"], target_is_directory=True)
    assert DataRoot(alias).root == tree["root"].resolve()


def test_a_bad_root_or_bad_limits_are_refused(tree):
    with pytest.raises(EnvironmentProblem, match=f"does not exist.*{ENV_VAR}|{ENV_VAR}.*does not exist"):
        data_root_from_env(environ={ENV_VAR: str(tree["tmp"] / "nope")})
    with pytest.raises(EnvironmentProblem, match="not a directory"):
        DataRoot(tree["root"] / "t.csv")
    with pytest.raises(EnvironmentProblem, match="file-system root"):
        DataRoot("/")
    for bad in ("lots", "1GB'; COPY (SELECT 1) TO 'x", 2):
        with pytest.raises(SettingsError, match="memory_limit"):
            DataRoot(tree["root"], memory_limit=bad)
    for bad in (0, -1, 1.5, True):
        with pytest.raises(SettingsError, match="threads"):
            DataRoot(tree["root"], threads=bad)


# ---------------------------------------------------------------------------
# paths and globs
# ---------------------------------------------------------------------------
def test_resolve_accepts_paths_under_the_root(tree):
    dr, root = DataRoot(tree["root"]), tree["root"].resolve()
    assert dr.resolve("t.csv") == root / "t.csv"
    assert dr.resolve(root / "t.csv") == root / "t.csv"                  # absolute, under the root
    assert dr.resolve("parts/../t.csv") == root / "t.csv"                # '..' that stays inside
    assert dr.resolve("link_in.csv") == root / "t.csv"                   # a link that stays inside
    assert dr.resolve("parts") == root / "parts"
    with pytest.raises(DataError, match="no file 'missing.csv' under the data root") as err:
        dr.resolve("missing.csv")
    assert not isinstance(err.value, AccessDenied)


@pytest.mark.parametrize("path,why", [
    ("../outside/secret.csv", "outside the data root"),
    ("parts/../../outside/secret.csv", "outside the data root"),
    ("/etc/passwd", "outside the data root"),
    ("{outside}/secret.csv", "outside the data root"),
    ("link_out/secret.csv", "symbolic link that leads outside"),
    ("link_file.csv", "symbolic link that leads outside"),
    ("../outside/does-not-exist.csv", "outside the data root"),   # no probing: same answer when missing
    ("/no/such/dir/x.csv", "outside the data root"),
])
def test_resolve_refuses_every_way_out(tree, path, why):
    dr = DataRoot(tree["root"])
    before = _snapshot(tree["root"], tree["outside"])
    with pytest.raises(AccessDenied, match=why) as err:
        dr.resolve(path.format(outside=tree["outside"]))
    msg = str(err.value)
    assert isinstance(err.value, DataError) and "only files under the data root can be read" in msg
    if "{outside}" not in path:
        _no_leak(msg, tree)
    assert _snapshot(tree["root"], tree["outside"]) == before


def test_resolve_refuses_nul_and_link_loops(tree):
    dr = DataRoot(tree["root"])
    with pytest.raises(AccessDenied, match="NUL"):
        dr.resolve("t.csv\x00/etc/passwd")
    (tree["root"] / "loop_a").symlink_to(tree["root"] / "loop_b")
    (tree["root"] / "loop_b").symlink_to(tree["root"] / "loop_a")
    with pytest.raises(AccessDenied, match="cannot be resolved"):
        dr.resolve("loop_a/x.csv")


def test_resolve_glob_lists_the_files_under_the_root(tree):
    dr, root = DataRoot(tree["root"]), tree["root"].resolve()
    want = [root / "parts" / "part-0.parquet", root / "parts" / "part-1.parquet"]
    assert dr.resolve_glob("parts/*.parquet") == want
    assert dr.resolve_glob(str(root / "parts" / "part-?.parquet")) == want      # absolute under the root
    assert dr.resolve_glob("**/*.parquet") == want                               # '**' does not follow links
    assert dr.resolve_glob("t.csv") == [root / "t.csv"]                          # no wildcard: one file
    with pytest.raises(DataError, match="no file under the data root matches 'parts/\\*.csv'"):
        dr.resolve_glob("parts/*.csv")


@pytest.mark.parametrize("pattern,why", [
    ("../outside/*.csv", "outside the data root"),
    ("/etc/*", "outside the data root"),
    ("link_out/*.csv", "symbolic link that leads outside"),
    ("*.csv", "1 of the 3 files matching '\\*.csv' lead outside the data root through symbolic links"),
    ("*/../../outside/*.csv", "'..' after a wildcard"),
])
def test_resolve_glob_refuses_every_way_out(tree, pattern, why):
    before = _snapshot(tree["root"], tree["outside"])
    with pytest.raises(AccessDenied, match=why) as err:
        DataRoot(tree["root"]).resolve_glob(pattern)
    _no_leak(str(err.value), tree)
    assert _snapshot(tree["root"], tree["outside"]) == before


# ---------------------------------------------------------------------------
# the locked DuckDB connection
# ---------------------------------------------------------------------------
@pytest.fixture
def locked(tree):
    dr = DataRoot(tree["root"], memory_limit="256MB", threads=1)
    con = dr.connect(database="db.duckdb")
    yield dr, con
    con.close()


def test_connection_settings_are_set_and_locked(locked, tree):
    _, con = locked
    got = dict(con.execute("SELECT name, value FROM duckdb_settings() WHERE name IN ('threads', "
                           "'memory_limit', 'temp_directory', 'enable_external_access', 'lock_configuration', "
                           "'autoinstall_known_extensions', 'autoload_known_extensions', "
                           "'allowed_directories', 'python_enable_replacements')").fetchall())
    assert got["threads"] == "1" and got["memory_limit"] == "244.1 MiB"        # 256 MB in MiB
    assert got["temp_directory"] == ""
    assert got["allowed_directories"] == f"[{tree['root'].resolve()}/]"
    for name in ("enable_external_access", "autoinstall_known_extensions", "autoload_known_extensions",
                 "python_enable_replacements"):
        assert got[name] == "false", name
    assert got["lock_configuration"] == "true"
    # zoned timestamps fall in their UTC day whatever the server's zone (keyed cells' periods, as every engine)
    assert con.execute("SELECT current_setting('TimeZone')").fetchone() == ("UTC",)
    assert con.execute("SELECT database_name, readonly FROM duckdb_databases() "
                       "WHERE database_name = 'source'").fetchall() == [("source", True)]


def _sql_cases(tree):
    root = tree["root"].resolve()
    tmp_target = Path("/tmp") / f"calibdash-guard-{uuid.uuid4().hex}"
    return root, tmp_target, [
        # (sql, refused by DuckDB itself on the locked connection?, what check_query / query says)
        ("SELECT * FROM read_csv('/etc/passwd')", True, "outside the data root"),
        (f"SELECT * FROM read_csv('{root}/../outside/secret.csv')", True, "outside the data root"),
        (f"SELECT * FROM read_csv('{root}/link_file.csv')", True, "outside the data root"),
        (f"SELECT * FROM read_csv('{root}/link_out/secret.csv')", True, "outside the data root"),
        ("SELECT * FROM read_text('/etc/hostname')", True, "outside the data root"),
        ("SELECT * FROM glob('/etc/*')", True, "outside the data root"),
        (f"COPY (SELECT 1) TO '{root}/x.csv'", False, "this is a COPY statement"),
        (f"COPY (SELECT 1) TO '{tmp_target}.csv'", True, "this is a COPY statement"),
        (f"EXPORT DATABASE '{root}/exported'", False, "this is a EXPORT statement"),
        (f"ATTACH '{tmp_target}.db'", True, "this is a ATTACH statement"),
        (f"ATTACH '{root}/new.db'", False, "this is a ATTACH statement"),
        (f"ATTACH '{tree['outside']}/other.duckdb' AS o", True, "this is a ATTACH statement"),
        ("INSTALL httpfs", True, "this is a LOAD statement"),
        ("LOAD httpfs", True, "this is a LOAD statement"),
        ("SET enable_external_access = true", True, "this is a SET statement"),
        ("SET allowed_directories = ['/']", True, "this is a SET statement"),
        ("RESET lock_configuration", True, "this is a SET statement"),
        (f"SELECT 1; COPY (SELECT 1) TO '{root}/y.csv'", False, "2 statements \\(SELECT, COPY\\)"),
        ("CREATE TABLE source.main.t2 AS SELECT 1", True, "this is a CREATE statement"),
        ("DETACH source", False, "this is a DETACH statement"),
        ("CALL checkpoint()", False, "this is a CALL statement"),
    ]


def test_every_refused_query_leaves_nothing_written(locked, tree):
    dr, con = locked
    root, tmp_target, cases = _sql_cases(tree)
    before = _snapshot(tree["root"], tree["outside"])
    for sql, duckdb_refuses, why in cases:
        with pytest.raises(AccessDenied, match=why) as err:
            dr.query(con, sql)
        _no_leak(str(err.value), tree)
        assert "only" in str(err.value), sql
        assert _snapshot(tree["root"], tree["outside"]) == before, sql
    for sql, duckdb_refuses, _ in cases:
        if duckdb_refuses:       # DuckDB's own lock, without check_query in front
            with pytest.raises(duckdb.Error):
                con.execute(sql)
    assert _snapshot(tree["root"], tree["outside"]) == before
    assert not any(Path(f"{tmp_target}{ext}").exists() for ext in ("", ".csv", ".db", ".db.wal"))
    # the lock held: the settings are what connect() set
    assert con.execute("SELECT current_setting('enable_external_access'), "
                       "current_setting('lock_configuration')").fetchone() == (False, True)


def test_check_query_uses_the_parser_not_the_text(locked):
    dr, _ = locked
    assert dr.check_query("  -- a comment\nSELECT 'a;b; COPY' AS s;  ") == "SELECT 'a;b; COPY' AS s"
    assert dr.check_query("WITH t AS (SELECT 1 AS x) SELECT x FROM t") == "WITH t AS (SELECT 1 AS x) SELECT x FROM t"
    for ok in ("FROM range(3)", "VALUES (1), (2)", "(SELECT 1) UNION (SELECT 2)", "select 1 -- ; copy"):
        assert dr.check_query(ok)
    with pytest.raises(DataError, match="could not be parsed"):
        dr.check_query("SELEC 1")
    with pytest.raises(DataError, match="no query given"):
        dr.check_query("  ")
    with pytest.raises(DataError, match="only comments"):
        dr.check_query("-- nothing")
    with pytest.raises(AccessDenied, match="this is a EXPLAIN statement"):
        dr.check_query("EXPLAIN SELECT 1")


def test_a_query_cannot_read_python_variables_of_the_server(locked):
    dr, con = locked
    server_secret = pd.DataFrame({"password": ["hunter2"]})          # noqa: F841 (what a replacement scan finds)
    with pytest.raises(DataError) as err:
        dr.query(con, "SELECT * FROM server_secret").fetchall()
    assert "hunter2" not in str(err.value) and "does not exist" in str(err.value)


def test_memory_limit_refuses_instead_of_spilling_to_disk(tree):
    dr = DataRoot(tree["root"], memory_limit="32MB", threads=1)
    before = _snapshot(tree["root"], tree["outside"])
    with dr.connect() as con:
        with pytest.raises(duckdb.OutOfMemoryException):
            dr.query(con, "SELECT count(*) FROM (SELECT range, random() AS r FROM range(5000000) "
                          "ORDER BY r)").fetchall()
    assert _snapshot(tree["root"], tree["outside"]) == before


def test_legitimate_reads_parquet_glob_csv_and_an_attached_table(locked, tree):
    dr, con = locked
    root = tree["root"].resolve()
    before = _snapshot(tree["root"], tree["outside"])
    parts = pd.concat(tree["parts"], ignore_index=True)
    got = dr.query(con, f"SELECT count(*), sum(score), sum(label) FROM read_parquet('{root}/parts/*.parquet')"
                   ).fetchall()[0]
    assert got[0] == len(parts) and got[2] == parts["label"].sum()
    assert got[1] == pytest.approx(parts["score"].sum(), rel=1e-12)
    # the files resolve_glob lists, read as a list: the same rows in file order
    files = ", ".join(f"'{p}'" for p in dr.resolve_glob("parts/*.parquet"))
    df = dr.query(con, f"SELECT score, label FROM read_parquet([{files}])").df()
    pd.testing.assert_frame_equal(df, parts, check_dtype=False)
    csv = dr.query(con, f"SELECT * FROM read_csv('{root}/t.csv') ORDER BY score").df()
    pd.testing.assert_frame_equal(csv, tree["table"].sort_values("score", ignore_index=True),
                                  check_dtype=False)
    # a link that stays inside the root is read
    assert dr.query(con, f"SELECT count(*) FROM '{root}/link_in.csv'").fetchall() == [(40,)]
    table = dr.query(con, f"SELECT * FROM source.main.{quote_identifier('preds')} ORDER BY score").df()
    pd.testing.assert_frame_equal(table, tree["preds"].sort_values("score", ignore_index=True),
                                  check_dtype=False)
    assert _snapshot(tree["root"], tree["outside"]) == before


def test_connect_refuses_a_database_outside_the_root_or_not_a_database(tree):
    dr = DataRoot(tree["root"])
    with pytest.raises(AccessDenied, match="outside the data root"):
        dr.connect(database=tree["outside"] / "other.duckdb")
    with pytest.raises(AccessDenied, match="symbolic link"):
        dr.connect(database="link_out/other.duckdb")
    before = _snapshot(tree["root"], tree["outside"])
    with pytest.raises(DataError, match="could not be opened as a DuckDB database"):
        dr.connect(database="t.csv")
    assert _snapshot(tree["root"], tree["outside"]) == before


def test_quote_identifier():
    assert quote_identifier("preds") == '"preds"'
    assert quote_identifier('a"; DROP TABLE x; --') == '"a""; DROP TABLE x; --"'


def test_a_spill_directory_lets_a_large_aggregation_run_out_of_core(tree, tmp_path):
    """With the server's own spill directory (outside the root), a grouping past the memory limit completes;
    without one it fails with DuckDB's out-of-memory error. A spill directory inside the root is refused."""
    from calibdash.data.guard import DataRoot
    from calibdash.core.errors import EnvironmentProblem

    sql = "SELECT count(*) FROM (SELECT i % 4000000 AS k, sum(i) FROM range(20000000) t(i) GROUP BY k)"
    spilled = DataRoot(tree["root"], memory_limit="64MB", threads=1, spill_directory=tmp_path / "spill")
    con = spilled.connect()
    try:
        assert con.sql(sql).fetchall() == [(4_000_000,)]
    finally:
        con.close()
    con = DataRoot(tree["root"], memory_limit="64MB", threads=1).connect()
    try:
        with pytest.raises(Exception, match="(?i)out of memory"):
            con.sql(sql).fetchall()
    finally:
        con.close()
    with pytest.raises(EnvironmentProblem, match="outside the data root"):
        DataRoot(tree["root"], spill_directory=tree["root"] / "spill")


# ---------------------------------------------------------------------------
# issue 17, finding 3: errors never carry rows, paths outside the root, or a traceback
# ---------------------------------------------------------------------------
SECRET_ROW = "hunter2,4111-1111-1111-1111"


@pytest.fixture
def leaky(tree):
    """Under the root: a 200 kB text file of secret rows, and a DuckDB file whose view reads a file outside."""
    root = tree["root"]
    (root / "rows.txt").write_text("\n".join(f"{SECRET_ROW},{i}" for i in range(7000)))
    with duckdb.connect(str(root / "views.duckdb")) as con:
        con.execute(f"CREATE VIEW v AS SELECT * FROM read_csv('{tree['outside']}/secret.csv')")
        con.execute("CREATE TABLE ok AS SELECT 0.25 AS p, 1 AS y")
    return tree


def _short_and_clean(exc: BaseException, tree) -> str:
    msg = str(exc)
    assert isinstance(exc, CalibdashError), repr(exc)
    assert len(msg) < 700 and "hunter2" not in msg and "4111" not in msg and "Traceback" not in msg
    _no_leak(msg, tree)
    return msg


def test_a_query_casting_a_whole_file_to_a_number_shows_no_rows(leaky):
    """The 213,020-character error: DuckDB quotes the whole file in its conversion error."""
    root = DataRoot(leaky["root"])
    rows = f"{leaky['root'].resolve()}/rows.txt"
    spec = {"kind": "query", "query": f"SELECT CAST(content AS DOUBLE) AS p, 1 AS y FROM read_text('{rows}')"}
    plan = resolve_plan(root, spec)
    with pytest.raises(DataError) as err:
        read_schema(NO_JOB, root, plan)
    assert "Conversion" in _short_and_clean(err.value, leaky)
    with pytest.raises(DataError) as err:
        aggregate_plan(NO_JOB, root, plan, {"score": "p", "label": "y"}, Scheme(kind="insample"), True)
    _short_and_clean(err.value, leaky)


def test_a_view_reading_outside_the_root_is_refused_without_naming_its_target(leaky):
    root = DataRoot(leaky["root"])
    plan = resolve_plan(root, {"kind": "table", "database": "views.duckdb", "table": ["main", "v"]})
    with pytest.raises(AccessDenied, match="outside the data root") as err:
        read_schema(NO_JOB, root, plan)
    assert "secret.csv" not in _short_and_clean(err.value, leaky)
    with pytest.raises(AccessDenied) as err:
        aggregate_plan(NO_JOB, root, plan, {"score": "password", "label": "x"}, Scheme(kind="insample"), False)
    assert "secret.csv" not in _short_and_clean(err.value, leaky)
    plan = resolve_plan(root, {"kind": "table", "database": "views.duckdb", "table": ["main", "ok"]})
    assert read_schema(NO_JOB, root, plan)["columns"] == ["p", "y"]          # the database itself is fine


def test_duckdb_settings_and_nested_or_zoned_columns_do_not_crash_the_role_guess(leaky):
    """``duckdb_settings()`` has list columns (the guess crashed on them); TIMESTAMPTZ needs pytz in pandas."""
    root = DataRoot(leaky["root"])
    got = read_schema(NO_JOB, root, resolve_plan(root, {"kind": "query", "query": "SELECT * FROM duckdb_settings()"}))
    assert "name" in got["columns"] and isinstance(got["guess"], dict)
    q = "SELECT now() AS t, [1, 2] AS l, {'a': 1} AS s, 0.5 + range / 1e4 AS p, range % 2 AS y FROM range(100)"
    got = read_schema(NO_JOB, root, resolve_plan(root, {"kind": "query", "query": q}))
    assert got["columns"] == ["t", "l", "s", "p", "y"] and got["guess"]["label"] == "y"


def test_errors_raised_while_fetching_are_typed_and_short(leaky):
    """Conversion, permission and type errors found only while rows are fetched become calibdash errors."""
    root = DataRoot(leaky["root"])
    con = root.connect()
    try:
        for sql, kind in [
            (f"SELECT CAST(content AS INTEGER) FROM read_text('{leaky['root'].resolve()}/rows.txt')", DataError),
            ("SELECT CAST('x' || range AS INTEGER) FROM range(10)", DataError),
            ("SELECT [1, 2, 3][1:2][10 // (range - range)] FROM range(3)", DataError),
        ]:
            rel = root.query(con, sql)
            with pytest.raises(Exception) as raw:
                rel.fetchall()
            mapped = engine_error(raw.value, what="the query", root=root.root)
            assert isinstance(mapped, kind)
            _short_and_clean(mapped, leaky)
    finally:
        con.close()


def test_an_over_long_file_name_is_a_message_not_a_traceback(tree):
    dr = DataRoot(tree["root"])
    long = "a" * 300 + ".parquet"
    for call in (lambda: dr.resolve(long), lambda: dr.resolve_glob(long), lambda: dr.resolve_glob("x*/" + long),
                 lambda: dr.connect(database=long)):
        try:
            call()
        except CalibdashError as exc:
            assert len(str(exc)) < 400
        else:
            raise AssertionError("an over-long name was accepted")
    root = tree["root"].resolve()
    plan = resolve_plan(dr, {"kind": "query", "query": f"SELECT * FROM read_parquet('{root}/{long}')"})
    with pytest.raises(CalibdashError):
        read_schema(NO_JOB, dr, plan)
    assert isinstance(engine_error(OSError(36, "File name too long"), what="'x'"), DataError)


def test_safe_message_keeps_identifiers_and_drops_values_paths_and_length(tree):
    root = tree["root"].resolve()
    assert safe_message("Binder Error: Referenced column \"pctr\" not found") == \
        'Binder Error: Referenced column "pctr" not found'
    assert safe_message(f"Could not read '{SECRET_ROW}' from \"{tree['outside']}/secret.csv\"", root) == \
        "Could not read '…' from \"…\""
    assert safe_message(f"No files match {root}/parts/x.parquet nor /etc/shadow", root) == \
        "No files match parts/x.parquet nor <path>"
    assert safe_message("Invalid Input Error: module failed:\nTraceback (most recent call last):\n  File") == \
        "Invalid Input Error (its text is not shown: it may hold the data)"          # error(text) says anything
    cut = safe_message("Error: " + "x" * 5000)
    assert len(cut) < 320 and cut.endswith("(message cut)")


# ---------------------------------------------------------------------------
# issue 17, finding 2: single huge values
# ---------------------------------------------------------------------------
def test_the_role_sample_cuts_long_text_and_a_huge_label_is_refused(tree, monkeypatch):
    from calibdash.data import roles as croles
    from calibdash.engines import plan as cplan

    seen = {}
    real = croles.guess_roles
    monkeypatch.setattr(croles, "guess_roles", lambda df, **kw: seen.setdefault("df", df) is not None and real(df))
    monkeypatch.setattr("calibdash.data.guess_roles", croles.guess_roles)
    root = DataRoot(tree["root"])
    q = "SELECT repeat('x', 5000000) AS note, 0.5 AS p, 1 AS y FROM range(3)"
    got = read_schema(NO_JOB, root, resolve_plan(root, {"kind": "query", "query": q}))
    assert got["columns"] == ["note", "p", "y"]
    assert seen["df"]["note"].str.len().max() == cplan.SAMPLE_CHARS
    q = "SELECT 0.5 AS p, CASE WHEN range = 0 THEN repeat('y', 5000) ELSE 'n' END AS y FROM range(3)"
    with pytest.raises(DataError, match="label column 'y' holds a value of 5,000 characters"):
        aggregate_plan(NO_JOB, root, resolve_plan(root, {"kind": "query", "query": q}), {"score": "p", "label": "y"},
                       Scheme(kind="insample"), True)


# ---------------------------------------------------------------------------
# issue 17, finding 4: the spill directory
# ---------------------------------------------------------------------------
_SPILL_SQL = "SELECT count(*) FROM (SELECT i % 4000000 AS k, sum(i) FROM range(20000000) t(i) GROUP BY k)"


def test_the_spill_directory_is_private_fresh_and_ignores_planted_links(tree, tmp_path):
    base = tmp_path / "tmp"
    base.mkdir()
    base.chmod(0o1777)                                             # a world-writable temp folder, as /tmp
    for name in (f"calibdash-spill-{os.getuid()}", "calibdash-spill"):   # a local user plants links
        (base / name).symlink_to(tree["outside"], target_is_directory=True)
    dr = DataRoot(tree["root"], memory_limit="64MB", threads=1, spill_directory=base)
    with dr.connect() as con:
        allowed = con.execute("SELECT current_setting('allowed_directories')").fetchall()[0][0]
        spill = Path(con.execute("SELECT current_setting('temp_directory')").fetchall()[0][0])
        private = spill.parent
        st = private.lstat()
        assert private.parent == base.resolve() and not private.is_symlink() and st.st_uid == os.geteuid()
        assert (st.st_mode & 0o777) == 0o700 and private.name.startswith("calibdash-spill-")
        assert {a.rstrip("/") for a in allowed} == {str(tree["root"].resolve()), str(spill)}
        assert str(tree["outside"]) not in " ".join(allowed)
        assert con.sql(_SPILL_SQL).fetchall() == [(4_000_000,)]    # it spills, out of core
        with pytest.raises(duckdb.Error):
            con.execute(f"SELECT * FROM glob('{tree['outside']}/*')").fetchall()
    assert not spill.exists()                                       # DuckDB removed the connection's own directory


def test_a_query_cannot_list_or_read_another_connections_spill_files(tree, tmp_path):
    dr = DataRoot(tree["root"], memory_limit="64MB", threads=1, spill_directory=tmp_path)
    a, b = dr.connect(), dr.connect()
    try:
        a_dir = Path(a.execute("SELECT current_setting('temp_directory')").fetchall()[0][0])
        b_dir = Path(b.execute("SELECT current_setting('temp_directory')").fetchall()[0][0])
        assert a_dir != b_dir and a_dir.parent == b_dir.parent
        done = threading.Event()
        result = {}

        def spill():
            try:
                result["rows"] = a.sql(_SPILL_SQL).fetchall()
            finally:
                done.set()

        threading.Thread(target=spill).start()
        end = time.monotonic() + 60
        while not done.is_set() and not any(a_dir.glob("*.tmp")) and time.monotonic() < end:
            time.sleep(0.005)                                       # until A has spilled a file
        files = sorted(a_dir.glob("*"))
        for target in [a_dir, a_dir.parent] + files:
            for sql in (f"SELECT * FROM glob('{target}/*')", f"SELECT * FROM read_blob('{target}')",
                        f"SELECT * FROM read_text('{target}')"):
                with pytest.raises(AccessDenied):
                    dr.query(b, sql).fetchall()
        assert done.wait(APPTEST_TIMEOUT) and result["rows"] == [(4_000_000,)]
    finally:
        a.close()
        b.close()


def test_an_unsafe_spill_directory_is_refused(tree, tmp_path):
    shared = tmp_path / "shared"
    shared.mkdir()
    shared.chmod(0o777)                                             # others may write, no sticky bit
    with pytest.raises(EnvironmentProblem, match="sticky"):
        DataRoot(tree["root"], spill_directory=shared)
    with pytest.raises(EnvironmentProblem, match="outside the data root"):
        DataRoot(tree["root"], spill_directory=tree["root"])


def test_the_spill_limit_stops_a_query_before_it_fills_the_disk(tree, tmp_path):
    dr = DataRoot(tree["root"], memory_limit="64MB", threads=1, spill_directory=tmp_path, spill_limit="16MB")
    with dr.connect() as con:
        assert con.execute("SELECT current_setting('max_temp_directory_size')").fetchall()[0][0] == "15.2 MiB"
        with pytest.raises(Exception) as raw:
            dr.query(con, _SPILL_SQL).fetchall()
    err = engine_error(raw.value, what="the query", root=dr.root)
    assert isinstance(err, EnvironmentProblem) and ENV_SPILL_LIMIT in str(err)
    with pytest.raises(SettingsError, match="spill_limit"):
        DataRoot(tree["root"], spill_limit="lots")
    assert data_root_from_env(environ={ENV_VAR: str(tree["root"]), ENV_SPILL_LIMIT: "1GB",
                                       "CALIBDASH_MEMORY_LIMIT": "512MB"}).spill_limit == "1GB"
    with pytest.raises(EnvironmentProblem, match=ENV_SPILL_LIMIT):
        data_root_from_env(environ={ENV_VAR: str(tree["root"]), ENV_SPILL_LIMIT: "all of it"})


# ---------------------------------------------------------------------------
# issue 17, finding 5: validated files are read by their names, never globbed again
# ---------------------------------------------------------------------------
def test_a_validated_file_is_not_expanded_again_into_a_link_leading_out(tree, monkeypatch):
    import pyarrow.parquet as pq

    root, sub = tree["root"], tree["root"] / "sub"
    sub.mkdir()
    inside = _frame(25, 9)
    inside.to_parquet(sub / "a[b].parquet", index=False)
    _frame(999, 10).to_parquet(tree["outside"] / "big.parquet", index=False)
    (sub / "ab.parquet").symlink_to(tree["outside"] / "big.parquet")   # what 'a[b].parquet' matches as a pattern
    opened = []
    real_file = pq.ParquetFile
    monkeypatch.setattr(pq, "ParquetFile", lambda f, *a, **k: opened.append(str(f)) or real_file(f, *a, **k))
    dr = DataRoot(root)
    plan = resolve_plan(dr, {"kind": "files", "path": "sub/a[[]b].parquet"})
    assert plan.files == (str(sub.resolve() / "a[b].parquet"),)
    assert plan.source({"score": "score", "label": "label"}).files() == list(plan.files)
    assert read_schema(NO_JOB, dr, plan)["columns"] == ["score", "label"]
    got = aggregate_plan(NO_JOB, dr, plan, {"score": "score", "label": "label"}, Scheme(kind="insample"), True)
    assert got["cells"].n_rows == 25 and got["all"]["cells"].n_rows == 25
    # a hashed split needs the rows' keys, so each file's row count is read from its Parquet metadata: by its name
    got = aggregate_plan(NO_JOB, dr, plan, {"score": "score", "label": "label"}, Scheme(kind="split"), False)
    assert got["cells"].n_rows == 25
    assert opened and all("big.parquet" not in f and "ab.parquet" not in f for f in opened)


def test_literal_path_escapes_duckdb_glob_characters():
    assert literal_path("/d/a[b]*?.parquet") == "/d/a[[]b][*][?].parquet"
    assert literal_path("/d/plain.parquet") == "/d/plain.parquet"
    with pytest.raises(DataError, match="backslash"):
        literal_path("/d/a\\[b].parquet")
