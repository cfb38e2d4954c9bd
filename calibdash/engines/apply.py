"""Apply a saved calibrator to rows where they live: Parquet or CSV files read and written by DuckDB or Spark.

>>> from calibdash.engines.apply import apply_model
>>> result = apply_model("model.json", "scores/part-*.parquet", "calibrated.parquet")   # doctest: +SKIP
>>> result.via, result.n_calibrated                                                       # doctest: +SKIP
('sql', 10000000)

What it does is what ``python -m calibdash apply`` does in memory
(:func:`calibdash.cli.cmd_apply`), with the same choices and messages:

* the score column: the one asked for, else the model's (``fitted_on["score"]``)
  if the rows have it, else the first column :func:`calibdash.data.guess_roles`
  takes for a score (on the first 2,000 rows);
* the scores: the column's values as numbers (text that is not a number is
  missing, as ``pd.to_numeric(errors="coerce")`` makes it), mapped by the
  logistic function ``1 / (1 + exp(-x))`` as the model's training scores
  were (``fitted_on["score_transform"]``: ``"logistic"`` always maps,
  ``"identity"`` never and refuses values outside [0, 1], absent: maps iff a
  finite value lies outside [0, 1]; :func:`calibdash.data.margins.to_probabilities`);
* every row is kept, in order, with the new column ``calibrated``
  (replacing one of that name); a row whose score is missing or not finite
  gets NULL.

The calibrated column is computed in the engine by the calibrator's SQL
(:func:`calibdash.sql.to_sql`: a formula, a CASE, or for large maps a
lookup table joined on a bucket of the score; DuckDB then sorts the rows
back into their order in the files). A method that has no SQL form is applied by calling its
``predict`` from the engine on batches of rows: a DuckDB Python UDF on
Arrow arrays (DuckDB's vectors of 2,048 rows), a Spark ``pandas_udf``
(Arrow batches of ``spark.sql.execution.arrow.maxRecordsPerBatch`` rows).
``engine="memory"`` reads everything into pandas and calls ``predict``,
as the command line does: the reference the others are tested against.

DuckDB writes one Parquet file (``COPY ... TO ... (FORMAT parquet)``);
Spark writes a directory of part files, as Spark does.
"""
from __future__ import annotations

import glob as _glob
import time
import uuid
from dataclasses import dataclass
from pathlib import Path
from typing import Sequence

import numpy as np
import pandas as pd

from .. import export, sql
from ..calibrators.base import Calibrator
from ..data import guess_roles
from ..data.margins import TRANSFORMS, to_probabilities
from ..errors import DataError, EnvironmentProblem, SettingsError

__all__ = ["apply_model", "ApplyResult", "ENGINES", "load_model", "source_files"]

ENGINES = ("duckdb", "spark", "memory")
#: Most pieces of a step or linear map that DuckDB gets as one flat CASE (above: the lookup join). Measured
#: on 1e7 rows: a CASE of 344 arms costs less than the join plus the sort that restores the rows' order.
DUCKDB_MAX_CASE = 512
#: Rows read to guess the score column when neither the caller nor the model names one present.
GUESS_ROWS = 2_000
#: Name of the internal column holding the mapped score (dropped from the output).
_SCORE = "__calibdash_score"
#: Internal columns holding each row's file and row number (DuckDB, to restore the order after a join).
_FILE, _ROW = "__calibdash_file", "__calibdash_row"
_PARQUET = (".parquet", ".pq")
_CSV = (".csv", ".csv.gz", ".tsv", ".txt")


@dataclass(frozen=True)
class ApplyResult:
    """What :func:`apply_model` did.

    Attributes
    ----------
    out_path : str
        Where the rows were written.
    engine : {"duckdb", "spark", "memory"}
    method : str
        The calibrator's registry name.
    score_column : str
    n_rows, n_calibrated : int
        Rows written, and rows with a finite score (given a calibrated value).
    form : str
        The SQL form used (:attr:`calibdash.sql.SqlMap.form`), or "" without SQL.
    via : {"sql", "udf", "predict"}
        How the calibrated column was computed: the calibrator's SQL, its
        ``predict`` called from the engine in batches, or in memory.
    mapped : bool
        Whether the scores were mapped by the logistic function.
    notes : tuple of str
        Messages for the user (as ``apply`` prints them).
    seconds : float
        Wall time.
    """

    out_path: str
    engine: str
    method: str
    score_column: str
    n_rows: int
    n_calibrated: int
    form: str
    via: str
    mapped: bool
    notes: tuple
    seconds: float


