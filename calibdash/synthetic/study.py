"""The true calibration error of a scenario, and the estimator study: one draw halved (a :class:`Trial`), repeated
over seeds, and its summary per method.

:func:`true_calibration_error` integrates ``E |f(s) - g(s)|^p`` (then the p-th root) over the population's score
distribution by the midpoint rule in the quantile domain (:data:`N_NODES` nodes), with ``g`` the identity (raw
scores) or a fitted calibrator. The two ``against`` readings agree for one-to-one maps (raw scores, Platt); for
step maps (histogram, isotonic, BBQ) the one against the prediction is smaller.
"""
from __future__ import annotations

import functools
import math
from dataclasses import dataclass
from typing import Callable, Sequence

import numpy as np
import pandas as pd

from ..measures import calibration as metrics
from ..core.errors import DataError
from ..evaluation.holdout import UNCALIBRATED, Scheme, split_indices
from ..evaluation.methods import resolve
from .scenarios import Draw, draw, population

__all__ = []

#: Quadrature nodes (quantile midpoints) of :func:`true_calibration_error`.
N_NODES = 2 ** 16


def _predictor(calibrated_fn):
    if calibrated_fn is None:
        return lambda s: s
    if hasattr(calibrated_fn, "predict"):
        return calibrated_fn.predict
    if callable(calibrated_fn):
        return calibrated_fn
    raise DataError("calibrated_fn must be a fitted calibrator, a function of the score, or None.")


@functools.lru_cache(maxsize=32)
def true_nodes(name: str, n_nodes: int) -> tuple[np.ndarray, np.ndarray]:
    s, f = population(name).nodes(int(n_nodes))
    for a in (s, f):
        a.setflags(write=False)
    return s, f


def true_errors(f: np.ndarray, g: np.ndarray, p: float) -> tuple[float, float]:
    """(error against the score, error against the prediction) of predictions ``g`` at nodes with truth ``f``."""
    _, group = np.unique(g, return_inverse=True)
    f_given_g = (np.bincount(group, weights=f) / np.bincount(group))[group]
    return (float(np.mean(np.abs(f - g) ** p) ** (1.0 / p)),
            float(np.mean(np.abs(f_given_g - g) ** p) ** (1.0 / p)))


def true_calibration_error(name: str, calibrated_fn=None, p: float = 1, *, against: str = "score",
                           n_nodes: int = N_NODES) -> float:
    """The population's true calibration error ``(E |f(s) - g(s)|^p)^(1/p)``.

    Parameters
    ----------
    name : str
        Scenario.
    calibrated_fn : fitted Calibrator, callable or None
        ``g``: a fitted calibrator (its ``predict``), any function of the score array, or None for the raw scores.
    p : float, default 1
        The norm (1: mean absolute error, comparable with ECE and MVCE).
    against : {"score", "prediction"}
        ``"score"``: compare ``g(s)`` with the true probability given the score, f(s). ``"prediction"``: with
        the true probability given the prediction, ``E[f(s) | g(s)]`` (the strict calibration error, what a
        binned ECE estimates).
    n_nodes : int
        Midpoint nodes in the quantile domain of the score distribution.
    """
    if p <= 0:
        raise DataError(f"p must be positive, got {p}.")
    if against not in ("score", "prediction"):
        raise DataError(f"against must be 'score' or 'prediction', got {against!r}.")
    s, f = true_nodes(name, int(n_nodes))
    g = np.asarray(_predictor(calibrated_fn)(s), dtype=float)
    return true_errors(f, g, p)[0 if against == "score" else 1]

#: Calibrators of a study when none are named.
DEFAULT_METHODS = ("platt", "isotonic", "bbq")

#: True-error column of a study for each ``against``.
TRUE_ERROR_COLUMNS = {"score": "true_error", "prediction": "true_error_pred"}


@dataclass
class Trial:
    """One draw, halved (``fit_rows``, ``judged_rows``, stratified by label): calibrators fitted on one half
    (``models``: method key -> calibrator), everything judged on the other.

    ``errors`` has one row per method (``"uncalibrated"`` first): ``true_error`` (against the score),
    ``true_error_pred`` (against the prediction), ``ece`` and ``mvce`` on the judged rows, and ``ece_minus_true``,
    ``mvce_minus_true`` (estimate minus ``true_error``).
    """

    draw: Draw
    fit_rows: np.ndarray
    judged_rows: np.ndarray
    models: dict
    errors: pd.DataFrame


