"""The data of the three reliability diagrams, their bin-count rule and their captions (no plotly).

Every page, the report and the Groups & time view show the calibration of a
set of predictions as one of three diagrams. Each is a **prepare** (data, here)
and a **plot** (a figure, :mod:`calibdash.figures.diagrams`) pair, as relplot's
``prepare_rel_diagram`` / ``plot_rel_diagram``, so any caller draws any of them:

==========  ======================  ===========================================================
kind        prepare                 what it holds
==========  ======================  ===========================================================
Binned      :func:`prepare_binned`  :class:`BinnedData`: a reliability table per column
                                    (:func:`calibdash.metrics.reliability_table`), a bin count
                                    or ``"auto"`` by the stated rule (:func:`auto_bin_count`)
Smooth      :func:`prepare_smooth`  :class:`SmoothData`: SmoothECE's kernel-smoothed curve per
                                    column (Błasiok & Nakkiran, ICLR 2024;
                                    :func:`calibdash.smooth_ece.smoothed_curve`), optionally with
                                    its pointwise 95% Poisson-bootstrap band
CORP        :func:`prepare_corp`    :class:`CorpData`: the PAV fit of the labels on the scores per
                                    column (Dimitriadis, Gneiting & Jordan, PNAS 2021;
                                    :func:`calibdash.corp.corp_curve`), the Brier score's
                                    MCB/DSC/UNC decomposition, optionally the 90% consistency band
==========  ======================  ===========================================================

:func:`prepare` picks one by its kind. Each data object says its caption
(:meth:`BinnedData.caption`, ...): the text is :data:`CAPTIONS` and
:data:`BAND_CAPTIONS`, filled in with the data's numbers.

The bin-count rule
------------------
``n_bins="auto"`` asks for :data:`AUTO_RULE` (the cube root of the number of
rows, rounded up, clipped to [:data:`MIN_BINS`, :data:`MAX_BINS`]);
:func:`auto_bin_count` gives the count of any rule of :data:`BIN_RULES` and
:func:`describe_rule` the caption's line saying which rule gave it. Each
rule's phrase is :data:`RULE_TEXT`, its one-sentence summary :data:`RULE_SENTENCE`.

Inputs
------
``predictions`` is a DataFrame with one column per method (its key), one row
per (weighted) row; ``labels`` 0/1; ``weights`` optional, as
:attr:`calibdash.evaluation.Evaluation.weights` on score cells: a row of weight
``w`` counts as ``w`` rows (the auto rule counts the weights' sum, the bins hold
equal weight, the bands resample the rows the cells stand for), so on exact
score cells every diagram is the rows' diagram.

The smooth and CORP data are computed one column at a time by
:func:`smooth_column` and :func:`corp_column`; :func:`prepare_smooth` and
:func:`prepare_corp` take another function of the same signature as
``column=`` (the dashboard passes a cached one).
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Callable, ClassVar, Mapping, NamedTuple

import numpy as np
import pandas as pd

from .measures import calibration as metrics, corp, smooth_ece
from .errors import DataError, SettingsError

__all__ = [
    "BINNED", "SMOOTH", "CORP", "KINDS", "TITLES", "N_BOOT", "AUTO", "AUTO_RULE", "BIN_RULES", "MIN_BINS",
    "MAX_BINS", "RULE_TEXT", "RULE_SHORT", "RULE_SENTENCE", "BINNINGS", "CAPTIONS", "BAND_CAPTIONS", "check_kind",
    "display_names", "auto_bin_count", "describe_rule", "bin_count", "reliability_tables", "smooth_column", "corp_column",
    "CorpColumn", "BinnedData", "SmoothData", "CorpData", "prepare_binned", "prepare_smooth", "prepare_corp",
    "prepare",
]

BINNED, SMOOTH, CORP = "Binned", "Smooth", "CORP"
#: The diagram types, in the order the dashboard offers them.
KINDS = (BINNED, SMOOTH, CORP)
#: Each diagram type's default title.
TITLES = {BINNED: "Reliability diagram", SMOOTH: "Smoothed reliability diagram", CORP: "CORP reliability diagram"}
#: Resamples of a band (the default of both ``smoothed_curve_band`` and ``corp_band``; ``relplot`` and
#: ``reliabilitydiag`` also draw 100 by default).
N_BOOT = 100

# -- the bin-count rule ----------------------------------------------------------------------------------
#: The bins choice that asks for the stated rule's count.
AUTO = "auto"
#: The rule behind ``auto``.
AUTO_RULE = "cuberoot"
#: The rules of :func:`auto_bin_count`.
BIN_RULES = ("cuberoot", "sqrt", "min_count")
#: The counts of every rule are clipped to [MIN_BINS, MAX_BINS]: one bin shows nothing, and more than 100
#: cannot be told apart in a chart.
MIN_BINS, MAX_BINS = 2, 100
#: Each rule as the caption names it (``n`` the rows, ``min_count`` the rows a bin must hold).
RULE_TEXT = {"cuberoot": "cube root of n = {n:,} rows",
             "sqrt": "square root of n = {n:,} rows",
             "min_count": "at least {min_count:,} rows per bin, n = {n:,} rows"}
#: Each rule in a few words (the bins widget's ``auto`` entry) and in a sentence (its help).
RULE_SHORT = {"cuberoot": "cube root of n", "sqrt": "square root of n", "min_count": "rows per bin"}
RULE_SENTENCE = {
    "cuberoot": f"the cube root of the number of rows (rounded up, {MIN_BINS} to {MAX_BINS} bins)",
    "sqrt": f"the square root of the number of rows (rounded up, {MIN_BINS} to {MAX_BINS} bins)",
    "min_count": f"as many equal-count bins as keep min_count rows in each ({MIN_BINS} to {MAX_BINS} bins)",
}

# -- the captions ------------------------------------------------------------------------------------------
#: Each binning strategy in words.
BINNINGS = {"quantile": "equal-count", "uniform": "equal-width"}
#: Each diagram's caption; ``{bins}``: the bin count and its rule, ``{binning}``: :data:`BINNINGS`,
#: ``{bandwidths}``: each method's name and SmoothECE bandwidth.
CAPTIONS = {
    BINNED: ("Binned reliability diagram: {bins}, {binning}; each point is a bin's observed frequency against its "
             "mean prediction, with its 95% interval; the bars count its rows."),
    SMOOTH: ("Smoothed reliability diagram (SmoothECE, Błasiok & Nakkiran 2024): the kernel regression "
             "t + r(t) of the labels on the predictions, reflected Gaussian kernel at SmoothECE's own "
             "bandwidth σ (where smECE_σ = σ): {bandwidths}. The area between the curve and the diagonal, "
             "weighted by the density below, is the smECE in the legend."),
    CORP: ("CORP reliability diagram (Dimitriadis, Gneiting & Jordan 2021): no binning choice: the PAV "
           "(isotonic) fit of the labels on the scores, flat over each block it pools. Legend: the Brier "
           "score's decomposition, MCB (miscalibration) − DSC (discrimination) + UNC (uncertainty)."),
}
#: What a band adds to the caption (``{n_boot}``: its resamples).
BAND_CAPTIONS = {
    SMOOTH: " Shaded: the pointwise 95% bootstrap band ({n_boot} Poisson resamples of the rows).",
    CORP: (" Shaded: the 90% consistency band ({n_boot} resamples with labels drawn from the scores), "
           "where the curve of a calibrated forecast would fall."),
}


def check_kind(kind: str) -> str:
    """``kind`` as one of :data:`KINDS` (any letter case: ``"corp"`` is ``"CORP"``); SettingsError otherwise."""
    by_lower = {k.lower(): k for k in KINDS}
    if not isinstance(kind, str) or kind.lower() not in by_lower:
        raise SettingsError(f"kind must be one of {KINDS}, got {kind!r}.")
    return by_lower[kind.lower()]


# ----------------------------------------------------------------------------------------------------------
# The number of bins
# ----------------------------------------------------------------------------------------------------------
def _icbrt_ceil(n: int) -> int:
    """Smallest integer k with k^3 >= n (exact, no floating-point cube root)."""
    k = max(0, round(n ** (1.0 / 3.0)))
    while k ** 3 < n:
        k += 1
    while k > 0 and (k - 1) ** 3 >= n:
        k -= 1
    return k


def _check_rule(n, rule, min_count) -> tuple[int, int]:
    if rule not in BIN_RULES:
        raise SettingsError(f"rule must be one of {BIN_RULES}, got {rule!r}.")
    if int(min_count) != min_count or min_count < 1:
        raise SettingsError(f"min_count must be a whole number of at least 1, got {min_count}.")
    try:
        n_rows = int(math.floor(float(n)))
    except (TypeError, ValueError):
        raise DataError(f"n must be a number of rows, got {n!r}.") from None
    if n_rows < 1:
        raise DataError(f"n must be at least 1 row, got {n}.")
    return n_rows, int(min_count)


def _raw_bin_count(n: int, rule: str, min_count: int) -> int:
    if rule == "cuberoot":
        return _icbrt_ceil(n)
    if rule == "sqrt":
        r = math.isqrt(n)
        return r if r * r == n else r + 1
    return n // min_count


def auto_bin_count(n, rule: str = "cuberoot", min_count: int = 100) -> int:
    """A stated number of bins for a binned reliability diagram, clipped to [2, 100].

    Rules (``n`` the number of rows, the total weight for weighted data):

    ``"cuberoot"`` (default)
        ``ceil(n^(1/3))``: 1,000 rows give 10 bins, 1,728 give 12. The number
        of bins of order ``n^(1/3)`` is what BBQ (Naeini, Cooper & Hauskrecht
        2015) centres its range of binnings on, after the minimax rate of
        fixed-width histogram classifiers (Scott & Nowak 2003; Klemelä 2009);
        it also balances a bin's squared bias (its width, ``~1/B``, squared)
        against its variance (``~B/n``) for a smooth calibration curve.
    ``"sqrt"``
        ``ceil(sqrt(n))``, the common histogram default; more and noisier bins.
    ``"min_count"``
        ``floor(n / min_count)``: as many equal-count bins as keep at least
        ``min_count`` rows in each (so each bin's observed frequency has a
        standard error of at most ``0.5 / sqrt(min_count)``).

    Rules made for densities of unbounded data (Freedman-Diaconis, Scott)
    are not offered: they size bins by the spread of the scores, which for
    probabilities piled up near 0 or 1 gives bins with almost no rows.

    The result is clipped to [:data:`MIN_BINS`, :data:`MAX_BINS`]: one bin
    shows nothing, and more than 100 cannot be told apart in a chart.
    :func:`describe_rule` says which rule gave the number, for the chart's
    caption.
    """
    n_rows, min_count = _check_rule(n, rule, min_count)
    return int(min(MAX_BINS, max(MIN_BINS, _raw_bin_count(n_rows, rule, min_count))))


def describe_rule(n, rule: str = "cuberoot", min_count: int = 100) -> str:
    """One line for a chart: ``"12 bins (cube root of n = 1,728 rows)"`` (the rule's :data:`RULE_TEXT`)."""
    n_rows, min_count = _check_rule(n, rule, min_count)
    raw = _raw_bin_count(n_rows, rule, min_count)
    bins = auto_bin_count(n_rows, rule, min_count)
    what = RULE_TEXT[rule].format(n=n_rows, min_count=min_count)
    if raw > bins:
        what += f", capped at {MAX_BINS}"
    elif raw < bins:
        what += f", raised to the minimum of {MIN_BINS}"
    return f"{bins} bin{'s' if bins != 1 else ''} ({what})"


def bin_count(n_bins, labels, weights=None) -> tuple[int, str]:
    """``(bin count, caption text)`` of a bins choice: a count (``"10 bins"``) or :data:`AUTO`, which is
    :data:`AUTO_RULE` on the rows (the weights' sum when weighted): ``"auto: 12 bins (cube root of ...)"``."""
    if n_bins == AUTO:
        n = float(np.sum(weights)) if weights is not None else float(len(labels))
        return auto_bin_count(n, AUTO_RULE), "auto: " + describe_rule(n, AUTO_RULE)
    return int(n_bins), f"{int(n_bins)} bins"


# ----------------------------------------------------------------------------------------------------------
# One column's data
# ----------------------------------------------------------------------------------------------------------
def reliability_tables(predictions: pd.DataFrame, labels, n_bins: int = metrics.DEFAULT_N_BINS,
                       strategy: str = metrics.DEFAULT_STRATEGY, sample_weight=None) -> dict[str, pd.DataFrame]:
    """Reliability table of every column of ``predictions`` (method -> table).

    ``sample_weight``: the rows' weights, such as :attr:`calibdash.evaluation.Evaluation.weights` on score
    cells (each weighted row standing for that many rows); bins then hold equal weight and their counts are
    weight sums, so on exact cells the tables are those of the rows the cells summarise.
    """
    return {str(col): metrics.reliability_table(predictions[col].to_numpy(), labels, n_bins, strategy,
                                                sample_weight=sample_weight)
            for col in predictions.columns}


def smooth_column(p, y, w=None, *, band: bool = False, n_boot: int = N_BOOT) -> pd.DataFrame:
    """One column's smoothed curve (:func:`calibdash.smooth_ece.smoothed_curve`), with its band when asked
    (:func:`calibdash.smooth_ece.smoothed_curve_band`, ``n_boot`` Poisson resamples)."""
    if band:
        return smooth_ece.smoothed_curve_band(p, y, sample_weight=w, n_boot=n_boot)
    return smooth_ece.smoothed_curve(p, y, sample_weight=w)


class CorpColumn(NamedTuple):
    """One column's CORP data."""
    curve: pd.DataFrame                 # calibdash.corp.corp_curve
    band: pd.DataFrame | None           # calibdash.corp.corp_band (consistency), or None
    decomposition: dict                 # calibdash.corp.corp_decomposition: MCB, DSC, UNC, ...


def corp_column(p, y, w=None, *, band: bool = False, n_boot: int = N_BOOT) -> CorpColumn:
    """One column's CORP curve and decomposition, and its 90% consistency band when asked."""
    curve = corp.corp_curve(p, y, sample_weight=w)
    dec = corp.corp_decomposition(p, y, sample_weight=w)
    bnd = corp.corp_band(p, y, sample_weight=w, kind="consistency", n_boot=n_boot) if band else None
    return CorpColumn(curve, bnd, dec)


def _columns(predictions: pd.DataFrame, labels, weights):
    """``(key, p, y, w)`` of each column, as float predictions, labels and float weights (or None)."""
    y = np.asarray(labels)
    w = None if weights is None else np.asarray(weights, dtype=float)
    for col in predictions.columns:
        yield str(col), predictions[col].to_numpy(dtype=float), y, w


def display_names(names: Mapping[str, str] | None, keys) -> dict[str, str]:
    """Key -> display name for each of ``keys``: ``names``' entry, else the key itself."""
    names = dict(names or {})
    return {k: names.get(k, k) for k in keys}


# ----------------------------------------------------------------------------------------------------------
# The data of a diagram
# ----------------------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class BinnedData:
    """A binned reliability diagram: each method's reliability table and how it was binned."""
    tables: dict[str, pd.DataFrame]
    n_bins: int
    strategy: str
    bins_text: str                      # "10 bins", or "auto: 12 bins (cube root of n = 1,728 rows)"
    kind: ClassVar[str] = BINNED

    def caption(self, names: Mapping[str, str] | None = None) -> str:
        return CAPTIONS[BINNED].format(bins=self.bins_text, binning=BINNINGS.get(self.strategy, "equal-width"))


@dataclass(frozen=True)
class SmoothData:
    """A smoothed reliability diagram: each method's curve (``score``, ``calibrated``, ``density``, with
    ``lower`` and ``upper`` when banded; ``attrs``: ``smooth_ece``, ``bandwidth``)."""
    curves: dict[str, pd.DataFrame]
    band: bool = False
    n_boot: int = N_BOOT
    kind: ClassVar[str] = SMOOTH

    def caption(self, names: Mapping[str, str] | None = None) -> str:
        names = display_names(names, self.curves)
        sig = ", ".join(f"{names[k]} {c.attrs['bandwidth']:.4f}" for k, c in self.curves.items())
        text = CAPTIONS[SMOOTH].format(bandwidths=sig)
        return text + (BAND_CAPTIONS[SMOOTH].format(n_boot=self.n_boot) if self.band else "")


@dataclass(frozen=True)
class CorpData:
    """A CORP reliability diagram: each method's PAV curve, decomposition and (when banded) band."""
    curves: dict[str, pd.DataFrame]
    bands: dict[str, pd.DataFrame]
    decompositions: dict[str, dict]
    band: bool = False
    n_boot: int = N_BOOT
    kind: ClassVar[str] = CORP

    def caption(self, names: Mapping[str, str] | None = None) -> str:
        return CAPTIONS[CORP] + (BAND_CAPTIONS[CORP].format(n_boot=self.n_boot) if self.band else "")


def prepare_binned(predictions: pd.DataFrame, labels, weights=None, *, n_bins=metrics.DEFAULT_N_BINS,
                   strategy: str = metrics.DEFAULT_STRATEGY) -> BinnedData:
    """The binned diagram's data: ``n_bins`` a count or :data:`AUTO` (:func:`bin_count`), ``strategy``
    ``"uniform"`` or ``"quantile"``."""
    bins, said = bin_count(n_bins, labels, weights)
    return BinnedData(reliability_tables(predictions, labels, bins, strategy, sample_weight=weights),
                      bins, strategy, said)


def prepare_smooth(predictions: pd.DataFrame, labels, weights=None, *, band: bool = False, n_boot: int = N_BOOT,
                   column: Callable = smooth_column) -> SmoothData:
    """The smoothed diagram's data, ``column(p, y, w, band=, n_boot=)`` (default :func:`smooth_column`) per
    column; ``band``: the pointwise 95% bootstrap band of ``n_boot`` Poisson resamples."""
    curves = {k: column(p, y, w, band=band, n_boot=n_boot) for k, p, y, w in _columns(predictions, labels, weights)}
    return SmoothData(curves, band, n_boot)


def prepare_corp(predictions: pd.DataFrame, labels, weights=None, *, band: bool = False, n_boot: int = N_BOOT,
                 column: Callable = corp_column) -> CorpData:
    """The CORP diagram's data, ``column(p, y, w, band=, n_boot=)`` (default :func:`corp_column`) per column;
    ``band``: the 90% consistency band of ``n_boot`` resamples."""
    parts = {k: column(p, y, w, band=band, n_boot=n_boot) for k, p, y, w in _columns(predictions, labels, weights)}
    return CorpData({k: c[0] for k, c in parts.items()}, {k: c[1] for k, c in parts.items() if c[1] is not None},
                    {k: c[2] for k, c in parts.items()}, band, n_boot)


def prepare(kind: str, predictions: pd.DataFrame, labels, weights=None, *, band: bool = False,
            n_bins=metrics.DEFAULT_N_BINS, strategy: str = metrics.DEFAULT_STRATEGY,
            n_boot: int = N_BOOT) -> BinnedData | SmoothData | CorpData:
    """The data of the diagram ``kind`` (one of :data:`KINDS`, any case). ``n_bins`` and ``strategy`` are the
    binned diagram's, ``band`` and ``n_boot`` the others' (the binned one draws each bin's 95% interval)."""
    kind = check_kind(kind)
    if kind == BINNED:
        return prepare_binned(predictions, labels, weights, n_bins=n_bins, strategy=strategy)
    if kind == SMOOTH:
        return prepare_smooth(predictions, labels, weights, band=band, n_boot=n_boot)
    return prepare_corp(predictions, labels, weights, band=band, n_boot=n_boot)
