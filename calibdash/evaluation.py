"""Held-out evaluation of calibrators.

A calibrator is never judged on the rows it was fitted on unless the user asks
for it: the :class:`Scheme` says how rows are divided.

``kind="split"``
    A stratified random split: ``test_size`` of the rows (each class in the
    same proportion) are held out, the rest fit the calibrators; ``seed``
    fixes the draw.
``kind="column"``
    The file's own split column: rows whose value names a training part
    (train, training, calib, calibration, fit, dev) fit; rows naming a test
    part (test, testing, holdout, valid, validation, eval) are judged. Set
    ``train_value`` when the file uses other words.
``kind="kfold"``
    K-fold cross-fitting: every row's calibrated value comes from a model
    fitted on the other K - 1 folds (stratified, shuffled with ``seed``), so
    every row is judged once, out of fold.
``kind="insample"``
    Fit and judge on all rows: optimistic, offered only because users ask.

:func:`evaluate` returns each method's held-out predictions and a metrics
table whose first row is the uncalibrated scores on the same rows.
"""
from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Callable, Mapping, Sequence

import numpy as np
import pandas as pd
from sklearn.base import clone
from sklearn.model_selection import StratifiedKFold, train_test_split

from . import metrics
from .calibrators.base import Calibrator
from .errors import DataError, SettingsError
from .methods import RAW, resolve
from .validation import check_labels, check_scores

__all__ = ["Scheme", "Evaluation", "split_indices", "evaluate", "combine", "UNCALIBRATED",
           "cell_parts", "evaluate_cells", "CELLS_MIN_ROWS", "use_cells_for",
           "TRAIN_WORDS", "TEST_WORDS", "evaluate_score_set", "CELLS_CHOICES"]

UNCALIBRATED = RAW
TRAIN_WORDS = frozenset({"train", "training", "calib", "calibration", "cal", "fit", "dev"})
TEST_WORDS = frozenset({"test", "testing", "holdout", "hold-out", "valid", "validation", "val", "eval"})
KINDS = ("split", "column", "kfold", "insample")


@dataclass(frozen=True)
class Scheme:
    """How rows are divided between fitting and judging (see the module docstring).

    Parameters
    ----------
    kind : {"split", "column", "kfold", "insample"}, default "split"
    test_size : float, default 0.3
        Held-out fraction for ``"split"``.
    seed : int, default 0
        Seed of the split or of the fold shuffle.
    n_folds : int, default 5
        K for ``"kfold"``.
    train_value : str, optional
        For ``"column"``: the split column's value marking training rows
        (every other value is then held out).
    """

    kind: str = "split"
    test_size: float = 0.3
    seed: int = 0
    n_folds: int = 5
    train_value: str | None = None

    def describe(self, on_cells: bool = False) -> str:
        """One line for the sidebar and reports; ``on_cells``: rows divided by their hashed position
        (:mod:`calibdash.cells`), not stratified by label."""
        how = "Random split by row hash" if on_cells else "Stratified split"
        if self.kind == "split":
            return (f"{how}: {100 * (1 - self.test_size):.0f}% fit / "
                    f"{100 * self.test_size:.0f}% held out (seed {self.seed})")
        if self.kind == "column":
            return "The file's split column" + (f" (train = {self.train_value!r})" if self.train_value else "")
        if self.kind == "kfold":
            return f"{self.n_folds}-fold cross-fitting{' by row hash' if on_cells else ''} (seed {self.seed})"
        if self.kind == "insample":
            return "In-sample: fitted and judged on the same rows (optimistic)"
        return self.kind


def _column_parts(split: np.ndarray, train_value: str | None) -> np.ndarray:
    """Boolean mask of training rows from a split column."""
    vals = pd.Series(split).astype(str).str.strip()
    if train_value is not None:
        mask = (vals == str(train_value)).to_numpy()
        if not mask.any():
            raise DataError(f"no row of the split column has the value {train_value!r}; "
                            f"its values are {sorted(vals.unique())[:10]}.")
        return mask
    low = vals.str.lower()
    is_train = low.isin(TRAIN_WORDS).to_numpy()
    is_test = low.isin(TEST_WORDS).to_numpy()
    unknown = sorted(vals[~(is_train | is_test)].unique())
    if unknown:
        raise DataError(
            f"the split column has values {unknown[:10]} that name neither a training part "
            f"({', '.join(sorted(TRAIN_WORDS))}) nor a test part ({', '.join(sorted(TEST_WORDS))}); "
            "choose which value marks the training rows."
        )
    return is_train


