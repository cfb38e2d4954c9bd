"""Fitting for the pages: held-out evaluations and bootstrap intervals, cached per method.

Each cache is keyed on the data's content key, the scheme, the method and its
hyperparameters; the objects themselves are passed as ``_``-prefixed
arguments, which Streamlit does not hash.
"""
from __future__ import annotations

import pandas as pd
import streamlit as st

from calibdash import bootstrap as cboot, calibrators, data as cdata, evaluation, metrics
from calibdash.evaluation import UNCALIBRATED, Evaluation, Scheme
from pages.parts.labels import method_labels

__all__ = ["frozen_params", "evaluate_methods", "bootstrap", "models_table"]


def frozen_params(params: dict) -> tuple:
    """Hyperparameters as a hashable, order-free cache key."""
    return tuple(sorted(params.items()))


@st.cache_data(show_spinner=False, max_entries=512)
def _evaluate_one(data_key: str, scheme: Scheme, method: str, params: tuple, _ss: cdata.ScoreSet) -> Evaluation:
    feats = _ss.features if calibrators.get_class(method).uses_features else None
    return evaluation.evaluate(_ss.scores, _ss.labels, {method: dict(params)}, scheme, features=feats,
                               split=_ss.split)


def evaluate_methods(ss: cdata.ScoreSet, scheme: Scheme, chosen: dict[str, dict]) -> Evaluation:
    """Held-out evaluation of ``chosen`` (method -> params), each fit cached on data + scheme + params."""
    if not chosen:
        return evaluation.evaluate(ss.scores, ss.labels, {}, scheme, split=ss.split)
    with st.spinner("Fitting calibrators…", show_time=True):
        parts = [_evaluate_one(ss.content_key(), scheme, method, frozen_params(params), ss)
                 for method, params in chosen.items()]
    return evaluation.combine(parts)


@st.cache_data(show_spinner="Bootstrapping intervals…", max_entries=64)
def _bootstrap(data_key: str, scheme: Scheme, chosen: tuple, _ev: Evaluation) -> cboot.BootstrapResult:
    n_boot = cboot.resamples_for(len(_ev.rows), _ev.predictions.shape[1])
    return cboot.bootstrap_metrics(_ev.predictions, _ev.labels, n_boot=n_boot)


def bootstrap(ev: Evaluation, ss: cdata.ScoreSet, scheme: Scheme, params: dict) -> cboot.BootstrapResult:
    """Paired bootstrap intervals of the metrics table, cached on data + scheme + methods + parameters."""
    chosen = tuple((m, frozen_params(p)) for m, p in params.items())
    return _bootstrap(ss.content_key(), scheme, chosen, ev)


def models_table(ss: cdata.ScoreSet, scheme: Scheme, params: dict, models: list, n_bins: int, strategy: str):
    """Metrics of every (model, method) and each model's raw reliability table, on held-out rows.

    Returns
    -------
    (DataFrame, dict)
        The metrics (index: model, method label; ECE/MCE binned as every
        evaluation here, ``Evaluation.binning``) and model -> reliability
        table of its raw scores.
    """
    rows, tables = [], {}
    for col in models:
        ev = evaluate_methods(ss if col == ss.score else ss.with_score(col), scheme, params)
        labels = method_labels(ev.metrics.index)
        t = ev.metrics.copy()
        t.index = pd.MultiIndex.from_product([[col], [labels[k] for k in t.index]], names=["model", "method"])
        rows.append(t)
        tables[col] = metrics.reliability_table(ev.predictions[UNCALIBRATED].to_numpy(), ev.labels, n_bins, strategy)
    return pd.concat(rows), tables
