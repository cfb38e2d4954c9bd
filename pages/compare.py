"""Compare: several calibrators (and models) on the same held-out rows; overlays, small multiples, measures with
bootstrap intervals and a verdict, downloads, and a shareable address. One script for any problem: the parts its
problem declares (:attr:`pages.parts.problem.Problem.views`) are drawn, the others are not."""
import streamlit as st

from calibdash import diagrams as cdiagrams, figures
from calibdash.evaluation import holdout as mevaluation
from calibdash.evaluation.holdout import UNCALIBRATED
from calibdash.cli.documents import reliability_document
from pages.parts import diagrams, downloads, fitting, runs, url_state
from pages.parts.measures_panel import TOGGLE as MEASURES_TOGGLE, measures_table, show_measures
from pages.parts.problem import problem_or_stop
from pages.parts.routing import route_guard
from pages.parts.scheme import current_scheme
from pages.parts.tables import PER_CLASS, binning_note, per_class
from pages.parts.text import chart, md
from pages.parts.widgets import hyperparam_panel, initial

route_guard("pages/compare.py")

st.title("Compare calibrators")
problem = problem_or_stop()
data, family, views = problem.data, problem.methods, problem.views
scheme = current_scheme(data)

available = family.available()
top_left, top_right = st.columns([3, 2]) if "models" in views else (st.container(), None)
key = problem.key(url_state.METHODS)
chosen = top_left.multiselect(family.picker, available, key=key, format_func=family.label, persist_state="session",
                              help=family.picker_help, **initial(key, default=family.compare_defaults(available,
                                                                                                      problem.k)))
models = [data.score] if not problem.is_classes else []
if "models" in views:                                 # several score columns: several models side by side
    mkey = f"compare.models.{data.content_key()[:8]}"
    models = top_right.multiselect("Models (score columns)", data.score_columns, key=mkey, persist_state="session",
                                   help="Compare several models' raw and calibrated scores.",
                                   **initial(mkey, default=[data.score])) or [data.score]
params = hyperparam_panel(chosen, label=family.label, specs_of=family.hyperparams)
url_state.write_url_state(problem, chosen)            # the view travels in the address bar
params = fitting.held_back(problem, params)

reason = fitting.rows_reason(data, chosen)
if reason:
    st.info(md(reason) + " Leave it out, or clear the feature columns on the Data page, to work on score cells.",
            icon=":material/info:")
ev = family.evaluate(data, scheme, params)
cells_path = getattr(ev, "weights", None) is not None
labels = family.labels(ev.predictions)
st.caption(f"{md(data.name)} · {problem.what()} · {fitting.judged_line(ev, scheme)} · "
           "the address bar holds this view: copy it to share")
runs.save_panel("compare", "evaluate", lambda: runs.evaluation_json(data, ev, scheme),
                lambda: downloads.models_document(problem, ev), lambda: reliability_document(ev), scheme=scheme)
notes = mevaluation.fit_notes(ev.models) if "fit_notes" in views else []
if notes:
    st.warning("**What the fits say:**\n" + "\n".join(f"- {md(n)}" for n in notes), icon=":material/info:")

st.subheader("Reliability")
if problem.is_classes:          # the top label's and the one-vs-rest columns' diagrams: binned, 15 equal-width bins
    diagram = diagrams.controls(problem.key("compare"), kinds=(diagrams.BINNED,), n_bins=15, strategy="uniform")
else:
    k1, k3 = st.columns([5, 1.3], vertical_alignment="bottom")
    with k1:
        diagram = diagrams.controls("compare")
    log_x = k3.toggle("Log-scaled score axis", key="compare.logx", persist_state="session",
                      help="Helps when scores crowd near 0 (click or default rates).")
strategy = diagram.strategy
overlaid, multiples = st.tabs(["Confidence", "Class-wise"] if "classwise" in views else ["Overlaid", "Side by side"])
with overlaid:
    if problem.is_classes:
        figs = {"confidence": diagrams.confidence(st, ev, labels, diagram, "compare.classes.confidence")}
    else:
        rel_fig, rel_caption = diagrams.build(ev.predictions, ev.labels, ev.weights, kind=diagram.kind,
                                              band=diagram.band, n_bins=diagram.n_bins, strategy=strategy,
                                              names=labels)
        # score cells carry no features: a feature-aware model fitted on them is a function of the score alone
        row_features = data.features.iloc[ev.rows] if data.features is not None and not cells_path else None
        curves = figures.map_curves(ev.models, ev.predictions[UNCALIBRATED].to_numpy(), row_features,
                                    sample_weight=ev.weights)
        va_bands = diagrams.interval_bands(ev.models)
        map_fig = figures.calibration_map(curves, ev.predictions[UNCALIBRATED], labels=labels, log_x=log_x,
                                          sample_weight=ev.weights, bands=va_bands)
        figs = {"reliability": rel_fig, "calibration_map": map_fig}
        c1, c2 = st.columns(2)
        chart(c1, rel_fig, key="compare.reliability")
        c1.caption(rel_caption)
        chart(c2, map_fig, key="compare.map")
        if va_bands:
            c2.caption("Shaded: Venn-Abers' interval [p0, p1] (Vovk & Petej 2014), the isotonic fits with the new "
                       "row labelled 0 and 1; its width shows how much the calibration set leaves open.")
        st.caption("Click a method in a legend to hide or show it.")
