"""The commands of a saved calibrator, binary or K-class (:mod:`calibdash.io.export`): ``fit`` saves one as JSON,
``apply`` adds its calibrated scores to a file's rows (a binary model also where the files lie,
:mod:`calibdash.engines.apply`), ``export-sql`` prints a binary model as SQL (:mod:`calibdash.io.sql`)."""
from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pandas as pd

from .. import calibrators, engines
from ..io import export
from ..data import guess_roles, read_table
from ..core import margins
from ..core.errors import DataError, EnvironmentProblem, SettingsError
from ..evaluation.holdout import Scheme
from ..evaluation.methods import parse_params, resolve, split_names
from ..core.safe_text import csv_text
from .engine_jobs import aggregate, default_engine, engine_for, engine_source, in_watched_job
from .output import jsonable, split_rows, write_text
from .file_problem import ENGINE_REFUSAL, columns_text, engine_class_source, open_table, refuse_class_methods

__all__ = []


def cmd_fit(args) -> int:
    """Fit one calibrator on a file (or the rows of one split value) and save it as JSON: one path for a binary
    calibrator on a binary file (in memory, or on the score cells an engine aggregates) and a K-class one on a
    K-class file; the rows it is fitted on and what it says of them come from :func:`_fit_rows`."""
    engine = engine_for(args)
    opened = open_table(args, engine)
    cs = opened.classes if opened is not None else None
    if opened is not None and cs is None:
        refuse_class_methods(args.method, opened.frame, args, opened.info.name)
    names = split_names(args.method)
    if len(names) != 1:
        raise SettingsError(f"--method takes one calibrator, got {args.method!r}.")
    method = names[0]
    params = parse_params(args.param)
    for key in params:
        if key != method:
            raise SettingsError(f"--param {key}.… is a hyperparameter of {key!r}, but --method is {method!r}.")
    cal = (resolve(method, params)[method] if cs is None else
           calibrators.get(method, "classes", **params.get(method, {})).set_params(logits=bool(cs.logits)))
    if engine and cal.uses_features:
        raise SettingsError("a feature-aware method (MBCT) needs the rows: use --engine memory on a file that fits.")
    x, y, given, fitted_on, what = _fit_rows(args, opened, cal, engine)
    cal.fit(x, y, **given)
    text = export.dumps(cal, fitted_on=fitted_on)
    where = write_text(text, args.out)
    print(f"Fitted {method} on {what}; wrote {where} ({len(text.encode()):,} bytes).", file=sys.stderr)
    return 0


def _fit_rows(args, opened, cal, engine: str | None) -> tuple:
    """What ``fit`` fits ``cal`` on: the inputs, the labels and the further keywords of ``cal.fit`` (a binary
    file's features; an engine's cell weights), the model's ``fitted_on`` entry and those rows in words. In memory
    every row of the file or of ``--split-value``; where the rows live, the score cells of those rows."""
    if engine:
        if engine_class_source(args) is not None:           # a K-class file found by its columns, not named
            raise SettingsError(f"{ENGINE_REFUSAL}.")
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
        # transform None: scores are mapped iff one lies outside [0, 1], at fit and at apply alike
        fitted_on = {"file": src.describe(), "score": src.score, "score_transform": src.transform_name,
                     "features": [], "engine": engine}
        return s, y, {"sample_weight": w}, fitted_on, (f"{int(c.n.sum()):,} rows of {src.describe()} "
                                                       f"({c.describe()}; aggregated by {engine})")
    data = opened.classes if opened.classes is not None else opened.score_set(args)
    rows = split_rows(data.split, args.split_value, data.n_rows, data.name, data.split_column)
    what = f"{rows.size:,} rows of {data.name}"
    if opened.classes is not None:
        return data.given[rows], data.labels[rows], {}, provenance(data, rows.size), f"{what} ({columns_text(data)})"
    feats = data.features.iloc[rows].reset_index(drop=True) if cal.uses_features and data.features is not None else None
    return data.scores[rows], data.labels[rows], {"features": feats}, export.provenance(data, cal), (
        f"{what} (score {data.score!r})")


def provenance(cs, rows: int) -> dict:
    """The ``fitted_on`` entry of a K-class model: the file, the label column, the classes and their columns
    (and prefix), whether they hold logits, and the rows fitted on; what ``apply`` reads the columns by."""
    out = {"file": cs.name, "label": cs.label_column, "classes": [jsonable(c) for c in cs.classes],
           "columns": [str(c) for c in cs.columns], "prefix": cs.prefix, "logits": bool(cs.logits),
           "rows": int(rows)}
    if cs.info is not None:
        out["sha256"] = cs.info.sha256
    return out


def _notes(messages) -> None:
    for msg in messages:
        print(f"  · {msg}", file=sys.stderr)


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


def _model_text(path: str) -> bytes:
    try:
        return Path(path).read_bytes()
    except OSError as exc:
        raise EnvironmentProblem(f"cannot read the model file {path}: {exc.strerror or exc}.") from None


def _class_values(df: pd.DataFrame, columns: list[str], name: str) -> np.ndarray:
    """A K-class model's class columns of ``df`` as an (n, K) array (NaN where a value is missing)."""
    missing = [c for c in columns if c not in df.columns]
    if missing:
        shown = ", ".join(map(repr, missing[:5])) + (f" and {len(missing) - 5} more" if len(missing) > 5 else "")
        raise DataError(f"the model's class column{'s' if len(missing) > 1 else ''} {shown} "
                        f"{'are' if len(missing) > 1 else 'is'} not in {name}; the model was fitted on "
                        f"{', '.join(map(repr, columns))}.")
    return np.column_stack([pd.to_numeric(df[c], errors="coerce").to_numpy(dtype=float, na_value=np.nan)
                            for c in columns])


