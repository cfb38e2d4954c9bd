"""Explaining fitted calibrators: the plain data behind the dashboard's "inside the calibrator".

Fitting and explaining are apart, as relplot keeps ``prepare_`` apart from
``plot_`` and scikit-learn keeps ``calibration_curve`` apart from
``CalibrationDisplay``:

* a fitted calibrator (:mod:`calibdash.calibrators`) holds what ``predict``
  needs plus small learned summaries (weights, knots, trees), never its
  training rows;
* an explainer, one module per method named after it
  (``calibdash.explain.mbct`` for ``"mbct"``), takes the fitted calibrator
  and the rows it was fitted on, explicitly, and returns an
  :class:`Explanation`: tables, arrays and notes, no figures. A comparison
  model an explanation needs (MBCT's histogram binning) is fitted there;
* the figures (:mod:`calibdash.figures`, one module per method) draw an
  explanation and fit nothing.

>>> cal = calibrators.get("bbq").fit(s, y)                     # doctest: +SKIP
>>> ex = explain(cal, s, y)                                     # doctest: +SKIP
>>> ex.notes, ex.tables                                         # doctest: +SKIP
>>> figures.inner_figures(ex)                                   # doctest: +SKIP
"""
from __future__ import annotations

import importlib
from dataclasses import dataclass, field

import pandas as pd

from ..errors import NotFittedError, ProgrammingError
from ..validation import check_labels, check_scores

__all__ = ["Explanation", "explain", "training_rows"]


@dataclass
class Explanation:
    """What explaining a fitted calibrator gives; method modules subclass it with their own fields.

    Attributes
    ----------
    method : str
        Registry name of the calibrator explained.
    notes : list of str
        Plain sentences on what was fitted and how (shown under the charts).
    tables : dict of str -> DataFrame
        Named tables of fitted values, shown as they are.
    """

    method: str
    notes: list[str] = field(default_factory=list)
    tables: dict[str, pd.DataFrame] = field(default_factory=dict)


def training_rows(calibrator, scores, labels):
    """``scores`` and ``labels`` checked, and checked against what ``calibrator`` was fitted on.

    Returns
    -------
    (s, y) : float array in [0, 1], int8 array of 0/1

    Raises
    ------
    NotFittedError
        If ``calibrator`` is not fitted.
    DataError
        If the rows are not valid scores and labels.
    ProgrammingError
        If their number is not the number of rows the calibrator was fitted
        on (``n_train_``, which a model loaded from a file keeps too).
    """
    if not hasattr(calibrator, "n_train_"):
        raise NotFittedError(f"{type(calibrator).__name__} is not fitted yet: call fit() before explaining it.")
    s = check_scores(scores)
    y = check_labels(labels, s.size, require_both=False)
    n_train = int(calibrator.n_train_)
    if n_train != s.size:
        raise ProgrammingError(f"{type(calibrator).__name__} was fitted on {n_train:,} rows but is explained on "
                               f"{s.size:,}; pass the rows it was fitted on.")
    return s, y


def explain(calibrator, scores, labels, features=None, **options) -> Explanation:
    """Explain a fitted calibrator on the rows it was fitted on.

    Parameters
    ----------
    calibrator : fitted Calibrator
    scores, labels : array-like
        The rows ``calibrator`` was fitted on (explanations that refit a
        path, such as ELiTE's, reproduce the fit from them).
    features : DataFrame, optional
        Their features (MBCT).
    **options
        Passed to the method's explainer (for example MBCT's ``judge_scores``).

    Returns
    -------
    Explanation
        The method module's own subclass, or a bare :class:`Explanation`
        for a method with nothing inside to show.
    """
    name = getattr(calibrator, "name", "")
    if not name:
        raise ProgrammingError(f"{type(calibrator).__name__} is not a calibdash calibrator.")
    try:
        module = importlib.import_module(f"{__name__}.{name}")
    except ModuleNotFoundError as exc:
        if exc.name != f"{__name__}.{name}":
            raise
        if options:
            raise ProgrammingError(f"{name} has no explainer options; got {sorted(options)}.")
        training_rows(calibrator, scores, labels)
        return Explanation(method=name)
    return module.explain(calibrator, scores, labels, features, **options)
