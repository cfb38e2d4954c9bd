"""Explaining the isotonic family: a fitted isotonic regression by pooling its training rows into PAV blocks again
(:func:`calibdash.core.pav.pav_blocks`, as ``fit``), a fitted Venn-Abers predictor (which keeps the distinct
calibration scores and ``F0``, ``F1`` there) by computing its tables again
(:func:`calibdash.calibrators.venn_abers.fit_tables`); :func:`interval_band` gives the band ``[p0, p1]`` on any grid,
for the dashboard's calibration map."""
from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

import numpy as np
import pandas as pd
from sklearn.isotonic import isotonic_regression

from ..calibrators.isotonic import IsotonicCalibrator
from ..calibrators.venn_abers import VennAbersCalibrator, fit_tables, interval_at, merge
from ..core.pav import pav_blocks
from ..core.validation import check_scores
from . import Explanation, explains, not_the_rows, training_rows

__all__ = ["VennAbersExplanation", "interval_band", "band_grid", "weighted_quantiles"]

#: Largest difference between the calibrator's tables (isotonic: its map at a block's first score) and the ones
#: found again from the rows.
TABLE_TOL = 1e-12
#: Evenly spaced points of the band's grid (the distinct calibration scores are added, see :func:`band_grid`).
GRID_POINTS = 501
#: At most this many calibration scores are added to the band's grid (quantiles beyond it).
MAX_GRID_SCORES = 2000


@dataclass(kw_only=True)
class VennAbersExplanation(Explanation):
    """What :func:`explain` finds behind a fitted Venn-Abers predictor: ``merge`` (its rule, ``"log"`` or
    ``"brier"``); ``band``, the interval on :func:`band_grid`: ``score``, ``p0``, ``p1``, ``p`` (merged), ``width``
    (``p1 - p0``); ``at_scores``, one row per distinct calibration score: ``score``, ``count`` (rows; weight sum when
    weighted), ``positives``, ``p0``, ``p1``, ``p``, ``width``, ``isotonic`` (the isotonic fit of the calibration set
    alone there, between ``p0`` and ``p1``); ``width``, one row of statistics of ``p1 - p0`` over the calibration rows
    (weighted): ``mean``, ``median``, ``p90``, ``max``, ``mean_over_grid`` (over the evenly spaced grid)."""

    merge: str
    band: pd.DataFrame
    at_scores: pd.DataFrame
    width: pd.DataFrame


def weighted_quantiles(x: np.ndarray, q, sample_weight: np.ndarray) -> np.ndarray:
    """Quantiles ``q`` of ``x`` where each value counts ``sample_weight`` times (the inverse of the weighted CDF: the
    smallest ``x`` whose cumulative weight reaches ``q`` of the total); empty when the total weight is not positive."""
    order = np.argsort(x, kind="stable")
    x, cum = x[order], np.cumsum(sample_weight[order])
    if not cum.size or cum[-1] <= 0:
        return np.empty(0)
    return x[np.clip(np.searchsorted(cum, q * cum[-1], side="left"), 0, x.size - 1)]


def band_grid(calibrator, n: int = GRID_POINTS) -> np.ndarray:
    """Scores to draw the band at: ``n`` evenly spaced on [0, 1] and the distinct calibration scores (at most
    :data:`MAX_GRID_SCORES` of them, evenly spaced in rank), where ``[p0, p1]`` changes."""
    u = np.asarray(calibrator.scores_, dtype=float)
    if u.size > MAX_GRID_SCORES:
        u = u[np.unique(np.linspace(0, u.size - 1, MAX_GRID_SCORES).round().astype(int))]
    return np.union1d(np.linspace(0.0, 1.0, int(n)), u)


def interval_band(calibrator, grid) -> pd.DataFrame:
    """The band ``[p0, p1]`` and the merged prediction ``p`` (what ``predict`` gives) of a fitted VennAbersCalibrator
    at the scores ``grid`` (in [0, 1]), for a calibration map: columns ``score``, ``p0``, ``p1``, ``p``, in the grid's
    order."""
    g = check_scores(grid, "grid")
    p0, p1 = calibrator.predict_interval(g)
    return pd.DataFrame({"score": g, "p0": p0, "p1": p1, "p": calibrator.predict(g)})