with multiples:                 # small multiples: one panel per class, or one per method
    if "classwise" in views:
        diagrams.classwise_picked(ev, data, labels, strategy)
    else:
        grid = st.columns(3)
        for i, key in enumerate(ev.predictions.columns):
            with grid[i % 3]:
                chart(st, diagrams.draw(ev.predictions[[key]], ev.labels, ev.weights, kind=diagram.kind,
                                        band=diagram.band, n_bins=diagram.n_bins, strategy=strategy, names=labels,
                                        title=labels[key], height=380), key=f"compare.small.{key}")
        st.caption(rel_caption)

table = measures_table(problem, ev, scheme, params, labels)
if "more_measures" in views:
    show_measures(ev, data, scheme, params, labels)

if "per_class" in views:
    st.subheader("Per class")
    shown = st.segmented_control("Per method", list(PER_CLASS), key="compare.classes.per_class", required=True,
                                 format_func=PER_CLASS.get, persist_state="session",
                                 **initial("compare.classes.per_class", default="ECE")) or "ECE"
    classes = cdiagrams.class_table(ev.predictions, ev.labels, class_names=[str(c) for c in data.classes],
                                    n_bins=cdiagrams.bin_count(diagram.n_bins, ev.labels)[0], strategy=strategy)
    st.dataframe(per_class(classes, ev.predictions, labels, shown), height=min(36 * (data.k + 1) + 3, 460))
    st.caption("One row per class, on the held-out rows: its rows and share, then per method "
               + ("the class's ECE (its class-wise reliability binned as the diagrams)." if shown == "ECE" else
                  "the mean probability given to the class, equal to its share when calibrated in the large.")
               + " Click a column to sort.")
if "simplex" in views:
    diagrams.simplex(ev, data, labels)

if len(models) > 1:
    st.subheader("Models side by side")
    n_bins, bins_text = diagrams.resolve_bins(diagram.n_bins, ev.labels, ev.weights)
    per_model, raw_tables = fitting.models_table(data, scheme, params, models, n_bins, strategy)
    st.dataframe(per_model.style.format("{:.4f}"))
    st.caption(binning_note(ev.binning))
    if diagram.kind == diagrams.BINNED:
        raw_data = cdiagrams.BinnedData(raw_tables, n_bins, strategy, bins_text)
        chart(st, cdiagrams.plot_binned(raw_data, title="Raw reliability of each model"),
                        key="compare.models.reliability")
    else:                    # one chart per model: each model's held-out rows (or cells) are its own
        grid = st.columns(min(3, len(models)))
        for i, col in enumerate(models):
            ev_m = fitting.evaluate_methods(data if col == data.score else data.with_score(col), scheme, params)
            raw = ev_m.predictions[[UNCALIBRATED]].rename(columns={UNCALIBRATED: col})
            with grid[i % len(grid)]:
                chart(st, diagrams.draw(raw, ev_m.labels, ev_m.weights, kind=diagram.kind, band=diagram.band,
                                        n_bins=diagram.n_bins, strategy=strategy, names={col: col},
                                        title=f"Raw reliability of {col}", height=380),
                      key=f"compare.models.reliability.{col}")

report = None
if "report" in views:
    more = fitting.measures_bootstrap(ev, data, scheme, params) if st.session_state.get(MEASURES_TOGGLE) else None
    report = downloads.report_html(
        ev, fitting.bootstrap(ev, data, scheme, params), data.report_view() if fitting.is_large(data) else data,
        scheme, labels, measures=more, n_bins=diagrams.resolve_bins(diagram.n_bins, ev.labels, ev.weights)[0],
        strategy=strategy, log_x=log_x, features=row_features, diagram=diagram.kind)
downloads.section(problem, ev, table, labels, figs, report)
