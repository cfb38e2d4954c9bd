"""Compare: several calibrators (and models) on the same held-out rows; overlays, small multiples,
metrics with bootstrap intervals and a verdict, downloads, and a shareable address."""
import streamlit as st

from calibdash import bootstrap as cboot, calibrators, diagrams as cdiagrams, figures
from calibdash.evaluation import CELLS_MIN_ROWS, UNCALIBRATED
from calibdash.figures import images
from calibdash.safe_text import csv_text
from pages.parts import diagrams, downloads, fitting, url_state
from pages.parts.classes import using_classes
from pages.parts.compare_classes import compare_classes
from pages.parts.labels import method_label, method_labels
from pages.parts.measures_panel import TOGGLE as MEASURES_TOGGLE, show_measures
from pages.parts.routing import route_guard
from pages.parts.scheme import current_scheme
from pages.parts.source import score_set_or_stop
from pages.parts.tables import binning_note, interval_frame
from pages.parts.text import chart, md
from pages.parts.widgets import hyperparam_panel, initial

route_guard("pages/compare.py")

st.title("Compare calibrators")
if using_classes():                  # a K-class table: its own view (pages/parts/compare_classes.py)
    compare_classes()
    st.stop()
ss = score_set_or_stop()
scheme = current_scheme(ss)

available = calibrators.available()
default = [m for m in ("platt", "histogram", "isotonic") if m in available]
top_left, top_right = st.columns([3, 2]) if len(ss.score_columns) > 1 else (st.container(), None)
chosen = top_left.multiselect(
    "Calibrators", available, key=url_state.METHODS, format_func=method_label, persist_state="session",
    help="Every method is fitted on the same rows and judged on the same held-out rows.",
    **initial(url_state.METHODS, default=default))
models = [ss.score]
if len(ss.score_columns) > 1:
    models = top_right.multiselect(
        "Models (score columns)", ss.score_columns, key=f"compare.models.{ss.content_key()[:8]}",
        persist_state="session", help="Compare several models' raw and calibrated scores.",
        **initial(f"compare.models.{ss.content_key()[:8]}", default=[ss.score])) or [ss.score]
params = hyperparam_panel(chosen)
url_state.write_url_state(chosen)

reason = fitting.rows_reason(ss, chosen)
if reason:
    st.info(md(reason) + " Leave it out, or clear the feature columns on the Data page, to work on score cells.",
            icon=":material/info:")
ev = fitting.evaluate_methods(ss, scheme, params)
cells_path = ev.weights is not None
labels = method_labels(ev.predictions.columns)
st.caption(f"{md(ss.name)} · score **{md(ss.score)}** · {fitting.judged_line(ev, scheme)} · "
           "the address bar holds this view: copy it to share")

k1, k3 = st.columns([5, 1.3], vertical_alignment="bottom")
with k1:
    diagram = diagrams.controls("compare")
log_x = k3.toggle("Log-scaled score axis", key="compare.logx", persist_state="session",
                  help="Helps when scores crowd near 0 (click or default rates).")
n_bins, bins_text = diagrams.resolve_bins(diagram.n_bins, ev.labels, ev.weights)
strategy = diagram.strategy
rel_fig, rel_caption = diagrams.build(ev.predictions, ev.labels, ev.weights, kind=diagram.kind, band=diagram.band,
                                      n_bins=diagram.n_bins, strategy=strategy, names=labels)
# score cells carry no features: a feature-aware model fitted on them is a function of the score alone
row_features = ss.features.iloc[ev.rows] if ss.features is not None and not cells_path else None
curves = figures.map_curves(ev.models, ev.predictions[UNCALIBRATED].to_numpy(), row_features,
                            sample_weight=ev.weights)
va_bands = diagrams.interval_bands(ev.models)
map_fig = figures.calibration_map(curves, ev.predictions[UNCALIBRATED], labels=labels, log_x=log_x,
                                  sample_weight=ev.weights, bands=va_bands)

overlaid, multiples = st.tabs(["Overlaid", "Side by side"])
with overlaid:
    c1, c2 = st.columns(2)
    chart(c1, rel_fig, key="compare.reliability")
    c1.caption(rel_caption)
    chart(c2, map_fig, key="compare.map")
    if va_bands:
        c2.caption("Shaded: Venn-Abers' interval [p0, p1] (Vovk & Petej 2014), the isotonic fits with the new "
                   "row labelled 0 and 1; its width shows how much the calibration set leaves open.")
    st.caption("Click a method in a legend to hide or show it.")
with multiples:
    keys = [k for k in ev.predictions.columns if k != UNCALIBRATED]
    grid = st.columns(3)
    for i, key in enumerate([UNCALIBRATED] + keys):
        with grid[i % 3]:
            fig = diagrams.draw(ev.predictions[[key]], ev.labels, ev.weights, kind=diagram.kind,
                                band=diagram.band, n_bins=diagram.n_bins, strategy=strategy, names=labels,
                                title=labels[key], height=380)
            chart(st, fig, key=f"compare.small.{key}")
    st.caption(rel_caption)