@explains(VennAbersCalibrator)
def explain(calibrator, scores, labels, features=None, sample_weight=None) -> VennAbersExplanation:
    """Explain a fitted Venn-Abers predictor on the calibration rows it was fitted on (the arguments:
    :func:`calibdash.explain.explain`)."""
    cal = calibrator
    s, y, w = training_rows(cal, scores, labels, sample_weight)
    t = fit_tables(s, y, w)
    same = (t.scores.size == cal.scores_.size and np.array_equal(t.scores, cal.scores_)
            and np.allclose(t.f0, cal.f0_, rtol=0.0, atol=TABLE_TOL)
            and np.allclose(t.f1, cal.f1_, rtol=0.0, atol=TABLE_TOL))
    if not same:
        raise not_the_rows("the Venn-Abers predictor", "their F0/F1 tables differ from its own")
    rule = cal.merge
    iso = np.clip(isotonic_regression(t.positives / t.weight, sample_weight=t.weight, increasing=True), 0.0, 1.0)
    at = pd.DataFrame({"score": t.scores, "count": t.weight, "positives": t.positives, "p0": t.f0, "p1": t.f1,
                       "p": merge(t.f0, t.f1, rule), "width": t.f1 - t.f0, "isotonic": iso})

    grid = band_grid(cal)
    band = interval_band(cal, grid)
    band["width"] = band["p1"] - band["p0"]

    widths = at["width"].to_numpy()
    total = float(t.weight.sum())
    even = np.linspace(0.0, 1.0, GRID_POINTS)
    e0, e1 = interval_at(cal.scores_, cal.f0_, cal.f1_, even)
    median, p90 = weighted_quantiles(widths, np.array([0.5, 0.9]), t.weight)
    stats = {"mean": float(np.sum(widths * t.weight) / total), "median": float(median), "p90": float(p90),
             "max": float(widths.max()),
             "mean_over_grid": float(np.mean(e1 - e0))}
    width = pd.DataFrame([stats])

    notes = [
        f"Fitted on {s.size:,} calibration rows with {t.scores.size:,} distinct scores"
        + (f" (sample weights, total {total:,.6g}: a row of weight w counts as w rows)." if w is not None else "."),
        "p0 (p1) is the isotonic regression at the test score of the calibration rows plus the test row "
        "labelled 0 (1); one of the two is perfectly calibrated whatever the distribution (Vovk & Petej, 2014).",
        f"Interval width p1 - p0 over the calibration rows: mean {stats['mean']:.4g}, median "
        f"{stats['median']:.4g}, 90th percentile {stats['p90']:.4g}, largest {stats['max']:.4g}; it shrinks "
        "roughly as one over the number of rows in an isotonic block.",
        "The point prediction merges the interval by minimax regret for "
        + ("log loss: p = p1 / (1 - p0 + p1)." if rule == "log" else "Brier loss: p = p1 + (p0² - p1²) / 2."),
        "Below the smallest calibration score p0 = 0 and above the largest p1 = 1: outside the calibration "
        "range the interval is at least as wide as at the nearest calibration score.",
    ]
    return VennAbersExplanation(method=cal.name, notes=notes,
                                tables={"interval at the calibration scores": at, "interval width": width},
                                merge=rule, band=band, at_scores=at, width=width)


@dataclass(kw_only=True)
class IsotonicExplanation(Explanation):
    """What :func:`explain` finds behind a fitted isotonic regression: ``blocks``, one row per PAV block,
    ``first_score``, ``last_score`` (its smallest and largest training score), ``count`` (training rows; their weight
    when fitted with weights), ``value`` (its fitted value, non-decreasing from block to block)."""

    drawn: ClassVar[bool] = False               # its notes and tables; its map is the calibration map
    blocks: pd.DataFrame


@explains(IsotonicCalibrator)
def explain_isotonic(calibrator, scores, labels, features=None, sample_weight=None) -> IsotonicExplanation:
    """Explain a fitted isotonic regression on the rows it was fitted on (the arguments:
    :func:`calibdash.explain.explain`)."""
    cal = calibrator
    s, y, w = training_rows(cal, scores, labels, sample_weight)
    b = pav_blocks(s, y, w)
    if not np.allclose(cal.predict(b.first_score), b.value, rtol=0.0, atol=TABLE_TOL):
        raise not_the_rows("the isotonic regression", "its map differs from the blocks they pool into")
    blocks = pd.DataFrame({"first_score": b.first_score, "last_score": b.last_score, "count": b.count,
                           "value": b.value})
    return IsotonicExplanation(method=cal.name, tables={"blocks": blocks}, blocks=blocks)
