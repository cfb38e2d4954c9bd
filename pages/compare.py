"""Compare: several calibrators (and models) on the same held-out rows; overlays, small multiples,
metrics with bootstrap intervals and a verdict, downloads, and a shareable address."""
import pandas as pd
import streamlit as st

from calibdash import calibrators, figures
from calibdash.evaluation import UNCALIBRATED
from calibdash.figures import images
from pages import common

common.route_guard("pages/compare.py")

st.title("Compare calibrators")
ss = common.score_set_or_stop()
scheme = common.current_scheme(ss)

available = calibrators.available()
default = [m for m in ("platt", "histogram", "isotonic") if m in available]
top_left, top_right = st.columns([3, 2]) if len(ss.score_columns) > 1 else (st.container(), None)
chosen = top_left.multiselect(
    "Calibrators", available, key="compare.methods", format_func=common.method_label, persist_state="session",
    help="Every method is fitted on the same rows and judged on the same held-out rows.",
    **common.initial("compare.methods", default=default))
models = [ss.score]
if len(ss.score_columns) > 1:
    models = top_right.multiselect(
        "Models (score columns)", ss.score_columns, key=f"compare.models.{ss.content_key()[:8]}",
        persist_state="session", help="Compare several models' raw and calibrated scores.",
        **common.initial(f"compare.models.{ss.content_key()[:8]}", default=[ss.score])) or [ss.score]
params = common.hyperparam_panel(chosen)
common.write_url_state(chosen)

ev = common.evaluate_methods(ss, scheme, params)
labels = common.method_labels(ev.predictions.columns)
st.caption(f"{ss.name} · score **{ss.score}** · judged on {len(ev.rows):,} held-out rows · {scheme.describe()} · "
           "the address bar holds this view: copy it to share")

k1, k2, k3 = st.columns([2, 1, 1])
n_bins = k1.select_slider("Bins of the reliability diagram", [5, 10, 15, 20, 30, 50], key="compare.n_bins",
                          persist_state="session", **common.initial("compare.n_bins", value=10))
strategy = k2.segmented_control("Binning", ["uniform", "quantile"], key="compare.strategy", persist_state="session",
                                help="Equal-width bins on [0, 1] or equal-count bins.",
                                **common.initial("compare.strategy", default="uniform")) or "uniform"
log_x = k3.toggle("Log-scaled score axis", key="compare.logx", persist_state="session",
                  help="Helps when scores crowd near 0 (click or default rates).")
tables = figures.reliability_tables(ev.predictions, ev.labels, n_bins, strategy)
rel_fig = figures.reliability_diagram(tables, labels=labels)
curves = figures.map_curves(ev.models, ev.predictions[UNCALIBRATED].to_numpy(),
                            ss.features.iloc[ev.rows] if ss.features is not None else None)
map_fig = figures.calibration_map(curves, ev.predictions[UNCALIBRATED], labels=labels, log_x=log_x)

overlaid, multiples = st.tabs(["Overlaid", "Side by side"])
with overlaid:
    c1, c2 = st.columns(2)
    c1.plotly_chart(rel_fig, key="compare.reliability")
    c2.plotly_chart(map_fig, key="compare.map")
    st.caption("Click a method in a legend to hide or show it.")
with multiples:
    keys = [k for k in tables if k != UNCALIBRATED]
    grid = st.columns(3)
    for i, key in enumerate([UNCALIBRATED] + keys):
        with grid[i % 3]:
            fig = figures.reliability_diagram({key: tables[key]}, labels=labels, title=labels[key], height=380)
            st.plotly_chart(fig, key=f"compare.small.{key}")

st.subheader("Metrics on the held-out rows")
boot = common.bootstrap(ev, ss, scheme, params)
st.dataframe(common.interval_frame(boot))
st.info(common.verdict_sentence(boot, labels), icon=":material/lightbulb:")
st.caption(f"Each cell: value [{int(boot.level * 100)}% paired bootstrap interval, {boot.n_boot} resamples of the "
           "held-out rows]; the best value per column is highlighted. ECE and MCE use 10 equal-count bins (the BBQ "
           "authors' convention); MVCE averages 100 random equal-count partitions (MBCT, Eq. 10). Lower is better "
           "except AUC and ACC.")

if len(models) > 1:
    st.subheader("Models side by side")
    per_model, raw_tables = common.models_table(ss, scheme, params, models, n_bins, strategy)
    st.dataframe(per_model.style.format("{:.4f}"))
    st.plotly_chart(figures.reliability_diagram(raw_tables, title="Raw reliability of each model"),
                    key="compare.models.reliability")

st.subheader("Downloads")
d1, d2, d3 = st.columns(3)
pred = ev.predictions.copy()
pred.insert(0, "label", ev.labels)
pred.index.name = "row"
d1.download_button("Calibrated predictions (CSV)", pred.to_csv().encode(), "calibrated_predictions.csv",
                   "text/csv", key="compare.dl.pred", icon=":material/download:")
for m, model in ev.models.items():
    d1.download_button(f"Fitted {labels[m]} (JSON)", common.model_json(model, ss), f"{m}.json",
                       "application/json", key=f"compare.dl.model.{m}", icon=":material/save:",
                       help="Load it with calibdash.export.loads, or apply it: python -m calibdash apply MODEL.json FILE")
flat = boot.table.copy()
flat.columns = [f"{m}_{s}" for m, s in flat.columns]
d2.download_button("Metrics table (CSV)", flat.rename_axis("method").to_csv().encode(), "metrics.csv", "text/csv",
                   key="compare.dl.metrics", icon=":material/download:")
with d3:
    reason = images.available()
    if reason:
        st.caption(reason)
    for name, fig in (("reliability", rel_fig), ("calibration_map", map_fig)):
        for fmt in ([] if reason else images.FORMATS):
            st.download_button(f"{name.replace('_', ' ').capitalize()} ({fmt.upper()})",
                               common.image_maker(fig, fmt), f"{name}.{fmt}",
                               "image/png" if fmt == "png" else "image/svg+xml", key=f"compare.dl.{name}.{fmt}",
                               icon=":material/image:")
