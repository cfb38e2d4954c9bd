"""Held-out evaluation of calibrators.

A calibrator is never judged on the rows it was fitted on unless the user asks
for it: the :class:`Scheme` says how rows are divided.

``kind="split"``
    A stratified random split: ``test_size`` of the rows (each class in the
    same proportion) are held out, the rest fit the calibrators; ``seed``
    fixes the draw. When a part is too small to hold both classes the rows
    are split at random instead, and the Evaluation's ``note`` says why.
``kind="column"``
    The file's own split column: rows whose value names a training part
    (train, training, calib, calibration, fit, dev) fit; rows naming a test
    part (test, testing, holdout, valid, validation, eval) are judged. Set
    ``train_value`` when the file uses other words.
``kind="kfold"``
    K-fold cross-fitting: every row's calibrated value comes from a model
    fitted on the other K - 1 folds (stratified, shuffled with ``seed``), so
    every row is judged once, out of fold. With fewer rows of a class than
    folds, some folds judge no row of it (the ``note`` says so).
``kind="insample"``
    Fit and judge on all rows: optimistic, offered only because users ask.

Every held-out scheme needs at least 2 rows of each class (one to fit on,
one to judge); with a single row of a class (one positive among 1,000 rows)
:func:`split_plan` refuses with a :class:`~calibdash.errors.DataError` that
says so and suggests the in-sample scheme.

:func:`evaluate` returns each method's held-out predictions and a metrics
table whose first row is the uncalibrated scores on the same rows.
"""
from __future__ import annotations

import warnings
from dataclasses import dataclass, field
from typing import Callable, Mapping, Sequence

import numpy as np
import pandas as pd
from sklearn.model_selection import StratifiedKFold, train_test_split

from .measures import calibration as metrics
from .calibrators.base import Calibrator
from .crossfit import CELLS_CHOICES, CELLS_MIN_ROWS, choose_path, cross_fit, use_cells_for
from .errors import DataError, SettingsError
from .methods import RAW, resolve
from .scheme import KINDS, TEST_WORDS, TRAIN_WORDS, Scheme, column_parts
from .validation import check_labels, check_scores

__all__ = ["Scheme", "Evaluation", "split_indices", "split_plan", "content_order", "evaluate", "combine", "UNCALIBRATED",
           "cell_parts", "evaluate_cells", "CELLS_MIN_ROWS", "use_cells_for",
           "TRAIN_WORDS", "TEST_WORDS", "evaluate_score_set", "CELLS_CHOICES"]

UNCALIBRATED = RAW


#: What a refusal for too few rows of a class suggests instead.
_FEW_ROWS_ADVICE = ("Choose the in-sample scheme (Scheme('insample'), --scheme insample, the pages' "
                    "'In-sample'; optimistic: fitted and judged on the same rows), or add rows of that class.")


def _smaller_class(y: np.ndarray) -> tuple[str, int]:
    """("positive" or "negative", its count): the label's smaller class."""
    n_pos = int(y.sum())
    n_neg = int(y.size - n_pos)
    return ("positive", n_pos) if n_pos <= n_neg else ("negative", n_neg)


def _rows(k: int, what: str = "row") -> str:
    return f"{k:,} {what}{'s' if k != 1 else ''}"


def _refuse_too_few(y: np.ndarray, what: str) -> None:
    """DataError unless each class has the 2 rows a held-out scheme needs (one to fit on, one to judge)."""
    which, small = _smaller_class(y)
    if small < 2:
        raise DataError(f"{what} needs at least 2 rows of each class, one to fit on and one to judge; the {which} "
                        f"class has {_rows(small)} among {y.size:,}. {_FEW_ROWS_ADVICE}")


