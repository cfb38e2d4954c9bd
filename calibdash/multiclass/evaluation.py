"""Held-out evaluation of multi-class calibrators: the package's one cross-fit on K-class tables.

:func:`evaluate_classes` divides the rows by their content (:mod:`calibdash.multiclass.split`,
so another row order gives the same result), fits every method on each fitting part through
:func:`calibdash.crossfit.cross_fit` (the same loop as the binary evaluation), and judges the
held-out class probabilities with every measure of :mod:`calibdash.multiclass.metrics`; the
table's first row is the uncalibrated probabilities on the same rows.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable, Mapping, Sequence

import numpy as np
import pandas as pd

from ..crossfit import cross_fit
from ..methods import RAW
from ..scheme import Scheme
from . import get
from .base import MulticlassCalibrator, Scores, as_scores, check_classes
from .split import class_split_plan

__all__ = ["ClassEvaluation", "evaluate_classes", "resolve_classes", "UNCALIBRATED"]

UNCALIBRATED = RAW


def resolve_classes(methods, params: Mapping[str, Mapping] | None = None, *, logits: bool = False
                    ) -> dict[str, MulticlassCalibrator]:
    """Key -> new unfitted multi-class calibrator, from a name, a comma-separated list, a list, or a
    mapping key -> name / {hyperparameters} / calibrator; ``logits`` is set on every one.

    Raises
    ------
    SettingsError
        An unknown method or hyperparameter, or the reserved key ``"uncalibrated"``.
    """
    from ..errors import SettingsError
    from ..methods import split_names
    from sklearn.base import clone
    if isinstance(methods, str):
        methods = split_names(methods)
    items = list(methods.items()) if isinstance(methods, Mapping) else [(str(m), None) for m in methods]
    out: dict[str, MulticlassCalibrator] = {}
    for key, value in items:
        key = str(key).strip()
        if key == RAW:
            raise SettingsError(f"{RAW!r} names the raw probabilities; give the calibrators other keys.")
        if isinstance(value, MulticlassCalibrator):
            cal = clone(value)
        else:
            spec = dict(value) if isinstance(value, Mapping) else {}
            name = str(spec.pop("method", value if isinstance(value, str) else key))
            spec.update((params or {}).get(key, {}))
            cal = get(name, **spec)
        cal.set_params(logits=bool(logits))
        out[key] = cal
    return out


@dataclass
class ClassEvaluation:
    """Held-out class probabilities and measures of several methods under one scheme.

    Attributes
    ----------
    scheme : Scheme
    rows : ndarray
        Indices of the judged rows, ascending.
    labels : ndarray
        Their class indices.
    predictions : dict
        Method key -> (m, K) class probabilities on the judged rows, ``"uncalibrated"`` first.
    metrics : DataFrame
        One row per method, a column per measure (:data:`calibdash.multiclass.metrics.MEASURES`).
    models : dict
        Method key -> calibrator fitted on the fitting part (k-fold: refitted on all rows).
    fit_rows : ndarray
        The rows every model in ``models`` was fitted on, ascending.
    fit_seconds : dict
    classes : list
        The class names, in column order.
    notes : list of str
        How the split departed from the scheme, one fragment each.
    """

    scheme: Scheme
    rows: np.ndarray
    labels: np.ndarray
    predictions: dict
    metrics: pd.DataFrame
    models: dict = field(default_factory=dict)
    fit_rows: np.ndarray = field(default_factory=lambda: np.empty(0, dtype=np.int64))
    fit_seconds: dict = field(default_factory=dict)
    classes: list = field(default_factory=list)
    notes: list = field(default_factory=list)

    @property
    def note(self) -> str:
        return "; ".join(self.notes)


def evaluate_classes(P, labels, methods, scheme: Scheme | None = None, *, logits: bool = False, split=None,
                     classes: Sequence | None = None, params: Mapping[str, Mapping] | None = None,
                     progress: Callable[[float, str], None] | None = None) -> ClassEvaluation:
    """Fit each method on the fitting rows and judge its class probabilities on held-out rows.

    Parameters
    ----------
    P : array-like (n, K) or Scores
        Probabilities (rows summing to 1) or, with ``logits=True``, logits.
    labels : array-like (n,)
        Class indices 0..K-1 (:func:`calibdash.data.build_class_set` maps class names to them).
    methods : method spec
        What :func:`resolve_classes` takes: ``"temperature,dirichlet,ovr:isotonic"``, a list, a mapping.
    scheme : Scheme, default ``Scheme()`` (stratified 70/30 split by content, seed 0)
    split : array-like, optional
        The file's split column, for ``Scheme(kind="column")``.
    classes : sequence, optional
        The class names in column order (default 0..K-1).

    Returns
    -------
    ClassEvaluation
    """
    from . import metrics
    scheme = scheme or Scheme()
    x = as_scores(P, logits)
    y = check_classes(labels, x.n, x.k)
    cals = resolve_classes(methods, params, logits=x.logits)
    pairs, notes = class_split_plan(x.given, y, scheme, split)
    kfold = scheme.kind == "kfold"
    rows = np.sort(np.concatenate([te for _, te in pairs])) if kfold else pairs[0][1]
    fit = cross_fit(cals, x.given, y, None, pairs, refit=kfold, progress=progress)
    preds = {UNCALIBRATED: x.probabilities[rows], **{key: fit.column(key)[rows] for key in cals}}
    y_rows = y[rows]
    table = metrics.measure_table(preds, y_rows)
    fit_rows = np.arange(x.n) if kfold else pairs[0][0]
    return ClassEvaluation(scheme=scheme, rows=rows, labels=y_rows, predictions=preds, metrics=table,
                           models=fit.models, fit_rows=np.sort(fit_rows), fit_seconds=fit.seconds,
                           classes=list(classes) if classes is not None else list(range(x.k)), notes=notes)
