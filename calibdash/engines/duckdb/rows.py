"""The DuckDB engine: rows aggregated into score cells where they live, out of core; no row enters Python.

The steps of :class:`calibdash.engines.flow.Flow` (:data:`STAGES`, each a streaming scan) in SQL. Row keys:
Parquet ``offset[file_index] + file_row_number``; CSV the ``rowid`` of a temporary copy made with
``preserve_insertion_order`` (types guessed from BIGINT, DOUBLE, VARCHAR as pandas does); a table its ``rowid``; a
query ``row_number() OVER (ORDER BY order_by) - 1``. :func:`row_hash_sql` is
:func:`calibdash.evaluation.cells.row_hash` in SQL (16-bit split products stay below 2^48, so BIGINT is exact).
Every error becomes a short typed one (:func:`calibdash.data.guard.engine_error`) that never repeats the rows."""
from __future__ import annotations

import contextlib
import functools
import os
import re
import shutil
import tempfile
from typing import Callable, Sequence

from ...evaluation.cells import GRID, MAX_EXACT
from ...data.guard import engine_error
from ...core.errors import DataError, SettingsError
from ...evaluation.scheme import Scheme
from ..flow import STAGES, Flow
from ..source import SAMPLE_SALT, Source, Stats, check_other_labels, check_stats, checked_scheme, column_train_values

__all__ = []

#: Longest label or split value, in characters: a longer one is refused (a class name, not a document).
MAX_TEXT = 1000
#: Most distinct values of a split column.
MAX_SPLIT_VALUES = 10_000
_DUCKDB_GLOB = re.compile(r"([*?\[])")

_M32 = 0xFFFFFFFF
_NUMERIC_TYPES = ("TINYINT", "SMALLINT", "INTEGER", "BIGINT", "HUGEINT", "UTINYINT", "USMALLINT", "UINTEGER",
                  "UBIGINT", "UHUGEINT", "FLOAT", "DOUBLE", "DECIMAL", "REAL")


def ident(name: str) -> str:
    """``name`` as a double-quoted SQL identifier."""
    return '"' + str(name).replace('"', '""') + '"'


def lit(s: str) -> str:
    """``s`` as a single-quoted SQL string."""
    return "'" + str(s).replace("'", "''") + "'"


def literal_path(path) -> str:
    """``path`` as a pattern DuckDB's readers match to that one file only: ``*``, ``?`` and ``[`` in brackets
    (DuckDB expands every file name as a glob, so ``a[b].parquet`` would read ``ab.parquet``).

    >>> literal_path("/data/a[b]*?.parquet")
    '/data/a[[]b][*][?].parquet'

    Raises
    ------
    DataError
        The name mixes a backslash with those characters (DuckDB cannot read it as named).
    """
    text = str(path)
    if not _DUCKDB_GLOB.search(text):
        return text
    if "\\" in text:
        raise DataError(f"the file name {os.path.basename(text)[:120]!r} holds a backslash and one of *, ? or [: "
                        "DuckDB cannot read it as named; rename it.")
    return _DUCKDB_GLOB.sub(r"[\1]", text)


def attach(run, source: Source) -> None:
    """Attach ``source.database`` (if any) read-only and use it, each statement run by ``run``."""
    if source.database:
        run(f"ATTACH {lit(source.database)} AS __cd_src (READ_ONLY)")
        run("USE __cd_src")


def file_reader(source: Source, *options: str) -> str:
    """DuckDB's reader of ``source``'s files, each named literally: ``read_parquet``, or ``read_csv`` with a header
    row and the source's delimiter; ``options`` (``"name = value"``) added."""
    fmt = source.file_format()
    if fmt == "csv":
        options = (f"delim = {lit(source.csv_delimiter())}", "header = true", *options)
    listed = "[" + ", ".join(lit(literal_path(f)) for f in source.files()) + "]"
    return f"read_{fmt}({', '.join([listed, *options])})"


def _mul32(h: str, c: int) -> str:
    return f"((({h}) * {c & 0xFFFF} + (((({h}) * {c >> 16}) & 65535) << 16)) & {_M32})"


def _xorshift(h: str, s: int) -> str:
    return f"xor(({h}), ({h}) >> {s})"


