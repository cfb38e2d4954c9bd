"""The DuckDB engine: rows aggregated into score cells where they live, out of core; no row enters Python.

Stages (:data:`STAGES`, each a streaming scan): 1. statistics (counts checked by
:func:`calibdash.engines.source.check_stats`, a HyperLogLog estimate of distinct scores, the numeric features'
``quantile_cont`` quantiles, numpy's linear rule); 2. the exact ``count(DISTINCT score)``, only when the estimate
lies between ``max_exact / 4`` and ``4 * max_exact`` (HyperLogLog errs by a few per cent, far from a factor 4);
3. ``GROUP BY part, score code[, feature codes]``, counting labels that are neither extreme (a third value).

Parts: :func:`row_hash_sql` is :func:`calibdash.evaluation.cells.row_hash` in SQL (16-bit split products stay
below 2^48, so BIGINT is exact). Row keys: Parquet ``offset[file_index] + file_row_number``; CSV the ``rowid``
of a temporary copy made with ``preserve_insertion_order`` (DuckDB's guarantee of file order; types guessed
from BIGINT, DOUBLE, VARCHAR as pandas does); a table its ``rowid``; a query ``row_number() OVER (ORDER BY
order_by) - 1``. Files are named by :func:`literal_path`, so DuckDB reads exactly those. Every error becomes a
short typed one (:func:`calibdash.data.guard.engine_error`) that never repeats the rows. A private connection
has ``memory_limit`` and a fresh spill directory."""
from __future__ import annotations

import contextlib
import os
import re
import shutil
import tempfile
from typing import Any, Callable, Sequence

from ...evaluation.cells import GRID, MAX_EXACT
from ...data.guard import engine_error
from ...core.errors import DataError, SettingsError
from ...evaluation.scheme import Scheme
from ..source import (SAMPLE_SALT, Source, Stats, check_other_labels, check_stats, checked_scheme, column_train_values,
                      edges_of, grouped_cells, quantile_levels, sample_frame)

__all__ = []

#: The stages :func:`aggregate` reports to ``on_stage``, in order (the second only when needed).
STAGES = ("statistics", "distinct scores", "aggregation", "sample")
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


def _file_list(files) -> str:
    return "[" + ", ".join(lit(literal_path(f)) for f in files) + "]"


def _mul32(h: str, c: int) -> str:
    return f"((({h}) * {c & 0xFFFF} + (((({h}) * {c >> 16}) & 65535) << 16)) & {_M32})"


def _xorshift(h: str, s: int) -> str:
    return f"xor(({h}), ({h}) >> {s})"


def row_hash_sql(key: str, seed: int = 0) -> str:
    """A DuckDB SQL expression equal to :func:`calibdash.evaluation.cells.row_hash` of the BIGINT expression ``key``
    (MurmurHash3's 32-bit finaliser, each multiplication split into 16-bit halves)."""
    h = f"((({key}) + {int(seed) * 0x9E3779B1 & _M32}) & {_M32})"
    h = _xorshift(h, 16)
    h = _mul32(h, 0x85EBCA6B)
    h = _xorshift(h, 13)
    h = _mul32(h, 0xC2B2AE35)
    return _xorshift(h, 16)


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
            try:
                for name in temp_tables:
                    con.execute(f"DROP TABLE IF EXISTS temp.{name}")
            except Exception:    # noqa: BLE001 - an interrupted or closed connection: nothing to tidy
                pass


def _read_source(source: Source, select) -> "pd.DataFrame":
    """``select(reader)``'s query over ``source`` (files, a DuckDB table or a query) on a small connection."""
    con = connect(memory_limit="256MB", threads=1)
    try:
        if source.kind == "files":
            listed = _file_list(source.files())
            reader = (f"read_parquet({listed})" if source.file_format() == "parquet"
                      else f"read_csv({listed}, delim = {lit(source.csv_delimiter())}, header = true)")
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