def _split_rows(y: np.ndarray, scheme: Scheme, notes: list[str]) -> tuple[np.ndarray, np.ndarray]:
    """The random split: stratified by class when it can be, else a plain random split saying why in ``notes``."""
    n = y.size
    idx = np.arange(n)
    if not 0 < scheme.test_size < 1:
        raise SettingsError(f"test_size must lie strictly between 0 and 1, got {scheme.test_size}.")
    _refuse_too_few(y, "a held-out split")
    n_test = int(np.ceil(scheme.test_size * n))        # scikit-learn's sizes
    n_fit = n - n_test
    if n_test < 1 or n_fit < 1:
        raise DataError(f"test_size={scheme.test_size} of {n:,} rows leaves the "
                        f"{'held-out' if n_test < 1 else 'fitting'} part empty; choose a test_size between "
                        f"{1 / n:.3g} and {1 - 1 / n:.3g}.")
    try:
        tr, te = train_test_split(idx, test_size=scheme.test_size, random_state=scheme.seed, stratify=y)
    except ValueError:
        small = min(n_test, n_fit)
        why = (f"the {'held-out' if n_test <= n_fit else 'fitting'} part would hold {_rows(small)}, too few to "
               "hold both classes")
        tr, te = train_test_split(idx, test_size=scheme.test_size, random_state=scheme.seed, shuffle=True)
        notes.append(f"the split is not stratified by class: {why}, so the rows were split at random instead "
                     f"(seed {scheme.seed})")
    return np.sort(tr), np.sort(te)


def _dealt_folds(y: np.ndarray, k: int, seed: int) -> list[tuple[np.ndarray, np.ndarray]]:
    """K stratified folds when every class has fewer than K rows (which scikit-learn's StratifiedKFold refuses):
    each class's rows, shuffled with ``seed``, are dealt to the folds in turn, the next class continuing where
    the last stopped, so each fold gets at most one row of a class and none stays empty."""
    rng = np.random.default_rng(seed)
    fold = np.empty(y.size, dtype=np.int64)
    start = 0
    for cls in (0, 1):
        rows = rng.permutation(np.flatnonzero(y == cls))
        fold[rows] = (start + np.arange(rows.size)) % k
        start += rows.size
    idx = np.arange(y.size)
    return [(idx[fold != f], idx[fold == f]) for f in range(k)]


def content_order(scores, labels) -> np.ndarray:
    """The rows in an order set by what they hold, not where they stand: a permutation of ``0..n-1``.

    Rows are ordered by :func:`calibdash.multiclass.split.content_order` of their label and score (a seedless
    hash of both, then the score), so the same table in another row order gives the same (label, score)
    pairs in the same order. :func:`split_plan` deals its random split and folds over this order, so every
    score-only calibrator is fitted, and every measure judged, on the same rows whatever the order. Rows with
    the same label and score are interchangeable for them; for a calibrator that reads feature columns
    (MBCT), which of such rows lands in which part still follows their positions: the order does not read
    the features, so that every method of one evaluation, with or without features, gets the same parts.
    """
    from .multiclass.split import content_order as order_of        # (multiclass imports this module)

    s = np.asarray(scores, dtype=float).reshape(-1, 1)
    return order_of(s, np.asarray(labels, dtype=np.int64), 0)