# ---------------------------------------------------------------------------------------------------------
# shared steps
# ---------------------------------------------------------------------------------------------------------
def load_model(model) -> tuple[Calibrator, dict]:
    """``(calibrator, fitted_on)`` from a fitted calibrator, an ExportedModel, or a model file's path or text."""
    if isinstance(model, Calibrator):
        model._check_fitted()
        return model, {}
    if isinstance(model, export.ExportedModel):
        return model.calibrator, dict(model.fitted_on)
    if isinstance(model, (bytes, bytearray)) or (isinstance(model, str) and model.lstrip().startswith("{")):
        return tuple(export.read_model(model))
    if isinstance(model, (str, Path)):
        try:
            text = Path(model).read_bytes()
        except OSError as exc:
            raise EnvironmentProblem(f"cannot read the model file {model}: {exc.strerror or exc}.") from None
        return tuple(export.read_model(text))
    raise SettingsError(f"apply_model takes a fitted calibrator, an exported model or a model file, "
                        f"not {type(model).__name__}.")


def source_files(source) -> tuple[list[str], str]:
    """The files of ``source`` (a path, a glob, or a list of them), sorted, and their format.

    Raises
    ------
    EnvironmentProblem
        No file matches.
    DataError
        A file is neither Parquet nor CSV, or the files mix the two.
    """
    items = [source] if isinstance(source, (str, Path)) else list(source)
    files: list[str] = []
    for item in items:
        text = str(item)
        found = sorted(_glob.glob(text)) if any(ch in text for ch in "*?[") else ([text] if Path(text).exists() else [])
        if not found:
            raise EnvironmentProblem(f"no file matches {text}.")
        files += [str(Path(f).resolve()) for f in found]
    files = sorted(dict.fromkeys(files))
    kinds = set()
    for f in files:
        low = f.lower()
        if low.endswith(_PARQUET):
            kinds.add("parquet")
        elif low.endswith(_CSV):
            kinds.add("csv")
        else:
            raise DataError(f"{f} is neither Parquet (.parquet, .pq) nor CSV (.csv, .csv.gz, .tsv).")
    if len(kinds) > 1:
        raise DataError("the files mix Parquet and CSV; apply the model to each kind separately.")
    return files, kinds.pop()


def _score_column(columns: Sequence[str], asked: str | None, fitted_on: dict, sample, where: str) -> str:
    """As ``calibdash.cli.models._apply_score_column``: asked for, else the model's if present, else the first guessed."""
    score = asked
    if score is None and fitted_on.get("score") in columns:
        score = fitted_on["score"]
    if score is None:
        guessed = guess_roles(sample()).scores
        if not guessed:
            raise DataError(f"no numeric column in {where} to use as a score; name one with score_column.")
        score = guessed[0]
    if score not in columns:
        raise DataError(f"score column {score!r} not found in {where}; the columns are: "
                        f"{', '.join(map(repr, columns))}.")
    return score


def _mapped(transform, score: str, lo, hi, n_finite: int) -> bool:
    """Whether to map the scores by the logistic function, from their finite range (as ``to_probabilities``)."""
    if not n_finite:
        raise DataError(f"score column {score!r} holds no finite numbers; pick a numeric column.")
    if transform is not None and transform not in TRANSFORMS:
        raise DataError(f"the model file's score_transform {transform!r} is unknown (logistic or identity).")
    outside = lo < 0.0 or hi > 1.0
    if transform == "identity" and outside:
        raise DataError(f"the model was fitted on probabilities in [0, 1], but score column {score!r} ranges from "
                        f"{lo:.4g} to {hi:.4g}; give the column the model was fitted on (score_column).")
    return transform == "logistic" or (transform is None and outside)


def _notes(score: str, mapped: bool, replaced: bool) -> tuple:
    notes = []
    if mapped:
        notes.append(f"score column {score!r} mapped by the logistic function, as the model's training scores were")
    if replaced:
        notes.append("its column 'calibrated' was replaced")
    return tuple(notes)


def _features(cal: Calibrator, fitted_on: dict, columns: Sequence[str], where: str) -> list[str]:
    """The feature columns a feature-aware calibrator reads (the model's, all present), else []."""
    if not cal.uses_features:
        return []
    names = list(fitted_on.get("features") or [])
    if not names and hasattr(cal, "columns_"):
        names = [c.name for c in cal.columns_[1:]]
    missing = [c for c in names if c not in columns]
    if missing:
        raise DataError(f"{where} lacks the feature column(s) {missing} the model was fitted with.")
    return names


