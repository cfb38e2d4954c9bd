"""The data of the multi-class diagrams (no plotly): confidence, class-wise, the per-class table, the simplex map.

Each diagram is a **prepare** (data, here) and a **plot** (a figure,
:mod:`calibdash.figures.multiclass`) pair, as the binary diagrams of
:mod:`calibdash.diagrams`:

=================================  =========================================================================
prepare                            what it holds
=================================  =========================================================================
:func:`prepare_confidence`         :class:`ConfidenceData`: per method the reliability table of the
                                   confidence reduction (top probability against correctness), its
                                   confidence ECE; a :class:`calibdash.diagrams.BinnedData`
:func:`prepare_classwise`          :class:`ClasswiseData`: per shown class and method the reliability
                                   table of the class-wise reduction, the classes in the picker's order
                                   (worst first by the first method's per-class ECE, by default)
:func:`class_table`                one row per class: rows, frequency, and per method the mean predicted
                                   probability and the per-class ECE
:func:`prepare_simplex_map`        :class:`SimplexMapData`: a 3-class calibration map evaluated on a
                                   grid of the probability simplex
=================================  =========================================================================

Inputs: ``P_by_method`` maps each method's key to its (n, K) probabilities for
the same rows; ``y`` class indices; ``sample_weight`` optional (a row of weight
``w`` counts as ``w`` rows: bins count weight). The bins are those of the
measures (:mod:`calibdash.multiclass.metrics`: 15 equal-width bins unless
told, a probability of exactly 1 in the last bin); ``n_bins="auto"`` takes the
binary diagrams' rule (:func:`calibdash.diagrams.bin_count`): on all rows for
the confidence diagram, on the rows per class for the class-wise one
(:func:`classwise_bin_count`).
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable, ClassVar, Mapping, Sequence

import numpy as np
import pandas as pd

from ..diagrams import AUTO, AUTO_RULE, BINNINGS, BinnedData, auto_bin_count, bin_count, describe_rule
from ..errors import DataError, SettingsError
from ..measures.binning import reliability_table
from . import metrics
from .base import check_probabilities

__all__ = ["CONFIDENCE", "CLASSWISE", "SIMPLEX", "ORDERS", "MAX_PANELS", "CAPTIONS", "class_labels",
           "ConfidenceData", "ClasswiseData", "SimplexMapData", "prepare_confidence", "classwise_bin_count",
           "prepare_classwise",
           "class_table", "simplex_grid", "prepare_simplex_map"]

CONFIDENCE, CLASSWISE, SIMPLEX = "Confidence", "Class-wise", "Simplex map"
#: How :func:`prepare_classwise` orders the classes: by the first method's per-class ECE (largest first),
#: by index, or by rows (most first).
ORDERS = ("worst", "index", "frequency")
#: Panels of a class-wise diagram unless the caller picks the classes.
MAX_PANELS = 12
#: Each diagram's caption; ``{bins}``: the bin count and its rule, ``{binning}``: equal-width or equal-count.
CAPTIONS = {
    CONFIDENCE: ("Confidence reliability diagram: {bins}, {binning}, on the top probability of each row "
                 "(a probability of exactly 1 in the last bin); each point is a bin's accuracy (share of rows "
                 "whose most probable class is right) against its mean confidence, with its 95% interval; "
                 "the bars count its rows. Legend: the confidence ECE."),
    CLASSWISE: ("Class-wise reliability: for each class k, the rows' probability of k binned ({bins}, "
                "{binning}) against the share of the bin's rows labelled k, with its 95% interval. Classes "
                "{order}; each panel's title gives its ECE (first method)."),
    SIMPLEX: ("Calibration map on the probability simplex: each arrow starts at a grid point (a row of "
              "probabilities given to the calibrator, {points} points, {spacing}) and ends at the "
              "calibrated probabilities; colour: the total variation distance moved."),
}
_ORDER_TEXT = {"worst": "shown worst first (largest per-class ECE of {first})", "index": "in index order",
               "frequency": "shown most frequent first", "picked": "as picked"}


def class_labels(k: int, names: Sequence[str] | None = None) -> list[str]:
    """``names`` as K strings (checked), or ``"class 0"``, ``"class 1"``, ... when None."""
    if names is None:
        return [f"class {i}" for i in range(k)]
    names = [str(n) for n in names]
    if len(names) != k:
        raise DataError(f"class_names has {len(names)} names but the probabilities have {k} classes.")
    return names


def _check_strategy(strategy: str) -> None:
    if strategy not in BINNINGS:
        raise SettingsError(f"strategy must be one of {tuple(BINNINGS)}, got {strategy!r}.")


def _bins(n_bins, strategy: str, y, w) -> tuple[int, str]:
    _check_strategy(strategy)
    return bin_count(n_bins, y, w)


def classwise_bin_count(n_bins, y, k: int, sample_weight=None) -> tuple[int, str]:
    """``(bin count, caption text)`` of the class-wise panels: a count as given, or for :data:`AUTO` the binary
    diagrams' rule (:data:`calibdash.diagrams.AUTO_RULE`, the cube root rounded up, within 2..100) applied to
    the rows per class, ``n / K`` (the weights' sum over K when weighted).

    Why per class: class k's panel bins ``P[:, k]`` over every row, but what it estimates, the share of rows
    labelled k near each probability, rests on the rows of class k, about ``n / K`` of them; so the rule the
    binary diagram applies to its n rows is applied to those. With K = 100 and 3,000 held-out rows that is
    ``ceil(30^(1/3)) = 4`` bins, where 15 (the measures' bins) leave most bins of a panel with no row of
    its class and the line jagged.

    >>> classwise_bin_count("auto", np.zeros(3000, int), 100)[0]
    4

    With fewer rows than classes (fewer than one row per class) the rule's fewest bins, 2:

    >>> classwise_bin_count("auto", np.zeros(500, int), 1000)[0]
    2
    """
    if n_bins != AUTO:
        return bin_count(n_bins, y)
    if int(k) != k or k < 1:
        raise SettingsError(f"k must be a whole number of classes, got {k!r}.")
    total = float(np.sum(sample_weight)) if sample_weight is not None else float(len(y))
    if not total > 0:
        raise DataError("the class-wise panels need at least one held-out row of positive weight; there is none.")
    per_class = total / int(k)
    if per_class < 1:          # more classes than rows: the rule's fewest bins, said so (not "n must be >= 1")
        bins = auto_bin_count(1, AUTO_RULE)
        return bins, (f"auto: {bins} bins, the fewest (fewer than one row per class: {total:,.0f} rows over "
                      f"K = {int(k)} classes)")
    return (auto_bin_count(per_class, AUTO_RULE),
            f"auto: {describe_rule(per_class, AUTO_RULE)} per class, {total:,.0f} rows over K = {int(k)} classes")


# ----------------------------------------------------------------------------------------------------------
# confidence (top-label) diagram
# ----------------------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class ConfidenceData(BinnedData):
    """A confidence reliability diagram: each method's reliability table of ``(max P, correct)`` (columns of
    :func:`calibdash.measures.binning.reliability_table`: ``obs_freq`` is the accuracy, ``mean_pred`` the mean
    confidence) and its confidence ECE at the same bins."""
    ece: dict = field(default_factory=dict)
    kind: ClassVar[str] = CONFIDENCE

    def caption(self, names: Mapping[str, str] | None = None) -> str:
        return CAPTIONS[CONFIDENCE].format(bins=self.bins_text, binning=BINNINGS[self.strategy])


def prepare_confidence(P_by_method: Mapping[str, np.ndarray], y, sample_weight=None, *,
                       n_bins=metrics.N_BINS, strategy: str = "uniform") -> ConfidenceData:
    """The confidence diagram's data: per method, :func:`calibdash.multiclass.metrics.top_label` binned.

    ``n_bins``: a count or ``"auto"``; ``strategy``: ``"uniform"`` (equal-width, default) or ``"quantile"``.
    The tables' counts sum to the rows (the weights' sum when weighted).
    """
    Ps, y, w = metrics.check_methods(P_by_method, y, sample_weight)
    bins, said = _bins(n_bins, strategy, y, w)
    tables, ece = {}, {}
    for key, P in Ps.items():
        c, a = metrics.top_label(P, y)
        tables[key] = reliability_table(c, a, bins, strategy, sample_weight=w)
        ece[key] = metrics.top_label_ece(P, y, bins, strategy, w)
    return ConfidenceData(tables, bins, strategy, said, ece)


# ----------------------------------------------------------------------------------------------------------
# class-wise diagram and the per-class table
# ----------------------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class ClasswiseData:
    """Class-wise reliability as small multiples.

    Attributes
    ----------
    tables : dict
        Shown class index -> method key -> reliability table of ``(P[:, k], y == k)``, in panel order.
    classes : list of int
        The shown classes, in panel order.
    order : list of int
        Every class in the picker's order (``order_by``), for a class picker.
    names : list of str
        Every class's name (index -> name).
    ece : DataFrame
        Per-class ECE at these bins: index the class indices, one column per method.
    n_bins, strategy, bins_text, order_by :
        How the classes were binned and ordered (``order_by``: one of :data:`ORDERS`, or ``"picked"``).
    """
    tables: dict
    classes: list
    order: list
    names: list
    ece: pd.DataFrame
    n_bins: int
    strategy: str
    bins_text: str
    order_by: str
    kind: ClassVar[str] = CLASSWISE

    def caption(self, names: Mapping[str, str] | None = None) -> str:
        first = str(self.ece.columns[0])
        first = dict(names or {}).get(first, first)
        return CAPTIONS[CLASSWISE].format(bins=self.bins_text, binning=BINNINGS[self.strategy],
                                          order=_ORDER_TEXT[self.order_by].format(first=first))


def _per_class_ece(Ps: dict, y, w, bins: int, strategy: str) -> pd.DataFrame:
    return pd.DataFrame({key: metrics.per_class_ece(P, y, bins, strategy, w) for key, P in Ps.items()})


def _class_order(order: str, ece: pd.DataFrame, rows: np.ndarray) -> list[int]:
    if order not in ORDERS:
        raise SettingsError(f"order must be one of {ORDERS}, got {order!r}.")
    index = np.arange(rows.size)
    if order == "index":
        return index.tolist()
    key = ece.iloc[:, 0].to_numpy() if order == "worst" else rows
    return np.lexsort((index, -key)).tolist()          # largest first, ties by index


def _picked(classes, names: list[str]) -> list[int]:
    """Class indices of ``classes`` (indices or names), checked."""
    out = []
    for c in classes:
        if isinstance(c, str):
            if c not in names:
                raise DataError(f"no class is named {c!r}.")
            out.append(names.index(c))
        elif int(c) == c and 0 <= int(c) < len(names):
            out.append(int(c))
        else:
            raise DataError(f"class index {c!r} is not one of 0..{len(names) - 1}.")
    if not out:
        raise DataError("pick at least one class to draw.")
    return out


def prepare_classwise(P_by_method: Mapping[str, np.ndarray], y, classes=None, n_bins=metrics.N_BINS,
                      order: str = "worst", *, sample_weight=None, class_names: Sequence[str] | None = None,
                      strategy: str = "uniform", max_panels: int = MAX_PANELS) -> ClasswiseData:
    """The class-wise diagram's data: which classes to show, and each one's reliability table per method.

    Parameters
    ----------
    P_by_method : mapping key -> (n, K) probabilities
        The first method (the raw scores, usually) orders the classes for ``order="worst"``.
    y : array-like (n,)
    classes : sequence of class indices or names, optional
        The classes to show, in this order (a picker's choice); default: the
        first ``max_panels`` classes of ``order``.
    n_bins : int or "auto", default 15
        ``"auto"``: :func:`classwise_bin_count`, the binary diagrams' rule on the rows per class.
    order : {"worst", "index", "frequency"}, default "worst"
        The picker's order: largest per-class ECE of the first method first,
        index order, or most rows first (ties by index).
    sample_weight : array-like (n,), optional
    class_names : sequence of K str, optional
        Default ``"class 0"``, ``"class 1"``, ...
    strategy : {"uniform", "quantile"}, default "uniform"
    max_panels : int, default 12
    """
    Ps, y, w = metrics.check_methods(P_by_method, y, sample_weight)
    k = next(iter(Ps.values())).shape[1]
    names = class_labels(k, class_names)
    _check_strategy(strategy)
    bins, said = classwise_bin_count(n_bins, y, k, w)
    if int(max_panels) != max_panels or max_panels < 1:
        raise SettingsError(f"max_panels must be a whole number of at least 1, got {max_panels!r}.")
    ece = _per_class_ece(Ps, y, w, bins, strategy)
    rows = np.bincount(y, weights=w, minlength=k)
    ordered = _class_order(order, ece, rows)
    shown = ordered[:int(max_panels)] if classes is None else _picked(classes, names)
    tables = {c: {key: reliability_table(P[:, c], (y == c).astype(np.int8), bins, strategy, sample_weight=w)
                  for key, P in Ps.items()} for c in shown}
    return ClasswiseData(tables, shown, ordered, names, ece, bins, strategy, said,
                         order if classes is None else "picked")


def class_table(P_by_method: Mapping[str, np.ndarray], y, sample_weight=None, *,
                class_names: Sequence[str] | None = None, n_bins: int = metrics.N_BINS,
                strategy: str = "uniform") -> pd.DataFrame:
    """One row per class (index: class index): ``class`` (name), ``rows`` (labelled k; weight when weighted),
    ``frequency`` (their share), then per method ``mean p (key)``, the mean predicted probability of k over
    all rows (equal to ``frequency`` for a method calibrated in the large), and ``ECE (key)``, the class's ECE
    (:func:`calibdash.multiclass.metrics.per_class_ece` at ``n_bins``, ``strategy``)."""
    Ps, y, w = metrics.check_methods(P_by_method, y, sample_weight)
    k = next(iter(Ps.values())).shape[1]
    rows = np.bincount(y, weights=w, minlength=k)
    out = pd.DataFrame({"class": class_labels(k, class_names),
                        "rows": rows if w is not None else rows.astype(np.int64),
                        "frequency": rows / rows.sum()})
    ece = _per_class_ece(Ps, y, w, n_bins, strategy)
    for key, P in Ps.items():
        out[f"mean p ({key})"] = np.average(P, axis=0, weights=w)
        out[f"ECE ({key})"] = ece[key].to_numpy()
    out.index.name = "class index"
    return out


# ----------------------------------------------------------------------------------------------------------
# the simplex map (K = 3)
# ----------------------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class SimplexMapData:
    """A 3-class calibration map on a grid of the simplex: ``inputs`` (m, 3) and their images ``outputs``."""
    inputs: np.ndarray
    outputs: np.ndarray
    n_grid: int
    interior: bool
    kind: ClassVar[str] = SIMPLEX

    @property
    def shift(self) -> np.ndarray:
        """Total variation distance each point moves: ``(1/2) sum_k |out_k - in_k|``, in [0, 1]."""
        return 0.5 * np.abs(self.outputs - self.inputs).sum(axis=1)

    def caption(self, names: Mapping[str, str] | None = None) -> str:
        spacing = f"spacing 1/{self.n_grid}" + (", inside the triangle" if self.interior else "")
        return CAPTIONS[SIMPLEX].format(points=len(self.inputs), spacing=spacing)


def simplex_grid(n_grid: int = 10, interior: bool = True) -> np.ndarray:
    """The points ``(i, j, l) / n_grid`` with ``i + j + l = n_grid``: (m, 3) rows of probabilities.

    ``interior``: only the points with every coordinate at least ``1/n_grid``
    (``(n_grid - 1)(n_grid - 2) / 2`` points), so no class has probability 0
    (where log-based maps such as Dirichlet calibration are extreme).
    """
    low = 1 if interior else 0
    if int(n_grid) != n_grid or n_grid < 3 * low or n_grid < 1:
        raise SettingsError(f"n_grid must be a whole number of at least {max(1, 3 * low)}, got {n_grid!r}.")
    n = int(n_grid)
    pts = [(i, j, n - i - j) for i in range(low, n + 1) for j in range(low, n + 1) if n - i - j >= low]
    return np.array(pts, dtype=float) / n


def prepare_simplex_map(predict_proba: Callable[[np.ndarray], np.ndarray], n_grid: int = 10,
                        interior: bool = True) -> SimplexMapData:
    """Evaluate a 3-class calibration map on :func:`simplex_grid` (``predict_proba``: any callable taking
    (m, 3) rows of probabilities to (m, 3) calibrated rows, such as a fitted calibrator's ``predict_proba``).

    Raises
    ------
    DataError
        If the callable's output is not (m, 3) rows of probabilities summing to 1.
    """
    grid = simplex_grid(n_grid, interior)
    out = np.asarray(predict_proba(grid.copy()), dtype=float)
    if out.shape != grid.shape:
        raise DataError(f"the map returned shape {out.shape} for {grid.shape[0]} rows of 3 classes; "
                        f"it must return one row of 3 probabilities per row.")
    return SimplexMapData(grid, check_probabilities(out, "the map's output"), int(n_grid), bool(interior))
