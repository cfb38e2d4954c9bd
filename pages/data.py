"""Data: pick a sample or upload a file, read it as a binary or a K-class problem, set its column roles, read the
validation report and the raw calibration, choose the evaluation. One script for any problem: the parts its
reading declares (what was found and the classes for K classes, the score's mapping for a score) are drawn."""
import pandas as pd
import streamlit as st

from calibdash import data as cdata, samples
from calibdash.evaluation import holdout as evaluation
from calibdash.measures import calibration as metrics
from calibdash.core.errors import DataError, SettingsError
from calibdash.evaluation import class_budget as budget
from calibdash.measures import class_measures as mmetrics
from calibdash.evaluation.holdout import UNCALIBRATED
from pages.parts import classes, diagrams, fitting, large_source, reading, scheme, source
from pages.parts.problem import BINARY, CLASSES, Problem, read_problem
from pages.parts.routing import route_guard
from pages.parts.tables import binning_note
from pages.parts.text import chart, md
from pages.parts.validation import show_report
from pages.parts.widgets import initial

route_guard("pages/data.py")

st.title("Data")


def _on_upload() -> None:
    up = st.session_state.get("data.uploader")
    if up is not None:
        source.remember_upload(up)
        st.session_state[source.SOURCE] = "Upload"


# a third source only when the operator named a data root (large sources are off otherwise)
sources = source.SOURCES + ((source.LARGE,) if large_source.available() else ())
if st.session_state.get(source.SOURCE, "Sample") not in sources:
    st.session_state[source.SOURCE] = "Sample"
src_col, pick_col = st.columns([1.5, 3])   # room for three source choices
with src_col:
    picked = st.segmented_control("Source", sources, key=source.SOURCE, persist_state="session",
                                  required=True, **initial(source.SOURCE, default="Sample"))
with pick_col:
    if picked == source.LARGE:
        large_source.source_inputs()
    elif picked == "Upload":
        st.file_uploader(
            "Your scores: CSV (comma, semicolon or tab; UTF-8, UTF-16 with BOM or Latin-1), .csv.gz or Parquet",
            type=["csv", "tsv", "txt", "gz", "parquet", "pq"], key="data.uploader", on_change=_on_upload,
            help="One row per case: a score (probability, margin or logit) and the true 0/1 outcome; "
                 "optionally more score columns, feature columns and a train/test split column.")
        up = st.session_state.get(source.UPLOAD)
        if up:
            size = len(up["data"])
            shown = (f"{size / 1e6:.1f} MB" if size >= 100_000 else f"{size / 1e3:.1f} kB" if size >= 1_000
                     else f"{size} bytes")
            st.caption(f"Using **{md(up['name'])}** ({shown}).")
        else:
            st.info("No file uploaded yet: the sample below stays active until you upload one.")
    else:
        sample_menu = {**samples.SAMPLES, **samples.CLASS_SAMPLES}      # binary samples, then the K-class ones
        names = list(sample_menu)
        st.selectbox("Sample", names, index=names.index(samples.DEFAULT_SAMPLE), key=source.SAMPLE,
                     format_func=lambda n: sample_menu[n].title, persist_state="session")
        st.caption(sample_menu[st.session_state.get(source.SAMPLE, samples.DEFAULT_SAMPLE)].description)



def _mapped_warning(score: str, lo: float, hi: float) -> None:
    st.warning(f"Scores in {md(score)} range from {lo:.4g} to {hi:.4g}, outside [0, 1]: they were mapped by the "
               "logistic function 1 / (1 + e^(−s)), as for SVM margins or logits (never min-max scaled).")


