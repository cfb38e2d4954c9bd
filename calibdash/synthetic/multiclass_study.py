"""Teaching multi-class calibration with a known truth: an over-confident K-class model, fixed by a temperature,
and one-vs-rest binning that needs more data.

The scenario is :func:`calibdash.synthetic.gaussian_classes.gaussian_classes` with no class bias: the model reports
``softmax(T z(x))``, the truth is ``softmax(z(x))``, so temperature scaling with the model's own ``T`` recovers it
exactly (Guo et al. 2017, section 4.2) and a fitted temperature comes close with few rows. One-vs-rest histogram
binning (Zadrozny & Elkan 2002) fits K step maps of many bins each, so its error falls only slowly with ``n``.

Each draw is split in two halves by the rows' content (:func:`calibdash.evaluation.scheme.split_plan`, stratified
by class): methods are fitted on one half, judged on the other. The **true error** of a method is
:func:`~calibdash.synthetic.gaussian_classes.true_canonical_error` on the judged half, from the known posterior:
the canonical calibration error (Vaicenavicius et al. 2019) for one-to-one maps, an upper bound of it for maps that
merge rows (binning), and in both cases the distance of the calibrated probabilities from the truth. The
estimates from labels (confidence ECE, classwise ECE) are given beside it.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Mapping, Sequence

import numpy as np
import pandas as pd

from ..core.errors import DataError
from ..measures import class_measures as mmetrics
from ..evaluation.holdout import UNCALIBRATED, resolve_classes
from ..evaluation.scheme import Scheme, split_plan
from .gaussian_classes import ClassDraw, GaussianClasses, gaussian_classes, true_canonical_error

__all__ = [
    "overconfident", "ClassTrial", "class_trial", "size_study", "size_summary", "SIZES", "DEFAULT_STUDY_METHODS",
    "TEMPERATURE"
]

#: The scenario's defaults: class means on a circle of radius 1.5, the model's logits multiplied by 2.5.
RADIUS, TEMPERATURE = 1.5, 2.5
#: Sample sizes of :func:`size_study` unless told.
SIZES = (200, 500, 1000, 2000, 5000, 10000)
#: The two methods the lesson compares.
DEFAULT_STUDY_METHODS = ("temperature", "ovr:histogram")


def overconfident(k: int = 3, temperature: float = TEMPERATURE, radius: float = RADIUS) -> GaussianClasses:
    """The lesson's scenario: K Gaussian classes, equal priors, a model over-confident by ``temperature``, no bias
    (DataError as :func:`~calibdash.synthetic.gaussian_classes.gaussian_classes`)."""
    return gaussian_classes(int(k), radius=radius, temperature=temperature)


@dataclass
class ClassTrial:
    """One draw, its halves (``fit_rows``, ``judged_rows``), the fitted methods and their errors.

    ``predictions`` maps a method key to its (m, K) probabilities on the judged rows (``"uncalibrated"`` first),
    ``models`` to the calibrator fitted on ``fit_rows``; ``errors`` has one row per method: ``method``,
    ``true_error`` (from the known posterior), ``ECE`` (confidence), ``cwECE`` (classwise), ``LogLoss``.
    """

    draw: ClassDraw
    fit_rows: np.ndarray
    judged_rows: np.ndarray
    predictions: dict
    models: dict
    errors: pd.DataFrame


def class_trial(scenario: GaussianClasses, n: int, seed: int, methods: Sequence[str] | Mapping = DEFAULT_STUDY_METHODS
                ) -> ClassTrial:
    """Draw ``n`` rows with ``seed``, fit ``methods`` on one half, judge every method on the other.

    Parameters
    ----------
    scenario : GaussianClasses
    n, seed : int
        Rows drawn (half fit, half judged); the draw's seed (and the split's).
    methods : method spec
        What :func:`calibdash.evaluation.holdout.resolve_classes` takes; the methods see probabilities.

    DataError for ``n`` out of range or a half a method cannot be fitted on; SettingsError for an unknown method.
    """
    d = scenario.draw(n, seed)
    fit, judged = split_plan(d.labels, Scheme("split", test_size=0.5, seed=int(seed)), values=d.reported)[0][0]
    cals = resolve_classes(methods)
    preds = {UNCALIBRATED: d.reported[judged]}
    for key, cal in cals.items():
        preds[key] = cal.fit(d.reported[fit], d.labels[fit]).predict_proba(d.reported[judged])
    y = d.labels[judged]
    rows = [{"method": key, "true_error": true_canonical_error(P, d.true[judged]),
             **mmetrics.compute(P, y, names=("ECE", "cwECE", "LogLoss"))} for key, P in preds.items()]
    return ClassTrial(draw=d, fit_rows=fit, judged_rows=judged, predictions=preds, models=cals,
                      errors=pd.DataFrame(rows))


def size_study(scenario: GaussianClasses, sizes: Sequence[int] = SIZES, seeds: Sequence[int] = range(10),
               methods: Sequence[str] | Mapping = DEFAULT_STUDY_METHODS) -> pd.DataFrame:
    """True error against the sample size: one :func:`class_trial` per (size, seed).

    Returns one row per (n, seed, method): ``n``, ``seed``, ``method`` (``"uncalibrated"`` too), ``true_error``,
    ``ECE``, ``cwECE``, ``LogLoss``. DataError for no size or no seed, or as :func:`class_trial`.
    """
    sizes, seeds = [int(n) for n in sizes], [int(s) for s in seeds]
    if not sizes or not seeds:
        raise DataError("the study needs at least one sample size and one seed.")
    out = pd.concat([class_trial(scenario, n, s, methods).errors.assign(n=n, seed=s) for n in sizes for s in seeds],
                    ignore_index=True)
    return out[["n", "seed", "method", "true_error", "ECE", "cwECE", "LogLoss"]]


def size_summary(study: pd.DataFrame, column: str = "true_error") -> pd.DataFrame:
    """Per (n, method): ``mean``, ``sd`` and ``se`` (sd / sqrt(draws)) of ``column`` over the draws, ``draws``."""
    g = study.groupby(["n", "method"], sort=False)[column]
    out = g.agg(mean="mean", sd="std", draws="count").reset_index()
    out["sd"] = out["sd"].fillna(0.0)
    out["se"] = out["sd"] / np.sqrt(out["draws"])
    return out
