"""CORP reliability diagrams and score decomposition (Dimitriadis, Gneiting & Jordan, PNAS 2021).

Dimitriadis, Gneiting & Jordan, "Stable reliability diagrams for probabilistic classifiers", PNAS 118(8)
e2016191118 (2021), and their R package ``reliabilitydiag`` (github aijordan/reliabilitydiag), whose published
example this module reproduces (``tests/measures/test_corp.py``).

CORP (Consistent, Optimally binned, Reproducible, PAV-based): the recalibrated probability of a forecast ``x`` is the
isotonic regression of the labels on the forecasts by the pool-adjacent-violators algorithm (PAV), tied forecasts
pooled first (the package orders tied rows by decreasing label, which gives the same fit). PAV's blocks are the
diagram's bins: nothing to choose. The score decomposition of a proper score ``S`` (weighted means over the rows):
``S_bar = mean S(x, y)``, ``UNC = mean S(ybar, y)`` (climatology), ``DSC = UNC - mean S(PAV(x), y)`` and ``MCB =
S_bar - mean S(PAV(x), y)``, so that ``S_bar = MCB - DSC + UNC``; PAV's fit has the smallest mean score among the
non-decreasing functions of the forecast, for every proper score, hence ``MCB >= 0`` and ``DSC >= 0``.

Bands (the package's ``region.method = "resampling"``): the consistency band (``region.position = "diagonal"``) is
where the curve of a calibrated forecast would fall: each resample draws the forecasts with replacement, labels
``y* ~ Bernoulli(x)``, and refits PAV. The confidence band (``region.position = "estimate"``) is where the true
recalibration curve may lie: as the package's code and documentation do, labels are drawn from the full data's fit,
``y* ~ Bernoulli(PAV(x))``. The band is the pointwise ``(1 -+ level) / 2`` quantiles of the refitted curves at every
distinct forecast, a resampled curve interpolated between the forecasts it drew, NaN beyond them; for the confidence
band, bounds at inner forecasts whose recalibrated value is 0 or 1 are interpolated (``bound_correction``).

Two deviations from the package: rows are resampled by Poisson draws rather than drawing exactly ``n`` rows with
replacement, so that weighted score cells resample as the rows they stand for (the two agree as ``n`` grows); and
the package's asymptotic bands (used above about 1,000 to 5,000 rows) are not offered: resampling is used at every
size, its cost growing with the number of distinct forecasts, not of rows.
"""
from __future__ import annotations

import numpy as np
import pandas as pd
from scipy.special import xlogy
from sklearn.isotonic import isotonic_regression

from ..core.pav import Blocks, pav_blocks
from ..core.errors import SettingsError
from .binning import check_inputs, is_whole
from .smooth_ece import band_quantiles, check_boot

__all__ = ["corp_decomposition", "corp_curve", "corp_band"]

#: Proper scores :func:`corp_decomposition` decomposes.
SCORES = ("brier", "log")
#: The bands of :func:`corp_band`.
BAND_KINDS = ("consistency", "confidence")
#: The package's default band level (``region.level = 0.9``).
DEFAULT_LEVEL = 0.9


def _score(name: str, x: np.ndarray, y: np.ndarray) -> np.ndarray:
    """Per-row score of forecast ``x`` for label ``y`` (lower is better)."""
    if name == "brier":
        return (x - y) ** 2
    # log score: -log of the probability given to what happened; 0 * log 0 = 0, inf when x gave it probability 0
    with np.errstate(divide="ignore"):
        return -(xlogy(y, x) + xlogy(1.0 - y, 1.0 - x))


def _block_of(blocks: Blocks, p: np.ndarray) -> np.ndarray:
    """Index of the PAV block holding each forecast (rows of weight 0 may fall between blocks: any index)."""
    return np.minimum(np.searchsorted(blocks.last_score, p, side="left"), blocks.value.size - 1)


def corp_decomposition(probs, labels, sample_weight=None, score: str = "brier") -> dict[str, float]:
    """CORP decomposition ``S_bar = MCB - DSC + UNC`` of a proper score (module docstring).

    A row of weight ``w`` counts as ``w`` rows: every mean, PAV and the base rate are weighted. ``score``:
    ``"brier"``, ``(x - y)^2`` (the package's default), or ``"log"``, ``-log`` of the probability given to the
    outcome; a wrong forecast of 0 or 1 has an infinite log score, and then ``score`` and ``MCB`` are ``inf``
    (``DSC`` and ``UNC`` stay finite: PAV and climatology never give 0 to what happened). Returns a dict of
    ``"score"`` (``S_bar``), ``"MCB"``, ``"DSC"``, ``"UNC"`` (``reliabilitydiag``'s ``mean_score``,
    ``miscalibration``, ``discrimination``, ``uncertainty``).
    """
    if score not in SCORES:
        raise SettingsError(f"score must be one of {SCORES}, got {score!r}.")
    p, y, w = check_inputs(probs, labels, sample_weight)
    blocks = pav_blocks(p, y, w)
    recal = blocks.value[_block_of(blocks, p)]
    yf = y.astype(float)
    if w is not None:                       # rows of weight 0 take no part (and 0 * inf would be NaN)
        keep = w > 0
        p, yf, recal, w = p[keep], yf[keep], recal[keep], w[keep]

    def mean(v):
        return float(np.average(v, weights=w))

    base = mean(yf)
    s_bar = mean(_score(score, p, yf))
    s_rc = mean(_score(score, recal, yf))
    unc = mean(_score(score, np.full_like(p, base), yf))
    return {"score": s_bar, "MCB": s_bar - s_rc, "DSC": unc - s_rc, "UNC": unc}


