"""The one registry of measures: a record per measure, binary and K-class tables as views of it.

A :class:`Measure` says what a table, an interval, a rank and the bootstrap need of a measure: its name, how it is
computed on weighted rows, which **reduction** of the predictions it reads, which value is best, its label and
caption, and, where the bootstrap can resample it without measuring every resample's rows, its **statistics form**
(:class:`Mean`, :class:`Binned`, :class:`Sorted`, :class:`Moments`). Reductions (what ``compute`` receives, always
followed by ``sample_weight``): ``score``, binary ``(p, y)``; ``top_label``, K classes ``(c, a)``, the confidence
``max_k P_ik`` and whether the argmax is right (Guo et al. 2017); ``ovr``, ``(P, Y)``, the K one-vs-rest columns
(``Y`` one-hot); ``classes``, ``(P, y)``, the (n, K) matrix and class indices. A problem offers reductions (binary:
:data:`BINARY`; K classes: :data:`CLASSES`), and :func:`view` gives the measures that read them, in declaration
order: declaring a measure is adding one record to :data:`RECORDS`.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Callable, Sequence

import numpy as np

from ..core.errors import SettingsError
from . import binned, calibration, corp, decomposition, hypothesis, recalibration, smooth_ece, smoother
from .binning import DEFAULT_N_BINS

__all__ = ["Mean", "Binned", "Sorted", "Moments", "BINARY", "view", "select_names"]

#: The reductions a binary problem offers, and those of a K-class problem.
BINARY = ("score",)
CLASSES = ("top_label", "ovr", "classes")
#: Bins of the K-class binned errors: 15, as Guo et al. (2017), netcal and torchmetrics use on CIFAR.
K_BINS = 15


@dataclass(frozen=True)
class Mean:
    """Statistics form: the weighted mean of a per-row ``term`` of the reduction, then ``then`` (e.g. a root);
    records sharing a ``term`` share its sum in the bootstrap (Brier and RMSE)."""

    term: Callable[..., np.ndarray]
    then: Callable[[np.ndarray], np.ndarray] | None = None


@dataclass(frozen=True)
class Binned:
    """Statistics form: ``part`` (``"ece"`` or ``"mce"``) of ``n_bins`` equal-width bins of the reduction's
    probabilities, from each bin's weight and gap sum (the ECEs of the one-vs-rest columns averaged)."""

    part: str
    n_bins: int = K_BINS


@dataclass(frozen=True)
class Sorted:
    """Statistics form: AUC, ECE or MCE of the score from its tied groups, sorted once (the bootstrap's bins
    are the metrics table's)."""

    part: str


@dataclass(frozen=True)
class Moments:
    """Statistics form: MVCE from the residuals' weighted mean and variance (:func:`.mvce.mvce_of_moments`)."""


@dataclass(frozen=True)
class Measure:
    """One measure.

    Attributes
    ----------
    name, label, caption : str
        Column name in tables (``"smECE"``, unique within a view); what it is, in a few words; where it comes from.
    reduction : str
        The reduction ``compute`` reads (module docstring).
    best : {"lower", "higher", "target", "none"}
        ``"target"``: the value closest to ``target`` is best; ``"none"``: not a ranking (the same for every method).
    compute : callable
        ``compute(*reduction, sample_weight) -> float``, or, with ``family`` (records computed together by one call),
        a dict holding every measure of the family.
    statistics : Mean, Binned, Sorted, Moments or None
        How the bootstrap resamples it without measuring each resample's rows (None: it does measure them).
    metric : bool
        One of the papers' metrics (:data:`calibdash.measures.calibration.METRIC_NAMES`, computed together by
        :func:`~calibdash.measures.calibration.summary`); the others are the further measures.
    """

    name: str
    label: str
    caption: str
    reduction: str
    best: str
    compute: Callable
    target: float = 0.0
    family: str = ""
    statistics: Mean | Binned | Sorted | Moments | None = None
    metric: bool = False

    @property
    def lower_is_better(self) -> bool | None:
        """True (lower is better), False (higher) or None (closest to a target, or unranked)."""
        return {"lower": True, "higher": False}.get(self.best)

    def phrase(self) -> str:
        """``"lower is better"``, ``"higher is better"``, ``"1 is ideal"`` or ``"the same for every method"``."""
        return {"lower": "lower is better", "higher": "higher is better", "none": "the same for every method",
                "target": f"{self.target:g} is ideal"}[self.best]

    def oriented(self, values):
        """``values`` turned so that lower is better (negated, or their distance to the target); keeps the type.
        SettingsError for a measure that ranks nothing (``best == "none"``)."""
        if self.best == "none":
            raise SettingsError(f"{self.name} is the same for every method of a data set: it ranks nothing.")
        if self.best == "lower":
            return values
        if self.best == "higher":
            return -values
        return abs(values - self.target)


