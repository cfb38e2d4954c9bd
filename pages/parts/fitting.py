"""Fitting for the pages: held-out evaluations and bootstrap intervals, cached per method.

Two paths, decided by :func:`calibdash.evaluation.crossfit.choose_path` (:func:`path`):

* **rows** (up to ``CELLS_MIN_ROWS`` rows, or when a chosen method reads
  feature columns, MBCT with features: then every method is judged on rows,
  so all are judged alike): :func:`calibdash.evaluation.holdout.evaluate` per method;
* **score cells** (above): the rows are aggregated once per data set and
  scheme into :class:`calibdash.evaluation.cells.ScoreCells` (cached: the one thing the
  server keeps per session besides the ScoreSet, no copy of the rows), and
  each method is fitted and judged on them
  (:func:`calibdash.evaluation.holdout.evaluate_cells`). What a method adds (its
  prediction column, metrics row, model, seconds) is cached apart from what
  every method shares (the judged cells' labels and weights, the fitted
  sample, the uncalibrated column), so an entry weighs what the method adds.
  On a large source (:mod:`pages.parts.large_source`) the cells come from
  its engine (DuckDB, where the rows live) instead of the rows: the same
  fitting and judging from there on.

Each cache is keyed on the data's content key, the scheme, the method and its
hyperparameters (and the path); the objects themselves are passed as
``_``-prefixed arguments, which Streamlit does not hash. Every cache is
bounded by bytes (``max_size``, pickled bytes, least recently used dropped
first) as well as by entries. What an entry weighs, pickled, at 10^6 rows
with about 10^4 distinct scores (70/30 split; 5-fold in brackets): the cells
0.35 MB (0.8), the shared part of an evaluation 0.40 MB (1.8), one method on
cells 0.07-0.25 MB (0.35-0.5; ABB's model is the largest), a bootstrap
0.07-0.12 MB (5 to 9 methods); one method on rows (MBCT with features) 13 MB,
which the row path's 512 MB bound holds about 40 of.
"""
from __future__ import annotations

import numpy as np
import pandas as pd
import streamlit as st

from calibdash.evaluation import bootstrap as cboot, cells as ccells, crossfit, holdout as evaluation
from calibdash import calibrators, data as cdata
from calibdash.measures import calibration as metrics
from calibdash.evaluation.holdout import UNCALIBRATED, Evaluation, Scheme
from pages.parts.labels import method_labels
from pages.parts import bounded_cache
from pages.parts.text import md

__all__ = ["frozen_params", "path", "is_large", "on_cells", "rows_reason", "held_back", "evaluate_methods",
           "judged_line", "bootstrap",
           "interval_caption", "models_table", "raw_summary"]


def frozen_params(params: dict) -> tuple:
    """Hyperparameters as a hashable, order-free cache key."""
    return tuple(sorted(params.items()))


def path(ss: cdata.ScoreSet, methods) -> crossfit.Path:
    """Rows or score cells for ``methods`` on this data, and why: :func:`calibdash.evaluation.crossfit.choose_path`'s
    rule (always score cells on a large source, whose rows stay on the server)."""
    if is_large(ss):
        return crossfit.choose_path(0, methods, large=True)
    return crossfit.choose_path(ss.n_rows, methods, ss.feature_columns if ss.features is not None else None)


def is_large(ss) -> bool:
    """Whether ``ss`` is a large source's :class:`pages.parts.large_source.LargeData` (cells, no rows)."""
    return getattr(ss, "is_large", False)


def on_cells(ss: cdata.ScoreSet, methods) -> bool:
    """Whether ``methods`` are evaluated on score cells on this data (:func:`path`)."""
    return path(ss, methods).on_cells


def rows_reason(ss: cdata.ScoreSet, methods) -> str:
    """Why large binary data is judged on rows rather than score cells, or "" when it is not (:func:`path`; a
    K-class table is always judged on rows)."""
    return "" if isinstance(ss, cdata.ClassSet) else path(ss, methods).note


def held_back(problem, params: dict) -> dict:
    """``params`` without the full K x K maps above :data:`~calibdash.evaluation.holdout.FULL_MAP_MAX_K`
    classes, unless the user asks for them (their penalty search takes minutes there): said on the page."""
    full = [m for m in params
            if problem.is_classes and getattr(calibrators.get_class(m, "classes"), "matrix", None) == "full"]
    if not full or problem.k <= evaluation.FULL_MAP_MAX_K:
        return params
    k, names = problem.k, ", ".join(problem.methods.label(m) for m in full)
    if st.toggle(f"Fit {names} too", key="compare.mc.full_maps",
                 help=f"A full map has K² + K = {k * k + k:,} parameters at K = {k}; choosing its penalties "
                      "fits it 31 times, which takes minutes on a small server."):
        return params
    st.info(f"{names} not fitted yet: {k} classes make a full K × K map slow to fit (minutes). "
            "Turn on the switch above to fit it.", icon=":material/hourglass_empty:")
    return {m: p for m, p in params.items() if m not in full}


