"""Learn: synthetic scenarios with a known true calibration curve; each calibrator's map beside the truth,
and the true calibration error beside its estimates (ECE, MVCE) over repeated draws."""
import pandas as pd
import streamlit as st

from calibdash import calibrators, synthetic
from calibdash.measures import calibration as metrics
from calibdash.errors import DataError
from calibdash.evaluation import UNCALIBRATED
from calibdash.figures.charts import learn as flearn
from pages.parts import learn_classes
from pages.parts.labels import method_label, method_labels, method_menu_label
from pages.parts.routing import route_guard
from pages.parts.widgets import hyperparam_widgets, initial
from pages.parts import bounded_cache

route_guard("pages/learn.py")

SIZES = [100, 200, 500, 1000, 2000, 5000, 10000]
REPEATS = [5, 10, 20, 50]
AGAINST = {"score": "given the score", "prediction": "given the prediction"}
K_SCENARIO, K_N, K_SEED, K_METHODS = "learn.scenario", "learn.n", "learn.seed", "learn.methods"
K_MODE = "learn.mode"
MODES = {"binary": "Binary scores", "classes": "K classes"}


@bounded_cache.cache_data(show_spinner=False, max_entries=64, budget="learn.trial")
def _trial(name: str, n: int, seed: int, chosen: tuple) -> synthetic.Trial:
    return synthetic.trial(name, n, seed, {m: dict(p) for m, p in chosen})


@bounded_cache.cache_data(show_spinner=False, max_entries=32, budget="learn.study")
def _study(name: str, n: int, seeds: tuple, chosen: tuple) -> pd.DataFrame:
    return synthetic.estimator_study(name, n, seeds, {m: dict(p) for m, p in chosen})


def _hp_name(hp) -> str:
    return f"{hp.symbol} ({hp.name})" if hp.symbol and hp.symbol != hp.name else hp.name


def _on_scenario() -> None:
    """A new scenario starts at its own sample size (small for "Small samples")."""
    scenario = synthetic.SCENARIOS.get(st.session_state.get(K_SCENARIO))
    if scenario is not None:
        st.session_state[K_N] = scenario.default_n


st.title("Learn calibration with a known truth")
mode = st.segmented_control("Kind of data", list(MODES), format_func=MODES.get, key=K_MODE, persist_state="session",
                            **initial(K_MODE, default="binary")) or "binary"
st.caption("Synthetic data whose true probability of a positive (or of each class) is known. Every draw is split in two "
           "stratified halves: calibrators are fitted on one half, and the raw scores and every calibrator are "
           "judged on the other; the true error comes from the known truth, not from a sample.")
if mode == "classes":                   # the K-class lesson
    learn_classes.render()
    st.stop()

available = calibrators.available()
left, right = st.columns([1, 3], gap="large")
with left:
    names = list(synthetic.SCENARIOS)
    name = st.selectbox("Scenario", names, key=K_SCENARIO, format_func=lambda k: synthetic.SCENARIOS[k].title,
                        on_change=_on_scenario, persist_state="session", **initial(K_SCENARIO, index=0))
    scenario = synthetic.SCENARIOS[name]
    n = st.select_slider("Sample size n (half fits, half judges)", SIZES, key=K_N, persist_state="session",
                         format_func=lambda v: f"{v:,}", **initial(K_N, value=scenario.default_n))
    seed = st.slider("Seed of the draw", 0, 99, key=K_SEED, persist_state="session",
                     help="The same seed gives the same rows; move it to see another sample of the same population.",
                     **initial(K_SEED, value=0))
    default = [m for m in ("platt", "isotonic", "bbq") if m in available]
    methods = st.multiselect("Calibrators", available, key=K_METHODS, format_func=method_label,
                             persist_state="session", **initial(K_METHODS, default=default))
    repeats = st.select_slider("Repeated draws (bias and variance)", REPEATS, key="learn.repeats",
                               persist_state="session", **initial("learn.repeats", value=20),
                               help="The study below repeats the draw with seeds seed, seed + 1, …")
    params = {}
    if methods:
        with st.expander("Hyperparameters", expanded=False):
            for m in methods:
                st.markdown(f"**{method_label(m)}**")
                params[m] = hyperparam_widgets(m)

chosen = tuple((m, tuple(sorted(params.get(m, {}).items()))) for m in methods)
labels = method_labels([UNCALIBRATED, *methods])
try:
    with st.spinner("Drawing and fitting…", show_time=True):
        tr = _trial(name, n, seed, chosen)
except DataError as exc:
    right.error(f"**This draw cannot be used:** {exc}")
    st.stop()
d = tr.draw
judged_s, judged_y = d.scores[tr.judged_rows], d.labels[tr.judged_rows]

