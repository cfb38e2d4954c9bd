"""Benchmark: calibrators x data sets, repeated K-fold cross-fitting, average ranks, Friedman and Holm."""
import hashlib

import streamlit as st

from calibdash import benchmark
from calibdash.benchmark import TableKind
from calibdash.core.errors import CalibdashError, DataError
from calibdash.evaluation.holdout import UNCALIBRATED
from calibdash.figures.charts import benchmark as bfig
from calibdash.core.safe_text import csv_text
from pages.parts.benchmark_sets import FILES, KINDS, available_sets, kind_of
from pages.parts.problems import show_problem
from pages.parts.routing import route_guard
from pages.parts.tables import bold_best
from pages.parts.widgets import hyperparam_panel
from pages.parts.text import chart, md, md_list

route_guard("pages/benchmark.py")

JOB = "bench.job"          # session key: the configuration of the last Run and whether it is still running
REQUEST = "bench.request"  # session key: "run" or "stop", left by the buttons for the next run


@st.cache_resource(show_spinner=False)
def _unit_cache() -> benchmark.UnitCache:
    """Finished units for every session, keyed on the data's content hash, calibrator, K and seed.

    A bounded store instead of ``st.cache_data`` on the unit: a unit reports
    progress after every fold, and elements touched inside an ``st.cache_data``
    function would be replayed on a cache hit; the store can also be read
    without computing, to show what a stopped run has finished.
    """
    return benchmark.UnitCache(max_entries=20_000)


def _request(what: str) -> None:
    st.session_state[REQUEST] = what


def _on_upload() -> None:
    files = st.session_state.get("bench.uploader") or []
    st.session_state[FILES] = {hashlib.sha256(f.getvalue()).hexdigest(): {"name": f.name, "data": f.getvalue()}
                               for f in files}


st.title("Benchmark calibrators across data sets")
st.caption("Every calibrator is cross-fitted on every data set (K folds, repeated with new fold seeds), the methods "
           "are ranked on each data set, and the average ranks are compared with the Friedman test "
           "(Iman-Davenport correction) and Holm's step-down procedure against a reference method — the protocol "
           "of the BBQ and ELiTE papers, after Demšar (2006). K-class data sets are benchmarked with the "
           "multi-class methods, ranked on log-loss by default with classwise ECE beside it (Kull et al. 2019).")

sets, default_sets, problems = available_sets()
for msg in problems:
    st.error(f"**This file cannot be used:** {md(msg)}")

d1, d2 = st.columns([3, 2], gap="large")
with d1:
    chosen_sets = st.multiselect(
        "Data sets", list(sets), default=[d for d in default_sets if d in sets], key="bench.datasets",
        persist_state="session",
        help="Each score column of a file is its own data set (the circles sample holds a linear and a "
             "quadratic SVM); a K-class file is one data set. The Friedman test needs at least two.")
    try:
        kind = kind_of(sets, chosen_sets)
    except DataError as exc:
        st.error(f"**These data sets cannot be benchmarked together:** {md(exc)}")
        st.stop()
    available = kind.family.available()
    methods = st.multiselect(
        kind.methods_title, available,
        default=kind.default_methods(), key=kind.methods_key, format_func=kind.family.label, persist_state="session")
    include_raw = st.toggle("Rank the uncalibrated scores too", value=True, key="bench.uncalibrated",
                            persist_state="session",
                            help="As the papers rank the base classifier: a calibrator should beat it.")
with d2:
    st.file_uploader("Add your own files (CSV, .csv.gz or Parquet)", type=["csv", "tsv", "txt", "gz", "parquet", "pq"],
                     accept_multiple_files=True, key="bench.uploader", on_change=_on_upload,
                     help="Score and label columns are guessed as on the Data page; each score column "
                          "becomes a data set you can choose on the left.")
    if st.session_state.get(FILES):
        st.caption("Uploaded: " + md_list(up["name"] for up in st.session_state[FILES].values()))

params = hyperparam_panel(methods, "Hyperparameters (shared with the Compare and Explore pages)",
                          label=kind.family.label, specs_of=kind.family.hyperparams)

