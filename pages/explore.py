"""Explore: one calibrator, its hyperparameters, before/after diagrams, map and inner workings."""
import streamlit as st

from calibdash import calibrators, figures
from calibdash.evaluation import UNCALIBRATED
from pages import common

common.route_guard("pages/explore.py")

st.title("Explore a calibrator")
ss = common.score_set_or_stop()
scheme = common.current_scheme(ss)

available = calibrators.available()
left, right = st.columns([1, 3], gap="large")
with left:
    method = st.selectbox("Calibrator", available, index=available.index("histogram") if "histogram" in available else 0,
                          format_func=common.method_menu_label, key="explore.method", persist_state="session")
    cls = calibrators.get_class(method)
    st.caption(cls.paper)
    params = common.hyperparam_widgets(method)
    n_bins = st.select_slider("Bins of the reliability diagram", [5, 10, 15, 20, 30, 50], value=10,
                              key="explore.n_bins", persist_state="session")
    strategy = st.segmented_control("Binning", ["uniform", "quantile"], default="uniform",
                                    key="explore.strategy", persist_state="session")

ev = common.evaluate_methods(ss, scheme, {method: params})
model = ev.models[method]
labels = common.method_labels(ev.predictions.columns)
with right:
    st.caption(f"{ss.name} · score **{ss.score}** · fitted on the fitting rows, judged on "
               f"{len(ev.rows):,} held-out rows · {scheme.describe()}")
    st.dataframe(common.metrics_frame(ev.metrics))
    c1, c2 = st.columns(2)
    tables = figures.reliability_tables(ev.predictions, ev.labels, n_bins, strategy or "uniform")
    c1.plotly_chart(figures.reliability_diagram(tables, labels=labels, title="Reliability: before and after"),
                    key="explore.reliability")
    curves = figures.map_curves({method: model}, ev.predictions[UNCALIBRATED].to_numpy(),
                                ss.features.iloc[ev.rows] if ss.features is not None else None)
    c2.plotly_chart(figures.calibration_map(curves, ev.predictions[UNCALIBRATED], labels=labels),
                    key="explore.map")
    diag = model.diagnostics()
    common.show_notes(diag)
    inner = figures.inner_figures(model)
    if inner:
        st.subheader("Inside the calibrator")
        cols = st.columns(2) if len(inner) > 1 else [st.container()]
        for i, (title, fig) in enumerate(inner):
            with cols[i % len(cols)]:
                st.markdown(f"**{title}**")
                st.plotly_chart(fig, key=f"explore.inner.{i}")
    tabular = {k: v for k, v in diag.items() if hasattr(v, "to_csv")}
    if tabular:
        with st.expander("Fitted values (tables)"):
            for k, v in tabular.items():
                st.markdown(f"**{k}**")
                st.dataframe(v, height=240)
