"""Tests of calibdash.data.guard: large sources confined to the data root, and typed SQL locked down.

Each refused case is checked three ways where it applies: the error type and
its message (clear, naming no path outside the root), what DuckDB itself
refuses on the locked connection (so the module docstring's claims are
checked against the installed DuckDB), and the file system left exactly as
it was (nothing written under the root, nothing written outside it).
"""
from __future__ import annotations

import os
import uuid
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from calibdash import DataError, EnvironmentProblem, SettingsError
from calibdash.data.guard import (ENV_VAR, AccessDenied, DataRoot, data_root_from_env,
                                  quote_identifier)

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
    from calibdash.errors import EnvironmentProblem

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
