"""The commands of a saved calibrator: ``fit`` saves one as JSON (:mod:`calibdash.export`), in memory or on
the score cells an engine aggregates; ``apply`` adds its calibrated scores to a file's rows (in memory, or
with ``--engine duckdb|spark`` where the files lie, :mod:`calibdash.engines.apply`); ``export-sql`` prints
it as SQL (:mod:`calibdash.sql`)."""
from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pandas as pd

from .. import export
from ..data import build_score_set, guess_roles, margins, read_table
from ..errors import DataError, EnvironmentProblem, SettingsError
from ..evaluation import Scheme
from ..methods import parse_params, resolve, split_names
from ..safe_text import csv_text
from . import classes
from .engine_jobs import aggregate, default_engine, engine_for, engine_source, in_job
from .output import split_rows, write_text

__all__ = ["cmd_fit", "cmd_apply", "cmd_export_sql"]


# -- fit --------------------------------------------------------------------------------------------------
def cmd_fit(args) -> int:
    """Fit one calibrator on a file (or the rows of one split value) and save it as JSON (a multi-class
    calibrator on a K-class file, :func:`.classes.cmd_fit_classes`)."""
    engine = engine_for(args)
    opened = classes.open_table(args, engine)
    if opened is not None and opened.classes is not None:
        return classes.cmd_fit_classes(args, opened.classes)
    if opened is not None:
        classes.refuse_class_methods(args.method, opened.frame, args, opened.info.name)
    names = split_names(args.method)
    if len(names) != 1:
        raise SettingsError(f"--method takes one calibrator, got {args.method!r}.")
    method = names[0]
    params = parse_params(args.param)
    for key in params:
        if key != method:
            raise SettingsError(f"--param {key}.… is a hyperparameter of {key!r}, but --method is {method!r}.")
    cal = resolve(method, params)[method]
    if engine:
        return _fit_engine(args, cal, method, engine)
    ss = build_score_set(opened.frame, score=args.score, label=args.label, positive=args.positive,
                         info=opened.info, name=opened.info.name)
    rows = split_rows(ss.split, args.split_value, ss.n_rows, ss.name, ss.split_column)
    feats = ss.features.iloc[rows].reset_index(drop=True) if cal.uses_features and ss.features is not None else None
    cal.fit(ss.scores[rows], ss.labels[rows], feats)
    text = export.dumps(cal, fitted_on=export.provenance(ss, cal))
    where = write_text(text, args.out)
    print(f"Fitted {method} on {rows.size:,} rows of {ss.name} (score {ss.score!r}); wrote {where} "
          f"({len(text.encode()):,} bytes).", file=sys.stderr)
    return 0


def _fit_engine(args, cal, method: str, engine: str) -> int:
    """``fit`` where the rows live: fitted on the score cells of every row, or of the rows whose split column
    holds ``--split-value``."""
    if cal.uses_features:
        raise SettingsError("a feature-aware method (MBCT) needs the rows: use --engine memory on a file that fits.")
    src = engine_source(args, split=args.split)
    scheme = None
    if args.split_value is not None:
        if not src.split:
            raise DataError(f"--split-value needs a split column in {src.describe()}: name it with --split.")
        scheme = Scheme(kind="column", train_value=args.split_value)
    c = aggregate(src, scheme, engine, args.memory_limit)
    if scheme is not None:
        c = c.select(c.part == 0)
    s, y, w = c.weighted_rows()
    cal.fit(s, y, sample_weight=w)
    # transform None: scores are mapped iff one lies outside [0, 1], at fit and at apply alike
    fitted_on = {"file": src.describe(), "score": src.score, "score_transform": src.transform_name,
                 "features": [], "engine": engine}
    text = export.dumps(cal, fitted_on=fitted_on)
    where = write_text(text, args.out)
    print(f"Fitted {method} on {int(c.n.sum()):,} rows of {src.describe()} ({c.describe()}; aggregated by "
          f"{engine}); wrote {where} ({len(text.encode()):,} bytes).", file=sys.stderr)
    return 0


# -- apply ------------------------------------------------------------------------------------------------
def _apply_scores(df: pd.DataFrame, score: str, transform: str | None) -> tuple[np.ndarray, str | None]:
    """Scores in [0, 1] (NaN where missing) mapped as the model's scores were; and a note when mapped."""
    values = pd.to_numeric(df[score], errors="coerce").to_numpy(dtype=float, na_value=np.nan)
    probs, mapped = margins.to_probabilities(values, transform=transform, column=score)
    note = (f"score column {score!r} mapped by the logistic function, as the model's training scores were"
            if mapped else None)
    return probs, note