def split_indices(labels, scheme: Scheme, split=None) -> list[tuple[np.ndarray, np.ndarray]]:
    """(fit rows, judged rows) index pairs for ``scheme``: one pair, or K for k-fold.

    Raises
    ------
    DataError
        If a part would be empty or lack a class, or the split column is unusable.
    """
    y = np.asarray(labels)
    n = y.size
    idx = np.arange(n)
    if scheme.kind == "split":
        if not 0 < scheme.test_size < 1:
            raise SettingsError(f"test_size must lie strictly between 0 and 1, got {scheme.test_size}.")
        try:
            tr, te = train_test_split(idx, test_size=scheme.test_size, random_state=scheme.seed, stratify=y)
        except ValueError as exc:
            raise DataError(f"cannot split {n} rows with test_size={scheme.test_size}: {exc}") from None
        pairs = [(np.sort(tr), np.sort(te))]
    elif scheme.kind == "column":
        if split is None:
            raise DataError("this data set has no split column; choose a random split or k-fold instead.")
        mask = _column_parts(np.asarray(split), scheme.train_value)
        pairs = [(idx[mask], idx[~mask])]
    elif scheme.kind == "kfold":
        k = int(scheme.n_folds)
        if k < 2:
            raise SettingsError(f"k-fold needs at least 2 folds, got {k}.")
        minority = int(min(y.sum(), n - y.sum()))
        if minority < k:
            raise DataError(f"{k}-fold cross-fitting needs at least {k} rows of each class; "
                            f"the smaller class has {minority}.")
        folds = StratifiedKFold(n_splits=k, shuffle=True, random_state=scheme.seed)
        pairs = [(tr, te) for tr, te in folds.split(idx, y)]
    elif scheme.kind == "insample":
        pairs = [(idx, idx)]
    else:
        raise SettingsError(f"scheme kind must be one of {KINDS}, got {scheme.kind!r}.")
    for tr, te in pairs:
        if te.size == 0:
            raise DataError("the held-out part is empty.")
        if np.unique(y[tr]).size < 2:
            raise DataError("the fitting part holds one class only; calibrators need both.")
    return pairs


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
        On score cells: how many rows were summarised into how many cells.
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

    @property
    def n_judged(self) -> int:
        """How many rows were judged (the weights' total on score cells)."""
        return int(self.rows.size if self.weights is None else round(float(self.weights.sum())))


def evaluate(scores, labels, methods: Mapping[str, Calibrator] | Sequence[str] | str,
             scheme: Scheme | None = None, *, features: pd.DataFrame | None = None,
             split=None, n_bins: int = metrics.DEFAULT_N_BINS, strategy: str = metrics.DEFAULT_STRATEGY,
             progress: Callable[[float, str], None] | None = None) -> Evaluation:
    """Fit each method on the fitting rows and judge it on held-out rows.

    Parameters
    ----------
    scores, labels : array-like
        Scores in [0, 1] and 0/1 labels.
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

    Returns
    -------
    Evaluation
    """
    scheme = scheme or Scheme()
    s = check_scores(scores)
    y = check_labels(labels, s.size)
    cals = resolve(methods)
    if features is not None:
        features = features.reset_index(drop=True)
    pairs = split_indices(y, scheme, split)
    rows = np.sort(np.concatenate([te for _, te in pairs])) if scheme.kind == "kfold" else pairs[0][1]
    preds = {UNCALIBRATED: s[rows]}
    models: dict[str, Calibrator] = {}
    seconds: dict[str, float] = {}
    total = max(1, len(cals) * len(pairs))
    done = 0
    for key, cal in cals.items():
        t0 = time.perf_counter()
        out = np.empty(s.size)
        for tr, te in pairs:
            f_tr = None if features is None else features.iloc[tr]
            f_te = None if features is None else features.iloc[te]
            model = clone(cal).fit(s[tr], y[tr], f_tr)
            out[te] = model.predict(s[te], f_te)
            done += 1
            if progress:
                progress(done / total, f"{key}: fold {done} of {total}")
        if scheme.kind == "kfold":
            model = clone(cal).fit(s, y, features)
        models[key] = model
        seconds[key] = time.perf_counter() - t0
        preds[key] = out[rows]
    y_rows = y[rows]
    table = pd.DataFrame(
        {key: metrics.summary(p, y_rows, n_bins=n_bins, strategy=strategy) for key, p in preds.items()}
    ).T[list(metrics.METRIC_NAMES)]
    table.index.name = "method"
    fit_rows = np.arange(s.size) if scheme.kind == "kfold" else pairs[0][0]
    return Evaluation(scheme=scheme, rows=rows, labels=y_rows,
                      predictions=pd.DataFrame(preds, index=rows), metrics=table,
                      models=models, fit_rows=np.sort(fit_rows), fit_seconds=seconds,
                      binning=metrics.binning_label(n_bins, strategy))


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
                      weights=first.weights, fit_sample=first.fit_sample, note=first.note)


