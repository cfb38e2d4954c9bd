"""Held-out evaluation of calibrators, for any number of classes: one :func:`evaluate`.

A calibrator is judged on rows it was not fitted on (unless the user asks): the
:class:`~calibdash.evaluation.scheme.Scheme`'s parts are dealt by the rows' content, every method is fitted on each
fitting part (:func:`~calibdash.evaluation.crossfit.cross_fit`) and judged with every measure of the problem's kind,
the uncalibrated values first; :func:`evaluate_cells` does the same on binary score cells. Large K-class data: the
``parametric`` maps (1 to K(K+1) parameters) are fitted on a class-stratified content sample of ``max_fit_rows``
(:data:`MAX_FIT_ROWS`, about 20 rows per parameter at K = 100 for the full maps) of a fitting part, with a note;
the others on every row; every method is judged on every held-out row.
"""
from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import Callable, Mapping, Sequence

import numpy as np
import pandas as pd

from ..measures import calibration as metrics
from .cells import aggregate
from ..calibrators.base import Calibrator
from .crossfit import (CELLS_CHOICES, CELLS_MIN_ROWS, choose_path, cross_fit, resolve_classes,  # noqa: F401
                       use_cells_for)
from ..core.errors import DataError, SettingsError
from ..core.jobs import stop_if
from .methods import RAW, resolve
from ..calibrators import get_class
from ..measures import class_measures as class_metrics
from ..calibrators.multiclass.base import Scores, as_scores
from .scheme import (KINDS, Scheme, cell_parts, content_order, content_sample, part_plan, refuse_too_few, rows_text,
                     split_plan)
from ..core.validation import check_classes, check_labels, check_scores

#: With the scheme's and the cross-fit's names that callers take from here.
__all__ = [
    "Evaluation", "ClassEvaluation", "evaluate", "evaluate_classes", "evaluate_score_set", "evaluate_cells",
    "combine", "split_indices", "model_rows", "fit_notes", "default_methods", "UNCALIBRATED", "MAX_FIT_ROWS",
    "DEFAULT_METHODS", "FULL_MAP_MAX_K", "CELLS_CHOICES", "use_cells_for", "KINDS", "CELLS_MIN_ROWS", "Scheme",
    "cell_parts", "resolve_classes"
]

UNCALIBRATED = RAW
#: Above this many fitting rows, the K-class parametric maps are fitted on a content-keyed sample of this many.
MAX_FIT_ROWS = 200_000
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
    if int(k) <= FULL_MAP_MAX_K:
        return list(DEFAULT_METHODS)
    return [m for m in DEFAULT_METHODS if getattr(get_class(m, "classes"), "matrix", None) != "full"]


def split_indices(labels, scheme: Scheme, split=None, *, scores=None) -> list[tuple[np.ndarray, np.ndarray]]:
    """(fit rows, judged rows) index pairs of binary rows for ``scheme`` (:func:`~.scheme.split_plan`; with ``scores``,
    dealt over the rows' content order as :func:`evaluate` deals them). DataError as ``split_plan``."""
    order = None if scores is None else content_order(scores, labels)
    return split_plan(labels, scheme, split, order=order)[0]


@dataclass
class Evaluation:
    """Held-out predictions and measures of several methods under one scheme, for any number of classes.

    Attributes
    ----------
    rows, labels : ndarray
        Indices (into the input arrays, ascending) of the judged rows, and their 0/1 labels or class indices.
    predictions : DataFrame or dict
        ``"uncalibrated"`` first. Binary: one column per method, one row per judged row. K classes: method key
        -> (m, K) class probabilities on the judged rows.
    metrics : DataFrame
        One row per method (``"uncalibrated"`` first), a column per measure.
    models, fit_seconds, fit_rows
        Method key -> calibrator fitted on the fitting part (k-fold: on all rows, the deployable model), and ->
        seconds spent; the rows they were fitted on (K-class parametric maps: maybe a sample, :func:`model_rows`).
    binning : str
        Binary: how ECE and MCE were binned; K classes: "".
    weights, fit_sample
        On score cells (:func:`evaluate_cells`) the judged "rows" are the cells' weighted rows, and ``weights`` their
        weights, to pass as ``sample_weight`` everywhere (None on rows); ``fit_sample`` the weighted rows fitted on.
    note, notes
        How the split (and the sampling) departed from the scheme and why, one fragment each (``notes``), and joined
        by "; " (``note``; on score cells, after what the cells summarise).
    classes : list
        K classes: the class names, in column order; binary: empty.
    """

    scheme: Scheme
    rows: np.ndarray
    labels: np.ndarray
    predictions: pd.DataFrame | dict
    metrics: pd.DataFrame
    models: dict = field(default_factory=dict)
    fit_rows: np.ndarray = field(default_factory=lambda: np.empty(0, dtype=np.int64))
    fit_seconds: dict = field(default_factory=dict)
    binning: str = ""
    weights: np.ndarray | None = None
    fit_sample: tuple | None = None
    note: str = ""
    notes: list = field(default_factory=list)
    classes: list = field(default_factory=list)

    def __post_init__(self):
        if not self.note and self.notes:
            self.note = "; ".join(self.notes)

    @property
    def n_judged(self) -> int:
        """How many rows were judged (the weights' total on score cells)."""
        return int(self.rows.size if self.weights is None else round(float(self.weights.sum())))


