"""The commands on K-class files: ``evaluate``, ``report``, ``fit``, ``apply`` and ``export-sql`` when the file is
a multi-class table (a label of K >= 3 classes and one probability or logit column per class,
:mod:`calibdash.data.classes`) or the model a multi-class calibrator (:mod:`calibdash.multiclass.export`).

:func:`open_table` reads the file once and says which it is: a K-class table when the user names the class
columns (``--probs PREFIX`` or ``--logits PREFIX``), or when neither ``--score`` nor ``--positive`` is given
and :func:`calibdash.data.is_multiclass` finds the columns; else the binary commands go on with the table
read. The work is the library's: :func:`calibdash.evaluation.evaluate_classes` (its large-data
policy included: the parametric maps fitted on a sample, said in its notes),
:func:`calibdash.multiclass.bootstrap.bootstrap_multiclass` and its verdict,
:func:`calibdash.report.classes.report_for_class_set`, :func:`calibdash.multiclass.export.dumps`.

``evaluate --engine duckdb|spark`` (or a glob, or a file over 200 MB) on K-class rows goes to
:func:`calibdash.multiclass.large.evaluate_class_source`: the methods fitted on a content-keyed sample of the
fitting part, every judged row calibrated batch by batch and aggregated into score cells where it lives, the
same table and JSON as in memory, and the job's stages on stderr (:func:`.engine_jobs.in_job`). ``report``,
``fit`` and ``apply`` read K-class files into memory: ``--engine duckdb|spark`` is refused there with a
:class:`~calibdash.errors.SettingsError`, and so is ``export-sql`` of a K-class model (its softmax of K
columns is not written as SQL here; ``apply`` computes it in memory).
"""
from __future__ import annotations

import json
import sys
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd

from .. import multiclass
from ..data import FileInfo, build_class_set, is_multiclass, read_table
from ..errors import DataError, EnvironmentProblem, SettingsError
from ..methods import parse_params, split_names
from ..safe_text import csv_text
from ..multiclass import bootstrap as mboot, export as mexport, metrics as mmetrics
from ..evaluation import default_methods, evaluate_classes
from .engine_jobs import source_labels
from .output import (class_key, evaluate_json, four_places, intervals_json, jsonable, metrics_json, print_intervals,
                     print_json, report_validation, report_written, sentence, source_name, split_rows, validation_json,
                     write_text)

__all__ = ["Opened", "open_table", "class_methods", "class_params", "is_class_model", "cmd_evaluate_classes",
           "engine_class_source", "cmd_evaluate_class_source",
           "cmd_report_classes", "cmd_fit_classes", "cmd_apply_classes", "refuse_export_sql", "best_text",
           "ENGINE_REFUSAL", "refuse_class_methods"]

#: Why a K-class file or model is not run by DuckDB or Spark.
ENGINE_REFUSAL = ("only the in-memory engine fits K-class models and applies them (the softmax over K columns is "
                  "not written as SQL here; `evaluate` runs K-class files with --engine duckdb|spark): drop "
                  "--engine, or give --engine memory")


# -- the file ---------------------------------------------------------------------------------------------
@dataclass
class Opened:
    """A file read once: its table and, when it is a K-class table, the validated :class:`ClassSet`."""

    frame: pd.DataFrame
    info: FileInfo
    classes: object | None = None


def _named(args) -> bool:
    return bool(getattr(args, "probs", None) or getattr(args, "logits", None))


def open_table(args, engine: str | None) -> Opened | None:
    """``args.file`` read, and validated as a K-class table when it is one; None when ``engine`` (DuckDB or
    Spark) reads a binary file where it lies.

    Raises
    ------
    SettingsError
        Class columns named (``--probs``/``--logits``) with an engine other than memory, or with ``--score``.
    DataError
        As :func:`calibdash.data.build_class_set` for a K-class table.
    """
    if _named(args) and getattr(args, "score", None):
        raise SettingsError("--score names a binary file's score column; --probs and --logits name a K-class "
                            "file's class columns. Give one or the other.")
    if engine:
        if _named(args) and getattr(args, "command", None) != "evaluate":
            raise SettingsError(f"{ENGINE_REFUSAL}.")
        return None
    df, info = read_table(args.file)
    binary_asked = getattr(args, "score", None) is not None or getattr(args, "positive", None) is not None
    if not _named(args) and (binary_asked or not is_multiclass(df, args.label)):
        return Opened(df, info)
    cs = build_class_set(df, label=args.label, probs=getattr(args, "probs", None),
                         logits=getattr(args, "logits", None), split=getattr(args, "split", None), info=info,
                         name=info.name)
    return Opened(df, info, cs)


