"""What the report says in words: method names, the measures table, the Data section's lines.

Part of :mod:`calibdash.report`: :func:`default_labels` (a method's display
name), :func:`measure_table` (:func:`calibdash.measures.table` of the judged
rows, a failing measure left NaN), :func:`describe_source` (what a ScoreSet
holds) and the Data section's lines on the judged rows and the intervals.
"""
from __future__ import annotations

from typing import Mapping, Sequence

import numpy as np
import pandas as pd

from .. import calibrators, measures
from ..evaluation.bootstrap import BootstrapResult
from ..core.errors import DataError, SettingsError
from ..evaluation.holdout import UNCALIBRATED, Evaluation

__all__ = []


def default_labels(keys, models: Mapping | None = None) -> dict[str, str]:
    """Key -> display name: "Uncalibrated" for the raw scores, the calibrator's label, else the key."""
    models = models or {}
    out = {}
    for key in keys:
        if key == UNCALIBRATED:
            out[key] = "Uncalibrated"
            continue
        label = getattr(models.get(key), "label", "")
        if not label:
            try:
                label = calibrators.get_class(key).label
            except SettingsError:
                label = ""
        out[key] = label or str(key)
    return out


def measure_table(ev: Evaluation, names: Sequence[str] | None = None) -> tuple[pd.DataFrame, list[str]]:
    """:func:`calibdash.measures.table` of ``ev``'s judged rows, a failing measure left NaN.

    A measure that cannot be computed on one method's predictions (ICI's
    loess has no width where most predictions tie, as after histogram
    binning on few rows) raises :class:`~calibdash.core.errors.DataError` from
    :func:`calibdash.measures.compute`; that method's measures are then
    computed one by one and the failing ones are NaN, so the rest of the
    table is still shown.

    Returns
    -------
    (DataFrame, list of str)
        One row per method, one column per measure; and one note per
        method whose measures failed, saying which and why.
    """
    names = measures.check_names(names)
    labels = default_labels(ev.predictions.columns, ev.models)
    rows, notes = {}, []
    for key in ev.predictions.columns:
        p = ev.predictions[key].to_numpy()
        try:
            rows[key] = measures.compute(p, ev.labels, ev.weights, names)
            continue
        except DataError:
            pass
        values, failed, why = {}, [], ""
        for name in names:
            try:
                values[name] = measures.compute(p, ev.labels, ev.weights, [name])[name]
            except DataError as exc:
                values[name], why = np.nan, why or str(exc)
                failed.append(name)
        rows[key] = values
        notes.append(f"{', '.join(failed)} of {labels[key]} could not be computed: {why}")
    return pd.DataFrame(rows).T.reindex(columns=list(names)), notes


def describe_source(ss) -> str:
    """One line saying what a :class:`~calibdash.data.ScoreSet` holds: file, columns, rows, positives."""
    pos = int(np.asarray(ss.labels).sum())
    read = ss.report.n_read
    rows = f"{ss.n_rows:,} usable rows" + (f" of {read:,} read" if read != ss.n_rows else "")
    mapped = " (mapped to [0, 1] by the logistic function)" if ss.score in ss.report.mapped else ""
    parts = [ss.name, f"score column {ss.score!r}{mapped}",
             f"label column {ss.label_column!r} (positive class: {ss.positive_label!r})",
             f"{rows}, {pos:,} positives ({100 * pos / max(ss.n_rows, 1):.1f}%)"]
    if ss.split_column:
        parts.append(f"split column {ss.split_column!r}")
    if ss.feature_columns:
        parts.append(f"feature columns {', '.join(map(repr, ss.feature_columns))}")
    return " · ".join(parts)


def judged_text(ev: Evaluation) -> str:
    w = np.ones(ev.labels.size) if ev.weights is None else ev.weights
    pos = float(np.sum(w * ev.labels))
    n = ev.n_judged
    return f"{n:,} held-out rows, {int(round(pos)):,} positives ({100 * pos / max(float(w.sum()), 1e-300):.1f}%)"


def intervals_text(boot: BootstrapResult, ev: Evaluation) -> str:
    level = int(round(100 * boot.level))
    if ev.weights is None:
        text = f"{level}% paired bootstrap percentile intervals, {boot.n_boot} resamples of the held-out rows"
    else:
        text = (f"{level}% paired bootstrap percentile intervals, {boot.n_boot} Poisson resamples of the "
                f"{ev.n_judged:,} held-out rows, drawn per score cell")
    return text + (f". {boot.note}" if boot.note else "")


def describe_class_source(cs) -> str:
    """One line saying what a :class:`calibdash.data.ClassSet` holds: file, class columns, label, rows."""
    what = "logits" if cs.logits else "probabilities"
    read = cs.report.n_read
    rows = f"{cs.n_rows:,} usable rows" + (f" of {read:,} read" if read != cs.n_rows else "")
    cols = cs.columns if len(cs.columns) <= 6 else [*cs.columns[:3], "...", cs.columns[-1]]
    parts = [cs.name, f"{cs.k} classes, {what} in {', '.join(map(str, cols))}", f"label column {cs.label_column!r}",
             rows]
    if cs.split_column:
        parts.append(f"split column {cs.split_column!r}")
    return " · ".join(parts)