def corp_curve(probs, labels, sample_weight=None) -> pd.DataFrame:
    """The CORP reliability curve: two rows per PAV block (one when it holds a single forecast value), in increasing
    order of ``score``: ``score`` (the block's smallest, then largest forecast), ``calibrated`` (its recalibrated
    probability), ``weight`` (its weight sum) and ``block`` (0, 1, ...). Joined by straight lines, the rows are the
    package's CORP line: flat over each block, a slanted step between blocks."""
    p, y, w = check_inputs(probs, labels, sample_weight)
    b = pav_blocks(p, y, w)
    score = np.column_stack([b.first_score, b.last_score]).ravel()
    block = np.repeat(np.arange(b.value.size), 2)
    keep = np.r_[True, (score[1:] != score[:-1]) | (block[1:] != block[:-1])]
    return pd.DataFrame({
        "score": score[keep],
        "calibrated": np.repeat(b.value, 2)[keep],
        "weight": np.repeat(np.asarray(b.count, dtype=float), 2)[keep],
        "block": block[keep],
    })


def _bound_correction(bound: np.ndarray, x: np.ndarray, cep: np.ndarray) -> np.ndarray:
    """The package's ``bound_correction``: bounds at inner forecasts whose recalibrated value is 0 or 1, and bounds
    no resample reached, are interpolated linearly from the others (R's ``approx``, NaN outside their range)."""
    if x.size == 1:
        return bound
    out = bound.copy()
    out[np.isin(cep, (0.0, 1.0)) & (x != x[0]) & (x != x[-1])] = np.nan
    ok = np.isfinite(out)
    if not ok.any():
        return out
    res = np.interp(x, x[ok], out[ok])
    res[(x < x[ok][0]) | (x > x[ok][-1])] = np.nan
    return res


def corp_band(probs, labels, sample_weight=None, kind: str = "consistency", n_boot: int = 100,
              level: float = DEFAULT_LEVEL, seed: int = 0) -> pd.DataFrame:
    """Consistency or confidence band of the CORP curve, by resampling (module docstring).

    ``kind``: labels redrawn from the forecasts themselves (``"consistency"``, around the diagonal) or from the
    recalibrated forecasts (``"confidence"``, around the CORP curve); ``n_boot`` resamples (the package's ``n.boot``)
    at the pointwise ``level`` (``region.level``), seeded by ``seed``. With whole weights (or none) every forecast
    value ``x`` of total weight ``c`` draws ``Poisson(c * x0)`` positives and ``Poisson(c * (1 - x0))`` negatives
    (``x0 = x`` or ``PAV(x)``), which is exactly each of its ``c`` rows drawn Poisson(1) times with a Bernoulli(x0)
    label per draw: score cells and their rows give the same band for the same seed. With fractional weights each row
    is drawn that way and keeps its weight. Returns a DataFrame with one row per distinct forecast value of positive
    weight: ``score``, ``lower``, ``upper`` (NaN where no resample reached).
    """
    if kind not in BAND_KINDS:
        raise SettingsError(f"kind must be one of {BAND_KINDS}, got {kind!r}.")
    n_boot, level = check_boot(n_boot, level)
    p, y, w = check_inputs(probs, labels, sample_weight)
    if w is not None:
        keep = w > 0
        p, y, w = p[keep], y[keep], w[keep]
    values, inverse = np.unique(p, return_inverse=True)
    inverse = inverse.reshape(-1)
    cep = None
    if kind == "confidence":
        blocks = pav_blocks(p, y, w)
        cep = blocks.value[_block_of(blocks, values)]
    x0 = values if cep is None else cep
    rng = np.random.default_rng(seed)
    whole = is_whole(w)
    if whole:
        c = np.bincount(inverse, weights=w, minlength=values.size).astype(float)
        lam_pos, lam_neg = c * x0, c * (1.0 - x0)
    else:
        lam_pos, lam_neg = x0[inverse], 1.0 - x0[inverse]
    curves = np.empty((n_boot, values.size))
    for b in range(n_boot):
        pos = rng.poisson(lam_pos).astype(float)
        neg = rng.poisson(lam_neg).astype(float)
        if not whole:
            pos = np.bincount(inverse, weights=w * pos, minlength=values.size)
            neg = np.bincount(inverse, weights=w * neg, minlength=values.size)
        total = pos + neg
        drawn = total > 0
        xs = values[drawn]
        if xs.size == 0:
            curves[b] = np.nan
            continue
        fit = isotonic_regression(pos[drawn] / total[drawn], sample_weight=total[drawn])
        if xs.size == 1:                    # one forecast drawn: the package repeats its value everywhere
            curves[b] = fit[0]
            continue
        curve = np.interp(values, xs, fit)
        curve[(values < xs[0]) | (values > xs[-1])] = np.nan
        curves[b] = curve
    lower, upper = band_quantiles(curves, level)
    if cep is not None:
        lower = _bound_correction(lower, values, cep)
        upper = _bound_correction(upper, values, cep)
    return pd.DataFrame({"score": values, "lower": lower, "upper": upper})