def _predict_batch(cal: Calibrator, s: np.ndarray, feats: pd.DataFrame | None) -> np.ndarray:
    """``predict`` on the rows with a score (NaN elsewhere): the UDFs' body."""
    out = np.full(s.size, np.nan)
    ok = np.isfinite(s)
    if ok.any():
        f = None if feats is None else feats.loc[ok].reset_index(drop=True)
        out[ok] = cal.predict(s[ok], f)
    return out


# ---------------------------------------------------------------------------------------------------------
# the engines
# ---------------------------------------------------------------------------------------------------------
def _sql_str(text: str) -> str:
    return "'" + text.replace("'", "''") + "'"


def _apply_duckdb(cal, fitted_on, files, fmt, out_path, score_column, form, connection, threads):
    import duckdb
    con = connection if connection is not None else duckdb.connect()
    if threads:
        con.execute(f"SET threads = {int(threads)}")
    paths = "[" + ", ".join(_sql_str(f) for f in files) + "]"
    reader = (f"read_parquet({paths}, union_by_name = true)" if fmt == "parquet"
              else f"read_csv({paths}, union_by_name = true, header = true)")
    rel = con.sql(f"SELECT * FROM {reader} LIMIT 0")
    columns, types = rel.columns, rel.types
    where = files[0] if len(files) == 1 else f"{len(files)} files"
    score = _score_column(columns, score_column, fitted_on,
                          lambda: con.sql(f"SELECT * FROM {reader} LIMIT {GUESS_ROWS}").df(), where)
    q = sql.quote(score, "duckdb")
    x = f"TRY_CAST({q} AS DOUBLE)"
    lo, hi, n_finite, n_rows = con.sql(
        f"SELECT min(v) FILTER (WHERE isfinite(v)), max(v) FILTER (WHERE isfinite(v)), "
        f"count(*) FILTER (WHERE isfinite(v)), count(*) FROM (SELECT {x} AS v FROM {reader})").fetchall()[0]
    mapped = _mapped(fitted_on.get("score_transform"), score, lo, hi, n_finite)
    value = sql.SqlWriter("duckdb", x).sigmoid(x) if mapped else x
    score_sql = f"CASE WHEN isfinite({x}) THEN {value} END AS {sql.quote(_SCORE, 'duckdb')}"
    keep = [c for c in columns if c != "calibrated"]
    feats = _features(cal, fitted_on, columns, where)
    fmap = {f: f for f in feats}
    try:
        m = sql.to_sql(cal, _SCORE, "duckdb", feature_columns=fmap, form=form, max_case=DUCKDB_MAX_CASE)
        if m.lookups and fmt != "parquet":            # no row numbers to restore the order after the join
            m = sql.to_sql(cal, _SCORE, "duckdb", feature_columns=fmap, form="bisect")
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
    elif fmt != "parquet" and len(files) > 1 and connection is None:
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

        def scores_of(arr) -> np.ndarray:
            return arr.to_numpy(zero_copy_only=False).astype(float)      # NULL -> NaN

        if feats:                                       # the features travel as one STRUCT argument
            def udf(s_arr, f_arr):
                frame = pa.Table.from_arrays(f_arr.flatten(), names=feats).to_pandas()
                p = _predict_batch(cal, scores_of(s_arr), frame)
                return pa.array(p, mask=np.isnan(p))
            ftype = duckdb.sqltype("STRUCT(" + ", ".join(
                f"{sql.quote(f, 'duckdb')} {types[list(columns).index(f)]}" for f in feats) + ")")
            con.create_function(name, udf, [double, ftype], double, type="arrow", null_handling="special",
                                side_effects=False)
            packed = ", ".join(f"{sql.quote(f, 'duckdb')} := {sql.quote(f, 'duckdb')}" for f in feats)
            args = f"{sql.quote(_SCORE, 'duckdb')}, struct_pack({packed})"
        else:
            def udf(s_arr):
                p = _predict_batch(cal, scores_of(s_arr), None)
                return pa.array(p, mask=np.isnan(p))
            con.create_function(name, udf, [double], double, type="arrow", null_handling="special",
                                side_effects=False)
            args = sql.quote(_SCORE, "duckdb")
        cols = ", ".join(sql.quote(c, "duckdb") for c in keep)
        query = f"SELECT {cols}{', ' if cols else ''}{name}({args}) AS calibrated FROM ({source}) AS src{order}"
        via, used = "udf", ""
    try:
        con.execute(f"COPY ({query}) TO {_sql_str(str(out_path))} (FORMAT parquet)")
    finally:                                            # leave a caller's connection as it was
        if via == "udf":
            con.remove_function(name)
        for lookup in (m.lookups if via == "sql" else ()):
            con.unregister(lookup)
    return score, int(n_rows), int(n_finite), used, via, mapped, "calibrated" in columns


