"""Compare: several calibrators on the same held-out rows, curves overlaid, one metrics table."""
import streamlit as st

from calibdash import calibrators, figures
from calibdash.evaluation import UNCALIBRATED
from pages import common

common.route_guard("pages/compare.py")

st.title("Compare calibrators")
ss = common.score_set_or_stop()
scheme = common.current_scheme(ss)

available = calibrators.available()
default = [m for m in ("platt", "histogram", "isotonic") if m in available]
chosen = st.multiselect("Calibrators", available, default=default, key="compare.methods",
                        format_func=common.method_label, persist_state="session",
                        help="Every method is fitted on the same rows and judged on the same held-out rows.")
with st.expander("Hyperparameters", expanded=False):
    params = {}
    cols = st.columns(max(1, min(3, len(chosen))))
    for i, m in enumerate(chosen):
        box = cols[i % len(cols)]
        box.markdown(f"**{common.method_label(m)}**")
        params[m] = common.hyperparam_widgets(m, box)

ev = common.evaluate_methods(ss, scheme, params)
labels = common.method_labels(ev.predictions.columns)
st.caption(f"{ss.name} · score **{ss.score}** · judged on {len(ev.rows):,} held-out rows · {scheme.describe()}")

k1, k2, k3 = st.columns([2, 1, 1])
n_bins = k1.select_slider("Bins of the reliability diagram", [5, 10, 15, 20, 30, 50], value=10,
                          key="compare.n_bins", persist_state="session")
strategy = k2.segmented_control("Binning", ["uniform", "quantile"], default="uniform", key="compare.strategy",
                                persist_state="session", help="Equal-width bins on [0, 1] or equal-count bins.")
log_x = k3.toggle("Log-scaled score axis", key="compare.logx", persist_state="session",
                  help="Helps when scores crowd near 0 (click or default rates).")
c1, c2 = st.columns(2)
tables = figures.reliability_tables(ev.predictions, ev.labels, n_bins, strategy or "uniform")
c1.plotly_chart(figures.reliability_diagram(tables, labels=labels), key="compare.reliability")
curves = figures.map_curves(ev.models, ev.predictions[UNCALIBRATED].to_numpy(),
                            ss.features.iloc[ev.rows] if ss.features is not None else None)
c2.plotly_chart(figures.calibration_map(curves, ev.predictions[UNCALIBRATED], labels=labels, log_x=log_x),
                key="compare.map")

st.subheader("Metrics on the held-out rows")
st.dataframe(common.metrics_frame(ev.metrics))
st.caption("Best value per column highlighted. ECE and MCE use 10 equal-count bins (the BBQ authors' convention); "
           "MVCE averages 100 random equal-count partitions (MBCT, Eq. 10). Lower is better except AUC and ACC.")
