"""Apply a fitted calibrator to rows where they live: Parquet or CSV files read and written by an engine.

>>> from calibdash.engines.apply import apply_model
>>> result = apply_model(calibrator, "scores/part-*.parquet", "calibrated.parquet")     # doctest: +SKIP
>>> result.via, result.n_calibrated                                                       # doctest: +SKIP
('sql', 10000000)

A model file (its path or text) is applied by :func:`calibdash.io.export.apply_model`, which reads it and calls this.

The choices and messages are ``python -m calibdash apply``'s: the score column asked for, else the model's, else
guessed; values read as numbers (other text missing) and mapped by the logistic function as the model's training
scores were (:func:`calibdash.core.margins.to_probabilities`); every row kept in order with a new ``calibrated``
column (NULL where the score is not finite), computed by the calibrator's SQL
(:func:`calibdash.calibrators.sql.to_sql`) in an engine with a SQL dialect, else by ``predict`` in a UDF
(:func:`predict_batch`)."""
from __future__ import annotations

import glob as _glob
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Sequence

import numpy as np
import pandas as pd

from ..calibrators.base import Calibrator
from ..data import guess_roles
from ..core.margins import TRANSFORMS
from ..core.sql_forms import quote as sql_quote
from ..core.errors import DataError, EnvironmentProblem, SettingsError

__all__ = ["apply_model"]

#: Rows read to guess the score column when neither the caller nor the model names one present.
GUESS_ROWS = 2_000
#: Name of the internal column holding the mapped score (dropped from the output).
SCORE = "__calibdash_score"
_PARQUET = (".parquet", ".pq")
_CSV = (".csv", ".csv.gz", ".tsv", ".txt")


@dataclass(frozen=True)
class ApplyResult:
    """What :func:`apply_model` did.

    Attributes
    ----------
    out_path, engine, method, score_column : str
        Where the rows were written, the engine's and the calibrator's registry names, the score column.
    n_rows, n_calibrated : int
        Rows written, and rows with a finite score (given a calibrated value).
    form, via : str
        The SQL form used (:attr:`calibdash.core.sql_forms.SqlMap.form`, "" without SQL); ``"sql"``, ``"udf"`` or
        ``"predict"``: the calibrator's SQL, its ``predict`` called from the engine in batches, or in memory.
    mapped : bool
        Whether the scores were mapped by the logistic function.
    notes, seconds : tuple of str, float
        Messages for the user (as ``apply`` prints them); wall time.
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


def score_column_of(columns: Sequence[str], asked: str | None, fitted_on: dict, sample, where: str) -> str:
    """The score column, as ``calibdash.cli.models._apply_score_column`` chooses it: asked for, else the model's if
    present, else the first guessed from the rows ``sample()`` gives."""
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


def use_logistic(transform, score: str, lo, hi, n_finite: int) -> bool:
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


def feature_names(cal: Calibrator, fitted_on: dict, columns: Sequence[str], where: str) -> list[str]:
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


def where_of(files: list) -> str:
    """The files named for people: the one file, else how many."""
    return files[0] if len(files) == 1 else f"{len(files)} files"


def udf_select(dialect: str, keep: Sequence[str], call: str, source: str) -> str:
    """The columns ``keep`` of the query ``source`` and the UDF ``call`` as ``calibrated``."""
    cols = "".join(sql_quote(c, dialect) + ", " for c in keep)
    return f"SELECT {cols}{call} AS calibrated FROM ({source}) AS src"


def predict_batch(cal: Calibrator, s: np.ndarray, feats: pd.DataFrame | None) -> np.ndarray:
    """``predict`` on the rows with a score (NaN elsewhere): the UDFs' body."""
    out = np.full(s.size, np.nan)
    ok = np.isfinite(s)
    if ok.any():
        f = None if feats is None else feats.loc[ok].reset_index(drop=True)
        out[ok] = cal.predict(s[ok], f)
    return out


def apply_model(calibrator, source, out_path, engine: str | None = None, score_column: str | None = None, *,
                fitted_on: dict | None = None, form: str | None = None, threads: int | None = None,
                **options) -> ApplyResult:
    """Add a fitted calibrator's calibrated scores to every row of Parquet or CSV files; write Parquet.

    Parameters
    ----------
    calibrator : Calibrator
        A fitted binary calibrator (a model file, its text or a loaded model:
        :func:`calibdash.io.export.apply_model`).
    source : str, Path or sequence of them
        A Parquet or CSV file, a glob or a list of them, read in sorted path order.
    out_path : str or Path
        The Parquet file to write (a directory of part files with Spark).
    engine, score_column : str, optional
        A name of :func:`calibdash.engines.available` (default :func:`calibdash.engines.default_engine`); the
        score column (default the model's if present, else guessed).
    fitted_on : dict, optional
        The model file's ``fitted_on``: its score column, score transform and features (default none: the transform
        decided from the values).
    form : str, optional
        The SQL form of step and linear maps (:func:`calibdash.calibrators.sql.to_sql`). Default "auto": a CASE up to 64
        pieces (DuckDB: :data:`calibdash.engines.duckdb.apply.MAX_CASE`), else a lookup table joined on a bucket
        of the score. DuckDB keeps the rows' order: after a join, or from several Parquet files, rows are sorted
        back by file and row number; CSV rows have none, so there a large map is a binary search of nested CASEs
        and several CSV files are read on one thread.
    threads : int, optional
        The engine's threads where it takes them (DuckDB; default all cores).
    options
        The engine's own, None left out: DuckDB's ``connection`` (default a new one, closed at the end) and
        ``on_connect``, Spark's ``spark`` (default ``getOrCreate()``).

    Returns
    -------
    ApplyResult

    Raises
    ------
    DataError
        No usable score column, scores outside [0, 1] for a model fitted on probabilities, missing feature
        columns, unreadable files.
    EnvironmentProblem
        No file matches ``source``; a file cannot be read or written.
    SettingsError
        Unknown engine; not a calibrator.
    """
    from . import default_engine, get

    eng = get(engine or default_engine())
    form = "auto" if form is None else form
    start = time.perf_counter()
    if not isinstance(calibrator, Calibrator):
        raise SettingsError(f"apply_model takes a fitted calibrator (a model file: calibdash.io.export.apply_model), "
                            f"not {type(calibrator).__name__}.")
    calibrator._check_fitted()
    files, fmt = source_files(source)
    try:
        res = eng.apply(calibrator, fitted_on or {}, files, fmt, out_path, score_column, form, threads=threads,
                        **{k: v for k, v in options.items() if v is not None})
    except OSError as exc:
        raise EnvironmentProblem(f"cannot read or write the files: {exc}.") from None
    except Exception as exc:
        if type(exc).__name__ == "IOException":             # duckdb.IOException: not an OSError
            raise EnvironmentProblem(f"cannot read or write the files: {exc}") from None
        raise
    score, n_rows, n_cal, used, via, mapped, replaced = res
    said = ((f"score column {score!r} mapped by the logistic function, as the model's training scores were", mapped),
            ("its column 'calibrated' was replaced", replaced))
    return ApplyResult(out_path=str(out_path), engine=eng.name, method=type(calibrator).name, score_column=score,
                       n_rows=n_rows, n_calibrated=n_cal, form=used, via=via, mapped=mapped,
                       notes=tuple(text for text, on in said if on), seconds=time.perf_counter() - start)
