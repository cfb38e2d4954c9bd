"""Explaining the fitted calibrator Explore shows, cached like the fits.

The explanation is computed by :func:`calibdash.explain.explain` from the
model and what it was fitted on: the rows ``Evaluation.fit_rows`` on the row
path, the weighted rows ``Evaluation.fit_sample`` on score cells (explained
with their ``sample_weight``). It is keyed on the data's content key, the
scheme, the method, its hyperparameters and the path, which fix the model.
Bounded by bytes as well as entries: some explanations are large (BBQ's
table of every bin of every model is about 20 MB at 10^6 rows).
"""
from __future__ import annotations

import numpy as np

from calibdash import data as cdata
from calibdash.evaluation import Evaluation, Scheme
from calibdash.explain import Explanation, explain
from pages.parts.fitting import frozen_params
from pages.parts import bounded_cache

__all__ = ["explanation"]


@bounded_cache.cache_data(show_spinner="Looking inside the calibrator…", max_entries=64, budget="explaining.explain")
def _explain(data_key: str, scheme: Scheme, method: str, params: tuple, cells_path: bool, _model,
             _ss: cdata.ScoreSet, _rows: np.ndarray, _sample: tuple | None) -> Explanation:
    if cells_path:
        s, y, w = _sample
        return explain(_model, s, y, None, sample_weight=w)
    features = None
    if _model.uses_features and _ss.features is not None:
        features = _ss.features.reset_index(drop=True).iloc[_rows]     # as evaluate() gave them to fit
    return explain(_model, _ss.scores[_rows], _ss.labels[_rows], features)


def explanation(ev: Evaluation, ss: cdata.ScoreSet, scheme: Scheme, method: str, params: dict) -> Explanation:
    """The explanation of ``ev.models[method]``, from what it was fitted on (``ev.fit_rows`` or, on score
    cells, ``ev.fit_sample``).

    ``ev`` must come from :func:`pages.parts.fitting.evaluate_methods` with
    the same data, scheme, method and ``params``.
    """
    cells_path = ev.fit_sample is not None
    return _explain(ss.content_key(), scheme, method, frozen_params(params), cells_path, ev.models[method], ss,
                    ev.fit_rows, ev.fit_sample)
