"""Held-out evaluation of multi-class calibrators: the package's one cross-fit on K-class tables.

:func:`evaluate_classes` divides the rows by their content (:mod:`calibdash.multiclass.split`,
so another row order gives the same result), fits every method on each fitting part through
:func:`calibdash.crossfit.cross_fit` (the same loop as the binary evaluation), and judges the
held-out class probabilities with every measure of :mod:`calibdash.multiclass.metrics`; the
table's first row is the uncalibrated probabilities on the same rows.

Large data: the parametric maps (methods whose class says ``parametric``: the scaling family,
temperature, vector, matrix and Dirichlet scaling, each a few to K(K+1) parameters) are fitted
on a sample of at most ``max_fit_rows`` (default :data:`MAX_FIT_ROWS`) of a fitting part's rows,
stratified by class and chosen by the rows' content
(:func:`calibdash.multiclass.split.content_sample`, so the row order still changes nothing);
the other methods (one-vs-rest and top-label binary calibrators, whose maps grow with the data)
are fitted on every fitting row, and every method is judged on every held-out row. The
evaluation's ``notes`` say when a sample was used. A map of at most K(K+1) parameters fitted on
200,000 rows has about 20 rows per parameter at K = 100 (matrix and Dirichlet scaling's 10,100)
and over 450 for K <= 20; temperature and vector scaling have 1 and 2K.
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
from ..jobs import stop_if
from .split import class_split_plan, content_sample

__all__ = ["ClassEvaluation", "evaluate_classes", "resolve_classes", "model_rows", "UNCALIBRATED", "MAX_FIT_ROWS",
           "DEFAULT_METHODS", "FULL_MAP_MAX_K", "default_methods", "fit_notes"]

UNCALIBRATED = RAW
#: The methods the command line's ``evaluate`` and ``report`` fit on a K-class file unless told otherwise:
#: the scaling family's one-, K- and K(K+1)-parameter maps and one-vs-rest isotonic regression.
DEFAULT_METHODS = ("temperature", "vector", "dirichlet", "ovr:isotonic")
#: Above this many classes :func:`default_methods` leaves out the maps with a full K x K matrix (matrix scaling,
#: Dirichlet calibration: their penalty search fits K^2 + K parameters 31 times, minutes at K = 100 on two
#: cores); chosen by name they still run.
FULL_MAP_MAX_K = 20


def default_methods(k: int) -> list[str]:
    """:data:`DEFAULT_METHODS` for a table of ``k`` classes: without the full-matrix maps above
    :data:`FULL_MAP_MAX_K` classes (a method says it is one by its ``matrix = "full"``)."""
    from . import get_class
    if int(k) <= FULL_MAP_MAX_K:
        return list(DEFAULT_METHODS)
    return [m for m in DEFAULT_METHODS if getattr(get_class(m), "matrix", None) != "full"]
#: Above this many fitting rows, the parametric maps are fitted on a content-keyed sample of this many.
MAX_FIT_ROWS = 200_000


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
        The rows every model in ``models`` was fitted on, ascending (the parametric ones on a sample of
        them when ``notes`` says so).
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


def _fits(cals: dict, x: Scores, y: np.ndarray, pairs: list, kfold: bool, max_fit_rows: int | None, seed: int,
          progress, should_stop=None) -> tuple[dict, dict, dict, list[str]]:
    """Each method's predictions (one value per row, NaN where not judged), model and seconds, through
    :func:`cross_fit`; the parametric methods on a sample of each fitting part above ``max_fit_rows``."""
    if max_fit_rows is not None and (int(max_fit_rows) != max_fit_rows or max_fit_rows < 1):
        from ..errors import SettingsError
        raise SettingsError(f"max_fit_rows must be a whole number of at least 1 (or None), got {max_fit_rows!r}.")
    sampled = [k for k, c in cals.items() if c.parametric]
    largest = max([x.n if kfold else 0] + [tr.size for tr, _ in pairs])
    if max_fit_rows is None or not sampled or largest <= max_fit_rows:
        groups = [(cals, pairs, kfold, None)]
        notes = []
    else:
        m = int(max_fit_rows)
        rest = {k: c for k, c in cals.items() if k not in sampled}
        refit = content_sample(x.given, y, np.arange(x.n), m, seed) if kfold else None
        groups = [(rest, pairs, kfold, None),
                  ({k: cals[k] for k in sampled}, [(content_sample(x.given, y, tr, m, seed), te) for tr, te in pairs],
                   False, refit)]
        labels = ", ".join(type(cals[k]).label or k for k in sampled)
        sizes = sorted({tr.size for tr, _ in pairs if tr.size > m})
        notes = [f"{labels} fitted on a sample of {m:,} of the {', '.join(f'{n:,}' for n in sizes)} fitting rows "
                 f"(stratified by class, chosen by the rows' content with seed {seed}); every method is judged "
                 "on every held-out row"]
    columns, models, seconds = {}, {}, {}
    done = 0
    for group, group_pairs, refit, refit_rows in groups:
        if not group:
            continue
        share, start = len(group) / len(cals), done / len(cals)
        step = None if progress is None else (lambda f, msg, s=start, w=share: progress(s + w * f, msg))
        fit = cross_fit(group, x.given, y, None, group_pairs, refit=refit, progress=step, should_stop=should_stop)
        columns.update((k, fit.column(k)) for k in group)
        models.update(fit.models)
        seconds.update(fit.seconds)
        if refit_rows is not None:              # k-fold's deployed model: fitted on a sample of all rows
            again = cross_fit(group, x.given[refit_rows], y[refit_rows], None, (), refit=True,
                              should_stop=should_stop)
            models.update(again.models)
            seconds.update((k, seconds[k] + again.seconds[k]) for k in group)
        done += len(group)
    return ({k: columns[k] for k in cals}, {k: models[k] for k in cals}, {k: seconds[k] for k in cals}, notes)


def evaluate_classes(P, labels, methods, scheme: Scheme | None = None, *, logits: bool = False, split=None,
                     classes: Sequence | None = None, params: Mapping[str, Mapping] | None = None,
                     progress: Callable[[float, str], None] | None = None,
                     max_fit_rows: int | None = MAX_FIT_ROWS,
                     should_stop: Callable[[], bool] | None = None) -> ClassEvaluation:
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
    params : mapping key -> {hyperparameter: value}, optional
    progress : callable(fraction, message), optional
    max_fit_rows : int or None, default :data:`MAX_FIT_ROWS`
        Fit the parametric methods (``parametric`` classes: the scaling family) on a content-keyed,
        class-stratified sample of this many rows of a larger fitting part (k-fold: the deployed model
        too, on a sample of all rows), with a note; None fits every method on every fitting row.
    should_stop : callable() -> bool, optional
        Asked before every fit (each method, fold and refit) and before the measures: True stops the
        evaluation with :class:`calibdash.jobs.Cancelled`. Python cannot stop a thread from outside, so this
        is how the dashboard's Cancel and a closed tab stop a fit running in a job
        (:mod:`calibdash.multiclass.budget` bounds the work of the one fit that runs on until its end).

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
    columns, models, seconds, sampled = _fits(cals, x, y, pairs, kfold, max_fit_rows, scheme.seed, progress,
                                              should_stop)
    stop_if(should_stop, "the evaluation")
    preds = {UNCALIBRATED: x.probabilities[rows], **{key: columns[key][rows] for key in cals}}
    y_rows = y[rows]
    table = metrics.measure_table(preds, y_rows)
    fit_rows = np.arange(x.n) if kfold else pairs[0][0]
    return ClassEvaluation(scheme=scheme, rows=rows, labels=y_rows, predictions=preds, metrics=table,
                           models=models, fit_rows=np.sort(fit_rows), fit_seconds=seconds,
                           classes=list(classes) if classes is not None else list(range(x.k)),
                           notes=notes + sampled)


def model_rows(ev: ClassEvaluation, method: str, P, labels, max_fit_rows: int | None = MAX_FIT_ROWS) -> np.ndarray:
    """The rows ``method``'s deployed model in ``ev`` was fitted on (indices into ``P``, ascending).

    ``ev.fit_rows``, or, for a parametric method whose fitting part was larger than ``max_fit_rows`` (the
    value given to :func:`evaluate_classes`), the content-keyed sample :func:`evaluate_classes` fitted it on
    (k-fold: the sample of all rows its deployed model was fitted on). Looking inside the model on these rows
    (:func:`calibdash.explain.explain`) shows the objective it minimised.
    """
    rows = ev.fit_rows
    if max_fit_rows is None or not ev.models[method].parametric or rows.size <= int(max_fit_rows):
        return rows
    x = as_scores(P, False) if not isinstance(P, Scores) else P
    return content_sample(x.given, check_classes(labels, x.n, x.k), rows, int(max_fit_rows), ev.scheme.seed)


def fit_notes(models: dict) -> list[str]:
    """What each fitted method says of its own fit, for a user, each sentence prefixed by the method's key:
    the composites' ``notes_`` (a class given probability 0, a class absent from the labels), the scaling
    family's ``penalty_note_`` (the search fell back to the given strengths) and a fit that ended on a cap
    (``converged_`` False). The same things the fits warn about, for pages that run fits where no warning
    reaches the user."""
    out = []
    for key, model in models.items():
        out += [f"{key}: {note}" for note in getattr(model, "notes_", None) or []]
        if getattr(model, "penalty_note_", None):
            out.append(f"{key}: {model.penalty_note_}")
        if getattr(model, "converged_", True) is False:
            out.append(f"{key}: the solver stopped on its cap before its stopping rule was met "
                       f"({getattr(model, 'n_iter_', '?')} iterations); the map is the last iterate.")
    return out
