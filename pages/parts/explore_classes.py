"""Explore on a K-class table: one multi-class method, its hyperparameters, before/after diagrams, its measures
and its inner workings (:func:`calibdash.explain.explain`, drawn by :func:`calibdash.figures.inner_figures`).

Fits come from :func:`pages.parts.classes.evaluate_chosen` (cached per data, scheme, method and
hyperparameters); the explanation is cached the same way.
"""
from __future__ import annotations

import streamlit as st

from calibdash import data as cdata, diagrams as mdiagrams, multiclass
from calibdash.explain import explain
from calibdash.explain.k_class import ClassExplanation
from calibdash.figures import inner_figures
from calibdash.multiclass import metrics as mmetrics
from calibdash.evaluation import UNCALIBRATED, ClassEvaluation, model_rows
from calibdash.scheme import Scheme
from pages.parts import bounded_cache
from pages.parts.class_methods import class_hyperparams, class_method_labels, class_method_menu_label, class_paper
from pages.parts.classes import class_set_or_stop, evaluate_chosen, frozen
from pages.parts.scheme import current_scheme
from pages.parts.tables import bold_best
from pages.parts.widgets import hyperparam_widgets
from pages.parts.text import chart, md

__all__ = ["render", "DEFAULT_METHOD", "class_metrics_frame", "BIN_CHOICES"]

#: The method Explore starts with on K-class data (the first available if absent).
DEFAULT_METHOD = "temperature"
#: Bins of the reliability diagrams.
BIN_CHOICES = (5, 10, 15, 20, 30)
#: Class-wise panels shown (the worst classes first).
CLASSWISE_PANELS = 6


def class_metrics_frame(table, labels: dict):
    """A multi-class measures table with display names and the best value of each measure in bold."""
    t = table.copy()
    t.index = [labels.get(k, k) for k in t.index]
    return bold_best(t, lambda name, line: mmetrics.MEASURES[name].oriented(line)).format("{:.4f}")


@bounded_cache.cache_data(show_spinner="Looking inside the calibrator…",
                          max_entries=32, budget="explore_classes.explain")
def _explain(data_key: str, scheme: Scheme, method: str, params: tuple, _ev: ClassEvaluation,
             _cs: cdata.ClassSet) -> ClassExplanation:
    x = _cs.scores()
    rows = model_rows(_ev, method, x, _cs.labels)      # a parametric map: the sample it was fitted on
    return explain(_ev.models[method], x.take(rows), _cs.labels[rows],
                   held_out=(x.take(_ev.rows), _ev.labels), class_names=[str(c) for c in _cs.classes])


def render() -> None:
    """The whole Explore page for the active K-class table."""
    st.title("Explore a multi-class calibrator")
    cs = class_set_or_stop()
    scheme = current_scheme(cs)
    available = multiclass.available()
    start = DEFAULT_METHOD if DEFAULT_METHOD in available else available[0]
    left, right = st.columns([1, 3], gap="large")
    with left:
        method = st.selectbox("Calibrator", available, index=available.index(start),
                              format_func=class_method_menu_label, key="explore.mc.method", persist_state="session")
        st.caption(class_paper(method))
        params = hyperparam_widgets(method, specs=class_hyperparams(method))
        n_bins = st.select_slider("Bins of the diagrams", BIN_CHOICES, value=mmetrics.N_BINS,
                                  key="explore.mc.bins", persist_state="session",
                                  help="Equal-width bins, as the measures' ECE uses (15).")
    ev = evaluate_chosen(cs, scheme, {method: params})
    labels = class_method_labels(ev.predictions)
    names = [str(c) for c in cs.classes]
    with right:
        what = "logits" if cs.logits else "probabilities"
        st.caption(f"{md(cs.name)} · {cs.k} classes ({what}) · fitted on {ev.fit_rows.size:,} rows, judged on "
                   f"{ev.rows.size:,} held-out rows ({md(scheme.describe())})"
                   + (f"; {md(ev.note)}" if ev.notes else ""))
        st.dataframe(class_metrics_frame(ev.metrics, labels))
        st.caption("ECE, MCE: confidence (top probability) with 15 equal-width bins; cwECE: class-wise ECE, the "
                   "mean over classes (Kull et al. 2019); LogLoss and Brier over all classes; Overconfidence: "
                   "mean confidence minus accuracy (0 is ideal).")
        c1, c2 = st.columns([2, 3])
        conf = mdiagrams.prepare_confidence(ev.predictions, ev.labels, n_bins=n_bins)
        chart(c1, mdiagrams.plot_confidence(conf, names=labels, title="Confidence reliability: before and after"),
                        key="explore.mc.confidence")
        c1.caption(conf.caption(labels))
        wise = mdiagrams.prepare_classwise(ev.predictions, ev.labels, n_bins=n_bins, class_names=names,
                                           max_panels=CLASSWISE_PANELS)
        chart(c2, mdiagrams.plot_classwise(wise, names=labels, cols=3, panel_height=250,
                                              title="Class-wise reliability: before and after (worst classes)"),
                        key="explore.mc.classwise")
        c2.caption(wise.caption(labels))
        inside = _explain(cs.content_key(), scheme, method, frozen(params), ev, cs)
        _inside(inside, ev.models[method])


def _inside(inside: ClassExplanation, model) -> None:
    """The subheader, notes and figures of the calibrator's inner workings."""
    figs = inner_figures(inside)
    if not figs:
        return
    st.subheader("Inside the calibrator")
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
    for note in inside.notes:
        st.info(md(note), icon=":material/info:")
    cols = st.columns(2) if len(figs) > 1 else [st.container()]
    for i, (title, fig) in enumerate(figs):
        with cols[i % len(cols)]:
            st.markdown(f"**{md(title)}**")
            chart(st, fig, key=f"explore.mc.inner.{i}")