with right:
    st.subheader(scenario.title)
    st.markdown(f"{scenario.description}  \nTrue calibration curve: **{scenario.truth}**.")
    st.info(scenario.note, icon=":material/school:")

    # -- 1. the truth and one sample ----------------------------------------------------------------------
    chart, text = st.columns([2, 1], gap="medium")
    fig = flearn.scenario_figure(flearn.scenario_data(name, judged_s, judged_y),
                                 title=f"The truth and one sample (seed {seed})")
    chart.plotly_chart(fig, key="learn.truth")
    text.markdown((
        "**What this shows.** The black curve is the true probability of a positive at each score. The grey "
        f"points are what the judged half of this sample ({len(judged_s):,} rows) shows: the positive rate in 10 "
        "equal-count bins of the raw scores, with 95% intervals; the bars below count the rows per bin.\n\n"
        "A point off the diagonal whose interval holds the black curve is sampling noise, not a finding. "
        "Where the black curve leaves the diagonal, the raw scores are miscalibrated."))

    # -- 2. each calibrator beside the truth --------------------------------------------------------------------
    st.markdown("#### Each calibrator's map beside the truth")
    st.markdown(
        f"**What this shows.** Each panel: one calibrator fitted on the other half ({len(tr.fit_rows):,} rows), its "
        "map in colour, the truth in black, the raw scores (no change) dashed. The *true error* is the population "
        "average of |map − truth|, weighted by how often each score occurs: where few scores fall, a gap costs little.")
    if tr.models:
        cols = min(3, len(tr.models))
        errors = dict(zip(tr.errors["method"], tr.errors["true_error"]))
        st.plotly_chart(flearn.maps_figure(flearn.maps_data(name, tr.models, d.scores), labels=labels,
                                           errors=errors, cols=cols), key="learn.maps")
        boxes = st.columns(cols)
        for i, m in enumerate(methods):        # each method's hyperparameters under its panel
            hps = calibrators.get_class(m).hyperparams
            parts = [f"*{_hp_name(h)}*: {h.help}" for h in hps] or ["no hyperparameters."]
            boxes[i % cols].caption(f"**{method_menu_label(m)}.** " + " ".join(parts))
    else:
        st.info("Choose at least one calibrator on the left.", icon=":material/arrow_back:")

    # -- 3. true error against its estimates on this draw ----------------------------------------------------------
    st.markdown("#### True calibration error and its estimates on this draw")
    table = tr.errors.set_index("method")[["true_error", "true_error_pred", "ece", "mvce", "ece_minus_true",
                                           "mvce_minus_true"]]
    table.index = [labels.get(k, k) for k in table.index]
    table.columns = ["true | score", "true | prediction", "ECE", "MVCE", "ECE − true", "MVCE − true"]
    st.dataframe(table.style.format("{:.4f}").format("{:+.4f}", subset=["ECE − true", "MVCE − true"]))
    st.caption(
        "*true | score*: the true error given the score, mean |f(s) − g(s)| over the population, with f the truth and "
        "g the calibrator (the identity for the raw scores). *true | prediction*: mean |P(y = 1 | g(s)) − g(s)|, what "
        "a binned ECE aims at; the two differ for step-shaped maps. "
        f"ECE ({metrics.binning_label()}) and MVCE (100 random views) are computed on the {len(judged_s):,} judged "
        "rows only; the differences use the true error given the score.")

    # -- 4. bias and variance over repeated draws --------------------------------------------------------------------
    st.markdown(f"#### Bias and variance of the estimates over {repeats} draws")
    against = st.segmented_control("Compare the estimates with the true error", list(AGAINST),
                                   format_func=AGAINST.get, key="learn.against", persist_state="session",
                                   **initial("learn.against", default="score")) or "score"
    seeds = tuple(range(seed, seed + repeats))
    try:
        with st.spinner(f"Repeating the draw {repeats} times…", show_time=True):
            study = _study(name, n, seeds, chosen)
    except DataError as exc:
        st.error(f"**The repeated draws cannot be made:** {exc}")
        st.stop()
    chart, text = st.columns([2, 1], gap="medium")
    fig = flearn.bias_figure(flearn.bias_data(study, against), labels=labels, seed=seed)
    chart.plotly_chart(fig, key="learn.bias")
    text.markdown((
        f"**What this shows.** Each point is one draw of {n:,} rows (seeds {seeds[0]}–{seeds[-1]}): the estimate "
        f"on its judged half minus the true error {AGAINST[against]}. The box's middle line is the median, the "
        "dashed line the mean; the mean's distance from the dotted zero line is the estimator's **bias**, the "
        "box's height its **variance**. The diamonds mark the draw above.\n\n"
        "ECE is never negative, so on well-calibrated output it is biased upwards, more so on small samples. "
        "MVCE's random views mix high and low scores, so errors of opposite sign cancel in them: it sees a "
        "shift of all probabilities, but can miss a model that is over-confident at both ends. A step map far "
        "below zero *given the score* but near zero *given the prediction* is calibrated, yet has thrown away "
        "what the score knew."))
    summary = synthetic.study_summary(study, against)
    summary["method"] = [labels.get(k, k) for k in summary["method"]]
    summary = summary.rename(columns={"true_error": "mean true error", "estimate": "mean estimate", "sd": "SD",
                                      "rmse": "RMSE"})
    st.dataframe(summary.set_index(["method", "estimator"]).style.format("{:.4f}").format("{:+.4f}", subset=["bias"]))
    st.caption("Bias: mean of (estimate − true error) over the draws; SD: its standard deviation; RMSE: the root "
               "mean square of the difference, which combines both.")