def split_plan(labels, scheme: Scheme, split=None, *, order=None
               ) -> tuple[list[tuple[np.ndarray, np.ndarray]], list[str]]:
    """(fit rows, judged rows) index pairs for ``scheme`` and notes on how they were made.

    ``order`` (:func:`content_order`), when given, is the order the random split and the folds are dealt
    in: the rows are drawn as if the table stood in that order, so the parts depend on the rows' content
    and the seed, not on their positions. Without it, on the positions.

    The random split is stratified by class (each class held out in the same
    proportion); when it cannot be (a part too small to hold both classes) the
    rows are split at random and a note says why. K-fold is stratified too;
    when the smaller class has fewer rows than folds, some folds judge no row
    of it (each still fits on both classes) and a note says so. A held-out
    scheme needs 2 rows of each class (one to fit on, one to judge): with one,
    a :class:`DataError` says what to choose instead.

    Returns
    -------
    (list of (ndarray, ndarray), list of str)

    Raises
    ------
    DataError
        If a part would be empty or fit on one class only, a class has a
        single row, or the split column is unusable.
    """
    y = np.asarray(labels)
    if order is not None and scheme.kind in ("split", "kfold"):
        order = np.asarray(order)
        pairs, notes = split_plan(y[order], scheme, split)
        return [(np.sort(order[tr]), np.sort(order[te])) for tr, te in pairs], notes
    n = y.size
    idx = np.arange(n)
    notes: list[str] = []
    if scheme.kind == "split":
        pairs = [_split_rows(y, scheme, notes)]
    elif scheme.kind == "column":
        if split is None:
            raise DataError("this data set has no split column; choose a random split or k-fold instead.")
        mask = column_parts(np.asarray(split), scheme.train_value)
        pairs = [(idx[mask], idx[~mask])]
    elif scheme.kind == "kfold":
        k = int(scheme.n_folds)
        if k < 2:
            raise SettingsError(f"k-fold needs at least 2 folds, got {k}.")
        if k > n:
            raise DataError(f"{k}-fold cross-fitting needs at least {k} rows; there are {n:,}.")
        _refuse_too_few(y, f"{k}-fold cross-fitting")
        which, small = _smaller_class(y)
        if max(int(y.sum()), n - int(y.sum())) >= k:
            folds = StratifiedKFold(n_splits=k, shuffle=True, random_state=scheme.seed)
            with warnings.catch_warnings():       # "The least populated class in y has only ... members": said below
                warnings.simplefilter("ignore", UserWarning)
                pairs = [(tr, te) for tr, te in folds.split(idx, y)]
        else:                                     # scikit-learn refuses when every class is smaller than k
            pairs = _dealt_folds(y, k, scheme.seed)
        if small < k:
            blind = sum(1 for _, te in pairs if np.unique(y[te]).size < 2)
            notes.append(f"only {_rows(small, which + ' row')} for {k} folds: {_rows(blind, 'fold')} judge rows of "
                         "one class only (every fold still fits on both classes, and every row is judged once)")
    elif scheme.kind == "insample":
        pairs = [(idx, idx)]
    else:
        raise SettingsError(f"scheme kind must be one of {KINDS}, got {scheme.kind!r}.")
    for tr, te in pairs:
        if te.size == 0:
            raise DataError("the held-out part is empty.")
        if np.unique(y[tr]).size < 2:
            which, small = _smaller_class(y)
            raise DataError(f"the fitting part ({_rows(tr.size)}) holds one class only; calibrators need both "
                            f"(the {which} class has {_rows(small)} among {n:,}).")
    if scheme.kind in ("split", "column"):
        judged = y[pairs[0][1]]
        for cls, name in ((1, "positive"), (0, "negative")):
            if not (judged == cls).any():
                notes.append(f"the held-out rows hold no {name} row: AUC is undefined (NaN) there, and "
                             "calibration is judged on one class")
    return pairs, notes


def split_indices(labels, scheme: Scheme, split=None, *, scores=None) -> list[tuple[np.ndarray, np.ndarray]]:
    """(fit rows, judged rows) index pairs for ``scheme``: one pair, or K for k-fold (:func:`split_plan`'s);
    with ``scores``, dealt over the rows' :func:`content_order`, as :func:`evaluate` deals them.

    Raises
    ------
    DataError
        If a part would be empty or lack a class, or the split column is unusable.
    """
    order = None if scores is None else content_order(scores, labels)
    return split_plan(labels, scheme, split, order=order)[0]


