"""Explore: one calibrator, its hyperparameters, before/after diagrams, map and inner workings."""
import streamlit as st

from calibdash import calibrators, figures, metrics
from calibdash.evaluation import UNCALIBRATED
from pages.parts import fitting
from pages.parts.explaining import explanation
from pages.parts.labels import method_labels, method_menu_label
from pages.parts.routing import route_guard
from pages.parts.scheme import current_scheme
from pages.parts.source import score_set_or_stop
from pages.parts.tables import binning_note, metrics_frame
from pages.parts.widgets import hyperparam_widgets

route_guard("pages/explore.py")

#: Most rows of a fitted-values table sent to the browser (BBQ lists every bin of every model: 10^5 rows and more
#: on large data, which would be sent again on every slider move).
MAX_TABLE_ROWS = 5_000

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
    n_bins = st.select_slider("Bins of the reliability diagram", [5, 10, 15, 20, 30, 50],
                              value=metrics.DEFAULT_N_BINS, key="explore.n_bins", persist_state="session")
    strategy = st.segmented_control("Binning", list(metrics.STRATEGIES), default=metrics.DEFAULT_STRATEGY,
                                    key="explore.strategy", persist_state="session",
                                    help="Equal-width bins on [0, 1] or equal-count bins.")

reason = fitting.rows_reason(ss, [method])
ev = fitting.evaluate_methods(ss, scheme, {method: params})
cells_path = ev.weights is not None
model = ev.models[method]
labels = method_labels(ev.predictions.columns)
with right:
    st.caption(f"{ss.name} · score **{ss.score}** · fitted on the fitting rows, {fitting.judged_line(ev, scheme)}")
    if reason:
        st.info(reason, icon=":material/info:")
    st.dataframe(metrics_frame(ev.metrics))
    st.caption(binning_note(ev.binning))
    c1, c2 = st.columns(2)
    tables = figures.reliability_tables(ev.predictions, ev.labels, n_bins, strategy or metrics.DEFAULT_STRATEGY,
                                        sample_weight=ev.weights)
    c1.plotly_chart(figures.reliability_diagram(tables, labels=labels, title="Reliability: before and after"),
                    key="explore.reliability")
    row_features = ss.features.iloc[ev.rows] if ss.features is not None and not cells_path else None
    curves = figures.map_curves({method: model}, ev.predictions[UNCALIBRATED].to_numpy(), row_features,
                                sample_weight=ev.weights)
    c2.plotly_chart(figures.calibration_map(curves, ev.predictions[UNCALIBRATED], labels=labels,
                                            sample_weight=ev.weights),
                    key="explore.map")
    inside = explanation(ev, ss, scheme, method, params)
    for note in inside.notes:
        st.info(note, icon=":material/info:")
    inner = figures.inner_figures(inside)
    if inner:
        st.subheader("Inside the calibrator")
        cols = st.columns(2) if len(inner) > 1 else [st.container()]
        for i, (title, fig) in enumerate(inner):
            with cols[i % len(cols)]:
                st.markdown(f"**{title}**")
                st.plotly_chart(fig, key=f"explore.inner.{i}")
    if inside.tables:
        with st.expander("Fitted values (tables)"):
            for name, table in inside.tables.items():
                st.markdown(f"**{name}**")
                st.dataframe(table.head(MAX_TABLE_ROWS), height=240)
                if len(table) > MAX_TABLE_ROWS:
                    st.caption(f"The first {MAX_TABLE_ROWS:,} of {len(table):,} rows.")