class SourceRows:
    """The source as a SQL relation ``(__key, __raw, __label[, __split], features...)`` on a connection."""

    def __init__(self, con, source: Source, features: Sequence[str], need_keys: bool, tune: bool = True):
        self.con, self.source = con, source
        cols = [f"TRY_CAST({ident(source.score)} AS DOUBLE) AS __raw", f"{ident(source.label)} AS __label"]
        if source.split:
            cols.append(f"{ident(source.split)} AS __split")
        cols += [f"{ident(f)} AS {ident('__f_' + f)}" for f in features]
        select = ", ".join(cols)
        if source.kind == "files":
            files = source.files()
            fmt = source.file_format()
            if fmt == "parquet" and not need_keys:     # no key asked: no row numbers (they slow every scan)
                self.sql = f"SELECT CAST(0 AS BIGINT) AS __key, {select} FROM read_parquet({_file_list(files)})"
            elif fmt == "parquet":
                try:
                    offsets = source.file_offsets()
                except Exception as exc:  # noqa: BLE001 - pyarrow's error on a file that is not Parquet
                    raise engine_error(exc, what=self.what) from None
                key = f"([{', '.join(map(str, offsets))}]::BIGINT[])[CAST(file_index AS BIGINT) + 1] + file_row_number"
                self.sql = (f"SELECT CAST({key} AS BIGINT) AS __key, {select} "
                            f"FROM read_parquet({_file_list(files)}, file_row_number = true)")
            else:
                delim = source.csv_delimiter()
                names = ", ".join(dict.fromkeys([ident(c) for c in source.columns(features)]))
                self._run(f"CREATE TEMP TABLE __cd_rows AS SELECT {names} FROM read_csv("
                          f"{_file_list(files)}, delim = {lit(delim)}, header = true, "
                          "auto_type_candidates = ['BIGINT', 'DOUBLE', 'VARCHAR'])")
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

    def types(self) -> dict:
        rel = self._run(f"DESCRIBE {self.sql}", fetch="all")
        return {r[0]: str(r[1]) for r in rel}


def is_numeric_type(duck_type) -> bool:
    """Whether a DuckDB type is a plain number (``DECIMAL(18,3)`` is; ``INTEGER[]``, ``STRUCT(...)`` are not)."""
    t = str(duck_type).upper().strip()
    return "[" not in t and t.split("(")[0].strip() in _NUMERIC_TYPES


def _kind(duck_type: str) -> str:
    return "numeric" if is_numeric_type(duck_type) else "categorical"


def part_sql(scheme: Scheme, source: Source, rows: SourceRows) -> tuple[str, list]:
    """Each row's part under ``scheme`` as a SQL expression over ``rows``, and its parameters (the ``"column"``
    scheme reads the split column's distinct values first and binds the training ones)."""
    if scheme.kind == "insample":
        return "0", []
    if scheme.kind == "column":
        if not source.split:
            raise DataError("this data set has no split column; choose a random split or k-fold instead.")
        values = [r[0] for r in rows._run(f"SELECT DISTINCT __split FROM ({rows.sql}) LIMIT {MAX_SPLIT_VALUES + 1}",
                                          fetch="all")]
        if len(values) > MAX_SPLIT_VALUES:
            raise DataError(f"split column {source.split!r} has more than {MAX_SPLIT_VALUES:,} distinct values; a "
                            "split column names a few parts, such as train and test.")
        train = column_train_values(values, scheme)
        non_null = [v for v in train if v is not None]
        cond = "__split IN (SELECT unnest(?))" if non_null else "FALSE"
        null_train = " OR __split IS NULL" if any(v is None for v in train) else ""
        return f"CASE WHEN {cond}{null_train} THEN 0 ELSE 1 END", [non_null] if non_null else []
    h = row_hash_sql("__key", scheme.seed)
    if scheme.kind == "kfold":
        return f"({h}) % {int(scheme.n_folds)}", []
    return f"CASE WHEN ({h}) < {int(float(scheme.test_size) * 2 ** 32)} THEN 1 ELSE 0 END", []


def _feature_code_sql(name: str, kind: str, edges) -> str:
    col = ident("__f_" + name)
    if kind == "categorical":
        return col
    x = f"CAST({col} AS DOUBLE)"
    return f"CASE WHEN {col} IS NULL OR isnan({x}) THEN NULL ELSE {bin_sql(x, edges)} END"


def bin_sql(x: str, edges) -> str:
    """The bin code of ``x``: how many ``edges`` lie at or below it (``0`` without edges)."""
    return " + ".join(f"CAST({x} >= {float(e)!r} AS INTEGER)" for e in edges) or "0"


def number_sql(col: str) -> str:
    """``col`` as DOUBLE, NaN read as NULL (missing, as in pandas)."""
    return f"CASE WHEN isnan(CAST({col} AS DOUBLE)) THEN NULL ELSE CAST({col} AS DOUBLE) END"