def class_methods(args, k: int) -> list[str]:
    """The multi-class methods asked for: ``--methods`` when given, else
    :func:`calibdash.evaluation.default_methods` for ``k`` classes."""
    if getattr(args, "methods_given", False):
        names = split_names(args.methods)
        if not names:
            raise SettingsError("--methods names no method.")
        return names
    return default_methods(k)


def class_params(args, methods) -> dict:
    """``--param METHOD.NAME=VALUE`` for the chosen methods; a method not chosen is refused."""
    params = parse_params(args.param)
    for key in params:
        if key not in methods:
            raise SettingsError(f"hyperparameters are given for {key!r}, which is not among the chosen methods "
                                f"({', '.join(methods)}).")
    return params


def _refuse_binary_options(args) -> None:
    if getattr(args, "measures", None) is not None:
        raise SettingsError("--measures adds the binary measures; a K-class file's table already holds every "
                            f"multi-class measure ({', '.join(mmetrics.MEASURE_NAMES)}). Use --boot N for "
                            "intervals.")
    if getattr(args, "cells", "auto") == "always":
        raise SettingsError("--cells always is for binary files (score cells of one score); a K-class file is "
                            "evaluated on its rows.")


def _columns_text(cs) -> str:
    what = "logits" if cs.logits else "probabilities"
    cols = cs.columns
    shown = ", ".join(cols) if len(cols) <= 4 else f"{cols[0]}, {cols[1]}, ..., {cols[-1]}"
    return f"{cs.k} classes ({what} in {shown})"


def _shared_prefix(columns) -> str | None:
    """The class prefix (p_, prob_, proba_, logit_, as written) every column starts with, else None."""
    from ..data.roles import split_prefix

    first = split_prefix(columns[0])
    return first[0] if first and all(str(c).startswith(first[0]) for c in columns) else None


def best_text(name: str) -> str:
    """Which value of a multi-class measure is best, in a word or two (:data:`calibdash.multiclass.metrics.MEASURES`)."""
    low = mmetrics.MEASURES[name].lower_is_better
    return "0 is ideal" if low is None else ("lower" if low else "higher")


def _labels(ev) -> dict:
    from ..report import default_labels
    return default_labels(list(ev.predictions), ev.models)


def _class_only(names) -> list[str]:
    """The names among ``names`` that only a K-class file runs: composites (``ovr:isotonic``) and
    multi-class calibrators with no binary namesake (vector, matrix, dirichlet)."""
    from .. import calibrators

    binary = calibrators.classes()
    return [n for n in names if n.split(":")[0].strip().lower() in multiclass.COMPOSITES
            or (n in multiclass.classes() and n not in binary)]


def refuse_class_methods(methods: str, frame, args, name: str) -> None:
    """Refuse multi-class methods asked of a file read as binary, saying what the file holds (its label's
    classes, read from ``frame``: the table, its first rows, None, or a function giving one of them, called
    only when such a method is asked) and what they need.

    Raises
    ------
    SettingsError
        Some of ``methods`` are multi-class only (:func:`_class_only`).
    """
    asked = _class_only(split_names(methods))
    if not asked:
        return
    from ..data import guess_roles
    from ..data.roles import label_values
    from ..validation import format_values, sorted_values

    what = (f"{', '.join(asked)} {'is a multi-class calibrator' if len(asked) == 1 else 'are multi-class calibrators'}"
            ", for K-class files (a label of 3 or more classes and one probability or logit column per class, "
            "such as p_<class>)")
    frame = frame() if callable(frame) else frame
    label = args.label if frame is None or args.label else guess_roles(frame).label
    found = label_values(frame[label]) if frame is not None and label in frame.columns else None
    if found is None:
        raise SettingsError(f"{what}; {name} is read as a binary file. Name its class columns with --probs or "
                            "--logits, or choose binary calibrators (see `methods`).")
    values = sorted_values(found[2])
    holds = f"{name}'s label column {label!r} holds"
    if len(values) < 2:
        raise SettingsError(f"{what}; {holds} one class only ({format_values(values) or 'no value'}): calibration "
                            "needs rows of every class, binary (two classes) or multi-class (three or more).")
    if len(values) == 2:
        raise SettingsError(f"{what}; {holds} two classes ({format_values(values)}): a binary file. Choose binary "
                            "calibrators (see `methods`).")
    raise SettingsError(f"{what}; {holds} {len(values)} classes ({format_values(values)}) but no column per class "
                        "was found beside it: name the class columns with --probs PREFIX or --logits PREFIX.")


