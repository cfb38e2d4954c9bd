"""Explaining the fitted calibrator Explore shows, cached like the fits.

The explanation is computed by :func:`calibdash.explain.explain` from the
model and the rows it was fitted on (``Evaluation.fit_rows``); it is keyed
on the data's content key, the scheme, the method and its hyperparameters,
which fix the model.
"""
from __future__ import annotations

import numpy as np
import streamlit as st

from calibdash import data as cdata
from calibdash.evaluation import Evaluation, Scheme
from calibdash.explain import Explanation, explain
from pages.parts.fitting import frozen_params

__all__ = ["explanation"]


@st.cache_data(show_spinner="Looking inside the calibrator…", max_entries=64)
def _explain(data_key: str, scheme: Scheme, method: str, params: tuple, _model, _ss: cdata.ScoreSet,
             _rows: np.ndarray) -> Explanation:
    features = None
    if _model.uses_features and _ss.features is not None:
        features = _ss.features.reset_index(drop=True).iloc[_rows]     # as evaluate() gave them to fit
    return explain(_model, _ss.scores[_rows], _ss.labels[_rows], features)


def explanation(ev: Evaluation, ss: cdata.ScoreSet, scheme: Scheme, method: str, params: dict) -> Explanation:
    """The explanation of ``ev.models[method]``, from the rows it was fitted on (``ev.fit_rows``).

    ``ev`` must come from :func:`pages.parts.fitting.evaluate_methods` with
    the same data, scheme, method and ``params``.
    """
    return _explain(ss.content_key(), scheme, method, frozen_params(params), ev.models[method], ss, ev.fit_rows)