def _raw_calibration(problem: Problem, where: str) -> None:
    """The raw scores' (or probabilities') reliability beside their measures, before any calibration."""
    data = problem.data
    if problem.is_classes:
        st.subheader("How calibrated are these probabilities?")
        diagram = diagrams.controls("data.mc", kinds=(diagrams.BINNED,), n_bins=mmetrics.N_BINS, strategy="uniform")
        _, measures, conf = reading.class_view(data.content_key(), data, diagram.n_bins, diagram.strategy)
        g1, g2 = st.columns([1, 1])
        diagrams.confidence(g1, None, {UNCALIBRATED: "uncalibrated"}, diagram, "data.classes.confidence", data=conf,
                            title="Confidence reliability (all rows)")
        g2.dataframe(pd.DataFrame({"value": list(measures.values()),
                                   "measure": [mmetrics.MEASURES[n].label for n in measures]}, index=list(measures))
                     .style.format({"value": "{:.4f}"}))
        g2.caption(f"Computed on {where}, before any calibration.")
        return
    st.subheader("How calibrated are these scores?")
    diagram = diagrams.controls("data", n_bins=10, strategy="uniform")
    g1, g2 = st.columns([3, 2])
    raw_p, raw_y, raw_w = data.weighted_rows() if fitting.is_large(data) else diagrams.raw_rows(data)
    rel_fig, rel_caption = diagrams.build(pd.DataFrame({"uncalibrated": raw_p}), raw_y, raw_w, kind=diagram.kind,
                                          band=diagram.band, n_bins=diagram.n_bins, strategy=diagram.strategy,
                                          names={"uncalibrated": data.score},
                                          title=f"{diagrams.TITLES[diagram.kind]} of {data.score} (all rows)")
    chart(g1, rel_fig, key="data.reliability")
    g1.caption(rel_caption)
    summ = pd.DataFrame([fitting.raw_summary(data)], index=[data.score])
    g2.dataframe(summ.T.rename(columns={data.score: "value"}).style.format("{:.4f}"))
    g2.caption(f"Computed on {where}, before any calibration. {binning_note(metrics.binning_label())}")


def _scheme(problem: Problem) -> None:
    """The evaluation scheme's widgets and what it holds out on this problem, or why it cannot be used."""
    data = problem.data
    st.subheader("Evaluation scheme")
    try:
        if problem.is_classes:
            budget.check_table(data.n_rows, data.k)     # over the server's bounds: said as such, not as the scheme's
    except DataError as exc:
        st.error(f"**This table is over the server's bounds for K-class work:** {md(exc)}")
        return
    chosen = scheme.scheme_widgets(data)
    try:
        base = problem.methods.evaluate(data, chosen, {})
    except (DataError, SettingsError) as exc:
        st.error(f"**This evaluation scheme does not work here:** {md(exc)}")
        return
    if getattr(base, "weights", None) is None:
        st.success(scheme.scheme_line(data) + (f" ({md(base.note)})" if base.note else "")
                   + f": {getattr(base, 'n_judged', len(base.rows)):,} rows are held out.")
        return
    if not fitting.is_large(data):
        st.success(scheme.scheme_line(data))
    else:
        st.success(f"The split column {md(data.split_column)}" if chosen.kind == "column"
                   else md(chosen.describe(on_cells=True)))
    st.info("**Evaluations run on score cells**, "
            + ("as on every large source" if fitting.is_large(data) else
               f"as the data has more than {evaluation.CELLS_MIN_ROWS:,} rows")
            + f": {md(base.note)}; {base.n_judged:,} rows are held out. Calibrators are fitted and judged on the "
            "cells, each weighing its rows (the same fit as on the rows when the cells are the distinct scores), "
            "and rows are divided by a hash of their position"
            + (" in the source." if fitting.is_large(data) else
               " instead of a stratified draw. MBCT with feature columns is judged on rows."),
            icon=":material/grid_view:")