# -- evaluate ---------------------------------------------------------------------------------------------
def _evaluation(args, cs, scheme):
    methods = class_methods(args, cs.k)
    return evaluate_classes(cs.scores(), cs.labels, methods, scheme, split=cs.split, classes=cs.classes,
                            params=class_params(args, methods))


def cmd_evaluate_classes(args, cs, scheme) -> int:
    """``evaluate`` on a K-class table: the held-out measures of each method (a table, or JSON), with
    ``--boot N`` their paired bootstrap intervals and the verdict."""
    _refuse_binary_options(args)
    n_boot = getattr(args, "boot", None)
    if n_boot is not None and int(n_boot) < 2:
        raise SettingsError(f"--boot must be at least 2 on a K-class file, got {n_boot}.")
    ev = _evaluation(args, cs, scheme)
    judged, scheme_text = int(ev.rows.size), scheme.describe()
    boot = (mboot.bootstrap_multiclass(ev.predictions, ev.labels, n_boot=int(n_boot), seed=scheme.seed)
            if n_boot is not None else None)
    verdict = mboot.verdict(boot, labels=_labels(ev)) if boot is not None else None
    binning = (f"ECE, MCE and cwECE: {mmetrics.N_BINS} equal-width bins (of the top probability; of each "
               f"class's probability for cwECE); dCE: {mmetrics.N_BINS} equal-mass bins")
    if args.json:
        out = evaluate_json(file=cs.name, engine="memory", label=cs.label_column, classes=cs.classes,
                            class_columns=cs.columns, prefix=cs.prefix, logits=cs.logits, rows_judged=judged,
                            scheme=scheme_text, cells=None, notes=ev.notes, binning=binning,
                            validation=report_validation(cs.report, cs.report.class_counts),
                            metrics=metrics_json(ev))
        if boot is not None:
            out["intervals"] = intervals_json(boot)
            out["verdict"] = verdict
        print_json(out)
        return 0
    print(f"{cs.name}: {_columns_text(cs)}, label {cs.label_column!r}; {scheme_text}; {judged:,} rows judged")
    for msg in [*cs.report.messages, *ev.notes]:
        print(f"  · {sentence(msg)}")
    print(ev.metrics.to_string(float_format=four_places))
    print(f"{binning}.")
    if boot is not None:
        print_intervals(boot, "Intervals", best_text)
        print(f"\nVerdict: {verdict}")
    return 0


# -- evaluate where the rows live ------------------------------------------------------------------------
def engine_class_source(args):
    """The K-class source ``args`` names for an engine (a glob, a large file, a DuckDB table or query), or None
    for binary rows: K-class when ``--probs``/``--logits`` name the class columns, or when neither ``--score``
    nor ``--positive`` is given and :func:`calibdash.data.is_multiclass` finds them in the first rows."""
    from ..engines import Source
    from ..engines.classes import HEAD_ROWS, class_source
    from ..engines.duckdb import read_head

    where = dict(database=getattr(args, "database", None), table=getattr(args, "table", None),
                 query=getattr(args, "query", None), order_by=getattr(args, "order_by", None))
    if not _named(args):
        if getattr(args, "score", None) is not None or getattr(args, "positive", None) is not None:
            return None
        if where["table"] is None and where["query"] is None and not args.file:
            return None
        head = read_head(Source(path=args.file if not (where["table"] or where["query"]) else None,
                                score="__unused__", label=args.label or "__unused_label__", **where), HEAD_ROWS)
        if not is_multiclass(head, args.label):
            return None
    return class_source(args.file if not (where["table"] or where["query"]) else None, args.label,
                        getattr(args, "probs", None), getattr(args, "logits", None), split=args.split, **where)


