"""The command line's shared output: numbers as the tables and JSON show them, text written to a file or stdout,
the JSON records of ``evaluate`` and bootstrap intervals, and the rows of one split value."""
from __future__ import annotations

import json
import math
import sys
from pathlib import Path

import numpy as np
import pandas as pd

from ..core.errors import DataError, EnvironmentProblem
from ..core.validation import plain_value

__all__ = []


def four_places(v: float) -> str:
    return f"{v:.4f}"


def write_text(text: str, out: str | None) -> str:
    """Write ``text`` to the file ``out``, or to stdout; returns where it went (EnvironmentProblem: unwritable)."""
    if not out:
        sys.stdout.write(text)
        return "stdout"
    try:
        Path(out).write_text(text, encoding="utf-8")
    except OSError as exc:
        raise EnvironmentProblem(f"cannot write {out}: {exc.strerror or exc}.") from None
    return out


def finite_or_none(v):
    """A float for JSON, None where it is NaN or infinite (JSON has no NaN)."""
    v = float(v)
    return v if math.isfinite(v) else None


def jsonable(v):
    """A label value as JSON holds it: a Python scalar (``1.0`` stays ``1.0``), else its text."""
    v = v.item() if hasattr(v, "item") else v
    return v if v is None or isinstance(v, (bool, int, float, str)) else str(v)


def sentence(fragment: str) -> str:
    return fragment[:1].upper() + fragment[1:] + ("" if fragment.endswith(".") else ".")


def class_key(value) -> str:
    """A class's key in JSON objects: the label value as text (``1.0`` -> ``"1"``, ``"cat"``)."""
    return str(plain_value(value))


def source_name(source) -> str:
    """How the JSON names rows an engine reads: one file by its name, as the in-memory path does, else the
    source's description."""
    if source.kind == "files" and len(files := source.files()) == 1:
        return Path(files[0]).name
    return source.describe()


def validation_json(*, rows_read: int, rows_used: int | None = None, dropped: dict | None = None,
                    dropped_examples: dict | None = None, class_counts: dict, mapped: dict, messages) -> dict:
    """The ``validation`` block of ``evaluate --json`` (``mapped``: score column -> the raw range the logistic
    function mapped); rows checked where they live drop none."""
    dropped, dropped_examples = dropped or {}, dropped_examples or {}
    return {"rows_read": int(rows_read), "rows_used": int(rows_read if rows_used is None else rows_used),
            "rows_dropped": int(sum(dropped.values())), "dropped": {reason: int(k) for reason, k in dropped.items()},
            "dropped_examples": {reason: list(ex) for reason, ex in dropped_examples.items()},
            "class_counts": {class_key(c): int(k) for c, k in class_counts.items()},
            "mapped": {col: {"from": float(lo), "to": float(hi)} for col, (lo, hi) in mapped.items()},
            "messages": list(messages)}


def report_validation(rep, class_counts: dict) -> dict:
    """:func:`validation_json` of what loading found (a :class:`calibdash.data.ValidationReport`)."""
    return validation_json(rows_read=rep.n_read, rows_used=rep.n_used, dropped=rep.dropped,
                           dropped_examples=rep.dropped_examples, class_counts=class_counts, mapped=rep.mapped,
                           messages=rep.messages)


def evaluate_json(ev, *, file: str, engine: str, label: str, classes, positive=None, score: str | None = None,
                  class_columns=None, prefix: str | None = None, logits: bool | None = None, rows_judged: int,
                  scheme: str, cells: str | None, binning: str, validation: dict) -> dict:
    """``evaluate --json`` of the evaluation ``ev`` (its notes and metrics): one record whatever the engine, binary
    or K-class (``calibdash/io/schemas/evaluate.json``); the keys of the other kind of file are null."""
    k_class = class_columns is not None
    return {"file": file, "engine": engine, "problem": "multiclass" if k_class else "binary",
            "n_classes": len(classes), "label": label, "classes": [jsonable(c) for c in classes],
            "positive": None if k_class else jsonable(positive), "score": score,
            "class_columns": list(class_columns) if k_class else None, "prefix": prefix,
            "logits": bool(logits) if k_class else None, "rows_judged": int(rows_judged), "scheme": scheme,
            "cells": cells, "notes": list(ev.notes), "binning": binning, "validation": validation,
            "metrics": {k: {m: finite_or_none(v) for m, v in row.items()} for k, row in ev.metrics.iterrows()}}


def _finite(v):
    """``v`` with every NaN or infinite float inside it (dicts, lists) replaced by None."""
    if isinstance(v, float):
        return v if math.isfinite(v) else None
    if isinstance(v, dict):
        return {k: _finite(x) for k, x in v.items()}
    if isinstance(v, (list, tuple)):
        return [_finite(x) for x in v]
    return v


def print_json(out: dict) -> None:
    """Print a command's ``--json`` record on stdout: strict JSON (a value that is not finite as null), indented."""
    json.dump(_finite(out), sys.stdout, indent=2, allow_nan=False)
    print()


def intervals_json(boot) -> dict:
    """A bootstrap result as JSON: level, resamples, note, and method -> measure -> value, low, high."""
    t = boot.table
    names = list(dict.fromkeys(t.columns.get_level_values(0)))
    return {"level": boot.level, "resamples": boot.n_boot, "note": boot.note,
            "values": {m: {name: {stat: finite_or_none(t.loc[m, (name, stat)]) for stat in ("value", "low", "high")}
                           for name in names} for m in t.index}}


def print_intervals(boot, heading: str, best) -> None:
    """A bootstrap result as a table on stdout: one row per measure (``best(name)``: which value is best), one
    column per method, each cell ``value [low, high]``; then the result's note."""
    t = boot.table
    names = list(dict.fromkeys(t.columns.get_level_values(0)))

    def cell(m, name):
        v, lo, hi = (t.loc[m, (name, s)] for s in ("value", "low", "high"))
        return "n/a" if not np.isfinite(v) else f"{v:.4f} [{lo:.4f}, {hi:.4f}]"

    frame = pd.DataFrame({"best": [best(name) for name in names],
                          **{m: [cell(m, name) for name in names] for m in t.index}}, index=names)
    frame.index.name = "measure"
    print(f"\n{heading}: value [{round(100 * boot.level)}% paired interval]")
    print(frame.to_string())
    print(boot.note)


def report_written(text: str, args, name: str) -> None:
    """Write a report's HTML to ``args.out`` (``-``: stdout) and say on stderr where it went and how large it is."""
    where = write_text(text, None if args.out == "-" else args.out)
    if where != "stdout":
        print(f"Wrote the report of {name} to {where} ({len(text.encode()) / 1e6:.1f} MB"
              + ("; its charts load plotly.js from the CDN" if args.plotlyjs == "cdn" else "; it opens offline")
              + ").", file=sys.stderr)


def split_rows(split, value: str | None, n: int, name: str, column: str | None) -> np.ndarray:
    """The rows ``fit --split-value`` fits on: all ``n`` when ``value`` is None, else those whose split column
    (``split``, text per row, or None) holds ``value`` (DataError: no split column, or no such row)."""
    if value is None:
        return np.arange(n)
    if split is None:
        raise DataError(f"--split-value needs a split column in {name}; none was found.")
    rows = np.flatnonzero(split == value)
    if rows.size == 0:
        raise DataError(f"no row of {name} has {value!r} in split column {column!r} "
                        f"(values: {', '.join(sorted(set(split)))}).")
    return rows