def _large_page() -> None:
    """The Data page on a large source: what it is, its rows and cells, the raw reliability, the scheme."""
    if not st.session_state.get(large_source.SPEC):
        st.info("Name a path, glob, table or query under the data root above, pick the score and label columns, "
                "and press **Aggregate**.", icon=":material/info:")
        return
    ld = large_source.large_data_or_stop()
    st.subheader("Large source")
    st.markdown(f"**{md(ld.name)}** · score {md(ld.score)} · label {md(ld.label_column)} "
                f"(positive = {md(repr(ld.positive_label))})"
                + (f" · split {md(ld.split_column)}" if ld.split_column else ""))
    m1, m2, m3, m4 = st.columns(4)
    m1.metric("Rows", f"{ld.n_rows:,}")
    m2.metric("Score cells", f"{ld.n_cells:,}")
    m3.metric("Positive rate", f"{ld.n_pos / max(ld.n_rows, 1):.1%}")
    m4.metric("Cells", "distinct scores" if ld.all_cells.exact else "score grid")
    st.caption(f"{md(ld.describe())}: the rows stay on the server; DuckDB read them and sent {ld.n_cells:,} cells "
               "(rows, positives and score sum per score) and nothing else. No row was dropped: rows where they live "
               "are checked, not filtered.")
    if ld.mapped_range:
        _mapped_warning(ld.score, *ld.mapped_range)
    problem = Problem(ld, BINARY)
    _raw_calibration(problem, "all rows, from their score cells")
    _scheme(problem)


if picked == source.LARGE:
    _large_page()
    st.stop()

try:
    df, info = source.source_table()
except DataError as exc:
    st.error(f"**This file cannot be read:** {md(exc)}")
    st.stop()

sha = info.sha256
problem, family, refusal = read_problem()
as_classes = family is CLASSES
roles = {} if as_classes else source.chosen_roles(sha)
if roles and problem is not None:
    try:
        cdata.build_score_set(df, info=info, name=info.name, **roles)  # surfaces an error in the user's own choice
    except DataError as exc:
        problem, refusal = None, str(exc)
# the choice of reading shows at the top when the table is read as K classes, looks K-class, was read so before,
# or fails as binary
mode_on_top = (as_classes or classes.detected(sha, df) or source.role_key(sha, classes.MODE) in st.session_state
               or problem is None)
st.subheader("Column roles")
if mode_on_top:
    reading.mode_control(sha, df)
if problem is None:
    st.error(f"**This {'table cannot be read as K classes' if as_classes else 'data cannot be used'}:** "
             f"{md(refusal)}")
    if as_classes:
        reading.class_roles(sha, df, None)
    else:
        reading.choose_roles(sha, df)
    with st.expander("Preview of the file", expanded=True):
        st.dataframe(df.head(50))
    st.stop()
data = problem.data
if problem.is_classes:
    reading.class_roles(sha, df, data)
    reading.found(data)
else:
    reading.score_roles(sha, df, data)

st.subheader("Validation report")
rep = data.report
show_report(rep, ("Accuracy (top class)", f"{mmetrics.accuracy(data.scores().probabilities, data.labels):.1%}")
            if problem.is_classes else ("Positive rate", f"{data.labels.mean():.1%}"))
if not problem.is_classes and rep.mapped.get(data.score):
    _mapped_warning(data.score, *rep.mapped[data.score])
with st.expander("Details", expanded=False):
    for msg in rep.messages:
        st.markdown(f"- {md(msg)}")
    if rep.class_counts and not problem.is_classes:
        st.markdown("- Classes: " + ", ".join(f"{md(k)}: {v:,}" for k, v in rep.class_counts.items()))

if "per_class" in problem.views:
    st.subheader("The classes")
    summary = reading.class_summary(data)
    st.dataframe(summary.style.format({"frequency": "{:.2%}", "mean predicted probability": "{:.2%}",
                                       "class-wise ECE": "{:.4f}"}),
                 height=min(36 * (len(summary) + 1) + 3, 420))
    st.caption("Per class, over all usable rows: the rows labelled with it and their share, the mean probability "
               "the model gives it (equal to the share for a model calibrated in the large), and its class-wise "
               "ECE (15 equal-width bins).")
_raw_calibration(problem, "all usable rows" + (" (from their score cells)" if not problem.is_classes and
                                               evaluation.use_cells_for(data.n_rows) else ""))
_scheme(problem)

with st.expander("Preview of the file", expanded=False):
    st.dataframe(df.head(200))
if not mode_on_top:
    with st.expander("Multi-class reading", expanded=False):
        reading.mode_control(sha, df)