def _spark_session():
    try:
        from pyspark.sql import SparkSession
    except ImportError:                                  # pragma: no cover - pyspark is optional
        raise EnvironmentProblem("engine='spark' needs pyspark (pip install pyspark).") from None
    return SparkSession.builder.appName("calibdash-apply").getOrCreate()


def _apply_spark(cal, fitted_on, files, fmt, out_path, score_column, form, spark):
    spark = spark or _spark_session()
    if fmt == "parquet":
        df = spark.read.parquet(*files)
    else:
        df = spark.read.csv(files, header=True, inferSchema=True)
    columns = df.columns
    view = f"calibdash_src_{uuid.uuid4().hex[:12]}"
    df.createOrReplaceTempView(view)
    where = files[0] if len(files) == 1 else f"{len(files)} files"
    score = _score_column(columns, score_column, fitted_on, lambda: df.limit(GUESS_ROWS).toPandas(), where)
    q = sql.quote(score, "spark")
    x = f"TRY_CAST({q} AS DOUBLE)"
    ok = f"({x} IS NOT NULL AND NOT ISNAN({x}) AND ABS({x}) < CAST('Infinity' AS DOUBLE))"
    row = spark.sql(f"SELECT min(CASE WHEN {ok} THEN {x} END), max(CASE WHEN {ok} THEN {x} END), "
                    f"count(CASE WHEN {ok} THEN 1 END), count(*) FROM {view}").collect()[0]
    lo, hi, n_finite, n_rows = row[0], row[1], row[2], row[3]
    mapped = _mapped(fitted_on.get("score_transform"), score, lo, hi, n_finite)
    value = sql.SqlWriter("spark", x).sigmoid(x) if mapped else x
    source = f"SELECT *, CASE WHEN {ok} THEN {value} END AS {sql.quote(_SCORE, 'spark')} FROM {view}"
    keep = [c for c in columns if c != "calibrated"]
    feats = _features(cal, fitted_on, columns, where)
    try:
        m = sql.to_sql(cal, _SCORE, "spark", feature_columns={f: f for f in feats}, form=form)
        query = m.select(source, keep)
        via, used = "sql", m.form
    except sql.SqlUnsupported:
        from pyspark.sql.functions import pandas_udf
        name = f"calibdash_predict_{uuid.uuid4().hex[:8]}"
        if feats:
            def batch(s: pd.Series, f: pd.DataFrame) -> pd.Series:
                return pd.Series(_predict_batch(cal, s.to_numpy(dtype=float, na_value=np.nan),
                                                f.reset_index(drop=True)))
            args = f"{sql.quote(_SCORE, 'spark')}, struct({', '.join(sql.quote(c, 'spark') for c in feats)})"
        else:
            def batch(s: pd.Series) -> pd.Series:
                return pd.Series(_predict_batch(cal, s.to_numpy(dtype=float, na_value=np.nan), None))
            args = sql.quote(_SCORE, "spark")
        spark.udf.register(name, pandas_udf(batch, "double"))
        cols = ", ".join(sql.quote(c, "spark") for c in keep)
        query = f"SELECT {cols}{', ' if cols else ''}{name}({args}) AS calibrated FROM ({source}) AS src"
        via, used = "udf", ""
    spark.sql(query).write.mode("overwrite").parquet(str(out_path))
    spark.catalog.dropTempView(view)
    return score, int(n_rows), int(n_finite), used, via, mapped, "calibrated" in columns