@dataclass
class Evaluation:
    """Held-out predictions and metrics of several methods under one scheme.

    Attributes
    ----------
    scheme : Scheme
    rows : ndarray
        Indices (into the input arrays) of the judged rows, ascending.
    labels : ndarray
        Their labels.
    predictions : DataFrame
        One column per method, ``"uncalibrated"`` first; one row per judged row.
    metrics : DataFrame
        One row per method (``"uncalibrated"`` first), columns as
        :data:`calibdash.metrics.METRIC_NAMES`.
    models : dict
        Method key -> calibrator fitted on the fitting part (for ``"kfold"``:
        refitted on all rows, the model a user would deploy; its predictions
        are not the judged ones).
    fit_rows : ndarray
        Indices of the rows every model in ``models`` was fitted on (what
        :func:`calibdash.explain.explain` needs), ascending.
    fit_seconds : dict
        Method key -> seconds spent fitting and predicting (all folds).
    binning : str
        How ECE and MCE were binned (:func:`calibdash.metrics.binning_label`).
    weights : ndarray or None
        None when the judged rows are rows. On score cells
        (:func:`evaluate_cells`) the judged "rows" are the cells' weighted
        rows (a positive row weighing the cell's positives, a negative row
        its negatives): ``weights`` holds their weights, to pass as
        ``sample_weight`` to every metric, table and figure.
    fit_sample : tuple or None
        On score cells: ``(scores, labels, weights)`` of the weighted rows the
        models were fitted on (what :func:`calibdash.explain.explain` needs
        there instead of ``fit_rows``).
    note : str
        On score cells: how many rows were summarised into how many cells;
        then, on rows or cells, how the split departed from the scheme and
        why (:func:`split_plan`: a split not stratified, folds that judge no
        row of a class, held-out rows of one class). Fragments joined by
        "; ", without a final period; "" when there is nothing to say.
    notes : list of str
        The split's notes alone (what ``note`` adds after the cells'
        description), one fragment each.
    """

    scheme: Scheme
    rows: np.ndarray
    labels: np.ndarray
    predictions: pd.DataFrame
    metrics: pd.DataFrame
    models: dict = field(default_factory=dict)
    fit_rows: np.ndarray = field(default_factory=lambda: np.empty(0, dtype=np.int64))
    fit_seconds: dict = field(default_factory=dict)
    binning: str = field(default_factory=metrics.binning_label)
    weights: np.ndarray | None = None
    fit_sample: tuple | None = None
    note: str = ""
    notes: list = field(default_factory=list)

    @property
    def n_judged(self) -> int:
        """How many rows were judged (the weights' total on score cells)."""
        return int(self.rows.size if self.weights is None else round(float(self.weights.sum())))


def evaluate(scores, labels, methods: Mapping[str, Calibrator] | Sequence[str] | str,
             scheme: Scheme | None = None, *, features: pd.DataFrame | None = None,
             split=None, n_bins: int = metrics.DEFAULT_N_BINS, strategy: str = metrics.DEFAULT_STRATEGY,
             progress: Callable[[float, str], None] | None = None, pos_label=None) -> Evaluation:
    """Fit each method on the fitting rows and judge it on held-out rows.

    Parameters
    ----------
    scores, labels : array-like
        Scores in [0, 1] and labels: any two values (0/1, -1/1, True/False,
        yes/no, two strings); the Evaluation's ``labels`` are 0/1.
    methods : method spec
        Anything :func:`calibdash.methods.resolve` takes: ``"platt,bbq"``,
        a list, ``{"bbq": {"n_prime": 2}}``, ``{key: calibrator}``. Each
        calibrator is cloned per fold, so the objects passed are not fitted.
    scheme : Scheme, default ``Scheme()`` (stratified 70/30 split, seed 0)
    features : DataFrame, optional
        Passed to calibrators that use features (MBCT).
    split : array-like, optional
        The file's split column, for ``Scheme(kind="column")``.
    n_bins, strategy
        Binning of ECE and MCE in the metrics table (default: the package's,
        10 equal-count bins; see :mod:`calibdash.metrics`).
    progress : callable(fraction, message), optional
        Called after each fitted fold.
    pos_label : optional
        The label value of the positive class; default the shared rule
        (:func:`calibdash.validation.choose_positive`), as the file loader.

    Returns
    -------
    Evaluation
        Its ``note`` says when the split departed from the scheme, and why.
    """
    scheme = scheme or Scheme()
    s = check_scores(scores)
    y = check_labels(labels, s.size, pos_label=pos_label)
    cals = resolve(methods)
    if features is not None:
        features = features.reset_index(drop=True)
    pairs, notes = split_plan(y, scheme, split, order=content_order(s, y))
    rows = np.sort(np.concatenate([te for _, te in pairs])) if scheme.kind == "kfold" else pairs[0][1]
    fit = cross_fit(cals, s, y, None, pairs, features, refit=scheme.kind == "kfold", progress=progress)
    preds = {UNCALIBRATED: s[rows], **{key: fit.column(key)[rows] for key in cals}}
    y_rows = y[rows]
    table = pd.DataFrame(
        {key: metrics.summary(p, y_rows, n_bins=n_bins, strategy=strategy) for key, p in preds.items()}
    ).T[list(metrics.METRIC_NAMES)]
    table.index.name = "method"
    fit_rows = np.arange(s.size) if scheme.kind == "kfold" else pairs[0][0]
    return Evaluation(scheme=scheme, rows=rows, labels=y_rows,
                      predictions=pd.DataFrame(preds, index=rows), metrics=table,
                      models=fit.models, fit_rows=np.sort(fit_rows), fit_seconds=fit.seconds,
                      binning=metrics.binning_label(n_bins, strategy), note="; ".join(notes), notes=notes)


