"""Apply a saved calibrator with DuckDB: its SQL (a large map's lookup table passed as Arrow, joined, the rows
sorted back by ``file_index``/``file_row_number``) or ``predict`` in an Arrow UDF; one Parquet file written."""
from __future__ import annotations

import contextlib
import uuid

import numpy as np

from ...calibrators.sql import to_sql
from ...core import sql_forms as sql
from .rows import lit
from ..apply import GUESS_ROWS, SCORE, feature_names, predict_batch, score_column_of, udf_select, use_logistic, where_of

__all__ = []

#: Most pieces of a step or linear map that DuckDB gets as one flat CASE (above: the lookup join). Measured
#: on 1e7 rows: a CASE of 344 arms costs less than the join plus the sort that restores the rows' order.
MAX_CASE = 512
#: Internal columns holding each row's file and row number (to restore the order after a join).
_FILE, _ROW = "__calibdash_file", "__calibdash_row"


def apply(cal, fitted_on: dict, files: list, fmt: str, out_path, score_column, form: str, *, threads=None,
          connection=None, on_connect=None) -> tuple:
    """Write the rows of ``files`` with the ``calibrated`` column to ``out_path`` with DuckDB (see the module
    docstring) on ``connection`` (left open, as it came) or a new one (closed at the end); ``on_connect(con)`` is
    called first, e.g. to let a job interrupt it. Returns what :func:`calibdash.engines.apply.apply_model`
    reports."""
    import duckdb

    own = connection is None
    with contextlib.closing(duckdb.connect()) if own else contextlib.nullcontext(connection) as con:
        if on_connect is not None:
            on_connect(con)
        return _apply(con, own, cal, fitted_on, files, fmt, out_path, score_column, form, threads)


def _apply(con, own: bool, cal, fitted_on, files, fmt, out_path, score_column, form, threads):
    import duckdb

    if threads:
        con.execute(f"SET threads = {int(threads)}")
    paths = "[" + ", ".join(lit(f) for f in files) + "]"
    reader = (f"read_parquet({paths}, union_by_name = true)" if fmt == "parquet"
              else f"read_csv({paths}, union_by_name = true, header = true)")
    rel = con.sql(f"SELECT * FROM {reader} LIMIT 0")
    columns, types = rel.columns, rel.types
    where = where_of(files)
    score = score_column_of(columns, score_column, fitted_on,
                            lambda: con.sql(f"SELECT * FROM {reader} LIMIT {GUESS_ROWS}").df(), where)
    q = sql.quote(score, "duckdb")
    x = f"TRY_CAST({q} AS DOUBLE)"
    lo, hi, n_finite, n_rows = con.sql(
        f"SELECT min(v) FILTER (WHERE isfinite(v)), max(v) FILTER (WHERE isfinite(v)), "
        f"count(*) FILTER (WHERE isfinite(v)), count(*) FROM (SELECT {x} AS v FROM {reader})").fetchall()[0]
    mapped = use_logistic(fitted_on.get("score_transform"), score, lo, hi, n_finite)
    value = sql.SqlWriter("duckdb", x).sigmoid(x) if mapped else x
    score_sql = f"CASE WHEN isfinite({x}) THEN {value} END AS {sql.quote(SCORE, 'duckdb')}"
    keep = [c for c in columns if c != "calibrated"]
    feats = feature_names(cal, fitted_on, columns, where)
    fmap = {f: f for f in feats}
    try:
        m = to_sql(cal, SCORE, "duckdb", feature_columns=fmap, form=form, max_case=MAX_CASE)
        if m.lookups and fmt != "parquet":            # no row numbers to restore the order after the join
            m = to_sql(cal, SCORE, "duckdb", feature_columns=fmap, form="bisect")
    except sql.SqlUnsupported:
        m = None
    order = ""
    if fmt == "parquet" and (len(files) > 1 or (m is not None and m.lookups)):
        # DuckDB keeps a file's rows in order through projections, but not always the rows of several
        # files, nor a hash join's output: number the rows by DuckDB's virtual columns file_index and
        # file_row_number (integers, a cheap sort key) and sort them back
        score_sql += (f", file_index AS {sql.quote(_FILE, 'duckdb')}, "
                      f"file_row_number AS {sql.quote(_ROW, 'duckdb')}")
        order = f"\nORDER BY src.{sql.quote(_FILE, 'duckdb')}, src.{sql.quote(_ROW, 'duckdb')}"
    elif fmt != "parquet" and len(files) > 1 and own:
        con.execute("SET threads = 1")                  # CSV rows have no row number: read them in order
    source = f"SELECT *, {score_sql} FROM {reader}"
    try:
        if m is None:
            raise sql.SqlUnsupported("no SQL form")
        for name, lookup in m.lookups.items():        # passed as Arrow tables: no SQL text to parse
            con.register(name, lookup.arrow())
        query = m.select(source, keep, inline_lookups=False) + order
        via, used = "sql", m.form
    except sql.SqlUnsupported:
        import pyarrow as pa
        name = f"calibdash_predict_{uuid.uuid4().hex[:8]}"
        double = duckdb.sqltype("DOUBLE")

        def predicted(s_arr, frame):                    # NULL scores read as NaN, NaN written as NULL
            p = predict_batch(cal, s_arr.to_numpy(zero_copy_only=False).astype(float), frame)
            return pa.array(p, mask=np.isnan(p))

        arg_types, args = [double], sql.quote(SCORE, "duckdb")
        if feats:                                       # the features travel as one STRUCT argument
            def udf(s_arr, f_arr):
                return predicted(s_arr, pa.Table.from_arrays(f_arr.flatten(), names=feats).to_pandas())
            arg_types.append(duckdb.sqltype("STRUCT(" + ", ".join(
                f"{sql.quote(f, 'duckdb')} {types[list(columns).index(f)]}" for f in feats) + ")"))
            packed = ", ".join(f"{sql.quote(f, 'duckdb')} := {sql.quote(f, 'duckdb')}" for f in feats)
            args += f", struct_pack({packed})"
        else:
            def udf(s_arr):
                return predicted(s_arr, None)
        con.create_function(name, udf, arg_types, double, type="arrow", null_handling="special", side_effects=False)
        query = udf_select("duckdb", keep, f"{name}({args})", source) + order
        via, used = "udf", ""
    try:
        con.execute(f"COPY ({query}) TO {lit(str(out_path))} (FORMAT parquet)")
    finally:                                            # leave a caller's connection as it was
        if via == "udf":
            con.remove_function(name)
        for lookup in (m.lookups if via == "sql" else ()):
            con.unregister(lookup)
    return score, int(n_rows), int(n_finite), used, via, mapped, "calibrated" in columns
