"""Bootstrap intervals of any measure of the registry, binary or K-class, and a plain verdict on them.

Two ways to resample, one result (:class:`BootstrapResult`), and the measures
read from their records (:mod:`calibdash.measures.registry`): a measure with a
statistics form is resampled vectorised, one without is measured on each
resample's rows.

* **rows** (:mod:`~calibdash.evaluation.bootstrap.row_resamples`) drawn with replacement, one
  stream for a binary score (:func:`bootstrap_metrics`, every resample's rows
  measured as drawn) and for K classes (:func:`bootstrap_multiclass`, sparse sums
  of the statistics forms);
* **score cells** (:mod:`~calibdash.evaluation.bootstrap.cell_resamples`, :func:`bootstrap_cells`,
  :func:`bootstrap_measures` for the further measures), a Poisson bootstrap of
  their rows: each resample draws, for every cell, its positives
  Poisson(``n_pos``) and its negatives Poisson(``n - n_pos``), which is the
  row-level Poisson bootstrap (every row counted Poisson(1) times) summed over
  the cell's rows (large data: 200 resamples of ten million rows in about half
  a second on two cores, ``bench/bench_bootstrap.py``).

All are *paired*: the same resample for every method, so differences between
methods get intervals too. Two methods whose own intervals overlap may still
differ clearly, and the verdict (:func:`verdict`, one for a binary score and K
classes) uses the interval of the difference.

The package: :mod:`~calibdash.evaluation.bootstrap.draws` (the two draws),
:mod:`~calibdash.evaluation.bootstrap.row_resamples`, :mod:`~calibdash.evaluation.bootstrap.cell_resamples`,
:mod:`~calibdash.evaluation.bootstrap.result` (the result type and the verdict), and here
:func:`bootstrap_evaluation`, as the Compare page draws them.
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
    """Paired bootstrap intervals of ``ev``'s metrics, as the Compare page draws them.

    Rows (``ev.weights is None``): :func:`~calibdash.evaluation.bootstrap.bootstrap_metrics`
    with :func:`~calibdash.evaluation.bootstrap.resamples_for` resamples unless ``n_boot``
    is given; score cells: :func:`~calibdash.evaluation.bootstrap.bootstrap_cells` (200
    Poisson resamples unless ``n_boot`` is given), each weighted row being a
    cell's positives or its negatives.
    """
    if ev.weights is not None:
        return bootstrap_cells(ev.predictions, ev.weights, ev.weights * ev.labels, seed=seed,
                                     **({} if n_boot is None else {"n_boot": int(n_boot)}))
    n_boot = resamples_for(len(ev.rows), ev.predictions.shape[1]) if n_boot is None else int(n_boot)
    return bootstrap_metrics(ev.predictions, ev.labels, n_boot=n_boot, seed=seed)