def combine(parts: Sequence[Evaluation]) -> Evaluation:
    """Merge evaluations of different methods made under the same scheme on the same rows.

    Lets a caller fit (and cache) each method on its own and still get one
    table: the uncalibrated row is kept once, first.

    Raises
    ------
    DataError
        If the parts were judged on different rows or schemes.
    """
    if not parts:
        raise DataError("nothing to combine.")
    first = parts[0]
    preds = [first.predictions[[UNCALIBRATED]]]
    tables = [first.metrics.loc[[UNCALIBRATED]]]
    models, seconds = {}, {}
    for part in parts:
        same_weights = (part.weights is None) == (first.weights is None) and (
            part.weights is None or np.array_equal(part.weights, first.weights))
        if (part.scheme != first.scheme or not np.array_equal(part.rows, first.rows)
                or part.binning != first.binning or not same_weights):
            raise DataError("evaluations made on different rows, schemes or binnings cannot be combined.")
        cols = [c for c in part.predictions.columns if c != UNCALIBRATED]
        preds.append(part.predictions[cols])
        tables.append(part.metrics.loc[cols])
        models.update(part.models)
        seconds.update(part.fit_seconds)
    return Evaluation(scheme=first.scheme, rows=first.rows, labels=first.labels,
                      predictions=pd.concat(preds, axis=1), metrics=pd.concat(tables),
                      models=models, fit_rows=first.fit_rows, fit_seconds=seconds, binning=first.binning,
                      weights=first.weights, fit_sample=first.fit_sample, note=first.note,
                      notes=list(first.notes))


# ---------------------------------------------------------------------------------------------
# The same schemes on score cells (large data)
# ---------------------------------------------------------------------------------------------
def cell_parts(n_rows: int, scheme: Scheme, split=None) -> np.ndarray:
    """Each row's part under ``scheme``, decided from its position alone (or the split column), as
    every engine can decide it: see :mod:`calibdash.cells`. 0 = fit, 1 = held out; k-fold: the fold."""
    from . import cells

    if scheme.kind == "column":
        if split is None:
            raise DataError("this data set has no split column; choose a random split or k-fold instead.")
        return cells.parts_for(n_rows, "column", split_train=column_parts(np.asarray(split), scheme.train_value))
    return cells.parts_for(n_rows, scheme.kind, seed=scheme.seed, k=scheme.n_folds, test_size=scheme.test_size)


