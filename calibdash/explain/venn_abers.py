"""Explaining a fitted Venn-Abers predictor (which keeps the distinct calibration scores and ``F0``, ``F1`` there):
its tables computed again from the rows it was fitted on (:func:`calibdash.calibrators.venn_abers.fit_tables`, as
``fit``), the interval ``[p0, p1]`` on a score grid and at each calibration score beside the plain isotonic fit (which
always lies inside it), and statistics of its width. :func:`interval_band` gives the band on any grid, for the
dashboard's calibration map."""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd
from sklearn.isotonic import isotonic_regression

from ..calibrators.venn_abers import VennAbersCalibrator, fit_tables, interval_at, merge
from ..core.validation import check_scores, check_weights
from . import Explanation, explains, not_the_rows, training_rows

__all__ = ["VennAbersExplanation", "interval_band", "band_grid"]

#: Largest difference between the calibrator's tables and the ones found again from the rows.
TABLE_TOL = 1e-12
#: Evenly spaced points of the band's grid (the distinct calibration scores are added, see :func:`band_grid`).
GRID_POINTS = 501
#: At most this many calibration scores are added to the band's grid (quantiles beyond it).
MAX_GRID_SCORES = 2000


@dataclass(kw_only=True)
class VennAbersExplanation(Explanation):
    """What :func:`explain` finds behind a fitted Venn-Abers predictor.

    Attributes
    ----------
    merge : str
        The calibrator's merge rule (``"log"`` or ``"brier"``).
    band : DataFrame
        The interval on a score grid (:func:`band_grid`): ``score``, ``p0``, ``p1``, ``p`` (the merged prediction),
        ``width`` (``p1 - p0``).
    at_scores : DataFrame
        One row per distinct calibration score: ``score``, ``count`` (rows; weight sum when fitted with weights),
        ``positives``, ``p0``, ``p1``, ``p``, ``width`` and ``isotonic`` (the isotonic regression of the calibration
        set alone at that score, between ``p0`` and ``p1``).
    width : DataFrame
        One row: statistics of ``p1 - p0`` over the calibration rows (weighted): ``mean``, ``median``, ``p90``,
        ``max``, and ``mean_over_grid`` (the mean over the evenly spaced grid).
    """

    merge: str
    band: pd.DataFrame
    at_scores: pd.DataFrame
    width: pd.DataFrame


def _weighted_quantile(x: np.ndarray, w: np.ndarray, q: float) -> float:
    """The smallest ``x`` whose cumulative weight reaches ``q`` of the total (``x`` sorted)."""
    cum = np.cumsum(w)
    return float(x[min(int(np.searchsorted(cum, q * cum[-1], side="left")), x.size - 1)])


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
    s, y = training_rows(cal, scores, labels)
    w = check_weights(sample_weight, s.size, y)
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
    order = np.argsort(widths)
    stats = {"mean": float(np.sum(widths * t.weight) / total),
             "median": _weighted_quantile(widths[order], t.weight[order], 0.5),
             "p90": _weighted_quantile(widths[order], t.weight[order], 0.9),
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