st.subheader("Metrics on the held-out rows")
boot = fitting.bootstrap(ev, ss, scheme, params)
st.dataframe(interval_frame(boot), height=36 * (len(boot.table) + 1) + 3)   # every method, no scrolling
st.info(cboot.verdict(boot, "ECE", labels), icon=":material/lightbulb:")
mvce = "MVCE averages 100 random equal-count partitions (MBCT, Eq. 10)"
if cells_path:           # bootstrap_cells measures MVCE's resamples with metrics.mvce's partition views
    mvce += (" whose " + ("value and " if ev.n_judged > CELLS_MIN_ROWS else "")
             + "resampled values come from the exact moments of a random partition of the rows")
st.caption(f"Each cell: value [{fitting.interval_caption(boot, ev)}]; the best value per column is highlighted. "
           f"{binning_note(ev.binning)} {mvce}. Lower is better except AUC and ACC.")

show_measures(ev, ss, scheme, params, labels)

if len(models) > 1:
    st.subheader("Models side by side")
    per_model, raw_tables = fitting.models_table(ss, scheme, params, models, n_bins, strategy)
    st.dataframe(per_model.style.format("{:.4f}"))
    st.caption(binning_note(ev.binning))
    if diagram.kind == diagrams.BINNED:
        raw_data = cdiagrams.BinnedData(raw_tables, n_bins, strategy, bins_text)
        chart(st, cdiagrams.plot_binned(raw_data, title="Raw reliability of each model"),
                        key="compare.models.reliability")
    else:                    # one chart per model: each model's held-out rows (or cells) are its own
        grid = st.columns(min(3, len(models)))
        for i, col in enumerate(models):
            ev_m = fitting.evaluate_methods(ss if col == ss.score else ss.with_score(col), scheme, params)
            raw = ev_m.predictions[[UNCALIBRATED]].rename(columns={UNCALIBRATED: col})
            with grid[i % len(grid)]:
                chart(st, diagrams.draw(raw, ev_m.labels, ev_m.weights, kind=diagram.kind, band=diagram.band,
                                              n_bins=diagram.n_bins, strategy=strategy, names={col: col},
                                              title=f"Raw reliability of {col}", height=380),
                                key=f"compare.models.reliability.{col}")

st.subheader("Downloads")
d1, d2, d3 = st.columns(3)
d1.download_button("Calibrated predictions (CSV)", downloads.predictions_csv(ev),
                   "calibrated_predictions_per_cell.csv" if cells_path else "calibrated_predictions.csv",
                   "text/csv", key="compare.dl.pred", icon=":material/download:",
                   help=downloads.PER_CELL_CAPTION if cells_path else "One line per held-out row.")
if cells_path:
    d1.caption(downloads.PER_CELL_CAPTION)
for m, model in ev.models.items():
    d1.download_button(f"Fitted {labels[m]} (JSON)", downloads.model_json(model, ss), f"{m}.json",
                       "application/json", key=f"compare.dl.model.{m}", icon=":material/save:",
                       help="Load it with calibdash.export.loads, or apply it: python -m calibdash apply MODEL.json FILE")
flat = boot.table.copy()
flat.columns = [f"{m}_{s}" for m, s in flat.columns]
d2.download_button("Metrics table (CSV)", csv_text(flat.rename_axis("method")).encode(), "metrics.csv", "text/csv",
                   key="compare.dl.metrics", icon=":material/download:")
measures_boot = fitting.measures_bootstrap(ev, ss, scheme, params) if st.session_state.get(MEASURES_TOGGLE) else None
d2.download_button("Report (HTML)",
                   downloads.report_html(ev, boot, ss.report_view() if fitting.is_large(ss) else ss, scheme, labels, measures=measures_boot, n_bins=n_bins,
                                         strategy=strategy, log_x=log_x, features=row_features, diagram=diagram.kind),
                   f"{ss.name.rsplit('.', 1)[0]}_calibration_report.html", "text/html", key="compare.dl.report",
                   icon=":material/description:",
                   help="One page to keep or share: the verdict, this table with its intervals, the two charts "
                        "(interactive), more calibration measures, the data and the methods' papers. About 5 MB: "
                        "plotly.js is inside, so it opens without a network.")
with d3:
    reason = images.available()
    if reason:
        st.caption(reason)
    for name, fig in (("reliability", rel_fig), ("calibration_map", map_fig)):
        for fmt in ([] if reason else images.FORMATS):
            st.download_button(f"{name.replace('_', ' ').capitalize()} ({fmt.upper()})",
                               downloads.image_maker(fig, fmt), f"{name}.{fmt}",
                               "image/png" if fmt == "png" else "image/svg+xml", key=f"compare.dl.{name}.{fmt}",
                               icon=":material/image:")
