"""Data: pick a sample or upload a file, set column roles, read the validation report, choose the evaluation."""
import pandas as pd
import streamlit as st

from calibdash import data as cdata, evaluation, samples
from calibdash.measures import calibration as metrics
from calibdash.errors import DataError, SettingsError
from calibdash.data.roles import reads_as_numbers
from pages.parts import bounded_cache, classes, data_classes, diagrams, fitting, labels, large_source, scheme, source
from pages.parts.routing import route_guard
from pages.parts.tables import binning_note
from pages.parts.text import chart, md, md_list
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
            st.caption(f"Using **{md(up['name'])}** ({size / 1e6:.1f} MB)." if size >= 100_000
                       else f"Using **{md(up['name'])}** ({size / 1e3:.1f} kB).")
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


def _raw_calibration(data, rows, where: str) -> None:
    """The raw scores' reliability (the chosen diagram type) beside their metrics; ``rows``: (p, y, w)."""
    st.subheader("How calibrated are these scores?")
    diagram = diagrams.controls("data", n_bins=10, strategy="uniform")
    g1, g2 = st.columns([3, 2])
    raw_p, raw_y, raw_w = rows
    rel_fig, rel_caption = diagrams.build(pd.DataFrame({"uncalibrated": raw_p}), raw_y, raw_w, kind=diagram.kind,
                                          band=diagram.band, n_bins=diagram.n_bins, strategy=diagram.strategy,
                                          names={"uncalibrated": data.score},
                                          title=f"{diagrams.TITLES[diagram.kind]} of {data.score} (all rows)")
    chart(g1, rel_fig, key="data.reliability")
    g1.caption(rel_caption)
    summ = pd.DataFrame([fitting.raw_summary(data)], index=[data.score])
    g2.dataframe(summ.T.rename(columns={data.score: "value"}).style.format("{:.4f}"))
    g2.caption(f"Computed on {where}, before any calibration. {binning_note(metrics.binning_label())}")


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
    _raw_calibration(ld, ld.weighted_rows(), "all rows, from their score cells")
    st.subheader("Evaluation scheme")
    chosen_scheme = scheme.scheme_widgets(ld)
    try:
        base = fitting.evaluate_methods(ld, chosen_scheme, {})
        st.success(f"The split column {md(ld.split_column)}" if chosen_scheme.kind == "column"
                   else md(chosen_scheme.describe(on_cells=True)))
        st.info(f"**Evaluations run on score cells**, as on every large source: {md(base.note)}; "
                f"{base.n_judged:,} rows "
                "are held out. Calibrators are fitted and judged on the cells, each weighing its rows, and rows are "
                "divided by a hash of their position in the source.", icon=":material/grid_view:")
    except (DataError, SettingsError) as exc:
        st.error(f"**This evaluation scheme does not work here:** {md(exc)}")


if picked == source.LARGE:
    _large_page()
    st.stop()

try:
    df, info = source.source_table()
except DataError as exc:
    st.error(f"**This file cannot be read:** {md(exc)}")
    st.stop()

sha = info.sha256
if classes.using_classes():
    data_classes.class_page(df, info)
    st.stop()
roles = source.chosen_roles(sha)
role_error = None
try:
    ss = source.active_score_set()
    if roles:
        cdata.build_score_set(df, info=info, name=info.name, **roles)  # surfaces an error in the user's own choice
except DataError as exc:
    role_error = str(exc)
    ss = None
# the choice of reading shows at the top when the table looks K-class, was read so before, or fails as binary
mode_on_top = classes.detected(sha, df) or source.role_key(sha, classes.MODE) in st.session_state or ss is None
if mode_on_top:
    data_classes.mode_control(sha, df)
@bounded_cache.cache_data(show_spinner=False, max_entries=32, budget="data.numeric_columns")
def _numeric_columns(sha: str, _df: pd.DataFrame) -> list:
    """The columns of numbers (numeric, or text that reads as numbers), once per file, not on every rerun."""
    return [c for c in _df.columns if pd.api.types.is_numeric_dtype(_df[c]) or reads_as_numbers(_df[c])]


