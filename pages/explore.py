"""Explore: one calibrator, its hyperparameters, before/after diagrams, its measures and its inner workings; one
script for any problem (the second chart is the calibration map of a score, or the class-wise panels of K
classes, as the problem declares)."""
import streamlit as st

from calibdash import figures
from calibdash.evaluation.holdout import UNCALIBRATED
from calibdash.cli.documents import reliability_document
from pages.parts import diagrams, downloads, fitting, runs
from pages.parts.explaining import explanation, show_inside
from pages.parts.problem import problem_or_stop
from pages.parts.routing import route_guard
from pages.parts.scheme import current_scheme
from pages.parts.tables import binning_note, metrics_frame
from pages.parts.text import chart, md
from pages.parts.widgets import hyperparam_widgets

route_guard("pages/explore.py")

#: Class-wise panels shown (the worst classes first).
CLASSWISE_PANELS = 6
#: Title of the reliability chart per diagram type.
TITLES = {diagrams.BINNED: "Reliability", diagrams.SMOOTH: "Smoothed reliability", diagrams.CORP: "CORP reliability"}
#: What the K-class measures' caption says of them.
CLASS_MEASURES = ("ECE, MCE: confidence (top probability) with 15 equal-width bins; cwECE: class-wise ECE, the mean "
                  "over classes (Kull et al. 2019); LogLoss and Brier over all classes; Overconfidence: mean "
                  "confidence minus accuracy (0 is ideal).")

st.title("Explore a calibrator")
problem = problem_or_stop()
data, family = problem.data, problem.methods
scheme = current_scheme(data)

available = family.available()
left, right = st.columns([1, 3], gap="large")
with left:
    start = family.explore_default if family.explore_default in available else available[0]
    method = st.selectbox("Calibrator", available, index=available.index(start), format_func=family.menu_label,
                          key=problem.key("explore.method"), persist_state="session")
    st.caption(family.paper(method))
    params = hyperparam_widgets(method, specs=family.hyperparams(method))
    if problem.is_classes:      # the confidence and class-wise diagrams: binned, 15 equal-width bins by default
        diagram = diagrams.controls(problem.key("explore"), [st.container()] * 4, kinds=(diagrams.BINNED,),
                                    n_bins=15, strategy="uniform")
    else:
        diagram = diagrams.controls("explore", [st.container()] * 4)

reason = fitting.rows_reason(data, [method])
ev = family.evaluate(data, scheme, {method: params})
model = ev.models[method]
labels = family.labels(ev.predictions)
with right:
    st.caption(f"{md(data.name)} · {problem.what()} · fitted on the fitting rows, {fitting.judged_line(ev, scheme)}")
    if reason:
        st.info(md(reason), icon=":material/info:")
    runs.save_panel("explore", "evaluate", lambda: runs.evaluation_json(data, ev, scheme),
                    lambda: downloads.models_document(problem, ev), lambda: reliability_document(ev), scheme=scheme)
    st.dataframe(metrics_frame(ev.metrics, labels, problem.direction))
    st.caption(CLASS_MEASURES if problem.is_classes else binning_note(ev.binning))
    c1, c2 = st.columns([2, 3] if "classwise" in problem.views else 2)
    if problem.is_classes:
        diagrams.confidence(c1, ev, labels, diagram, "explore.mc.confidence",
                            title="Confidence reliability: before and after")
        diagrams.classwise(c2, ev, labels, [str(c) for c in data.classes], diagram.n_bins, key="explore.mc.classwise",
                           strategy=diagram.strategy, max_panels=CLASSWISE_PANELS)
    else:
        rel_fig, rel_caption = diagrams.build(ev.predictions, ev.labels, ev.weights, kind=diagram.kind,
                                              band=diagram.band, n_bins=diagram.n_bins, strategy=diagram.strategy,
                                              names=labels, title=f"{TITLES[diagram.kind]}: before and after")
        chart(c1, rel_fig, key="explore.reliability")
        c1.caption(rel_caption)
        cells_path = ev.weights is not None
        row_features = data.features.iloc[ev.rows] if data.features is not None and not cells_path else None
        curves = figures.map_curves({method: model}, ev.predictions[UNCALIBRATED].to_numpy(), row_features,
                                    sample_weight=ev.weights)
        va_bands = diagrams.interval_bands({method: model})
        chart(c2, figures.calibration_map(curves, ev.predictions[UNCALIBRATED], labels=labels,
                                          sample_weight=ev.weights, bands=va_bands), key="explore.map")
        if va_bands:
            c2.caption("Shaded: Venn-Abers' interval [p0, p1] (Vovk & Petej 2014), the isotonic fits with the new "
                       "row labelled 0 and 1.")
    show_inside(explanation(ev, data, scheme, method, params), model)
