"""Explaining fitted calibrators: the plain data behind the dashboard's "inside the calibrator".

A fitted calibrator (binary, or K-class) holds what ``predict`` needs, never its training rows. An explainer, one
function per method in a module of this package, takes the fitted calibrator and the rows it was fitted on and returns
an :class:`Explanation` (tables, arrays, notes; no figures). It **declares** the calibrator classes it explains with
:func:`explains`; :func:`explain` finds it by the calibrator's class (its nearest declared base). The figures
(:mod:`calibdash.figures.methods`) draw explanations and fit nothing.

>>> ex = explain(calibrators.get("bbq").fit(s, y), s, y)       # doctest: +SKIP
>>> ex.notes, ex.tables, figures.inner_figures(ex)              # doctest: +SKIP
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import ClassVar

import numpy as np
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
        Whether a module of :mod:`calibdash.figures.methods` draws it (False: shown as its notes and tables).
    """

    method: str
    notes: list[str] = field(default_factory=list)
    tables: dict[str, pd.DataFrame] = field(default_factory=dict)
    drawn: ClassVar[bool] = True


def training_rows(calibrator, scores, labels):
    """``(s, y)``: ``scores`` and ``labels`` checked (DataError), and checked against the fitted ``calibrator``
    (NotFittedError; ProgrammingError unless their number is its ``n_train_``, which a model loaded from a file keeps
    too)."""
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
        The rows ``calibrator`` was fitted on (explainers fit again from them and check that they find the
        calibrator's map: ProgrammingError otherwise); for a K-class method the (n, K) probabilities (or logits) and
        the class indices.
    features : DataFrame, optional
        Their features (MBCT; the other methods ignore them).
    **options
        Passed to the method's explainer: ``sample_weight`` (the weights it was fitted with; None: unit weights),
        MBCT's ``judge_scores``, a K-class method's ``held_out`` and ``class_names``, ...

    Returns
    -------
    Explanation
        The explainer's own subclass, or a bare :class:`Explanation` for a binary method that declares none.
    """
    fns = _DECLARED.along(type(calibrator))
    if not fns or not getattr(calibrator, "name", ""):
        raise ProgrammingError(f"{type(calibrator).__name__} is not a calibdash calibrator.")
    return fns[0](calibrator, scores, labels, features, **options)


def not_the_rows(method: str, why: str) -> ProgrammingError:
    """The error of rows that are not the ones ``method`` was fitted on; ``why``: what fitting them again gave."""
    return ProgrammingError(f"the rows given are not the ones {method} was fitted on: {why}; pass the rows (and weights,"
                            " the sample_weight) it was fitted on.")


def check_map(method: str, mine, again, tol: float, why: str, shapes: str) -> None:
    """:func:`not_the_rows` unless the arrays ``again`` (refitted) are ``mine`` to ``tol``, pairwise; ``why`` says how
    they were refitted, ``shapes`` how the two differ when their shapes do."""
    if any(a.shape != b.shape for a, b in zip(mine, again)):
        raise not_the_rows(method, f"{why} ({shapes})")
    gap = max((float(np.max(np.abs(a - b))) for a, b in zip(mine, again) if a.size), default=0.0)
    if not gap <= tol:                               # NaN too
        raise not_the_rows(method, f"{why} (their maps differ by up to {gap:.2e})")