def row_hash_sql(key: str, seed: int = 0) -> str:
    """A DuckDB SQL expression equal to :func:`calibdash.evaluation.cells.row_hash` of the BIGINT expression ``key``
    (MurmurHash3's 32-bit finaliser, each multiplication split into 16-bit halves)."""
    h = f"((({key}) + {int(seed) * 0x9E3779B1 & _M32}) & {_M32})"
    for step, c in ((_xorshift, 16), (_mul32, 0x85EBCA6B), (_xorshift, 13), (_mul32, 0xC2B2AE35), (_xorshift, 16)):
        h = step(h, c)
    return h


def connect(memory_limit: str = "1GB", threads: int | None = None, temp_directory: str | None = None):
    """A private in-memory DuckDB connection with a memory limit and a spill directory."""
    import duckdb

    config = {"memory_limit": str(memory_limit), "threads": int(threads or os.cpu_count() or 1),
              "preserve_insertion_order": True}
    if temp_directory:
        config["temp_directory"] = str(temp_directory)
    try:
        return duckdb.connect(":memory:", config=config)
    except duckdb.Error as exc:
        raise SettingsError(f"DuckDB refused the settings {config}: {exc}") from None


@contextlib.contextmanager
def connection_for(connection=None, memory_limit: str = "1GB", threads: int | None = None, on_connect=None, *,
                   temp_tables: Sequence[str] = ("__cd_rows",)):
    """``(con, own)``: the caller's ``connection`` (left open, its temporary tables ``temp_tables`` dropped at
    the end), or a private one with ``memory_limit``, ``threads`` and a fresh spill directory (closed and the
    directory removed at the end); ``on_connect(con)`` is called first."""
    own = connection is None
    tmp = tempfile.mkdtemp(prefix="calibdash-duckdb-") if own else None
    con = connect(memory_limit, threads, tmp) if own else connection
    try:
        if on_connect is not None:
            on_connect(con)
        yield con, own
    finally:
        if own:
            con.close()
            shutil.rmtree(tmp, ignore_errors=True)
        else:                    # leave the caller's connection as it came (the CSV copy is a temporary table)
            with contextlib.suppress(Exception):    # an interrupted or closed connection: nothing to tidy
                for name in temp_tables:
                    con.execute(f"DROP TABLE IF EXISTS temp.{name}")


def _read_source(source: Source, select) -> "pd.DataFrame":
    """``select(reader)``'s query over ``source`` (files, a DuckDB table or a query) on a small connection."""
    con = connect(memory_limit="256MB", threads=1)
    try:
        if source.kind == "files":
            reader = file_reader(source)
        else:
            attach(con.execute, source)
            reader = source.table if source.kind == "table" else f"({source.query}) AS __cd_q"
        try:
            return con.sql(select(reader)).df()
        except Exception as exc:  # noqa: BLE001 - DuckDB's error reading the source: short and typed
            raise engine_error(exc, what=source.describe()) from None
    finally:
        con.close()


def read_head(source: Source, rows: int) -> "pd.DataFrame":
    """The first ``rows`` rows of ``source``, every column, read by DuckDB (for guessing columns' roles:
    a glob of any size costs one small read)."""
    return _read_source(source, lambda reader: f"SELECT * FROM {reader} LIMIT {int(rows)}")


def label_counts(source: Source, limit: int) -> "pd.DataFrame":
    """Per label value of ``source`` (missing ones left out; at most ``limit``, the most frequent): ``label``,
    ``rows``, ``score_min``, ``score_max`` (the finite scores' range), in one scan."""
    lab, s = ident(source.label), f"TRY_CAST({ident(source.score)} AS DOUBLE)"
    return _read_source(source, lambda reader: (
        f"SELECT {lab} AS label, count(*) AS rows, min({s}) FILTER (WHERE isfinite({s})) AS score_min, "
        f"max({s}) FILTER (WHERE isfinite({s})) AS score_max FROM {reader} WHERE {lab} IS NOT NULL "
        f"GROUP BY {lab} ORDER BY rows DESC LIMIT {int(limit)}"))