def trial(name: str, n: int, seed: int, methods=None, *, n_bins: int = metrics.DEFAULT_N_BINS,
          strategy: str = metrics.DEFAULT_STRATEGY, mvce_views: int = 100, p: float = 1) -> Trial:
    """Draw ``n`` rows with ``seed``, fit ``methods`` on a stratified half, judge on the other half.

    Parameters
    ----------
    name, n, seed
        Scenario, sample size, seed (of the draw and of the split).
    methods : method spec (:func:`calibdash.evaluation.methods.resolve`), default :data:`DEFAULT_METHODS`
    n_bins, strategy
        ECE's bins (default: 10 equal-count bins, as in MBCT's section 5.3 and the metrics table).
    mvce_views, p
        MVCE's number of random views and norm; ``p`` is also the true error's norm.
    """
    d = draw(name, n, seed)
    if min(int(d.labels.sum()), int(d.labels.size - d.labels.sum())) < 2:
        raise DataError(f"this draw of {n:,} rows has fewer than 2 rows of one class; take a larger sample.")
    fit_rows, judged = split_indices(d.labels, Scheme("split", test_size=0.5, seed=int(seed)))[0]
    s_fit, y_fit = d.scores[fit_rows], d.labels[fit_rows]
    s_judge, y_judge = d.scores[judged], d.labels[judged]
    chosen = resolve(DEFAULT_METHODS if methods is None else methods)
    models = {key: cal.fit(s_fit, y_fit) for key, cal in chosen.items()}
    nodes, truth = true_nodes(name, N_NODES)
    rows = []
    for key, model in [(UNCALIBRATED, None), *models.items()]:
        pred = s_judge if model is None else model.predict(s_judge)
        true_score, true_pred = true_errors(truth, nodes if model is None else model.predict(nodes), p)
        rows.append({"method": key, "true_error": true_score, "true_error_pred": true_pred,
                     "ece": metrics.ece(pred, y_judge, n_bins, strategy),
                     "mvce": metrics.mvce(pred, y_judge, n_views=mvce_views, p=p, seed=int(seed))})
    errors = pd.DataFrame(rows)
    errors["ece_minus_true"] = errors["ece"] - errors["true_error"]
    errors["mvce_minus_true"] = errors["mvce"] - errors["true_error"]
    return Trial(draw=d, fit_rows=fit_rows, judged_rows=judged, models=models, errors=errors)


def estimator_study(name: str, n: int, seeds: Sequence[int], methods=None, *,
                    progress: Callable[[float, str], None] | None = None, **kwargs) -> pd.DataFrame:
    """Repeated :func:`trial`: true error against estimated ECE and MVCE, one row per (seed, method).

    The MBCT paper's simulation study (section 5.3): on each of ``seeds`` draws of ``n`` rows the calibrators are
    fitted on one half, the raw scores and every calibrator judged on the other; the true error comes from the
    known truth. The spread of ``ece_minus_true`` over seeds is the estimator's variance, its mean the bias.

    Returns a DataFrame with columns ``seed``, ``method`` and the columns of :attr:`Trial.errors`.
    """
    seeds = [int(s) for s in seeds]
    if not seeds:
        raise DataError("give at least one seed.")
    parts = []
    for i, seed in enumerate(seeds):
        t = trial(name, n, seed, methods, **kwargs)
        parts.append(t.errors.assign(seed=seed))
        if progress:
            progress((i + 1) / len(seeds), f"draw {i + 1} of {len(seeds)}")
    out = pd.concat(parts, ignore_index=True)
    return out[["seed", "method"] + [c for c in out.columns if c not in ("seed", "method")]]


def study_summary(study: pd.DataFrame, against: str = "score") -> pd.DataFrame:
    """Per method and estimator: mean true error, mean estimate, bias, standard deviation and RMSE.

    Bias is the mean of (estimate - true error) over the draws, SD its standard deviation (ddof = 1), RMSE the root
    mean square of the difference. ``against`` picks the true error: given the score (``true_error``) or given the
    prediction (``true_error_pred``).
    """
    column = TRUE_ERROR_COLUMNS.get(against)
    if column is None:
        raise DataError(f"against must be 'score' or 'prediction', got {against!r}.")
    rows = []
    for method, part in study.groupby("method", sort=False):
        truth = part[column].to_numpy(dtype=float)
        for est in ("ece", "mvce"):
            diff = part[est].to_numpy(dtype=float) - truth
            rows.append({"method": method, "estimator": est.upper(), "true_error": float(truth.mean()),
                         "estimate": float(part[est].mean()), "bias": float(diff.mean()),
                         "sd": float(diff.std(ddof=1)) if diff.size > 1 else float("nan"),
                         "rmse": float(math.sqrt(np.mean(diff ** 2)))})
    return pd.DataFrame(rows)
