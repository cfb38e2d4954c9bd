"""Measures of K-class probabilities: binned calibration errors, proper scores, accuracy, and their table.

Every measure takes ``P`` (n, K) class probabilities, ``y`` (n,) class indices (the column order of ``P``) and
``sample_weight`` (n,). ``P`` is checked as the calibrators check it
(:func:`~calibdash.core.validation.check_probabilities`; an entry above 1 is refused) but measured **as given**, not
divided by its row sums: renormalising could move a probability lying on a bin edge into the next bin. netcal and
torchmetrics also measure the values as given (``tests/measures/test_class_measures.py`` checks their published CIFAR
figures).

The calibration errors are binary measures applied to a reduction of ``(P, y)`` (Gupta & Ramdas 2022,
"multiclass-to-binary"), binned by :mod:`calibdash.measures.binning`: **confidence** (:func:`top_label`),
``max_k P_ik`` against whether the argmax (lowest index among ties) is right, the "confidence calibration" of Guo et
al. (2017) that netcal and torchmetrics call top-label (Gupta & Ramdas argue top-label calibration should also
condition on the predicted class; this ECE reproduces the libraries' figures and follows their name); and
**class-wise** (:func:`per_class_ece`), ``P_ik`` against ``1[y_i = k]`` (Kull et al. 2019; Nixon et al. 2019's static
calibration error).

Bins: ``strategy="uniform"`` (the default, as netcal, torchmetrics and Guo et al.): bin ``b`` holds
``b/B <= p < (b+1)/B``, the last bin also ``p = 1`` (numpy's histogram bins, as netcal; torchmetrics counts a
confidence of exactly 1.0 in a hidden extra bin, issue #3510, and Guo et al.'s code closes the bins on the right:
they differ only on an edge). ``strategy="quantile"``: equal-mass bins (Nixon et al. 2019's adaptive binning).
:data:`N_BINS` = 15, the papers' choice for CIFAR.
"""
from __future__ import annotations

from typing import Mapping

import numpy as np
import pandas as pd

from ..core.errors import DataError, SettingsError
from . import binning, calibration
from .binning import STRATEGIES
from .registry import CLASSES, K_BINS, Measure, select_names, view
from ..core.validation import check_classes, check_probabilities, check_weights

__all__ = ["N_BINS", "AVERAGES", "check_inputs", "check_binning", "top_label", "top_label_ece", "classwise_ece",
           "per_class_ece", "accuracy", "MEASURES", "MEASURE_NAMES", "check_names", "compute", "reductions",
           "check_methods", "measure_table"]

#: Bins of the binned errors: 15, as Guo et al. (2017), netcal and torchmetrics use on CIFAR.
N_BINS = K_BINS
#: How :func:`classwise_ece` combines the classes.
AVERAGES = ("mean", "sum")


def check_inputs(P, y, sample_weight=None):
    """Validated ``(P, y, w)``: ``P`` (n, K) float64 as given, ``y`` int64 class indices, ``w`` None (every row
    weighs 1) or n finite non-negative weights with a positive sum. DataError as
    :func:`~calibdash.core.validation.check_probabilities`, :func:`~calibdash.core.validation.check_classes` and
    :func:`~calibdash.core.validation.check_weights` say, or for an entry above 1.
    """
    check_probabilities(P)
    P = np.asarray(P, dtype=float)
    above = P > 1.0
    if above.any():
        i = int(np.flatnonzero(above.any(axis=1))[0])
        raise DataError(f"probabilities hold {int(above.sum()):,} values above 1 (the first in row {i}); "
                        "a probability lies in [0, 1].")
    y = check_classes(y, P.shape[0], P.shape[1])
    return P, y, check_weights(sample_weight, P.shape[0])


def check_binning(n_bins, strategy: str) -> int:
    """``n_bins`` as an int after checking it and ``strategy`` (SettingsError naming the bad one)."""
    if strategy not in STRATEGIES:
        raise SettingsError(f"strategy must be one of {STRATEGIES}, got {strategy!r}.")
    return binning.check_binning(n_bins, strategy, False)


def top_label(P, y) -> tuple[np.ndarray, np.ndarray]:
    """The confidence reduction: ``(c, a)`` with ``c_i = max_k P_ik`` and ``a_i = 1[argmax_k P_ik = y_i]`` (0/1 as
    ``int8``; tied maxima: the lowest index)."""
    P, y, _ = check_inputs(P, y)
    return _confidence(P, y)


