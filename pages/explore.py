"""Explore: one calibrator, its hyperparameters, before/after diagrams, map and inner workings."""
import streamlit as st

from calibdash import calibrators, figures
from calibdash.evaluation import UNCALIBRATED
from pages.parts import diagrams, explore_classes, fitting
from pages.parts.classes import using_classes
from pages.parts.explaining import explanation
from pages.parts.labels import method_labels, method_menu_label
from pages.parts.routing import route_guard
from pages.parts.scheme import current_scheme
from pages.parts.source import score_set_or_stop
from pages.parts.tables import binning_note, metrics_frame
from pages.parts.widgets import hyperparam_widgets
from pages.parts.text import chart, md

route_guard("pages/explore.py")
if using_classes():                      # a K-class table: the multi-class page part
    explore_classes.render()
    st.stop()

#: Most rows of a fitted-values table sent to the browser (BBQ lists every bin of every model: 10^5 rows and more
#: on large data, which would be sent again on every slider move).
MAX_TABLE_ROWS = 5_000
#: Title of the reliability chart per diagram type.
TITLES = {diagrams.BINNED: "Reliability", diagrams.SMOOTH: "Smoothed reliability", diagrams.CORP: "CORP reliability"}

st.title("Explore a calibrator")
ss = score_set_or_stop()
scheme = current_scheme(ss)

available = calibrators.available()
left, right = st.columns([1, 3], gap="large")
with left:
    method = st.selectbox("Calibrator", available, index=available.index("histogram") if "histogram" in available else 0,
                          format_func=method_menu_label, key="explore.method", persist_state="session")
    st.caption(calibrators.get_class(method).paper)
    params = hyperparam_widgets(method)
    diagram = diagrams.controls("explore", [st.container()] * 4)

reason = fitting.rows_reason(ss, [method])
ev = fitting.evaluate_methods(ss, scheme, {method: params})
cells_path = ev.weights is not None
model = ev.models[method]
labels = method_labels(ev.predictions.columns)
with right:
    st.caption(f"{md(ss.name)} · score **{md(ss.score)}** · fitted on the fitting rows, "
               f"{fitting.judged_line(ev, scheme)}")
    if reason:
        st.info(md(reason), icon=":material/info:")
    st.dataframe(metrics_frame(ev.metrics))
    st.caption(binning_note(ev.binning))
    c1, c2 = st.columns(2)
    rel_fig, rel_caption = diagrams.build(ev.predictions, ev.labels, ev.weights, kind=diagram.kind,
                                          band=diagram.band, n_bins=diagram.n_bins, strategy=diagram.strategy,
                                          names=labels, title=f"{TITLES[diagram.kind]}: before and after")
    chart(c1, rel_fig, key="explore.reliability")
    c1.caption(rel_caption)
    row_features = ss.features.iloc[ev.rows] if ss.features is not None and not cells_path else None
    curves = figures.map_curves({method: model}, ev.predictions[UNCALIBRATED].to_numpy(), row_features,
                                sample_weight=ev.weights)
    va_bands = diagrams.interval_bands({method: model})
    chart(c2, figures.calibration_map(curves, ev.predictions[UNCALIBRATED], labels=labels,
                                            sample_weight=ev.weights, bands=va_bands),
                    key="explore.map")
    if va_bands:
        c2.caption("Shaded: Venn-Abers' interval [p0, p1] (Vovk & Petej 2014), the isotonic fits with the new "
                   "row labelled 0 and 1.")
    inside = explanation(ev, ss, scheme, method, params)
    for note in inside.notes:
        st.info(md(note), icon=":material/info:")
    inner = figures.inner_figures(inside)
    if inner:
        st.subheader("Inside the calibrator")
        cols = st.columns(2) if len(inner) > 1 else [st.container()]
        for i, (title, fig) in enumerate(inner):
            with cols[i % len(cols)]:
                st.markdown(f"**{md(title)}**")
                chart(st, fig, key=f"explore.inner.{i}")
    if inside.tables:
        with st.expander("Fitted values (tables)"):
            for name, table in inside.tables.items():
                st.markdown(f"**{md(name)}**")
                st.dataframe(table.head(MAX_TABLE_ROWS), height=240)
                if len(table) > MAX_TABLE_ROWS:
                    st.caption(f"The first {MAX_TABLE_ROWS:,} of {len(table):,} rows.")
