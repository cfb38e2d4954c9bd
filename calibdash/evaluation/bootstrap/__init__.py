"""Bootstrap intervals of any measure of the registry, binary or K-class, and a plain verdict on them.

Two ways to resample, one result (:class:`BootstrapResult`): **rows** drawn with replacement
(:mod:`~calibdash.evaluation.bootstrap.row_resamples`: :func:`bootstrap_metrics` for a binary score,
:func:`bootstrap_multiclass` for K classes), and **score cells** (:mod:`~calibdash.evaluation.bootstrap.cell_resamples`:
:func:`bootstrap_cells`, :func:`bootstrap_measures` for the further measures), a Poisson bootstrap of their rows
(200 resamples of ten million rows in about half a second on two cores). All are *paired*: the same resample for
every method, so differences between methods get intervals too, and :func:`verdict` uses the interval of the
difference (two methods whose own intervals overlap may still differ clearly).
"""
from __future__ import annotations

from ..holdout import Evaluation
from .cell_resamples import bootstrap_cells, bootstrap_measures
from .result import BootstrapResult, verdict
from .row_resamples import bootstrap_metrics, bootstrap_multiclass, resamples_for

__all__ = [
    "BootstrapResult", "bootstrap_multiclass", "bootstrap_cells", "bootstrap_measures", "bootstrap_evaluation",
    "resamples_for", "verdict"
]


def bootstrap_evaluation(ev: Evaluation, n_boot: int | None = None, seed: int = 0) -> BootstrapResult:
    """Paired bootstrap intervals of ``ev``'s metrics, as the Compare page draws them: on rows
    :func:`bootstrap_metrics` (:func:`resamples_for` resamples unless ``n_boot`` says), on score cells
    :func:`bootstrap_cells` (200 unless ``n_boot`` says)."""
    if ev.weights is not None:
        return bootstrap_cells(ev.predictions, ev.weights, ev.weights * ev.labels, seed=seed,
                                     **({} if n_boot is None else {"n_boot": int(n_boot)}))
    n_boot = resamples_for(len(ev.rows), ev.predictions.shape[1]) if n_boot is None else int(n_boot)
    return bootstrap_metrics(ev.predictions, ev.labels, n_boot=n_boot, seed=seed)