def _confidence(P: np.ndarray, y: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """:func:`top_label` on checked arrays."""
    return P.max(axis=1), (P.argmax(axis=1) == y).astype(np.int8)


def top_label_ece(P, y, n_bins: int = N_BINS, strategy: str = "uniform", sample_weight=None) -> float:
    """Confidence ECE (Guo et al. 2017, Eq. 3; Naeini et al. 2015): ``sum_b (|B_b| / N) |acc(B_b) - conf(B_b)|``.

    The bins ``B_b`` are cut on the confidence ``c_i = max_k P_ik`` (``n_bins`` equal-width or,
    ``strategy="quantile"``, equal-mass bins), ``acc(B_b)`` is the (weighted) share of the bin's rows whose predicted
    class is right and ``conf(B_b)`` their mean confidence: :func:`calibdash.measures.calibration.ece` of
    :func:`top_label`.
    """
    n_bins = check_binning(n_bins, strategy)
    P, y, w = check_inputs(P, y, sample_weight)
    c, a = _confidence(P, y)
    return calibration.ece(c, a, n_bins, strategy, w)


def per_class_ece(P, y, n_bins: int = N_BINS, strategy: str = "uniform", sample_weight=None) -> np.ndarray:
    """Each class's ECE, shape (K,): ``ECE_k = sum_b (|B_bk| / N) |freq_k(B_bk) - mean P_k(B_bk)|``.

    ``B_bk`` are the bins of the class-``k`` probabilities ``P_ik``, ``freq_k`` the (weighted) share of their rows
    labelled ``k``: :func:`calibdash.measures.calibration.ece` of ``(P[:, k], 1[y = k])``. A class no row is
    labelled with still has an ECE (its mean predicted probability per bin against 0).
    """
    n_bins = check_binning(n_bins, strategy)
    P, y, w = check_inputs(P, y, sample_weight)
    return np.array([calibration.ece(P[:, k], (y == k).astype(np.int8), n_bins, strategy, w)
                     for k in range(P.shape[1])])


def classwise_ece(P, y, n_bins: int = N_BINS, strategy: str = "uniform", average: str = "mean",
                  sample_weight=None) -> float:
    """Class-wise ECE (Kull et al. 2019, section 5): the per-class ECEs (:func:`per_class_ece`) combined.

    ``average="mean"``: ``(1/K) sum_k ECE_k``, Kull et al.'s definition and Nixon et al.'s (2019) static calibration
    error (SCE); ``average="sum"``: ``sum_k ECE_k``, ``K`` times larger, as some code reports it.
    """
    if average not in AVERAGES:
        raise SettingsError(f"average must be one of {AVERAGES}, got {average!r}.")
    per_class = per_class_ece(P, y, n_bins, strategy, sample_weight)
    return float(per_class.mean() if average == "mean" else per_class.sum())


def log_loss(P, y, sample_weight=None, eps: float = calibration.LOG_LOSS_EPS) -> float:
    """Mean negative log-likelihood of the true class: ``-(1/N) sum_i w_i ln q_i``, ``q_i = P_{i, y_i}`` clipped to
    ``[eps, 1 - eps]`` as the binary log-loss clips, so a true class of probability 0 costs ``-ln eps`` (34.5)."""
    P, y, w = check_inputs(P, y, sample_weight)
    q = P[np.arange(P.shape[0]), y]
    return float(np.average(calibration.log_losses(q, np.ones_like(q), eps), weights=w))


def accuracy(P, y, sample_weight=None) -> float:
    """(Weighted) share of rows whose predicted class (argmax, lowest index on ties) is ``y``."""
    return _measured(*check_inputs(P, y, sample_weight), ("Accuracy",))["Accuracy"]


# the table of measures: the K-class view of the one registry
#: name -> record (:class:`calibdash.measures.registry.Measure`) of the measures of K classes, in table order.
MEASURES: dict[str, Measure] = view(CLASSES)
MEASURE_NAMES = tuple(MEASURES)


def check_names(names) -> tuple[str, ...]:
    """The asked measures in table order (all when ``names`` is None); SettingsError for an unknown name."""
    return select_names(names, MEASURE_NAMES, "multi-class measure")


def compute(P, y, sample_weight=None, names=None) -> dict[str, float]:
    """The asked measures (default all of :data:`MEASURES`) of one method's ``P``: name -> value."""
    return _measured(*check_inputs(P, y, sample_weight), check_names(names))


def reductions(P: np.ndarray, y: np.ndarray) -> dict[str, tuple]:
    """Checked ``(P, y)``'s reductions, each as the arrays a record of that reduction reads before its weights
    (:mod:`calibdash.measures.registry`): ``top_label`` ``(c, a)``, ``ovr`` ``(P, Y)``, ``classes`` ``(P, y)``."""
    onehot = (y[:, None] == np.arange(P.shape[1])).astype(np.int8)
    return {"top_label": _confidence(P, y), "ovr": (P, onehot), "classes": (P, y)}


def _measured(P: np.ndarray, y: np.ndarray, w, want: tuple[str, ...]) -> dict[str, float]:
    """The measures ``want`` of checked ``(P, y, w)``: each record on its reduction, made once."""
    reduced = reductions(P, y)
    return {n: float(MEASURES[n].compute(*reduced[MEASURES[n].reduction], w)) for n in want}


def check_methods(P_by_method: Mapping[str, np.ndarray], y, sample_weight=None):
    """``({key: P}, y, w)``: every method's probabilities checked (:func:`check_inputs`) for the same rows; DataError
    if the mapping is empty, a method's input is invalid, or the methods' shapes differ."""
    if not P_by_method:
        raise DataError("no predictions: the mapping of methods to probabilities is empty.")
    out = {}
    for key, P in P_by_method.items():
        out[str(key)], y_checked, w = check_inputs(P, y, sample_weight)
    shapes = {P.shape for P in out.values()}
    if len(shapes) > 1:
        raise DataError(f"every method's probabilities must have the same shape; got {sorted(shapes)}.")
    return out, y_checked, w


def measure_table(P_by_method: Mapping[str, np.ndarray], y, sample_weight=None, names=None) -> pd.DataFrame:
    """One row per method (the mapping's keys, in its order), one column per measure of :data:`MEASURES`; every
    method's ``P`` must have the rows of ``y`` (and ``w``) and the same number of classes."""
    Ps, y, sample_weight = check_methods(P_by_method, y, sample_weight)
    want = check_names(names)
    rows = {m: _measured(P, y, sample_weight, want) for m, P in Ps.items()}
    return pd.DataFrame.from_dict(rows, orient="index").reindex(columns=list(want))