def cmd_evaluate_class_source(args, csrc, scheme, engine: str) -> int:
    """``evaluate`` on K-class rows where they live (:func:`calibdash.multiclass.large.evaluate_class_source`):
    the table (or JSON) of the in-memory ``evaluate``, its notes saying what was sampled and judged on cells,
    and the job's stages on stderr."""
    from ..multiclass.large import evaluate_class_source
    from .engine_jobs import in_job

    _refuse_binary_options(args)
    if getattr(args, "boot", None) is not None:
        raise SettingsError("--boot resamples the judged rows, which stay where they live with --engine "
                            f"{engine}; drop --boot, or evaluate a file that fits with --engine memory.")
    if scheme.kind == "column" and not csrc.source.split:
        raise DataError("--scheme column needs a split column: name it with --split.")
    methods = class_methods(args, len(csrc.columns))
    params = class_params(args, methods)
    res = in_job(f"Evaluating {csrc.source.describe()} with {engine}", lambda job: evaluate_class_source(
        csrc, scheme=scheme, engine=engine, methods=methods, params=params, memory_limit=args.memory_limit,
        job=job))
    judged, scheme_text = res.cells.n_rows, scheme.describe(on_cells=True)
    binning = (f"ECE, MCE and cwECE: {mmetrics.N_BINS} equal-width bins (of the top probability; of each "
               f"class's probability for cwECE); dCE: {mmetrics.N_BINS} equal-mass bins")
    name = source_name(csrc.source)
    if args.json:
        labs = source_labels(csrc.source, engine, len(csrc.classes) + 1)
        found = {class_key(v): int(n) for v, n in zip(labs["label"], labs["rows"])}
        counts = {c: found.get(class_key(c), 0) for c in csrc.classes}
        n = sum(found.values())
        messages = ["Rows where they live are checked, not dropped: a missing class value or label is refused.",
                    f"Label column {csrc.source.label!r}: " + ", ".join(f"{counts[c]:,} of class {jsonable(c)!r}"
                                                                       for c in csrc.classes) + f"; {n:,} rows used."]
        out = evaluate_json(file=name, engine=engine, label=csrc.source.label, classes=csrc.classes,
                            class_columns=csrc.columns, prefix=_shared_prefix(csrc.columns), logits=csrc.logits, rows_judged=judged,
                            scheme=scheme_text, cells=res.cells.describe(),
                            notes=res.notes, binning=binning,
                            validation=validation_json(rows_read=n, rows_used=n, dropped={}, dropped_examples={},
                                                       class_counts=counts, mapped={}, messages=messages),
                            metrics=metrics_json(res))
        print_json(out)
        return 0
    print(f"{name}: {_columns_text(csrc)}, label {csrc.source.label!r}; {scheme_text}; {judged:,} rows judged "
          f"(aggregated by {engine})")
    for msg in res.notes:
        print(f"  · {sentence(msg)}")
    print(res.metrics.to_string(float_format=four_places))
    print(f"{binning}.")
    return 0


# -- report -----------------------------------------------------------------------------------------------
def cmd_report_classes(args, cs, scheme) -> int:
    """``report`` on a K-class table: the one-page HTML report of :mod:`calibdash.report.classes`."""
    from ..report.classes import report_for_class_set

    _refuse_binary_options(args)
    methods = class_methods(args, cs.k)
    text = report_for_class_set(cs, methods, scheme, params=class_params(args, methods), title=args.title,
                                include_plotlyjs="cdn" if args.plotlyjs == "cdn" else True)
    report_written(text, args, f"{cs.name} ({cs.k} classes)")
    return 0


# -- fit --------------------------------------------------------------------------------------------------
def provenance(cs, rows: int) -> dict:
    """The ``fitted_on`` entry of a K-class model: the file, the label column, the classes and their columns
    (and prefix), whether they hold logits, and the rows fitted on; what ``apply`` reads the columns by."""
    out = {"file": cs.name, "label": cs.label_column, "classes": [jsonable(c) for c in cs.classes],
           "columns": [str(c) for c in cs.columns], "prefix": cs.prefix, "logits": bool(cs.logits),
           "rows": int(rows)}
    if cs.info is not None:
        out["sha256"] = cs.info.sha256
    return out