# per-row terms of the averaged measures
def _class_log_loss(P, y):
    q = P[np.arange(P.shape[0]), y]
    return calibration.log_losses(q, np.ones_like(q))


def _class_brier(P, y):
    onehot = np.zeros_like(P)
    onehot[np.arange(P.shape[0]), y] = 1.0
    return calibration.squared_errors(P, onehot).sum(axis=1)


def _gap(c, a):
    return c - a


def _right(c, a):
    return np.asarray(a, dtype=float)


def _mean_of(term):
    """``compute`` of a :class:`Mean` record: the weighted mean of its term."""
    return lambda *rows: float(np.average(term(*rows[:-1]), weights=rows[-1]))


# the measures computed together (one call gives the family's values)
def _ici(p, y, w, loess_points=None) -> dict:
    out = smoother.ici(p, y, w, **({} if loess_points is None else {"max_points": int(loess_points)}))
    return {"ICI": out["ICI"], "E50": out["E50"], "E90": out["E90"]}


def _renamed(fn, entries: dict, **kw):
    """``compute`` of a family: ``fn(p, y, w, **kw)``'s ``entries`` (record name -> the result's key)."""
    def _compute(p, y, w) -> dict:
        out = fn(p, y, w, **kw)
        return {name: out[key] for name, key in entries.items()}
    return _compute


_cox = _renamed(recalibration.calibration_intercept_slope, {"CITL": "intercept", "Slope": "slope"})
_corp = _renamed(corp.corp_decomposition, {"MCB": "MCB", "DSC": "DSC", "UNC": "UNC"})
_murphy = _renamed(decomposition.brier_decomposition, {"REL": "reliability", "RES": "resolution"},
                   n_bins=DEFAULT_N_BINS, strategy="quantile")


def _per_class_ece(P, Y, w) -> float:
    return float(np.mean([calibration.ece(P[:, k], Y[:, k], K_BINS, "uniform", w) for k in range(P.shape[1])]))


_M = dict(reduction="score", family="summary", metric=True,
          compute=lambda p, y, w: calibration.summary(p, y, sample_weight=w))
_DGJ = "Dimitriadis, Gneiting & Jordan (2021), PNAS"
_AS = "Austin & Steyerberg (2019)"