c1, c2, c3 = st.columns(3)
folds = c1.select_slider("Folds (K)", list(range(2, 11)), value=benchmark.DEFAULT_FOLDS, key="bench.folds",
                         persist_state="session",
                         help="Each row's calibrated value comes from a model fitted on the other K - 1 folds.")
repeats = c2.select_slider("Repeats", list(range(1, 11)), value=benchmark.DEFAULT_REPEATS, key="bench.repeats",
                           persist_state="session",
                           help="K-fold cross-fitting is repeated with fold seeds seed, seed + 1, ...; a data "
                                "set's value is the mean over repeats.")
seed = c3.number_input("Seed", min_value=0, max_value=1_000_000, value=0, step=1, key="bench.seed",
                       persist_state="session")

config = {"kind": kind.name, "datasets": list(chosen_sets), "methods": {m: params.get(m, {}) for m in methods},
          "folds": int(folds), "repeats": int(repeats), "seed": int(seed), "uncalibrated": bool(include_raw)}
b1, b2, _ = st.columns([1, 1, 4])
# The buttons only leave a note in the session (callbacks run before the script, so the note survives a
# route_guard bounce); the script reads it with the widgets' current values.
b1.button("Run benchmark", key="bench.run", type="primary", icon=":material/play_arrow:",
          disabled=not chosen_sets or not methods, on_click=_request, args=("run",))
b2.button("Stop", key="bench.stop", icon=":material/stop:", on_click=_request, args=("stop",),
          help="Stops the run; finished pieces are kept, and Run resumes where it stopped.")
if not chosen_sets or not methods:
    st.info("Choose at least one data set and one calibrator.")
request = st.session_state.pop(REQUEST, None)
job = st.session_state.get(JOB)
if request == "run" and chosen_sets and methods:
    job = st.session_state[JOB] = {"config": config, "running": True}
elif request == "stop" and job:
    job["running"] = False
if not job:
    st.info("Choose data sets and calibrators, then press **Run benchmark**. Finished pieces are cached, so "
            "running again (or after **Stop**) only computes what is missing.", icon=":material/play_arrow:")
    st.stop()

cfg = job["config"]
missing = [d for d in cfg["datasets"] if d not in sets]
if missing:
    st.error(f"**Data set no longer available:** {md_list(missing)}. Choose the data sets again and press Run.")
    st.stop()
run_kind = KINDS[cfg["kind"]]
cals = list(cfg["methods"])
job_sets = {d: sets[d] for d in cfg["datasets"]}
labels = run_kind.family.labels([UNCALIBRATED, *cals])

r1, r2, r3 = st.columns(3)
RANKABLE = list(run_kind.rankable)
metric = r1.selectbox("Rank by", RANKABLE, index=RANKABLE.index(run_kind.default_metric),
                      key=run_kind.metric_key, persist_state="session",
                      help="The metric whose ranks the Friedman test and Holm's procedure use: the papers' metrics "
                           "or a further measure (the slope and the intercept rank by their distance to 1 and 0).")
ref_opts = ([UNCALIBRATED] if cfg["uncalibrated"] else []) + list(cals)
reference = r2.selectbox("Reference method", ref_opts, index=ref_opts.index(benchmark.default_reference(ref_opts)),
                         key="bench.reference", format_func=lambda k: labels.get(k, k), persist_state="session",
                         help="Holm's procedure compares every other method with this one (the papers: BBQ, ELiTE).")
alpha = r3.selectbox("Significance level", [0.01, 0.05, 0.10], index=1, key="bench.alpha",
                     persist_state="session", format_func=lambda a: f"alpha = {a:g}")
if reference not in ref_opts:
    reference = benchmark.default_reference(ref_opts)

bar = st.empty()
kwargs = dict(n_folds=cfg["folds"], repeats=cfg["repeats"], seed=cfg["seed"], metric=metric, metrics=RANKABLE,
              reference=reference,
              alpha=alpha, include_uncalibrated=cfg["uncalibrated"], cache=_unit_cache())