def statistics(rows: SourceRows, extra: Sequence[str] = ()) -> tuple[Stats, bool, Any, list]:
    """The statistics scan, checked by :func:`~calibdash.engines.source.check_stats` (and refusing a label or
    split value longer than :data:`MAX_TEXT`), with the ``extra`` aggregates: ``(stats, mapped, positive,
    extra_values)``."""
    source, types = rows.source, rows.types()
    texts = [(c, n) for c, n in (("__label", "label"), ("__split", "split"))
             if c in types and not is_numeric_type(types[c])
             and types[c].upper().split("(")[0] not in ("BOOLEAN", "DATE", "TIME", "TIMESTAMP", "UUID")]
    long_text, long_names = [c for c, _ in texts], [n for _, n in texts]
    short = (f" FILTER (WHERE strlen(CAST(__label AS VARCHAR)) <= {MAX_TEXT})" if "__label" in long_text
             else "")              # a huge label value is refused below, never fetched
    st_sql = ("SELECT count(*), count(*) FILTER (WHERE __raw IS NULL OR NOT isfinite(__raw)), "
              "min(__raw) FILTER (WHERE isfinite(__raw)), max(__raw) FILTER (WHERE isfinite(__raw)), "
              "count(*) FILTER (WHERE isfinite(__raw) AND (__raw < 0 OR __raw > 1)), "
              f"count(*) FILTER (WHERE __label IS NULL), min(__label){short}, max(__label){short}, "
              "approx_count_distinct(__raw)" + "".join(", " + q for q in extra)
              + "".join(f", max(strlen(CAST({c} AS VARCHAR)))" for c in long_text) + f" FROM ({rows.sql})")
    got = rows._run(st_sql, fetch="one")
    for c, name, longest in zip(long_text, long_names, got[len(got) - len(long_text):]):
        if longest is not None and longest > MAX_TEXT:
            raise DataError(f"{name} column {getattr(source, name)!r} holds a value of {longest:,} characters; "
                            f"a {name} names a class or a part in at most {MAX_TEXT:,}: choose another column.")
    got = got[:len(got) - len(long_text)]
    st = Stats.of(got)
    mapped, positive = check_stats(st, source)
    return st, mapped, positive, list(got[9:])


def cell_code(rows: SourceRows, st: Stats, mapped: bool, max_exact: int, stage) -> tuple[bool, str, str]:
    """Exact cells or the grid, decided on all rows as in memory: ``(exact, score_sql, code_sql)`` (one more
    scan, ``stage("distinct scores")``, when the estimate lies within a factor 4 of ``max_exact``)."""
    s_sql = "1.0 / (1.0 + exp(-__raw))" if mapped else "__raw"
    exact = st.distinct <= int(max_exact) / 4
    if int(max_exact) / 4 < st.distinct <= 4 * int(max_exact):
        stage(STAGES[1])
        n_distinct = int(rows._run(f"SELECT count(DISTINCT {s_sql}) FROM ({rows.sql})", fetch="one")[0])
        exact = n_distinct <= int(max_exact)
    return exact, s_sql, ("__s" if exact else f"LEAST(CAST(floor(__s * {GRID}) AS BIGINT), {GRID - 1})")


def grouped(rows: SourceRows, scheme: Scheme, st: Stats, positive, s_sql: str, code_sql: str,
            codes: Sequence[str] = ()) -> tuple:
    """``(res, (part_sql, part_params))``: the rows grouped by ``__part``, ``__code`` and ``codes``
    (``"<expr> AS <alias>"``) with ``n``, ``n_pos`` and ``s_sum``; a label with a third value is refused."""
    part_expr, part_params = part_sql(scheme, rows.source, rows)
    inner = (f"SELECT {part_expr} AS __part, {code_sql} AS __code, "
             + "".join(c + ", " for c in codes)
             + "CAST(__label = ? AS INTEGER) AS __y, __s, "
               "CAST(__label IS DISTINCT FROM ? AND __label IS DISTINCT FROM ? AS INTEGER) AS __other "
             f"FROM (SELECT *, {s_sql} AS __s FROM ({rows.sql}))")
    params = part_params + [positive, st.label_lo, st.label_hi]
    group = ", ".join(["__part", "__code"] + [c.rsplit(" AS ", 1)[1] for c in codes])
    res = rows._run(f"SELECT {group}, count(*) AS n, CAST(sum(__y) AS BIGINT) AS n_pos, sum(__s) AS s_sum, "
                    f"CAST(sum(__other) AS BIGINT) AS n_other FROM ({inner}) GROUP BY {group}", params, fetch="df")
    check_other_labels(rows.source.label, int(res["n_other"].sum()))
    return res, (part_expr, part_params)