class SourceRows(Flow):
    """The source as a SQL relation ``(__key, __raw, __label[, __split], features...)`` on a connection: the
    DuckDB steps of :class:`~calibdash.engines.flow.Flow` (``sample``: keys for a row sample)."""

    def __init__(self, con, source: Source, scheme: Scheme, features: Sequence[str], sample: bool = False,
                 tune: bool = True):
        self.con, self.source, self.scheme = con, source, scheme
        need_keys = source.needs_keys(scheme) or sample
        cols = [f"TRY_CAST({ident(source.score)} AS DOUBLE) AS __raw", f"{ident(source.label)} AS __label"]
        if source.split:
            cols.append(f"{ident(source.split)} AS __split")
        cols += [f"{ident(f)} AS {ident('__f_' + f)}" for f in features]
        select = ", ".join(cols)
        if source.kind == "files":
            fmt = source.file_format()
            if fmt == "parquet" and not need_keys:     # no key asked: no row numbers (they slow every scan)
                self.sql = f"SELECT CAST(0 AS BIGINT) AS __key, {select} FROM {file_reader(source)}"
            elif fmt == "parquet":
                try:
                    offsets = source.file_offsets()
                except Exception as exc:  # noqa: BLE001 - pyarrow's error on a file that is not Parquet
                    raise engine_error(exc, what=self.what) from None
                key = f"([{', '.join(map(str, offsets))}]::BIGINT[])[CAST(file_index AS BIGINT) + 1] + file_row_number"
                self.sql = (f"SELECT CAST({key} AS BIGINT) AS __key, {select} "
                            f"FROM {file_reader(source, 'file_row_number = true')}")
            else:
                names = ", ".join(dict.fromkeys([ident(c) for c in source.columns(features)]))
                self._run(f"CREATE TEMP TABLE __cd_rows AS SELECT {names} FROM "
                          + file_reader(source, "auto_type_candidates = ['BIGINT', 'DOUBLE', 'VARCHAR']"))
                self.sql = f"SELECT CAST(rowid AS BIGINT) AS __key, {select} FROM __cd_rows"
        else:
            attach(self._run, source)
            if source.kind == "table":
                self.sql = f"SELECT CAST(rowid AS BIGINT) AS __key, {select} FROM {source.table}"
        if source.kind == "query":
            key = (f"row_number() OVER (ORDER BY {source.order_by}) - 1" if source.order_by and need_keys
                   else "0")
            self.sql = f"SELECT CAST({key} AS BIGINT) AS __key, {select} FROM ({source.query}) AS __cd_q"
        if tune:                 # a caller's connection keeps its settings (a locked one refuses every SET)
            self._run("SET preserve_insertion_order = false")

    def _run(self, sql: str, params=None, fetch: str | None = None):
        """Run ``sql``, and fetch its result (``"one"``, ``"all"``, ``"df"``) inside the same error mapping."""
        try:
            res = self.con.execute(sql, params) if params is not None else self.con.execute(sql)
            if fetch == "one":                  # fetchall: the result is then complete (fetchone leaves it open)
                got = res.fetchall()
                return got[0] if got else None
            if fetch == "all":
                return res.fetchall()
            if fetch == "df":
                return res.df()
            return res
        except Exception as exc:  # noqa: BLE001 - every engine error is a short, typed message without data
            raise engine_error(exc, what=self.what) from None

    @property
    def what(self) -> str:
        try:
            return self.source.describe()
        except Exception:  # noqa: BLE001 - a source that cannot even be described
            return f"the {self.source.kind}"

    @functools.cached_property
    def types(self) -> dict:
        return {r[0]: str(r[1]) for r in self._run(f"DESCRIBE {self.sql}", fetch="all")}

    def kind(self, name):
        t = self.types["__f_" + name].upper()
        if is_numeric_type(t):
            return "number"
        if t.startswith(("DATE", "TIMESTAMP")):
            return "date"
        return {"BOOLEAN": "boolean", "VARCHAR": "text"}.get(t, "other")

    def column(self, name):
        return ident("__f_" + name)

    def number(self, x):
        return f"CASE WHEN isnan(CAST({x} AS DOUBLE)) THEN NULL ELSE CAST({x} AS DOUBLE) END"

    def bin(self, x, edges):
        code = " + ".join(f"CAST({x} >= {float(e)!r} AS INTEGER)" for e in edges) or "0"
        return f"CASE WHEN {x} IS NULL THEN NULL ELSE {code} END"

    def quantiles(self, x, levels):
        return f"quantile_cont({x}, {list(levels)!r})"

    def distinct(self, x, approx=False):
        return f"approx_count_distinct({x})" if approx else f"count(DISTINCT {x})"

    def one(self, aggregates):
        return self._run(f"SELECT {', '.join(aggregates)} FROM ({self.sql})", fetch="one")

    def statistics(self, extra):
        """Also refuses a label or split value longer than :data:`MAX_TEXT`."""
        texts = [(c, n) for c, n in (("__label", "label"), ("__split", "split"))
                 if c in self.types and not is_numeric_type(self.types[c])
                 and self.types[c].upper().split("(")[0] not in ("BOOLEAN", "DATE", "TIME", "TIMESTAMP", "UUID")]
        long_text, long_names = [c for c, _ in texts], [n for _, n in texts]
        short = (f" FILTER (WHERE strlen(CAST(__label AS VARCHAR)) <= {MAX_TEXT})" if "__label" in long_text
                 else "")              # a huge label value is refused below, never fetched
        got = self.one(["count(*)", "count(*) FILTER (WHERE __raw IS NULL OR NOT isfinite(__raw))",
                        "min(__raw) FILTER (WHERE isfinite(__raw))", "max(__raw) FILTER (WHERE isfinite(__raw))",
                        "count(*) FILTER (WHERE isfinite(__raw) AND (__raw < 0 OR __raw > 1))",
                        "count(*) FILTER (WHERE __label IS NULL)", f"min(__label){short}", f"max(__label){short}",
                        "approx_count_distinct(__raw)", *extra]
                       + [f"max(strlen(CAST({c} AS VARCHAR)))" for c in long_text])
        for c, name, longest in zip(long_text, long_names, got[len(got) - len(long_text):]):
            if longest is not None and longest > MAX_TEXT:
                raise DataError(f"{name} column {getattr(self.source, name)!r} holds a value of {longest:,} "
                                f"characters; a {name} names a class or a part in at most {MAX_TEXT:,}: choose "
                                "another column.")
        got = got[:len(got) - len(long_text)]
        st = Stats.of(got)
        return (st, *check_stats(st, self.source), list(got[9:]))

    def score(self, mapped):
        return "1.0 / (1.0 + exp(-__raw))" if mapped else "__raw"

    def part(self) -> tuple[str, list]:
        """Each row's part under the scheme as a SQL expression, and its parameters (the ``"column"`` scheme
        reads the split column's distinct values first and binds the training ones)."""
        scheme, source = self.scheme, self.source
        if scheme.kind == "insample":
            return "0", []
        if scheme.kind == "column":
            if not source.split:
                raise DataError("this data set has no split column; choose a random split or k-fold instead.")
            values = [r[0] for r in self._run(f"SELECT DISTINCT __split FROM ({self.sql}) "
                                              f"LIMIT {MAX_SPLIT_VALUES + 1}", fetch="all")]
            if len(values) > MAX_SPLIT_VALUES:
                raise DataError(f"split column {source.split!r} has more than {MAX_SPLIT_VALUES:,} distinct values; "
                                "a split column names a few parts, such as train and test.")
            train = column_train_values(values, scheme)
            non_null = [v for v in train if v is not None]
            cond = "__split IN (SELECT unnest(?))" if non_null else "FALSE"
            null_train = " OR __split IS NULL" if any(v is None for v in train) else ""
            return f"CASE WHEN {cond}{null_train} THEN 0 ELSE 1 END", [non_null] if non_null else []
        h = row_hash_sql("__key", scheme.seed)
        if scheme.kind == "kfold":
            return f"({h}) % {int(scheme.n_folds)}", []
        return f"CASE WHEN ({h}) < {int(float(scheme.test_size) * 2 ** 32)} THEN 1 ELSE 0 END", []

    def grouped(self, st, positive, mapped, exact, codes):
        self.part_sql, self.part_params = self.part()
        code = "__s" if exact else f"LEAST(CAST(floor(__s * {GRID}) AS BIGINT), {GRID - 1})"
        names = [ident(c) for c in codes]
        inner = (f"SELECT {self.part_sql} AS __part, {code} AS __code, "
                 + "".join(f"{c} AS {n}, " for c, n in zip(codes.values(), names))
                 + "CAST(__label = ? AS INTEGER) AS __y, __s, "
                   "CAST(__label IS DISTINCT FROM ? AND __label IS DISTINCT FROM ? AS INTEGER) AS __other "
                 f"FROM (SELECT *, {self.score(mapped)} AS __s FROM ({self.sql}))")
        group = ", ".join(["__part", "__code"] + names)
        res = self._run(f"SELECT {group}, count(*) AS n, CAST(sum(__y) AS BIGINT) AS n_pos, sum(__s) AS s_sum, "
                        f"CAST(sum(__other) AS BIGINT) AS n_other FROM ({inner}) GROUP BY {group}",
                        self.part_params + [positive, st.label_lo, st.label_hi], fetch="df")
        check_other_labels(self.source.label, int(res["n_other"].sum()))
        return res

    def sample(self, positive, mapped, feats, seed, n):
        h = row_hash_sql("__key", int(seed) + SAMPLE_SALT)
        fcols = "".join(f", {ident('__f_' + f)} AS {ident(f)}" for f in feats)
        return self._run(f"SELECT __key AS key, __s AS score, CAST({self.part_sql} AS SMALLINT) AS part, "
                         f"CAST(__label = ? AS TINYINT) AS label{fcols} FROM (SELECT *, {self.score(mapped)} AS __s "
                         f"FROM ({self.sql})) ORDER BY {h}, __key LIMIT {int(n)}", self.part_params + [positive],
                         fetch="df")