if job["running"]:
    progress = bar.progress(0.0, text="Starting…")
    try:
        result = run_kind.run(
            job_sets, cfg["methods"], compute=True,
            progress=lambda frac, msg: progress.progress(min(max(frac, 0.0), 1.0), text=msg), **kwargs)
    except CalibdashError as exc:
        job["running"] = False          # do not retry the same failing run on every rerun
        bar.empty()
        show_problem(exc)
        st.stop()
    job["running"] = False
    bar.empty()
else:
    result = run_kind.run(job_sets, cfg["methods"], compute=False, **kwargs)

if config != cfg:
    st.caption(":material/info: The settings above changed since this run; press **Run benchmark** to update.")
if not result.complete:
    st.warning(f"Stopped: {len(result.units)} of {result.planned} pieces (data set x method x repeat) are done. "
               "Press **Run benchmark** to resume; finished pieces are not computed again.", icon=":material/pause:")
if result.table.empty:
    st.stop()

st.subheader("Result")
with st.container(border=True):
    st.markdown(result.describe(labels))
for note in result.notes:
    st.caption(md(note))

data = bfig.rank_diagram_data(result.average_ranks, result.reference,
                              result.joined() if result.holm is not None else None)
chart(st, bfig.rank_diagram(data, labels=labels, title=f"Average rank on {metric} (1 = best, on the right)"),
                key="bench.ranks")
st.caption("Each method sits at its average rank over the data sets, better methods further right (Demšar's "
           f"diagram). The thick bar joins the reference, {labels.get(result.reference, result.reference)}, to every "
           "method Holm's procedure does not separate from it at alpha = "
           f"{result.alpha:g}; a method off the bar differs significantly. When the Friedman test finds no "
           "difference, all methods share the bar.")
cells = bfig.heatmap_data(result.table, result.ranks)
chart(st, bfig.metric_heatmap(cells, metric=metric, labels=labels), key="bench.heatmap")
st.caption("Mean over repeats of the metric on each data set's out-of-fold predictions, with the method's rank on "
           "that data set in brackets; darker is better.")


# How each kind of report table is shown: where the best value is bolded (1: in each data set's row, 0: in each
# metric's column), else the number formats; and what a caption explains.
BEST_ALONG = {TableKind.PER_DATASET_MEAN: 1, TableKind.AVERAGE_RANK: 0}
FORMATS = {
    TableKind.PER_DATASET_RANK: "{:g}",
    TableKind.FRIEDMAN: {"chi2_F": "{:.3f}", "F_F": "{:.3f}", "p": "{:.4f}", "critical": "{:.3f}"},
    TableKind.HOLM: {"avg_rank": "{:.3f}", "diff": "{:+.3f}", "z": "{:+.3f}", "p": "{:.4f}", "threshold": "{:.4f}"},
}
CAPTIONS = {
    TableKind.FRIEDMAN: "chi2_F = 12N/(k(k+1)) [sum R_j^2 - k(k+1)^2/4]; F_F = (N-1) chi2_F / (N(k-1) - chi2_F) is "
                        "compared with the F distribution with k-1 and (k-1)(N-1) degrees of freedom.",
    TableKind.HOLM: "z = (R_i - R_ref) / sqrt(k(k+1)/(6N)); p two-sided; the i-th smallest p is compared with "
                    "alpha / (k - i), rejecting until the first p above its threshold. 'significant' also needs "
                    "the Friedman test to reject.",
}
for table in benchmark.report_tables(result, labels):
    st.markdown(f"**{table.title}**")
    if table.kind in BEST_ALONG:
        st.dataframe(bold_best(table.frame, table.lower_is_better, axis=BEST_ALONG[table.kind]).format("{:.4f}"))
    else:
        st.dataframe(table.frame.style.format(FORMATS[table.kind]))
    if table.kind in CAPTIONS:
        st.caption(CAPTIONS[table.kind])
st.download_button("Download every piece's metrics (CSV)", csv_text(result.units, index=False).encode(),
                   file_name="benchmark_units.csv", mime="text/csv", key="bench.download",
                   icon=":material/download:")