#: The K-class spelling of :class:`Evaluation` (one type for any K).
ClassEvaluation = Evaluation


def _fits(cals: dict, given: np.ndarray, y: np.ndarray, pairs: list, kfold: bool, max_fit_rows: int | None,
          seed: int, features, progress, should_stop) -> tuple[dict, dict, dict, list[str]]:
    """Each method's predictions (NaN where not judged), model and seconds through :func:`cross_fit`; the
    ``parametric`` methods on a content sample above ``max_fit_rows`` (k-fold's deployed model too), with a note."""
    if max_fit_rows is not None and (int(max_fit_rows) != max_fit_rows or max_fit_rows < 1):
        raise SettingsError(f"max_fit_rows must be a whole number of at least 1 (or None), got {max_fit_rows!r}.")
    sampled = [k for k, c in cals.items() if getattr(c, "parametric", False)]
    largest = max([y.size if kfold else 0] + [tr.size for tr, _ in pairs])
    groups = [(cals, pairs, kfold, None)]
    notes = []
    if max_fit_rows is not None and sampled and largest > max_fit_rows:
        m = int(max_fit_rows)
        refit = content_sample(given, y, np.arange(y.size), m, seed) if kfold else None
        groups = [({k: c for k, c in cals.items() if k not in sampled}, pairs, kfold, None),
                  ({k: cals[k] for k in sampled}, [(content_sample(given, y, tr, m, seed), te) for tr, te in pairs],
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
        step = None if progress is None or len(groups) == 1 else (
            lambda f, msg, s=start, w=share: progress(s + w * f, msg))
        fit = cross_fit(group, given, y, None, group_pairs, features, refit=refit, progress=step or progress,
                        should_stop=should_stop)
        columns.update((k, fit.column(k)) for k in group)
        models.update(fit.models)
        seconds.update(fit.seconds)
        if refit_rows is not None:              # k-fold's deployed model: fitted on a sample of all rows
            again = cross_fit(group, given[refit_rows], y[refit_rows], None, (), refit=True, should_stop=should_stop)
            models.update(again.models)
            seconds.update((k, seconds[k] + again.seconds[k]) for k in group)
        done += len(group)
    return ({k: columns[k] for k in cals}, {k: models[k] for k in cals}, {k: seconds[k] for k in cals}, notes)


def evaluate(scores, labels, methods: Mapping[str, Calibrator] | Sequence[str] | str,
             scheme: Scheme | None = None, *, features: pd.DataFrame | None = None,
             split=None, n_bins: int = metrics.DEFAULT_N_BINS, strategy: str = metrics.DEFAULT_STRATEGY,
             progress: Callable[[float, str], None] | None = None, pos_label=None, logits: bool = False,
             classes: Sequence | None = None, params: Mapping[str, Mapping] | None = None,
             max_fit_rows: int | None = MAX_FIT_ROWS, should_stop: Callable[[], bool] | None = None) -> Evaluation:
    """Fit each method on the fitting rows and judge it on held-out rows, for any number of classes.

    Parameters
    ----------
    scores : array-like (n,), or (n, K), or Scores
        Binary: scores in [0, 1]. K classes: probabilities (rows summing to 1) or, with ``logits=True``, logits.
    labels : array-like (n,)
        Binary: any two values (the Evaluation's ``labels`` are 0/1; ``pos_label`` the positive one, default
        :func:`calibdash.core.validation.choose_positive`'s). K classes: indices 0..K-1 (``classes`` their names).
    methods, params
        Binary: what :func:`calibdash.evaluation.methods.resolve` takes; K classes: what :func:`resolve_classes`
        takes. Each calibrator is cloned per fold, so the objects passed are not fitted.
    scheme, split
        Default ``Scheme()`` (stratified 70/30 split by content, seed 0); the file's split column for ``"column"``.
    features : DataFrame, optional
        Passed to calibrators that use features (MBCT).
    n_bins, strategy
        Binary: binning of ECE and MCE (default 10 equal-count bins). K classes use the measures' own settings.
    max_fit_rows : int or None, default :data:`MAX_FIT_ROWS`
        Fit the ``parametric`` methods on a sample of this many rows of a larger fitting part (None: every row).
    progress, should_stop
        Called after each fitted fold; asked before every fit and the measures, True stopping with
        :class:`calibdash.core.jobs.Cancelled` (the dashboard's Cancel; :mod:`~calibdash.evaluation.class_budget`
        bounds the running fit).
    """
    scheme = scheme or Scheme()
    many = isinstance(scores, Scores) or np.ndim(scores) == 2
    if many:
        x = as_scores(scores, logits)
        y = check_classes(labels, x.n, x.k)
        cals = resolve_classes(methods, params, logits=x.logits)
        given, raw = x.given, x.probabilities
        pairs, notes = split_plan(y, scheme, split, values=given)
    else:
        given = raw = check_scores(scores)
        y = check_labels(labels, given.size, pos_label=pos_label)
        cals = resolve(methods, params)
        pairs, notes = split_plan(y, scheme, split, order=content_order(given, y))
    kfold = scheme.kind == "kfold"
    rows = np.sort(np.concatenate([te for _, te in pairs])) if kfold else pairs[0][1]
    columns, models, seconds, sampled = _fits(cals, given, y, pairs, kfold, max_fit_rows, scheme.seed, features,
                                              progress, should_stop)
    stop_if(should_stop, "the evaluation")
    preds = {UNCALIBRATED: raw[rows], **{key: columns[key][rows] for key in cals}}
    y_rows = y[rows]
    fit_rows = np.sort(np.arange(y.size) if kfold else pairs[0][0])
    common = dict(scheme=scheme, rows=rows, labels=y_rows, models=models, fit_rows=fit_rows, fit_seconds=seconds)
    if many:
        return Evaluation(predictions=preds, metrics=class_metrics.measure_table(preds, y_rows), notes=notes + sampled,
                          classes=list(classes) if classes is not None else list(range(x.k)), **common)
    return Evaluation(predictions=pd.DataFrame(preds, index=rows), binning=metrics.binning_label(n_bins, strategy),
                      metrics=_binary_table(preds, y_rows, n_bins=n_bins, strategy=strategy), notes=notes, **common)


#: The K-class spelling of :func:`evaluate` (one evaluation for any K: give it (n, K) values).
evaluate_classes = evaluate


def _binary_table(preds: Mapping[str, np.ndarray], y: np.ndarray, **how) -> pd.DataFrame:
    """The binary metrics table: one row per method, :data:`calibdash.metrics.METRIC_NAMES` as columns."""
    table = pd.DataFrame({key: metrics.summary(p, y, **how) for key, p in preds.items()}).T[list(metrics.METRIC_NAMES)]
    table.index.name = "method"
    return table


def combine(parts: Sequence[Evaluation]) -> Evaluation:
    """Merge evaluations of different methods made under the same scheme on the same rows (each fitted and
    cached on its own), the uncalibrated row once, first. DataError if they differ in rows, scheme or binning."""
    if not parts:
        raise DataError("nothing to combine.")
    first = parts[0]
    preds = {UNCALIBRATED: first.predictions[UNCALIBRATED]}
    tables = [first.metrics.loc[[UNCALIBRATED]]]
    models, seconds = {}, {}
    for part in parts:
        same_weights = (part.weights is None) == (first.weights is None) and (
            part.weights is None or np.array_equal(part.weights, first.weights))
        if (part.scheme != first.scheme or not np.array_equal(part.rows, first.rows)
                or part.binning != first.binning or not same_weights):
            raise DataError("evaluations made on different rows, schemes or binnings cannot be combined.")
        cols = [c for c in part.predictions if c != UNCALIBRATED]
        preds.update((c, part.predictions[c]) for c in cols)
        tables.append(part.metrics.loc[cols])
        models.update(part.models)
        seconds.update(part.fit_seconds)
    if isinstance(first.predictions, pd.DataFrame):
        preds = pd.DataFrame(preds, index=first.predictions.index)
    return replace(first, predictions=preds, metrics=pd.concat(tables), models=models, fit_seconds=seconds,
                   notes=list(first.notes), classes=list(first.classes))


def _check_cell_folds(all_cells, folds, scheme: Scheme) -> list[str]:
    """Refuse folds of score cells that cannot fit (a class missing) as :func:`split_plan` refuses rows, saying
    why; return notes on judged parts that hold one class."""
    n_all = int(all_cells.n.sum())
    n_pos = int(all_cells.n_pos.sum())
    which, small = ("positive", n_pos) if n_pos <= n_all - n_pos else ("negative", n_all - n_pos)
    if small == 0:
        raise DataError(f"the {n_all:,} rows hold one class only (no {which} row); calibration needs both.")
    if scheme.kind != "insample":
        refuse_too_few(which, small, n_all, {"kfold": f"{scheme.n_folds}-fold cross-fitting"}.get(
            scheme.kind, "a held-out split"))
    how = ("the split column marks none of them for fitting" if scheme.kind == "column" else
           "the rows' parts, drawn from a hash of their position (not stratified by class), put none of them there")
    fewer = ", fewer folds" if scheme.kind == "kfold" else ""
    fix = "" if scheme.kind == "column" else f" Choose another seed{fewer} or the in-sample scheme."
    blind = 0
    for i, (fit, test) in enumerate(folds):
        if not test.any():
            raise DataError("the held-out part is empty.")
        fit_pos, fit_n = int(all_cells.n_pos[fit].sum()), int(all_cells.n[fit].sum())
        if fit_pos == 0 or fit_pos == fit_n:
            where = f" of fold {i + 1} of {len(folds)}" if scheme.kind == "kfold" else ""
            raise DataError(f"the fitting part{where} ({rows_text(fit_n)}) holds one class only; calibrators need "
                            f"both: the {which} class has {rows_text(small)} among {n_all:,}, and {how}.{fix}")
        j_pos, j_n = int(all_cells.n_pos[test].sum()), int(all_cells.n[test].sum())
        blind += int(j_pos == 0 or j_pos == j_n)
    if blind and scheme.kind == "kfold":
        return [f"{rows_text(blind, 'fold')} of {len(folds)} judge rows of one class only (the {which} class has "
                f"{rows_text(small)} among {n_all:,}), and every row is still judged once"]
    if blind and scheme.kind in ("split", "column"):
        return ["the held-out rows hold one class only: AUC is undefined (NaN) there, and calibration is judged "
                "on one class"]
    return []


def evaluate_cells(all_cells, methods, scheme: Scheme | None = None, *, n_bins: int = metrics.DEFAULT_N_BINS,
                   strategy: str = metrics.DEFAULT_STRATEGY, mvce_views: int = 100,
                   progress: Callable[[float, str], None] | None = None) -> Evaluation:
    """Fit each method on the fitting cells and judge it on the held-out cells: :func:`evaluate`'s protocol on
    :class:`~calibdash.evaluation.cells.ScoreCells` whose ``part`` :func:`cell_parts` set for ``scheme``.

    Calibrators are fitted on the cells' weighted rows (the rows' fit when cells are exact; MBCT on the score
    alone); the metrics are weighted metrics of the judged cells, exact but for MVCE (above ``CELLS_MIN_ROWS``
    judged rows its views are drawn with the moments of a random partition, :func:`calibdash.metrics.mvce`).
    The Evaluation's judged "rows" are the judged cells' weighted rows, with their ``weights``.
    """
    scheme = scheme or Scheme()
    cals = resolve(methods)
    part = all_cells.part
    fit_parts, judged_parts = part_plan(scheme)
    folds = [(np.isin(part, f), np.isin(part, j)) for f, j in zip(fit_parts, judged_parts)]
    judged = np.logical_or.reduce([j for _, j in folds])
    notes = _check_cell_folds(all_cells, folds, scheme)
    seen = all_cells.select(judged)
    # a set of cells is the set of its weighted rows (each cell's positive row, then its negative row, empty dropped)
    cell_s, cell_y, cell_w = all_cells.weighted_rows()
    kept = np.concatenate([all_cells.n_pos, all_cells.n - all_cells.n_pos]) > 0

    def rows_of(cells_mask):
        return np.concatenate([cells_mask, cells_mask])[kept]

    fit = cross_fit(cals, cell_s, cell_y, cell_w, [(rows_of(f), rows_of(t)) for f, t in folds],
                    refit=scheme.kind == "kfold", progress=progress)
    raw, yy, ww = seen.weighted_predictions(seen.score)
    columns = {UNCALIBRATED: raw, **{key: fit.column(key)[rows_of(judged)] for key in cals}}
    table = _binary_table(columns, yy, n_bins=n_bins, strategy=strategy, mvce_views=mvce_views, sample_weight=ww,
                          mvce_max_rows=CELLS_MIN_ROWS)
    fitted_on = all_cells if scheme.kind in ("kfold", "insample") else all_cells.select(part == 0)
    return Evaluation(scheme=scheme, rows=np.arange(yy.size), labels=yy, predictions=pd.DataFrame(columns),
                      metrics=table, models=fit.models, fit_seconds=fit.seconds,
                      binning=metrics.binning_label(n_bins, strategy), weights=ww,
                      fit_sample=fitted_on.weighted_rows(), note="; ".join([all_cells.describe(), *notes]),
                      notes=notes)


def evaluate_problem(problem, methods, scheme: Scheme | None = None, *, cells: str = "auto", params=None,
                     max_fit_rows: int | None = MAX_FIT_ROWS, progress=None, should_stop=None) -> Evaluation:
    """Held-out evaluation of ``methods`` on a :class:`~calibdash.data.scoreset.Problem` (``calibdash evaluate``): a
    binary one on score cells (:func:`evaluate_cells`) where :func:`~calibdash.evaluation.crossfit.choose_path` says
    so for ``cells`` (else SettingsError), a K-class one on its rows; the rest as :func:`evaluate` takes it. DataError
    for the column scheme on a file without a split column.
    """
    scheme = scheme or Scheme()
    if scheme.kind == "column" and not problem.split_column:
        raise DataError("the column scheme needs a split column in the file; none was found.")
    if problem.k > 2:
        return evaluate(problem.scores(), problem.labels, methods, scheme, split=problem.split,
                        classes=problem.classes, params=params, max_fit_rows=max_fit_rows, progress=progress,
                        should_stop=should_stop)
    cals = resolve(methods, params)
    feats = problem.features
    path = choose_path(problem.n_rows, cals, problem.feature_columns if feats is not None else None, cells=cells)
    if path.on_cells:
        summary = aggregate(problem.scores, problem.labels, cell_parts(problem.n_rows, scheme, problem.split))
        return evaluate_cells(summary, cals, scheme, progress=progress)
    return evaluate(problem.scores, problem.labels, cals, scheme, split=problem.split, progress=progress,
                    features=feats if any(c.uses_features for c in cals.values()) else None, should_stop=should_stop)


#: The binary spelling of :func:`evaluate_problem` (the command line's name for it before K-class data joined).
evaluate_score_set = evaluate_problem


def model_rows(ev: Evaluation, method: str, P, labels, max_fit_rows: int | None = MAX_FIT_ROWS) -> np.ndarray:
    """The rows ``method``'s deployed model in ``ev`` was fitted on (indices into ``P``, ascending): ``ev.fit_rows``,
    or for a parametric method above ``max_fit_rows`` (as given to :func:`evaluate`) the sample it was fitted on."""
    rows = ev.fit_rows
    if max_fit_rows is None or not getattr(ev.models[method], "parametric", False) or rows.size <= int(max_fit_rows):
        return rows
    x = as_scores(P, False) if not isinstance(P, Scores) else P
    return content_sample(x.given, check_classes(labels, x.n, x.k), rows, int(max_fit_rows), ev.scheme.seed)


def fit_notes(models: dict) -> list[str]:
    """What each fitted method says of its own fit (``notes_``, ``penalty_note_``, a fit stopped on its cap), each
    prefixed by the method's key: what the fits warn about, for pages where no warning reaches the user."""
    out = []
    for key, model in models.items():
        out += [f"{key}: {note}" for note in getattr(model, "notes_", None) or []]
        if getattr(model, "penalty_note_", None):
            out.append(f"{key}: {model.penalty_note_}")
        if getattr(model, "converged_", True) is False:
            out.append(f"{key}: the solver stopped on its cap before its stopping rule was met "
                       f"({getattr(model, 'n_iter_', '?')} iterations); the map is the last iterate.")
    return out