def is_numeric_type(duck_type) -> bool:
    """Whether a DuckDB type is a plain number (``DECIMAL(18,3)`` is; ``INTEGER[]``, ``STRUCT(...)`` are not)."""
    t = str(duck_type).upper().strip()
    return "[" not in t and t.split("(")[0].strip() in _NUMERIC_TYPES


def aggregate(source: Source, scheme: Scheme | None = None, *, max_exact: int = MAX_EXACT,
              memory_limit: str = "1GB", threads: int | None = None, features: Sequence[str] | None = None,
              feature_bins: int = 16, sample_rows: int = 0, seed: int = 0, connection=None,
              on_stage: Callable[[str], None] | None = None, on_connect: Callable[..., None] | None = None):
    """Aggregate a source's rows into score cells with DuckDB, out of core.

    Parameters
    ----------
    source : Source
    scheme : Scheme, optional
        How rows are divided into parts (default every row in part 0): ``"kfold"`` and ``"split"`` hash each row's
        key, ``"column"`` maps the split column (:mod:`calibdash.evaluation.cells`).
    max_exact : int, default ``MAX_EXACT``
        Cells are the distinct scores when there are at most this many, else grid steps.
    memory_limit, threads : str, int
        DuckDB's ``memory_limit`` (beyond it DuckDB spills to a temporary directory) and threads (default all).
    features, feature_bins : sequence of str, int
        Feature columns coded into the cells (default ``source.features``; ``[]`` for none): categorical ones
        (text, boolean) by value (a ``category`` coded by the values' dense ranks), numeric ones by
        ``feature_bins`` exact quantile bins (repeated edges merged, code = edges at or below, as
        :mod:`calibdash.calibrators.mbct`).
    sample_rows, seed : int, default 0
        Also return this many rows, uniformly without replacement: those whose ``row_hash(key, seed +
        SAMPLE_SALT)`` is smallest (ties by key), sorted by key; the same rows in every engine.
    connection : duckdb.DuckDBPyConnection, optional
        Run on it, left open, its settings unchanged (``memory_limit``, ``threads`` unused): e.g. the locked one
        of :meth:`calibdash.data.guard.DataRoot.connect`. CSV row keys need ``preserve_insertion_order`` on.
    on_stage, on_connect : callable, optional
        Called with each stage of :data:`STAGES` as it starts (it may raise to stop there), and with the
        connection before the first query (e.g. to let a job interrupt it).

    Returns
    -------
    ScoreCells, or (ScoreCells, DataFrame) when ``sample_rows > 0``
        The sample has columns ``key, score, label, part`` and the features' raw values.

    Raises
    ------
    DataError
        As :func:`calibdash.engines.source.check_stats`; a label with more than two values; a label or split value
        longer than :data:`MAX_TEXT`; DuckDB's errors about the data (short, never carrying the rows).
    EnvironmentProblem
        DuckDB could not read a file, or ran out of memory or spill space.
    SettingsError
        A query without ``order_by`` under a hashed scheme; bad scheme settings.
    """
    scheme = checked_scheme(source, scheme)
    feats = list(source.features if features is None else features)
    stage = on_stage or (lambda name: None)
    with connection_for(connection, memory_limit, threads, on_connect) as (con, own):
        stage(STAGES[0])
        rows = SourceRows(con, source, scheme, feats, sample_rows > 0, tune=own)
        return rows.aggregate(feats, feature_bins, max_exact, sample_rows, seed, stage)
