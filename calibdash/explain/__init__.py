"""Explaining fitted calibrators: the plain data behind the dashboard's "inside the calibrator".

Fitting and explaining are apart, as relplot keeps ``prepare_`` apart from
``plot_`` and scikit-learn keeps ``calibration_curve`` apart from
``CalibrationDisplay``:

* a fitted calibrator (binary, :mod:`calibdash.calibrators`, or K-class,
  :mod:`calibdash.calibrators.multiclass`) holds what ``predict`` needs plus small learned
  summaries (weights, knots, trees), never its training rows;
* an explainer, one function per method in a module of this package, takes the
  fitted calibrator and the rows it was fitted on, explicitly, and returns an
  :class:`Explanation`: tables, arrays and notes, no figures. A comparison
  model an explanation needs (MBCT's histogram binning) is fitted there. The
  explainer **declares** the calibrator classes it explains with
  :func:`explains`; :func:`explain` finds it by the calibrator's class (its
  nearest declared base class), never by the method's name;
* the figures (:mod:`calibdash.figures.methods`) declare the explanation classes
  they draw, and fit nothing.

>>> cal = calibrators.get("bbq").fit(s, y)                     # doctest: +SKIP
>>> ex = explain(cal, s, y)                                     # doctest: +SKIP
>>> ex.notes, ex.tables                                         # doctest: +SKIP
>>> figures.inner_figures(ex)                                   # doctest: +SKIP
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import ClassVar

import pandas as pd

from ..calibrators.base import Calibrator
from ..core.errors import NotFittedError, ProgrammingError
from ..core.scan import Declarations
from ..core.validation import check_labels, check_scores

__all__ = ["Explanation", "explain"]

_DECLARED = Declarations(__name__, "explained")
#: ``@explains(BBQCalibrator)`` over ``def explain(calibrator, scores, labels, features=None, **options)``: the
#: function explains these calibrator classes (and their subclasses that declare no explainer of their own).
explains = _DECLARED.declare
#: Calibrator class -> its explainer, as the modules of this package declare them.
explainers = _DECLARED.found


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
    drawn : bool (class attribute)
        Whether a module of :mod:`calibdash.figures.methods` draws it; False for an explanation shown as its
        notes and tables alone (the method's map is the pages' calibration map).
    """

    method: str
    notes: list[str] = field(default_factory=list)
    tables: dict[str, pd.DataFrame] = field(default_factory=dict)
    drawn: ClassVar[bool] = True


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


@explains(Calibrator)
def _nothing_inside(calibrator, scores, labels, features=None, **options) -> Explanation:
    """A binary method that declares no explainer: the rows checked, nothing more to show."""
    if options:
        raise ProgrammingError(f"{calibrator.name} has no explainer options; got {sorted(options)}.")
    training_rows(calibrator, scores, labels)
    return Explanation(method=calibrator.name)


def explain(calibrator, scores, labels, features=None, **options) -> Explanation:
    """Explain a fitted calibrator, binary or K-class, on the rows it was fitted on.

    Parameters
    ----------
    calibrator : fitted Calibrator or MulticlassCalibrator
    scores, labels : array-like
        The rows ``calibrator`` was fitted on (explanations that refit a
        path, such as ELiTE's, reproduce the fit from them); for a K-class
        method the (n, K) probabilities (or logits) and the class indices.
    features : DataFrame, optional
        Their features (MBCT).
    **options
        Passed to the method's explainer (for example ``sample_weight``,
        MBCT's ``judge_scores``, a K-class method's ``held_out`` and
        ``class_names``).

    Returns
    -------
    Explanation
        The explainer's own subclass, or a bare :class:`Explanation` for a
        binary method that declares none.
    """
    fns = _DECLARED.along(type(calibrator))
    if not fns or not getattr(calibrator, "name", ""):
        raise ProgrammingError(f"{type(calibrator).__name__} is not a calibdash calibrator.")
    return fns[0](calibrator, scores, labels, features, **options)