def _check_cell_folds(all_cells, folds, scheme: Scheme) -> list[str]:
    """Refuse folds of score cells that cannot fit (a class missing) as :func:`split_plan` refuses rows, saying
    why; return notes on judged parts that hold one class."""
    n_all = int(all_cells.n.sum())
    n_pos = int(all_cells.n_pos.sum())
    which, small = ("positive", n_pos) if n_pos <= n_all - n_pos else ("negative", n_all - n_pos)
    if small == 0:
        raise DataError(f"the {n_all:,} rows hold one class only (no {which} row); calibration needs both.")
    if scheme.kind != "insample" and small < 2:
        what = {"kfold": f"{scheme.n_folds}-fold cross-fitting"}.get(scheme.kind, "a held-out split")
        raise DataError(f"{what} needs at least 2 rows of each class, one to fit on and one to judge; the {which} "
                        f"class has {_rows(small)} among {n_all:,}. {_FEW_ROWS_ADVICE}")
    how = ("the split column marks none of them for fitting" if scheme.kind == "column" else
           "the rows' parts, drawn from a hash of their position (not stratified by class), put none of them there")
    fix = ("" if scheme.kind == "column" else " Choose another seed" + (", fewer folds" if scheme.kind == "kfold" else "")
           + " or the in-sample scheme.")
    notes, blind = [], 0
    for i, (fit, test) in enumerate(folds):
        if not test.any():
            raise DataError("the held-out part is empty.")
        sub = all_cells.select(fit)
        fit_pos, fit_n = int(sub.n_pos.sum()), int(sub.n.sum())
        if fit_pos == 0 or fit_pos == fit_n:
            where = f" of fold {i + 1} of {len(folds)}" if scheme.kind == "kfold" else ""
            raise DataError(f"the fitting part{where} ({_rows(fit_n)}) holds one class only; calibrators need both: "
                            f"the {which} class has {_rows(small)} among {n_all:,}, and {how}.{fix}")
        judged = all_cells.select(test)
        j_pos, j_n = int(judged.n_pos.sum()), int(judged.n.sum())
        blind += int(j_pos == 0 or j_pos == j_n)
    if blind and scheme.kind == "kfold":
        notes.append(f"{_rows(blind, 'fold')} of {len(folds)} judge rows of one class only (the {which} class has "
                     f"{_rows(small)} among {n_all:,}), and every row is still judged once")
    elif blind and scheme.kind in ("split", "column"):
        notes.append("the held-out rows hold one class only: AUC is undefined (NaN) there, and calibration is judged "
                     "on one class")
    return notes