# -- the row path ----------------------------------------------------------------------------------
@bounded_cache.cache_data(show_spinner=False, max_entries=512, budget="fitting.evaluate_one")
def _evaluate_one(data_key: str, scheme: Scheme, method: str, params: tuple, _ss: cdata.ScoreSet) -> Evaluation:
    feats = _ss.features if calibrators.get_class(method).uses_features else None
    return evaluation.evaluate(_ss.scores, _ss.labels, {method: dict(params)}, scheme, features=feats,
                               split=_ss.split)


# -- the score-cell path ---------------------------------------------------------------------------
@bounded_cache.cache_data(show_spinner="Summarising the rows into score cells…",
                          max_entries=16, budget="fitting.cells")
def _cells(data_key: str, scheme: Scheme, _ss: cdata.ScoreSet) -> ccells.ScoreCells:
    return ccells.aggregate(_ss.scores, _ss.labels, evaluation.cell_parts(_ss.n_rows, scheme, _ss.split))


def _cells_of(data_key: str, scheme: Scheme, ss) -> ccells.ScoreCells:
    """The cells of ``scheme``: a large source's from its engine (DuckDB, kept by large_source), else the rows'."""
    if is_large(ss):
        return ss.cells(scheme)
    return _cells(data_key, scheme, ss)


@bounded_cache.cache_data(show_spinner=False, max_entries=16, budget="fitting.shared_on_cells")
def _shared_on_cells(data_key: str, scheme: Scheme, _ss: cdata.ScoreSet) -> Evaluation:
    """The evaluation of no method: judged cells, their labels and weights, the fitted sample, the note."""
    return evaluation.evaluate_cells(_cells_of(data_key, scheme, _ss), {}, scheme)


@bounded_cache.cache_data(show_spinner=False, max_entries=512, budget="fitting.fit_on_cells")
def _fit_on_cells(data_key: str, scheme: Scheme, method: str, params: tuple, _ss: cdata.ScoreSet) -> dict:
    """What ``method`` adds to the shared evaluation: its prediction column, metrics row, model, seconds."""
    ev = evaluation.evaluate_cells(_cells_of(data_key, scheme, _ss), {method: dict(params)}, scheme)
    return {"predictions": ev.predictions[[method]], "metrics": ev.metrics.loc[[method]], "models": ev.models,
            "fit_seconds": ev.fit_seconds}


def _evaluate_on_cells(ss: cdata.ScoreSet, scheme: Scheme, chosen: dict[str, dict]) -> Evaluation:
    key = ss.content_key()
    shared = _shared_on_cells(key, scheme, ss)
    if not chosen:
        return shared
    parts = []
    for method, params in chosen.items():
        fit = _fit_on_cells(key, scheme, method, frozen_params(params), ss)
        parts.append(Evaluation(
            scheme=shared.scheme, rows=shared.rows, labels=shared.labels,
            predictions=pd.concat([shared.predictions, fit["predictions"]], axis=1),
            metrics=pd.concat([shared.metrics, fit["metrics"]]), models=fit["models"], fit_rows=shared.fit_rows,
            fit_seconds=fit["fit_seconds"], binning=shared.binning, weights=shared.weights,
            fit_sample=shared.fit_sample, note=shared.note))
    return evaluation.combine(parts)


def evaluate_methods(ss: cdata.ScoreSet, scheme: Scheme, chosen: dict[str, dict]) -> Evaluation:
    """Held-out evaluation of ``chosen`` (method -> params), each fit cached on data + scheme + params.

    On score cells (:func:`on_cells`) the result's ``weights`` are not None:
    pass them as ``sample_weight`` to every metric, table and figure.
    """
    if is_large(ss):
        ss.cells(scheme)         # aggregated here, outside the caches, when not kept (progress, Cancel)
    if on_cells(ss, chosen):
        with st.spinner("Fitting calibrators on score cells…", show_time=True):
            return _evaluate_on_cells(ss, scheme, chosen)
    if not chosen:
        return evaluation.evaluate(ss.scores, ss.labels, {}, scheme, split=ss.split)
    with st.spinner("Fitting calibrators…", show_time=True):
        parts = [_evaluate_one(ss.content_key(), scheme, method, frozen_params(params), ss)
                 for method, params in chosen.items()]
    return evaluation.combine(parts)


def judged_line(ev, scheme: Scheme) -> str:
    """What the measures were judged on, for a page's caption (a binary or a K-class evaluation): on score cells
    what the cells summarise, the held-out rows and the scheme as the cells divide rows (by a hash of their
    position)."""
    if getattr(ev, "weights", None) is None:
        line = f"judged on {getattr(ev, 'n_judged', len(ev.rows)):,} held-out rows · {md(scheme.describe())}"
        return f"{line} · {md(ev.note)}" if ev.note else line
    return f"{md(ev.note)} · judged on {ev.n_judged:,} held-out rows · {md(scheme.describe(on_cells=True))}"


# -- intervals ---------------------------------------------------------------------------------------
#: Resamples behind the further measures' intervals (each resample measures every method: about 10 ms apiece).
MEASURES_BOOT = 100


