"""Explaining the fitted calibrator Explore shows, cached like the fits, and drawing what it found.

A binary calibrator is explained by :func:`calibdash.explain.explain` from the model and what it was fitted
on: the rows ``Evaluation.fit_rows`` on the row path, the weighted rows ``Evaluation.fit_sample`` on score
cells (explained with their ``sample_weight``). A K-class calibrator by
:func:`calibdash.explain.explain` too, from the sample it was fitted on and the held-out rows.
Each explanation is keyed on the data's content key, the scheme, the method, its hyperparameters (and the
path), which fix the model; bounded by bytes as well as entries: some explanations are large (BBQ's table of
every bin of every model is about 20 MB at 10^6 rows).
"""
from __future__ import annotations

import numpy as np
import streamlit as st

from calibdash import data as cdata, figures
from calibdash.evaluation.holdout import Evaluation, Scheme
from calibdash.explain import Explanation, explain
from calibdash.evaluation.holdout import ClassEvaluation, model_rows
from calibdash.explain.k_class import ClassExplanation
from pages.parts.fitting import frozen_params
from pages.parts import bounded_cache
from pages.parts.text import chart, md

__all__ = ["explanation", "show_inside", "MAX_TABLE_ROWS"]

#: Most rows of a fitted-values table sent to the browser (BBQ lists every bin of every model: 10^5 rows and more
#: on large data, which would be sent again on every slider move).
MAX_TABLE_ROWS = 5_000


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


@bounded_cache.cache_data(show_spinner="Looking inside the calibrator…", max_entries=32, budget="explaining.classes")
def _explain_classes(data_key: str, scheme: Scheme, method: str, params: tuple, _ev: ClassEvaluation,
                     _cs: cdata.ClassSet) -> ClassExplanation:
    x = _cs.scores()
    rows = model_rows(_ev, method, x, _cs.labels)      # a parametric map: the sample it was fitted on
    return explain(_ev.models[method], x.take(rows), _cs.labels[rows],
                           held_out=(x.take(_ev.rows), _ev.labels), class_names=[str(c) for c in _cs.classes])


def explanation(ev: Evaluation | ClassEvaluation, data, scheme: Scheme, method: str, params: dict):
    """The explanation of ``ev.models[method]``, from what it was fitted on (``ev.fit_rows`` or, on score
    cells, ``ev.fit_sample``; for a K-class ``data`` its fitting sample and the held-out rows).

    ``ev`` must come from the family's ``evaluate`` (:class:`pages.parts.problem.Methods`) with the same data,
    scheme, method and ``params``.
    """
    if isinstance(data, cdata.ClassSet):
        return _explain_classes(data.content_key(), scheme, method, frozen_params(params), ev, data)
    cells_path = ev.fit_sample is not None
    return _explain(data.content_key(), scheme, method, frozen_params(params), cells_path, ev.models[method], data,
                    ev.fit_rows, ev.fit_sample)


def _class_lines(inside: ClassExplanation, model) -> None:
    """What a K-class explanation says in words: the fitted temperature, the pooled classes of a top-label map."""
    if inside.kind == "temperature":
        st.markdown(f"Fitted temperature **T = {inside.temperature:.4g}** "
                    + ("(> 1: the model was over-confident; its log-scores are divided by T)"
                       if inside.temperature > 1 else "(< 1: the model was under-confident)")
                    + ". The fitting rows' curve is what the solver minimised; the held-out curve shows how well "
                      "that T carries over.")
    if inside.kind == "top_label":
        pooled = ", ".join(md(inside.classes[c]) for c in inside.pooled) or "none"
        st.markdown(f"Classes predicted in fewer than {model.min_rows:g} fitting rows share the pooled map: "
                    f"**{pooled}**.")


def show_inside(inside, model) -> None:
    """The calibrator's inner workings: its notes, "Inside the calibrator" with its figures (two columns), and
    its tables of fitted values when it has any."""
    is_classes = isinstance(inside, ClassExplanation)
    figs = figures.inner_figures(inside)
    if figs:
        st.subheader("Inside the calibrator")
        if is_classes:
            _class_lines(inside, model)
    for note in inside.notes:
        st.info(md(note), icon=":material/info:")
    cols = st.columns(2) if len(figs) > 1 else [st.container()]
    for i, (title, fig) in enumerate(figs):
        with cols[i % len(cols)]:
            st.markdown(f"**{md(title)}**")
            chart(st, fig, key=f"explore.inner.{i}")
    tables = getattr(inside, "tables", None) or {}
    if tables:
        with st.expander("Fitted values (tables)"):
            for name, table in tables.items():
                st.markdown(f"**{md(name)}**")
                st.dataframe(table.head(MAX_TABLE_ROWS), height=240)
                if len(table) > MAX_TABLE_ROWS:
                    st.caption(f"The first {MAX_TABLE_ROWS:,} of {len(table):,} rows.")