# ---------------------------------------------------------------------------------------------
# The same schemes on score cells (large data)
# ---------------------------------------------------------------------------------------------
#: Above this many rows the command line and the dashboard evaluate on score cells (see :mod:`calibdash.cells`):
#: below it the row path's cost is under a second and its stratified folds are kept.
CELLS_MIN_ROWS = 200_000


def use_cells_for(n_rows: int, needs_rows: bool = False) -> bool:
    """Whether data of ``n_rows`` rows is evaluated on score cells by default.

    ``needs_rows``: a chosen method reads the rows' features (MBCT with feature
    columns); then every method is judged on rows, so all are judged alike.
    """
    return int(n_rows) > CELLS_MIN_ROWS and not needs_rows


def cell_parts(n_rows: int, scheme: Scheme, split=None) -> np.ndarray:
    """Each row's part under ``scheme``, decided from its position alone (or the split column), as
    every engine can decide it: see :mod:`calibdash.cells`. 0 = fit, 1 = held out; k-fold: the fold."""
    from . import cells

    if scheme.kind == "column":
        if split is None:
            raise DataError("this data set has no split column; choose a random split or k-fold instead.")
        return cells.parts_for(n_rows, "column", split_train=_column_parts(np.asarray(split), scheme.train_value))
    return cells.parts_for(n_rows, scheme.kind, seed=scheme.seed, k=scheme.n_folds, test_size=scheme.test_size)


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
    for fit, test in folds:
        sub = all_cells.select(fit)
        if not test.any():
            raise DataError("the held-out part is empty.")
        if sub.n_pos.sum() == 0 or sub.n_pos.sum() == sub.n.sum():
            raise DataError("the fitting part holds one class only; calibrators need both.")
    seen = all_cells.select(judged)
    preds = {UNCALIBRATED: seen.score}
    models, seconds = {}, {}
    total = max(1, len(cals) * len(folds))
    done = 0
    for key, cal in cals.items():
        t0 = time.perf_counter()
        out = np.empty(len(all_cells))
        for fit, test in folds:
            s, y, w = all_cells.select(fit).weighted_rows()
            model = clone(cal).fit(s, y, sample_weight=w)
            out[test] = model.predict(all_cells.score[test])
            done += 1
            if progress:
                progress(done / total, f"{key}: fold {done} of {total}")
        if scheme.kind == "kfold":
            s, y, w = all_cells.weighted_rows()
            model = clone(cal).fit(s, y, sample_weight=w)
        models[key] = model
        seconds[key] = time.perf_counter() - t0
        preds[key] = out[judged]
    pp, yy, ww = seen.weighted_predictions(seen.score)
    keep_cells = np.concatenate([seen.n_pos, seen.n - seen.n_pos]) > 0
    columns = {}
    rows = {}
    for key, p in preds.items():
        columns[key] = np.concatenate([p, p])[keep_cells]
        rows[key] = metrics.summary(columns[key], yy, n_bins=n_bins, strategy=strategy, mvce_views=mvce_views,
                                    sample_weight=ww, mvce_max_rows=CELLS_MIN_ROWS)
    table = pd.DataFrame(rows).T[list(metrics.METRIC_NAMES)]
    table.index.name = "method"
    fitted_on = all_cells if scheme.kind in ("kfold", "insample") else all_cells.select(part == 0)
    return Evaluation(scheme=scheme, rows=np.arange(yy.size), labels=yy, predictions=pd.DataFrame(columns),
                      metrics=table, models=models, fit_seconds=seconds,
                      binning=metrics.binning_label(n_bins, strategy), weights=ww,
                      fit_sample=fitted_on.weighted_rows(), note=all_cells.describe())


#: Ways to choose between rows and score cells (the command line's ``--cells``).
CELLS_CHOICES = ("auto", "always", "never")


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
    if cells not in CELLS_CHOICES:
        raise SettingsError(f"cells must be one of {CELLS_CHOICES}, got {cells!r}.")
    scheme = scheme or Scheme()
    cals = resolve(methods)
    if scheme.kind == "column" and not ss.split_column:
        raise DataError("the column scheme needs a split column in the file; none was found.")
    feats = ss.features if any(c.uses_features for c in cals.values()) else None
    if cells == "always" or (cells == "auto" and use_cells_for(ss.n_rows, feats is not None)):
        from .cells import aggregate

        summary = aggregate(ss.scores, ss.labels, cell_parts(ss.n_rows, scheme, ss.split))
        return evaluate_cells(summary, cals, scheme, progress=progress)
    return evaluate(ss.scores, ss.labels, cals, scheme, features=feats, split=ss.split, progress=progress)