@bounded_cache.cache_data(show_spinner="Bootstrapping intervals…", max_entries=64, budget="fitting.bootstrap")
def _bootstrap(data_key: str, scheme: Scheme, chosen: tuple, cells_path: bool, _ev: Evaluation
               ) -> cboot.BootstrapResult:
    return cboot.bootstrap_evaluation(_ev)          # cells_path is in the key: the two paths differ


def bootstrap(ev: Evaluation, ss: cdata.ScoreSet, scheme: Scheme, params: dict) -> cboot.BootstrapResult:
    """Paired bootstrap intervals of the metrics table, cached on data + scheme + methods + parameters + path.

    Rows are resampled on the row path; on score cells (``ev.weights`` not
    None) a Poisson bootstrap of the cells' rows
    (:func:`calibdash.evaluation.bootstrap.bootstrap_cells`).
    """
    chosen = tuple((m, frozen_params(p)) for m, p in params.items())
    return _bootstrap(ss.content_key(), scheme, chosen, ev.weights is not None, ev)


@bounded_cache.cache_data(show_spinner="Measuring and bootstrapping the further measures…", max_entries=32,
                          budget="fitting.measures_bootstrap")
def _measures_bootstrap(data_key: str, scheme: Scheme, chosen: tuple, cells_path: bool, n_boot: int,
                        _ev: Evaluation) -> cboot.BootstrapResult:
    n = _ev.weights if cells_path else np.ones(len(_ev.labels))
    return cboot.bootstrap_measures(_ev.predictions, n, n * _ev.labels, n_boot=n_boot)


def measures_bootstrap(ev: Evaluation, ss: cdata.ScoreSet, scheme: Scheme, params: dict,
                       n_boot: int = MEASURES_BOOT) -> cboot.BootstrapResult:
    """The measures of :mod:`calibdash.measures` on the held-out rows with paired intervals (each held-out row,
    or each cell's positives and negatives, Poisson-resampled); cached like :func:`bootstrap`."""
    chosen = tuple((m, frozen_params(p)) for m, p in params.items())
    return _measures_bootstrap(ss.content_key(), scheme, chosen, ev.weights is not None, int(n_boot), ev)


def interval_caption(boot: cboot.BootstrapResult, ev: Evaluation) -> str:
    """How the intervals were drawn, for the caption under the metrics table."""
    level = int(round(boot.level * 100))
    if ev.weights is None:
        return f"{level}% paired bootstrap interval, {boot.n_boot} resamples of the held-out rows"
    return (f"{level}% paired bootstrap interval, {boot.n_boot} Poisson resamples of the "
            f"{ev.n_judged:,} held-out rows, drawn per score cell")


# -- several models ----------------------------------------------------------------------------------
def models_table(ss: cdata.ScoreSet, scheme: Scheme, params: dict, models: list, n_bins: int, strategy: str):
    """Metrics of every (model, method) and each model's raw reliability table, on held-out rows.

    Returns
    -------
    (DataFrame, dict)
        The metrics (index: model, method label; ECE/MCE binned as every
        evaluation here, ``Evaluation.binning``) and model -> reliability
        table of its raw scores (weighted on score cells).
    """
    rows, tables = [], {}
    for col in models:
        ev = evaluate_methods(ss if col == ss.score else ss.with_score(col), scheme, params)
        labels = method_labels(ev.metrics.index)
        t = ev.metrics.copy()
        t.index = pd.MultiIndex.from_product([[col], [labels[k] for k in t.index]], names=["model", "method"])
        rows.append(t)
        tables[col] = metrics.reliability_table(ev.predictions[UNCALIBRATED].to_numpy(), ev.labels, n_bins, strategy,
                                                sample_weight=ev.weights)
    return pd.concat(rows), tables


# -- the raw scores ----------------------------------------------------------------------------------
@bounded_cache.cache_data(show_spinner=False, max_entries=16, budget="fitting.raw_summary")
def _raw_summary(data_key: str, cells_path: bool, _ss: cdata.ScoreSet) -> dict:
    if not cells_path:
        return metrics.summary(_ss.scores, _ss.labels)
    c = ccells.aggregate(_ss.scores, _ss.labels)
    p, y, w = c.weighted_predictions(c.score)
    return metrics.summary(p, y, sample_weight=w, mvce_max_rows=evaluation.CELLS_MIN_ROWS)


@bounded_cache.cache_data(show_spinner=False, max_entries=16, budget="fitting.raw_summary_large")
def _raw_summary_large(data_key: str, _ss) -> dict:
    c = _ss.all_cells
    p, y, w = c.weighted_predictions(c.score)
    return metrics.summary(p, y, sample_weight=w, mvce_max_rows=evaluation.CELLS_MIN_ROWS)


def raw_summary(ss: cdata.ScoreSet) -> dict:
    """Every metric of the raw scores on all usable rows (from their score cells above ``CELLS_MIN_ROWS``,
    where MVCE's views come from the partition moments, as in every evaluation on cells; on a large source
    from the all-rows cells its engine gave); cached."""
    if is_large(ss):
        return _raw_summary_large(ss.content_key(), ss)
    return _raw_summary(ss.content_key(), evaluation.use_cells_for(ss.n_rows), ss)