def _choose_roles_after_refusal() -> None:
    """When the guessed roles are refused (a two-class file whose guessed score is the negative class's
    column, two complementary columns whose names say no class, ...), the user names the label and the
    score here; the page then reads the file with them (a chosen column is used as it is, said in the
    report)."""
    st.subheader("Choose the columns")
    st.caption("Name the label and the score column yourself; the file is then read with them.")
    cols = list(df.columns)
    c1, c2 = st.columns(2)
    c1.selectbox("Label (true outcome)", cols, index=None, key=source.role_key(sha, "label"),
                 placeholder="Choose the label column", persist_state="session")
    numeric = _numeric_columns(sha, df)
    c2.selectbox("Score (the model to look at)", numeric, index=None, key=source.role_key(sha, "score"),
                 placeholder="Choose the score column", persist_state="session",
                 help="Probabilities in [0, 1] of the positive class; margins or logits are mapped by the "
                      "logistic function.")


if ss is None:
    st.error(f"**This data cannot be used:** {md(role_error)}")
    _choose_roles_after_refusal()
    st.dataframe(df.head(50))
    st.stop()
if role_error:
    st.warning(f"Your column choice does not work ({md(role_error)}); showing the guessed roles instead.")


st.subheader("Column roles")
cols = list(df.columns)
numeric = [c for c in _numeric_columns(sha, df) if c != ss.label_column]
r1, r2, r3 = st.columns(3)
r1.selectbox("Label (true outcome)", cols, index=cols.index(ss.label_column), key=source.role_key(sha, "label"),
             persist_state="session", help="The column holding the two classes.")
label_values, positive_index = labels.positive_class_options(df[ss.label_column], ss.positive_label)
r1.selectbox("Positive class", label_values, index=positive_index,
             key=source.role_key(sha, "positive"), persist_state="session",
             help="Which label value counts as 1 (the event the score predicts).")
score_opts = [c for c in numeric if c not in (ss.split_column,)] or [ss.score]
r2.selectbox("Score (the model to look at)", score_opts,
             index=score_opts.index(ss.score) if ss.score in score_opts else 0,
             key=source.role_key(sha, "score"), persist_state="session",
             help="Probabilities in [0, 1]; margins or logits are mapped by the logistic function.")
if len(ss.score_columns) > 1:
    r2.caption("Score columns found: " + md_list(ss.score_columns))
split_opts = [source.NONE] + [c for c in cols if c not in (ss.label_column, ss.score)]
r3.selectbox("Split column (optional)", split_opts,
             index=split_opts.index(ss.split_column) if ss.split_column in split_opts else 0,
             key=source.role_key(sha, "split"), persist_state="session",
             help="A column such as train/test that says which rows fit the calibrators.")
feat_opts = [c for c in cols if c not in (ss.label_column, ss.score, ss.split_column)]
offered = set(feat_opts)
r3.multiselect("Feature columns (for MBCT)", feat_opts, default=[c for c in ss.feature_columns if c in offered],
               key=source.role_key(sha, "features"), persist_state="session")

st.subheader("Validation report")
rep = ss.report
show_report(rep, ("Positive rate", f"{ss.labels.mean():.1%}"))
if rep.mapped.get(ss.score):
    lo, hi = rep.mapped[ss.score]
    _mapped_warning(ss.score, lo, hi)
with st.expander("Details", expanded=False):
    for msg in rep.messages:
        st.markdown(f"- {md(msg)}")
    st.markdown("- Classes: " + ", ".join(f"{md(k)}: {v:,}" for k, v in rep.class_counts.items()))

_raw_calibration(ss, diagrams.raw_rows(ss), "all usable rows"
                 + (" (from their score cells)" if evaluation.use_cells_for(ss.n_rows) else ""))

st.subheader("Evaluation scheme")
chosen_scheme = scheme.scheme_widgets(ss)
try:
    base = fitting.evaluate_methods(ss, chosen_scheme, {})
    st.success(scheme.scheme_line(ss))
    if base.weights is not None:
        st.info(f"**Evaluations run on score cells**, as the data has more than {evaluation.CELLS_MIN_ROWS:,} "
                f"rows: {md(base.note)}; {base.n_judged:,} rows are held out. Calibrators are fitted and judged on the "
                "cells, each weighing its rows (the same fit as on the rows when the cells are the distinct "
                "scores), and rows are divided by a hash of their position instead of a stratified draw. MBCT with "
                "feature columns is judged on rows.", icon=":material/grid_view:")
except (DataError, SettingsError) as exc:
    st.error(f"**This evaluation scheme does not work here:** {md(exc)}")

with st.expander("Preview of the file", expanded=False):
    st.dataframe(df.head(200))
if not mode_on_top:
    with st.expander("Multi-class reading", expanded=False):
        data_classes.mode_control(sha, df)