def aggregate(source: Source, scheme: Scheme | None = None, *, max_exact: int = MAX_EXACT,
              memory_limit: str = "1GB", threads: int | None = None, features: Sequence[str] | None = None,
              feature_bins: int = 16, sample_rows: int = 0, seed: int = 0, connection=None,
              on_stage: Callable[[str], None] | None = None, on_connect: Callable[..., None] | None = None):
    """Aggregate a source's rows into score cells with DuckDB, out of core.

    Parameters
    ----------
    source : Source
    scheme : Scheme, optional
        How rows are divided into parts (default every row in part 0): ``"kfold"`` and ``"split"`` hash each
        row's key, ``"column"`` maps the split column (:mod:`calibdash.evaluation.cells`).
    max_exact : int, default ``MAX_EXACT``
        Cells are the distinct scores when there are at most this many, else grid steps.
    memory_limit : str, default "1GB"
        DuckDB's ``memory_limit``; beyond it DuckDB spills to a temporary directory.
    threads : int, optional
        DuckDB's threads (default: all cores).
    features : sequence of str, optional
        Feature columns to code into the cells (default ``source.features``; ``[]`` for none). Categorical
        columns (text, boolean) group by value (a ``category`` whose codes are the values' dense ranks);
        numeric ones by ``feature_bins`` exact quantile bins (repeated edges merged, code = edges at or below
        the value, as :mod:`calibdash.calibrators.mbct`).
    feature_bins : int, default 16
    sample_rows : int, default 0
        Also return this many rows drawn uniformly without replacement, reproducibly: those whose
        ``row_hash(key, seed + SAMPLE_SALT)`` is smallest (ties by key), sorted by key; the same rows in every
        engine (for MVCE views, MBCT tree growth).
    seed : int, default 0
        Seed of the row sample (the parts use ``scheme.seed``).
    connection : duckdb.DuckDBPyConnection, optional
        Run on this connection, left open and its settings unchanged (``memory_limit`` and ``threads`` unused):
        e.g. :meth:`calibdash.data.guard.DataRoot.connect`'s locked one, where only files under the data root
        can be read and another thread may ``interrupt()``. CSV row keys need ``preserve_insertion_order`` on.
    on_stage : callable, optional
        Called with each stage of :data:`STAGES` as it starts (it may raise to stop there).
    on_connect : callable, optional
        Called with the connection before the first query (e.g. to let a job interrupt it and read its progress).

    Returns
    -------
    ScoreCells, or (ScoreCells, DataFrame) when ``sample_rows > 0``
        The sample has columns ``key, score, label, part`` and the features' raw values.

    Raises
    ------
    DataError
        As :func:`calibdash.engines.source.check_stats`; a label with more than two values; a label or
        split value longer than :data:`MAX_TEXT` characters; DuckDB's errors about the data
        (:func:`calibdash.data.guard.engine_error`: short messages that never carry the rows).
    EnvironmentProblem
        DuckDB could not read a file, or ran out of memory or spill space.
    SettingsError
        A query without ``order_by`` under a hashed scheme; bad scheme settings.
    """
    scheme = checked_scheme(source, scheme)
    feats = list(source.features if features is None else features)
    levels = quantile_levels(feature_bins) if feats else []
    stage = on_stage or (lambda name: None)
    with connection_for(connection, memory_limit, threads, on_connect) as (con, own):
        need_keys = source.needs_keys(scheme) or sample_rows > 0
        stage(STAGES[0])
        rows = SourceRows(con, source, feats, need_keys, tune=own)
        types = rows.types()
        kinds = {f: _kind(types["__f_" + f]) for f in feats}
        numeric = [f for f in feats if kinds[f] == "numeric"]
        quant = [f"quantile_cont(CAST({ident('__f_' + f)} AS DOUBLE), {levels!r}) FILTER "
                 f"(WHERE {ident('__f_' + f)} IS NOT NULL AND NOT isnan(CAST({ident('__f_' + f)} AS DOUBLE)))"
                 for f in numeric]
        st, mapped, positive, got = statistics(rows, quant)
        edges = edges_of(numeric, got)
        exact, s_sql, code_sql = cell_code(rows, st, mapped, max_exact, stage)
        stage(STAGES[2])
        fcodes = [f"{_feature_code_sql(f, kinds[f], edges.get(f, []))} AS {ident('__c_' + f)}" for f in feats]
        res, (part_expr, part_params) = grouped(rows, scheme, st, positive, s_sql, code_sql, fcodes)
        cells = grouped_cells(res, exact, feats, kinds, edges)
        if sample_rows <= 0:
            return cells
        stage(STAGES[3])
        h = row_hash_sql("__key", int(seed) + SAMPLE_SALT)
        fcols = "".join(f", {ident('__f_' + f)} AS {ident(f)}" for f in feats)
        samp_sql = (f"SELECT __key AS key, __s AS score, CAST({part_expr} AS SMALLINT) AS part, "
                    f"CAST(__label = ? AS TINYINT) AS label{fcols} "
                    f"FROM (SELECT *, {s_sql} AS __s FROM ({rows.sql})) ORDER BY {h}, __key LIMIT {int(sample_rows)}")
        return cells, sample_frame(rows._run(samp_sql, part_params + [positive], fetch="df"), feats)