def _apply_memory(cal, fitted_on, files, fmt, out_path, score_column):
    from ..data import read_table
    frames = [read_table(f)[0] for f in files]
    df = pd.concat(frames, ignore_index=True) if len(frames) > 1 else frames[0]
    where = files[0] if len(files) == 1 else f"{len(files)} files"
    score = _score_column(list(df.columns), score_column, fitted_on, lambda: df.head(GUESS_ROWS), where)
    values = pd.to_numeric(df[score], errors="coerce").to_numpy(dtype=float, na_value=np.nan)
    s, mapped = to_probabilities(values, transform=fitted_on.get("score_transform"), column=score)
    feats = _features(cal, fitted_on, list(df.columns), where)
    out = df.copy()
    replaced = "calibrated" in out.columns
    out["calibrated"] = _predict_batch(cal, s, df[feats] if feats else None)
    out.to_parquet(out_path, index=False)
    return score, len(df), int(np.isfinite(s).sum()), "", "predict", mapped, replaced


def apply_model(model_path_or_calibrator, source, out_path, engine: str = "duckdb", score_column: str | None = None,
                *, form: str | None = None, connection=None, spark=None, threads: int | None = None) -> ApplyResult:
    """Add a saved calibrator's calibrated scores to every row of Parquet or CSV files; write Parquet.

    Parameters
    ----------
    model_path_or_calibrator : str, Path, Calibrator or ExportedModel
        A model file written by ``python -m calibdash fit`` (or
        :func:`calibdash.export.dumps`), its text, a loaded model, or a fitted
        calibrator (then nothing is known of its training scores: the score
        transform is decided from the values, as for a file without
        ``fitted_on``).
    source : str, Path or sequence of them
        A Parquet or CSV file, a glob (``"scores/*.parquet"``) or a list of
        them; files are read in sorted path order.
    out_path : str or Path
        The Parquet file to write (a directory of part files with Spark).
    engine : {"duckdb", "spark", "memory"}, default "duckdb"
    score_column : str, optional
        Default: the model's score column if present, else guessed.
    form : str, optional
        The SQL form of step and linear maps (:func:`calibdash.sql.to_sql`).
        Default "auto": a CASE up to 64 pieces (DuckDB: :data:`DUCKDB_MAX_CASE`),
        else a lookup table joined on a bucket of the score (a hash join;
        with DuckDB the table is passed as an Arrow table, not as SQL text).
        DuckDB output keeps the rows' order: after a join, or from several
        Parquet files, the rows are sorted back by file and row number
        (DuckDB's virtual columns); CSV rows have no row number, so there a
        large map is a binary search written as nested CASEs instead
        (correct, slower) and several CSV files are read on one thread.
    connection : duckdb.DuckDBPyConnection, optional
        DuckDB connection to use (default: a new in-memory one).
    spark : pyspark.sql.SparkSession, optional
        Spark session to use (default: ``SparkSession.builder.getOrCreate()``).
    threads : int, optional
        DuckDB threads (default: DuckDB's, all cores).

    Returns
    -------
    ApplyResult

    Raises
    ------
    DataError
        No usable score column, scores outside [0, 1] for a model fitted on
        probabilities, missing feature columns, unreadable files.
    EnvironmentProblem
        No file matches ``source``; a file cannot be read or written.
    SettingsError
        Unknown engine.
    """
    if engine not in ENGINES:
        raise SettingsError(f"engine must be one of {', '.join(ENGINES)}; got {engine!r}.")
    if form is None:
        form = "auto"
    start = time.perf_counter()
    cal, fitted_on = load_model(model_path_or_calibrator)
    files, fmt = source_files(source)
    try:
        if engine == "duckdb":
            res = _apply_duckdb(cal, fitted_on, files, fmt, out_path, score_column, form, connection, threads)
        elif engine == "spark":
            res = _apply_spark(cal, fitted_on, files, fmt, out_path, score_column, form, spark)
        else:
            res = _apply_memory(cal, fitted_on, files, fmt, out_path, score_column)
    except OSError as exc:
        raise EnvironmentProblem(f"cannot read or write the files: {exc}.") from None
    except Exception as exc:
        if type(exc).__name__ == "IOException":             # duckdb.IOException: not an OSError
            raise EnvironmentProblem(f"cannot read or write the files: {exc}") from None
        raise
    score, n_rows, n_cal, used, via, mapped, replaced = res
    return ApplyResult(out_path=str(out_path), engine=engine, method=type(cal).name, score_column=score,
                       n_rows=n_rows, n_calibrated=n_cal, form=used, via=via, mapped=mapped,
                       notes=_notes(score, mapped, replaced), seconds=time.perf_counter() - start)