def cmd_fit_classes(args, cs) -> int:
    """``fit`` on a K-class table: one multi-class method fitted on every usable row (or the rows of one
    split value), saved by :func:`calibdash.multiclass.export.dumps`."""
    names = split_names(args.method)
    if len(names) != 1:
        raise SettingsError(f"--method takes one calibrator, got {args.method!r}.")
    method = names[0]
    params = class_params(args, [method])
    cal = multiclass.get(method, **params.get(method, {}))
    cal.set_params(logits=bool(cs.logits))
    rows = split_rows(cs.split, args.split_value, cs.n_rows, cs.name, cs.split_column)
    cal.fit(cs.given[rows], cs.labels[rows])
    text = mexport.dumps(cal, fitted_on=provenance(cs, rows.size))
    where = write_text(text, args.out)
    print(f"Fitted {method} on {rows.size:,} rows of {cs.name} ({_columns_text(cs)}); wrote {where} "
          f"({len(text.encode()):,} bytes).", file=sys.stderr)
    return 0


# -- apply ------------------------------------------------------------------------------------------------
def _model_text(path: str) -> bytes:
    try:
        return Path(path).read_bytes()
    except OSError as exc:
        raise EnvironmentProblem(f"cannot read the model file {path}: {exc.strerror or exc}.") from None


def is_class_model(path: str) -> bool:
    """Whether the model file holds a multi-class calibrator (its ``format`` is
    :data:`calibdash.multiclass.export.FORMAT`); False for anything else, which the binary reader judges."""
    try:
        doc = json.loads(_model_text(path))
    except (ValueError, UnicodeDecodeError, RecursionError):        # the reader says what is wrong
        return False
    return isinstance(doc, dict) and doc.get("format") == mexport.FORMAT


def _class_values(df: pd.DataFrame, columns: list[str], name: str) -> np.ndarray:
    missing = [c for c in columns if c not in df.columns]
    if missing:
        shown = ", ".join(map(repr, missing[:5])) + (f" and {len(missing) - 5} more" if len(missing) > 5 else "")
        raise DataError(f"the model's class column{'s' if len(missing) > 1 else ''} {shown} "
                        f"{'are' if len(missing) > 1 else 'is'} not in {name}; the model was fitted on "
                        f"{', '.join(map(repr, columns))}.")
    return np.column_stack([pd.to_numeric(df[c], errors="coerce").to_numpy(dtype=float, na_value=np.nan)
                            for c in columns])


def cmd_apply_classes(args) -> int:
    """``apply`` of a K-class model: one column ``calibrated_<class>`` per class beside the file's columns
    (rows with a missing class value stay empty), in memory."""
    if args.engine in ("duckdb", "spark"):
        raise SettingsError(f"{ENGINE_REFUSAL}.")
    cal, fitted_on = mexport.read_model(_model_text(args.model))
    columns = [str(c) for c in fitted_on.get("columns") or []]
    if len(columns) != cal.n_classes_:
        raise DataError(f"the model file names {len(columns)} class columns in 'fitted_on' but the model has "
                        f"{cal.n_classes_} classes; save it with `fit`, which writes them.")
    classes = [str(c) for c in fitted_on.get("classes") or columns]
    df, info = read_table(args.file)
    values = _class_values(df, columns, info.name)
    ok = np.isfinite(values).all(axis=1)
    new = [f"calibrated_{c}" for c in classes]
    replaced = [c for c in new if c in df.columns]
    calibrated = np.full(values.shape, np.nan)
    if ok.any():
        calibrated[ok] = cal.predict_proba(values[ok])
    # the frame built at once (a column at a time fragments it: pandas warns past 100 columns); a column
    # replaced keeps its place, the others follow the file's
    columns_out = {c: df[c] for c in df.columns} | {c: calibrated[:, j] for j, c in enumerate(new)}
    out = pd.DataFrame(columns_out, index=df.index)
    where = write_text(csv_text(out, index=False), args.out)
    if replaced:
        print(f"  · its columns {', '.join(map(repr, replaced))} were replaced", file=sys.stderr)
    print(f"Applied {cal.label or fitted_on.get('method', 'the model')} to {int(ok.sum()):,} of {len(df):,} rows "
          f"of {info.name} ({len(columns)} class columns{'; rows with a missing class value are left empty' if not ok.all() else ''}); "
          f"wrote {where}.", file=sys.stderr)
    return 0


def refuse_export_sql(args) -> None:
    """``export-sql`` of a K-class model: refused (a SettingsError saying what to do instead)."""
    raise SettingsError(f"{args.model} holds a K-class calibrator: export-sql writes binary calibrators only "
                        "(one score column in, one out). Apply a K-class model in memory with `python -m "
                        "calibdash apply MODEL.json FILE`, which adds one calibrated_<class> column per class.")