def cmd_apply(args) -> int:
    """Add a saved calibrator's calibrated scores to every row of a file: a binary model's ``calibrated`` (also
    where the files lie), a K-class model's ``calibrated_<class>`` per class; rows it cannot score stay empty."""
    model = export.read_model(_model_text(args.model))
    if model.kind == "classes" and args.engine and engines.get(args.engine).out_of_core:
        raise SettingsError(f"{ENGINE_REFUSAL}.")
    if model.kind == "binary" and args.engine is None:
        args.engine = default_engine(args.file)     # a glob or a file over 200 MB: applied where it lies
    if model.kind == "binary" and args.engine:
        return _apply_engine(args)
    cal, fitted_on = model
    df, info = read_table(args.file)
    notes = []
    if model.kind == "binary":
        score = _apply_score_column(df, info, args.score, fitted_on)
        s, note = _apply_scores(df, score, fitted_on.get("score_transform"))
        ok, new, name = np.isfinite(s), ["calibrated"], cal.name
        notes += [note] if note else []
        values = cal.predict(s[ok], df.loc[ok].reset_index(drop=True) if cal.uses_features else None)[:, None]
        what, empty = f"score {score!r}", "rows without a score are left empty"
    else:
        columns = [str(c) for c in fitted_on.get("columns") or []]
        if len(columns) != cal.n_classes_:
            raise DataError(f"the model file names {len(columns)} class columns in 'fitted_on' but the model has "
                            f"{cal.n_classes_} classes; save it with `fit`, which writes them.")
        x = _class_values(df, columns, info.name)
        ok, name = np.isfinite(x).all(axis=1), cal.label or fitted_on.get("method", "the model")
        new = [f"calibrated_{c}" for c in (str(c) for c in fitted_on.get("classes") or columns)]
        values = cal.predict_proba(x[ok]) if ok.any() else np.empty((0, len(new)))
        what, empty = f"{len(columns)} class columns", "rows with a missing class value are left empty"
    calibrated = np.full((len(df), len(new)), np.nan)
    calibrated[ok] = values
    replaced = [c for c in new if c in df.columns]
    if replaced:
        many = len(replaced) > 1
        notes.append(f"its column{'s' if many else ''} {', '.join(map(repr, replaced))} "
                     f"{'were' if many else 'was'} replaced")
    # the frame built at once (a column at a time fragments it: pandas warns past 100 columns); a column
    # replaced keeps its place, the others follow the file's
    out = pd.DataFrame({c: df[c] for c in df.columns} | {c: calibrated[:, j] for j, c in enumerate(new)},
                       index=df.index)
    where = write_text(csv_text(out, index=False), args.out)
    _notes(notes)
    print(f"Applied {name} to {int(ok.sum()):,} of {len(df):,} rows of {info.name} ({what}"
          f"{'; ' + empty if not ok.all() else ''}); wrote {where}.", file=sys.stderr)
    return 0


def _apply_engine(args) -> int:
    """``apply --engine``: files (a path or a glob) read and written as Parquet by DuckDB, Spark or pandas."""
    if not args.out:
        raise SettingsError("apply --engine writes Parquet: give the output file with --out.")

    def work(job, **watch):
        job.set_stage(f"reading the rows, calibrating and writing them with {args.engine}")
        return export.apply_model(args.model, args.file, args.out, engine=args.engine, score_column=args.score, **watch)

    res = in_watched_job(f"Applying {args.model} to {args.file} with {args.engine}", args.engine, work)
    _notes(res.notes)
    how = {"sql": f"as SQL ({res.form} form)", "udf": "by predict called from the engine",
           "predict": "in memory"}[res.via]
    print(f"Applied {res.method} {how} with {res.engine} to {res.n_calibrated:,} of {res.n_rows:,} rows of "
          f"{args.file} (score {res.score_column!r}); wrote {res.out_path} in {res.seconds:.1f} s.", file=sys.stderr)
    return 0


def cmd_export_sql(args) -> int:
    """Print a saved calibrator as one SQL statement adding ``calibrated`` to the rows of a table."""
    from ..io import sql
    model = export.read_model(_model_text(args.model))
    if model.kind == "classes":
        raise SettingsError(f"{args.model} holds a K-class calibrator: export-sql writes binary calibrators only "
                            "(one score column in, one out). Apply a K-class model in memory with `python -m "
                            "calibdash apply MODEL.json FILE`, which adds one calibrated_<class> column per class.")
    score = args.score or model.fitted_on.get("score") or "score"
    feats = {f: f for f in model.fitted_on.get("features") or []}
    source = args.table
    if model.fitted_on.get("score_transform") == "logistic":        # map margins as the training scores were
        x = sql.quote(score, args.dialect)
        prob = f"{score}_probability"
        source = (f"SELECT *, {sql.SqlWriter(args.dialect, x).sigmoid(x)} AS {sql.quote(prob, args.dialect)} "
                  f"FROM {args.table}")
        _notes([f"the model was fitted on {score!r} mapped by the logistic function; the SQL maps it too, as the "
                f"column {prob!r}."])
        score = prob
    m = sql.to_sql(model, score_column=score, dialect=args.dialect, feature_columns=feats, form=args.form)
    where = write_text(m.standalone(source), args.out)
    if where != "stdout":
        print(f"Wrote {model.calibrator.name} as {args.dialect} SQL ({m.form} form) to {where}.", file=sys.stderr)
    return 0
