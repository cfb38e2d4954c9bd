"""Apply a saved calibrator with Spark: its Spark SQL, or ``predict`` in a ``pandas_udf`` (the Python workers need
numpy, pandas, pyarrow and calibdash); Spark writes a directory of part files."""
from __future__ import annotations

import uuid

import numpy as np
import pandas as pd

from ...calibrators.sql import to_sql
from ...core import sql_forms as sql
from ..apply import GUESS_ROWS, SCORE, feature_names, predict_batch, score_column_of, udf_select, use_logistic, where_of
from .rows import session

__all__ = []


def apply(cal, fitted_on: dict, files: list, fmt: str, out_path, score_column, form: str, *, threads=None,
          spark=None) -> tuple:
    """Write the rows of ``files`` with the ``calibrated`` column to the directory ``out_path`` with ``spark``
    (default ``getOrCreate()``; ``threads`` belong to the session). Returns what
    :func:`calibdash.engines.apply.apply_model` reports."""
    spark = session(spark)
    if fmt == "parquet":
        df = spark.read.parquet(*files)
    else:
        df = spark.read.csv(files, header=True, inferSchema=True)
    columns = df.columns
    view = f"calibdash_src_{uuid.uuid4().hex[:12]}"
    df.createOrReplaceTempView(view)
    where = where_of(files)
    score = score_column_of(columns, score_column, fitted_on, lambda: df.limit(GUESS_ROWS).toPandas(),
                            where)
    q = sql.quote(score, "spark")
    x = f"TRY_CAST({q} AS DOUBLE)"
    ok = f"({x} IS NOT NULL AND NOT ISNAN({x}) AND ABS({x}) < CAST('Infinity' AS DOUBLE))"
    row = spark.sql(f"SELECT min(CASE WHEN {ok} THEN {x} END), max(CASE WHEN {ok} THEN {x} END), "
                    f"count(CASE WHEN {ok} THEN 1 END), count(*) FROM {view}").collect()[0]
    lo, hi, n_finite, n_rows = row[0], row[1], row[2], row[3]
    mapped = use_logistic(fitted_on.get("score_transform"), score, lo, hi, n_finite)
    value = sql.SqlWriter("spark", x).sigmoid(x) if mapped else x
    source = f"SELECT *, CASE WHEN {ok} THEN {value} END AS {sql.quote(SCORE, 'spark')} FROM {view}"
    keep = [c for c in columns if c != "calibrated"]
    feats = feature_names(cal, fitted_on, columns, where)
    try:
        m = to_sql(cal, SCORE, "spark", feature_columns={f: f for f in feats}, form=form)
        query = m.select(source, keep)
        via, used = "sql", m.form
    except sql.SqlUnsupported:
        from pyspark.sql.functions import pandas_udf
        name = f"calibdash_predict_{uuid.uuid4().hex[:8]}"
        if feats:
            def batch(s: pd.Series, f: pd.DataFrame) -> pd.Series:
                return pd.Series(predict_batch(cal, s.to_numpy(dtype=float, na_value=np.nan),
                                                f.reset_index(drop=True)))
            args = f"{sql.quote(SCORE, 'spark')}, struct({', '.join(sql.quote(c, 'spark') for c in feats)})"
        else:
            def batch(s: pd.Series) -> pd.Series:
                return pd.Series(predict_batch(cal, s.to_numpy(dtype=float, na_value=np.nan), None))
            args = sql.quote(SCORE, "spark")
        spark.udf.register(name, pandas_udf(batch, "double"))
        query = udf_select("spark", keep, f"{name}({args})", source)
        via, used = "udf", ""
    spark.sql(query).write.mode("overwrite").parquet(str(out_path))
    spark.catalog.dropTempView(view)
    return score, int(n_rows), int(n_finite), used, via, mapped, "calibrated" in columns