def _apply_score_column(df: pd.DataFrame, info, asked: str | None, fitted_on: dict) -> str:
    """The score column to apply the model to: asked for, else the model's, else the first guessed."""
    score = asked
    if score is None and fitted_on.get("score") in df.columns:
        score = fitted_on["score"]
    if score is None:
        guessed = guess_roles(df).scores
        if not guessed:
            raise DataError(f"no numeric column in {info.name} to use as a score; name one with --score.")
        score = guessed[0]
    if score not in df.columns:
        raise DataError(f"score column {score!r} not found in {info.name}; the columns are: "
                        f"{', '.join(map(repr, df.columns))}.")
    return score


def cmd_apply(args) -> int:
    """Add a saved calibrator's calibrated scores to every row of a file (rows without a score stay empty); a
    K-class model's, one column per class (:func:`.classes.cmd_apply_classes`)."""
    if classes.is_class_model(args.model):
        return classes.cmd_apply_classes(args)
    if args.engine is None:
        args.engine = default_engine(args.file)     # a glob or a file over 200 MB: applied where it lies
    if args.engine:
        return _apply_engine(args)
    try:
        model_text = Path(args.model).read_bytes()
    except OSError as exc:
        raise EnvironmentProblem(f"cannot read the model file {args.model}: {exc.strerror or exc}.") from None
    cal, fitted_on = export.read_model(model_text)
    df, info = read_table(args.file)
    score = _apply_score_column(df, info, args.score, fitted_on)
    s, note = _apply_scores(df, score, fitted_on.get("score_transform"))
    ok = np.isfinite(s)
    feats = df.loc[ok].reset_index(drop=True) if cal.uses_features else None
    out = df.copy()
    replaced = "calibrated" in out.columns
    out["calibrated"] = np.nan
    out.loc[ok, "calibrated"] = cal.predict(s[ok], feats)
    where = write_text(csv_text(out, index=False), args.out)
    for msg in ([note] if note else []) + (["its column 'calibrated' was replaced"] if replaced else []):
        print(f"  · {msg}", file=sys.stderr)
    print(f"Applied {cal.name} to {int(ok.sum()):,} of {len(df):,} rows of {info.name} (score {score!r}"
          f"{'; rows without a score are left empty' if not ok.all() else ''}); wrote {where}.", file=sys.stderr)
    return 0


def _apply_engine(args) -> int:
    """``apply --engine``: files (a path or a glob) read and written as Parquet by DuckDB, Spark or pandas."""
    from ..engines.apply import apply_model
    if not args.out:
        raise SettingsError("apply --engine writes Parquet: give the output file with --out.")

    def work(job):
        import contextlib

        from .. import engines

        with contextlib.ExitStack() as watching:
            job.set_stage(f"reading the rows, calibrating and writing them with {args.engine}")
            return apply_model(args.model, args.file, args.out, engine=args.engine, score_column=args.score,
                               **engines.get(args.engine).watched(job, watching))

    res = in_job(f"Applying {args.model} to {args.file} with {args.engine}", work)
    for msg in res.notes:
        print(f"  · {msg}", file=sys.stderr)
    how = {"sql": f"as SQL ({res.form} form)", "udf": "by predict called from the engine",
           "predict": "in memory"}[res.via]
    print(f"Applied {res.method} {how} with {res.engine} to {res.n_calibrated:,} of {res.n_rows:,} rows of "
          f"{args.file} (score {res.score_column!r}); wrote {res.out_path} in {res.seconds:.1f} s.", file=sys.stderr)
    return 0


# -- export-sql -------------------------------------------------------------------------------------------
def cmd_export_sql(args) -> int:
    """Print a saved calibrator as one SQL statement adding ``calibrated`` to the rows of a table."""
    from .. import sql
    if classes.is_class_model(args.model):
        classes.refuse_export_sql(args)
    try:
        model_text = Path(args.model).read_bytes()
    except OSError as exc:
        raise EnvironmentProblem(f"cannot read the model file {args.model}: {exc.strerror or exc}.") from None
    model = export.read_model(model_text)
    score = args.score or model.fitted_on.get("score") or "score"
    feats = {f: f for f in model.fitted_on.get("features") or []}
    source = args.table
    if model.fitted_on.get("score_transform") == "logistic":        # map margins as the training scores were
        x = sql.quote(score, args.dialect)
        prob = f"{score}_probability"
        source = (f"SELECT *, {sql.SqlWriter(args.dialect, x).sigmoid(x)} AS {sql.quote(prob, args.dialect)} "
                  f"FROM {args.table}")
        print(f"  · the model was fitted on {score!r} mapped by the logistic function; the SQL maps it too, "
              f"as the column {prob!r}.", file=sys.stderr)
        score = prob
    m = sql.to_sql(model, score_column=score, dialect=args.dialect, feature_columns=feats, form=args.form)
    where = write_text(m.standalone(source), args.out)
    if where != "stdout":
        print(f"Wrote {model.calibrator.name} as {args.dialect} SQL ({m.form} form) to {where}.", file=sys.stderr)
    return 0