def evaluate_cells(all_cells, methods, scheme: Scheme | None = None, *, n_bins: int = metrics.DEFAULT_N_BINS,
                   strategy: str = metrics.DEFAULT_STRATEGY, mvce_views: int = 100,
                   progress: Callable[[float, str], None] | None = None) -> Evaluation:
    """Fit each method on the fitting cells and judge it on the held-out cells.

    The same protocol as :func:`evaluate`, on a :class:`calibdash.cells.ScoreCells` whose
    ``part`` was set by :func:`cell_parts` for ``scheme``: a calibrator is fitted on cells
    as weighted rows (the same fit as on their rows when the cells are exact), and the
    metrics are the weighted metrics of the judged cells (exact against the rows except
    MVCE, whose views shuffle rows: above ``CELLS_MIN_ROWS`` judged rows its views are
    drawn with the exact moments of a random partition, see :func:`calibdash.metrics.mvce`).

    Parameters
    ----------
    all_cells : ScoreCells
    methods : method spec (:func:`calibdash.methods.resolve`)
        Feature-aware methods (MBCT) are fitted on the score alone here.
    scheme : Scheme, default ``Scheme()``

    Returns
    -------
    Evaluation
        Whose judged "rows" are the judged cells' weighted rows, with their
        ``weights``; ``fit_sample`` holds the weighted rows the models were
        fitted on and ``note`` what the cells summarise.
    """
    scheme = scheme or Scheme()
    cals = resolve(methods)
    part = all_cells.part
    if scheme.kind == "kfold":
        folds = [(part != k, part == k) for k in range(int(scheme.n_folds))]
        judged = np.ones(len(all_cells), dtype=bool)
    elif scheme.kind == "insample":
        folds = [(np.ones(len(all_cells), bool), np.ones(len(all_cells), bool))]
        judged = folds[0][1]
    else:
        folds = [(part == 0, part == 1)]
        judged = part == 1
    notes = _check_cell_folds(all_cells, folds, scheme)
    seen = all_cells.select(judged)
    # the cells as weighted rows (all_cells.weighted_rows(): each cell's positive row, then its negative row,
    # empty ones dropped); a set of cells is the set of its weighted rows
    cell_s, cell_y, cell_w = all_cells.weighted_rows()
    kept = np.concatenate([all_cells.n_pos, all_cells.n - all_cells.n_pos]) > 0

    def rows_of(cells_mask):
        return np.concatenate([cells_mask, cells_mask])[kept]

    fit = cross_fit(cals, cell_s, cell_y, cell_w, [(rows_of(f), rows_of(t)) for f, t in folds],
                    refit=scheme.kind == "kfold", progress=progress)
    pp, yy, ww = seen.weighted_predictions(seen.score)
    keep_cells = np.concatenate([seen.n_pos, seen.n - seen.n_pos]) > 0
    judged_rows = rows_of(judged)
    columns = {UNCALIBRATED: np.concatenate([seen.score, seen.score])[keep_cells],
               **{key: fit.column(key)[judged_rows] for key in cals}}
    rows = {key: metrics.summary(p, yy, n_bins=n_bins, strategy=strategy, mvce_views=mvce_views, sample_weight=ww,
                                 mvce_max_rows=CELLS_MIN_ROWS) for key, p in columns.items()}
    table = pd.DataFrame(rows).T[list(metrics.METRIC_NAMES)]
    table.index.name = "method"
    fitted_on = all_cells if scheme.kind in ("kfold", "insample") else all_cells.select(part == 0)
    return Evaluation(scheme=scheme, rows=np.arange(yy.size), labels=yy, predictions=pd.DataFrame(columns),
                      metrics=table, models=fit.models, fit_seconds=fit.seconds,
                      binning=metrics.binning_label(n_bins, strategy), weights=ww,
                      fit_sample=fitted_on.weighted_rows(), note="; ".join([all_cells.describe(), *notes]),
                      notes=notes)


def evaluate_score_set(ss, methods, scheme: Scheme | None = None, *, cells: str = "auto",
                       progress=None) -> Evaluation:
    """Held-out evaluation of ``methods`` on a :class:`~calibdash.data.ScoreSet`, on rows or on score cells.

    The path of ``python -m calibdash evaluate``: above
    :data:`~calibdash.evaluation.CELLS_MIN_ROWS` rows (``cells="auto"``) the
    rows are summarised into score cells and judged there
    (:func:`~calibdash.evaluation.evaluate_cells`), unless a chosen method
    reads the feature columns (MBCT with features), which needs the rows.

    Parameters
    ----------
    ss : ScoreSet
    methods : method spec or mapping key -> Calibrator (:func:`calibdash.methods.resolve`)
    scheme : Scheme, default ``Scheme()``
    cells : {"auto", "always", "never"}
    progress : callable(fraction, message), optional

    Returns
    -------
    Evaluation
        On score cells its ``weights`` are not None.

    Raises
    ------
    DataError
        ``scheme.kind == "column"`` and the file has no split column.
    SettingsError
        ``cells`` is not one of :data:`CELLS_CHOICES`.
    """
    scheme = scheme or Scheme()
    cals = resolve(methods)
    path = choose_path(ss.n_rows, cals, ss.feature_columns if ss.features is not None else None, cells=cells)
    if scheme.kind == "column" and not ss.split_column:
        raise DataError("the column scheme needs a split column in the file; none was found.")
    feats = ss.features if any(c.uses_features for c in cals.values()) else None
    if path.on_cells:
        from .cells import aggregate

        summary = aggregate(ss.scores, ss.labels, cell_parts(ss.n_rows, scheme, ss.split))
        return evaluate_cells(summary, cals, scheme, progress=progress)
    return evaluate(ss.scores, ss.labels, cals, scheme, features=feats, split=ss.split, progress=progress)