#: Every measure, in table order within each view.
RECORDS: tuple[Measure, ...] = (
    # the papers' metrics of a binary score (calibdash.measures.calibration.summary)
    Measure("AUC", "area under the ROC curve (discrimination)", "Mann-Whitney statistic", best="higher",
            statistics=Sorted("AUC"), **_M),
    Measure("ACC", "accuracy at the threshold 0.5", "share of rows whose side of 0.5 is their label", best="higher",
            statistics=Mean(calibration.hits), **_M),
    Measure("RMSE", "root mean squared error of the probabilities", "BBQ, SBB/ABB and ELiTE papers", best="lower",
            statistics=Mean(calibration.squared_errors, np.sqrt), **_M),
    Measure("Brier", "Brier score, the mean squared error", "Brier (1950)", best="lower",
            statistics=Mean(calibration.squared_errors), **_M),
    Measure("LogLoss", "log loss (cross-entropy)", "mean negative Bernoulli log-likelihood", best="lower",
            statistics=Mean(calibration.log_losses), **_M),
    Measure("ECE", "expected calibration error", "Naeini et al. (2015)", best="lower", statistics=Sorted("ECE"),
            **_M),
    Measure("MCE", "maximum calibration error over the bins", "Naeini et al. (2015)", best="lower",
            statistics=Sorted("MCE"), **_M),
    Measure("MVCE", "multi-view calibration error (MBCT, Eq. 10)", "MBCT paper, Eq. 10", best="lower",
            statistics=Moments(), **_M),
    # the further measures of a binary score
    Measure("smECE", "smooth ECE", "Błasiok & Nakkiran (2023), Smooth ECE", "score", "lower",
            lambda p, y, w: smooth_ece.smooth_ece(p, y, w)),
    Measure("ACE", "adaptive ECE (15 equal-mass bins)", "Nixon et al. (2019), Measuring calibration in deep learning",
            "score", "lower", lambda p, y, w: binned.adaptive_ece(p, y, w)),
    Measure("dCE", "debiased l2 calibration error", "Kumar, Liang & Ma (2019), Verified uncertainty calibration",
            "score", "lower", lambda p, y, w: binned.debiased_l2_ce(p, y, w)),
    Measure("ICI", "integrated calibration index", _AS, "score", "lower", _ici, family="ici"),
    Measure("E50", "median loess calibration error", _AS, "score", "lower", _ici, family="ici"),
    Measure("E90", "90th percentile loess calibration error", _AS, "score", "lower", _ici, family="ici"),
    Measure("CITL", "calibration-in-the-large (intercept; 0 is ideal)", "Cox (1958); Van Calster et al. (2019)",
            "score", "target", _cox, family="cox"),
    Measure("Slope", "calibration slope (1 is ideal)", "Cox (1958)", "score", "target", _cox, target=1.0,
            family="cox"),
    Measure("MCB", "CORP miscalibration (Brier)", _DGJ, "score", "lower", _corp, family="corp"),
    Measure("DSC", "CORP discrimination (Brier)", _DGJ, "score", "higher", _corp, family="corp"),
    Measure("UNC", "CORP uncertainty (Brier)", _DGJ, "score", "none", _corp, family="corp"),
    Measure("REL", "Murphy reliability (10 equal-count bins)", "Murphy (1973)", "score", "lower", _murphy,
            family="murphy"),
    Measure("RES", "Murphy resolution (10 equal-count bins)", "Murphy (1973)", "score", "higher", _murphy,
            family="murphy"),
    Measure("Spieg. z", "Spiegelhalter's z (0 is ideal)", "Spiegelhalter (1986)", "score", "target",
            lambda p, y, w: hypothesis.spiegelhalter_z(p, y, w)["z"]),
    Measure("HL", "Hosmer-Lemeshow statistic (10 groups)", "Hosmer & Lemeshow (1980)", "score", "lower",
            lambda p, y, w: hypothesis.hosmer_lemeshow(p, y, w)["statistic"]),
    # K classes
    Measure("ECE", "confidence ECE (15 equal-width bins)",
            "Expected calibration error of the top class's probability against correctness "
            "(Guo et al. 2017; 15 equal-width bins, as netcal and torchmetrics).", "top_label", "lower",
            lambda c, a, w: calibration.ece(c, a, K_BINS, "uniform", w), statistics=Binned("ece")),
    Measure("MCE", "confidence MCE (15 equal-width bins)",
            "Largest gap between accuracy and confidence over the non-empty bins (Guo et al. 2017).", "top_label",
            "lower", lambda c, a, w: calibration.mce(c, a, K_BINS, "uniform", w), statistics=Binned("mce")),
    Measure("cwECE", "class-wise ECE (mean over classes, 15 equal-width bins)",
            "Mean over classes of each class's ECE, one-vs-rest (Kull et al. 2019).", "ovr", "lower",
            _per_class_ece, statistics=Binned("ece")),
    Measure("smECE", "smooth ECE of the confidence",
            "SmoothECE of the top class's probability against correctness (Błasiok & Nakkiran 2023).", "top_label",
            "lower", lambda c, a, w: smooth_ece.smooth_ece(c, a, w)),
    Measure("dCE", "debiased l2 error of the confidence (15 equal-mass bins)",
            "Debiased l2 calibration error of the confidence (Kumar, Liang & Ma 2019).", "top_label", "lower",
            lambda c, a, w: binned.debiased_l2_ce(c, a, w, n_bins=K_BINS)),
    Measure("LogLoss", "log-loss of the true class", "Mean negative log-probability of the true class (a proper "
            "score).", "classes", "lower", _mean_of(_class_log_loss), statistics=Mean(_class_log_loss)),
    Measure("Brier", "Brier score (sum over classes)",
            "Mean over rows of the squared distance to the one-hot label (Brier 1950; 0 to 2).", "classes", "lower",
            _mean_of(_class_brier), statistics=Mean(_class_brier)),
    Measure("Accuracy", "accuracy (argmax)", "Share of rows whose most probable class is the true one.",
            "top_label", "higher", _mean_of(_right), statistics=Mean(_right)),
    Measure("Overconfidence", "mean confidence minus accuracy (0 is ideal)",
            "Mean top probability minus accuracy: positive is overconfident, negative underconfident.", "top_label",
            "target", _mean_of(_gap), statistics=Mean(_gap)),
)


def view(reductions: Sequence[str], metric: bool | None = None) -> dict[str, Measure]:
    """name -> record of the measures reading one of ``reductions``, in declaration order (``metric``: only
    the papers' metrics (True) or only the others (False))."""
    return {m.name: m for m in RECORDS
            if m.reduction in reductions and (metric is None or m.metric == metric)}


def select_names(names: Sequence[str] | None, known: Sequence[str], what: str = "measure") -> tuple[str, ...]:
    """The asked names of ``known`` in ``known``'s order (all when ``names`` is None); SettingsError for a name not
    in ``known`` (``"unknown {what} 'x'; choose from ..."``)."""
    if names is None:
        return tuple(known)
    unknown = [n for n in names if n not in known]
    if unknown:
        raise SettingsError(f"unknown {what} {unknown[0]!r}; choose from {', '.join(known)}.")
    return tuple(n for n in known if n in set(names))
