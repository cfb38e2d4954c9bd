"""What problem a command's data is: K classes (one probability or logit column per class) when the user names
the class columns (``--probs``/``--logits``), or when neither ``--score`` nor ``--positive`` is given and
:func:`calibdash.data.is_multiclass` finds them (for rows an engine reads, in their first rows); else binary. Only
``evaluate`` runs K-class rows on an engine.
"""
from __future__ import annotations

from dataclasses import dataclass

import pandas as pd

from .. import calibrators
from ..core.errors import SettingsError
from ..core.validation import format_values, sorted_values
from ..data import FileInfo, build_class_set, build_score_set, guess_roles, is_multiclass, read_table
from ..data.roles import label_values, split_prefix
from ..engines.classes import class_source
from ..evaluation.methods import parse_params, split_names
from ..evaluation.scheme import Scheme
from ..measures import class_measures as mmetrics
from ..evaluation.holdout import default_methods
from .engine_jobs import head_rows

__all__ = []

#: Why a K-class file or model is not run by DuckDB or Spark.
ENGINE_REFUSAL = ("only the in-memory engine fits K-class models and applies them (the softmax over K columns is "
                  "not written as SQL here; `evaluate` runs K-class files with --engine duckdb|spark): drop "
                  "--engine, or give --engine memory")


@dataclass
class Opened:
    """A file read once: its table and, when it is a K-class table, the validated :class:`ClassSet`."""

    frame: pd.DataFrame
    info: FileInfo
    classes: object | None = None

    def score_set(self, args):
        """The binary table validated (:func:`calibdash.data.build_score_set`)."""
        return build_score_set(self.frame, score=args.score, label=args.label, positive=args.positive,
                               info=self.info, name=self.info.name)


def _named(args) -> bool:
    return bool(getattr(args, "probs", None) or getattr(args, "logits", None))


def _binary_asked(args) -> bool:
    return getattr(args, "score", None) is not None or getattr(args, "positive", None) is not None


def open_table(args, engine: str | None) -> Opened | None:
    """``args.file`` read, and validated as a K-class table when it is one; None when ``engine`` (DuckDB or
    Spark) reads the rows where they lie. SettingsError: class columns named with ``--score``, or with an engine
    for a command other than ``evaluate``; DataError as :func:`calibdash.data.build_class_set`."""
    if _named(args) and getattr(args, "score", None):
        raise SettingsError("--score names a binary file's score column; --probs and --logits name a K-class "
                            "file's class columns. Give one or the other.")
    if engine:
        if _named(args) and getattr(args, "command", None) != "evaluate":
            raise SettingsError(f"{ENGINE_REFUSAL}.")
        return None
    df, info = read_table(args.file)
    if not _named(args) and (_binary_asked(args) or not is_multiclass(df, args.label)):
        return Opened(df, info)
    cs = build_class_set(df, label=args.label, probs=getattr(args, "probs", None),
                         logits=getattr(args, "logits", None), split=getattr(args, "split", None), info=info,
                         name=info.name)
    return Opened(df, info, cs)


def scheme_of(args) -> Scheme:
    """The evaluation scheme ``--scheme``, ``--test-size``, ``--seed`` and ``--folds`` choose."""
    return Scheme(kind=args.scheme, test_size=args.test_size, seed=args.seed, n_folds=args.folds)


def class_methods(args, k: int) -> tuple[list[str], dict]:
    """The K-class methods asked for (``--methods`` when given, else the defaults for ``k`` classes) and their
    hyperparameters (``--param METHOD.NAME=VALUE``; one for a method not chosen is refused)."""
    given = getattr(args, "methods_given", False)
    methods = split_names(args.methods) if given else default_methods(k)
    if given and not methods:
        raise SettingsError("--methods names no method.")
    params = parse_params(args.param)
    for key in params:
        if key not in methods:
            raise SettingsError(f"hyperparameters are given for {key!r}, which is not among the chosen methods "
                                f"({', '.join(methods)}).")
    return methods, params


def refuse_binary_options(args) -> None:
    """SettingsError for the options of one score column (``--measures``, ``--cells always``) on K classes."""
    if getattr(args, "measures", None) is not None:
        raise SettingsError("--measures adds the binary measures; a K-class file's table already holds every "
                            f"multi-class measure ({', '.join(mmetrics.MEASURE_NAMES)}). Use --boot N for "
                            "intervals.")
    if getattr(args, "cells", "auto") == "always":
        raise SettingsError("--cells always is for binary files (score cells of one score); a K-class file is "
                            "evaluated on its rows.")


def columns_text(cs) -> str:
    """``3 classes (probabilities in p_a, p_b, p_c)``: a K-class table's columns in a few words."""
    what = "logits" if cs.logits else "probabilities"
    cols = cs.columns
    shown = ", ".join(cols) if len(cols) <= 4 else f"{cols[0]}, {cols[1]}, ..., {cols[-1]}"
    return f"{cs.k} classes ({what} in {shown})"


def shared_prefix(columns) -> str | None:
    """The class prefix (p_, prob_, proba_, logit_, as written) every column starts with, else None."""
    first = split_prefix(columns[0])
    return first[0] if first and all(str(c).startswith(first[0]) for c in columns) else None


def _class_only(names) -> list[str]:
    """The names among ``names`` that only a K-class file runs: composites (``ovr:isotonic``) and K-class
    calibrators with no binary namesake (vector, matrix, dirichlet)."""
    binary = calibrators.classes()
    return [n for n in names if n.split(":")[0].strip().lower() in calibrators.composites()
            or (n in calibrators.classes("classes") and n not in binary)]


def refuse_class_methods(methods: str, frame, args, name: str) -> None:
    """SettingsError for K-class methods asked of a file read as binary, saying what the file holds (its label's
    classes, read from ``frame``: the table, its first rows, None, or a function giving one of them, called only
    when such a method is asked) and what they need."""
    asked = _class_only(split_names(methods))
    if not asked:
        return
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


def engine_class_source(args):
    """The K-class source ``args`` names for an engine (a glob, a large file, a DuckDB table or query), or None
    for binary rows (the module's rule, on the first rows)."""
    where = {k: getattr(args, k, None) for k in ("database", "table", "query", "order_by")}
    path = args.file if not (where["table"] or where["query"]) else None
    nothing = where["table"] is None and where["query"] is None and not args.file
    if not _named(args) and (_binary_asked(args) or nothing
                             or not is_multiclass(head_rows(path, args.label, **where), args.label)):
        return None
    return class_source(path, args.label, getattr(args, "probs", None), getattr(args, "logits", None),
                        split=args.split, **where)
