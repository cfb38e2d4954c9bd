"""Learn's lessons: a synthetic problem with a known truth, what its draws and studies are, and the views of them.

The page (``pages/learn.py``) is one flow over a :class:`Lesson`: the problem's own settings, then a sample size,
a seed, calibrators of the lesson's family, repeated draws; one draw halved (fitted on one half, judged on the
other) and a study over repeated draws. A lesson declares what differs:

* :data:`BINARY`: a binary score whose true calibration curve is known (:data:`calibdash.synthetic.SCENARIOS`);
  its views are the truth beside one sample, each calibrator's map beside the truth, the true error beside its
  estimates (ECE, MVCE) and their bias and variance over the draws (:mod:`calibdash.synthetic.study`).
* :data:`CLASSES`: an over-confident K-class model with a known true posterior
  (:mod:`calibdash.synthetic.multiclass_study`), where temperature scaling fixes it and one-vs-rest binning needs
  more data; its views are the draw's true error and confidence reliability, and the true error against n.

Draws and studies are cached on their arguments.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

import pandas as pd
import streamlit as st

from calibdash import diagrams as mdiagrams, synthetic
from calibdash.core.errors import DataError
from calibdash.figures.charts import learn as flearn
from calibdash.measures import calibration as metrics
from calibdash.synthetic import multiclass_study as mstudy
from pages.parts import bounded_cache
from pages.parts import problem as families
from pages.parts.problem import Methods as Family
from pages.parts.labels import method_menu_label
from pages.parts.widgets import initial

__all__ = ["Problem", "Lesson", "BINARY", "CLASSES", "LESSONS"]

AGAINST = {"score": "given the score", "prediction": "given the prediction"}


@dataclass(frozen=True)
class Problem:
    """A lesson's synthetic problem: ``args`` (hashable) name it for the draws; the rest is what the page says."""

    args: tuple
    title: str
    description: str
    note: str = ""
    default_n: int = 1000


def _params(chosen: tuple) -> dict:
    return {m: dict(p) for m, p in chosen}


# -- a binary score with a known calibration curve ----------------------------------------------------------------
@bounded_cache.cache_data(show_spinner=False, max_entries=64, budget="learn_lessons.trial")
def _trial(name: str, n: int, seed: int, chosen: tuple) -> synthetic.Trial:
    return synthetic.trial(name, n, seed, _params(chosen))


@bounded_cache.cache_data(show_spinner=False, max_entries=32, budget="learn_lessons.study")
def _study(name: str, n: int, seeds: tuple, chosen: tuple) -> pd.DataFrame:
    return synthetic.estimator_study(name, n, seeds, _params(chosen))


def _on_scenario(key: str) -> None:
    """A new scenario starts at its own sample size (small for "Small samples")."""
    scenario = synthetic.SCENARIOS.get(st.session_state.get(key + "scenario"))
    if scenario is not None:
        st.session_state[key + "n"] = scenario.default_n


def _scenario(key: str) -> Problem:
    name = st.selectbox("Scenario", list(synthetic.SCENARIOS), key=key + "scenario",
                        format_func=lambda k: synthetic.SCENARIOS[k].title, on_change=_on_scenario, args=(key,),
                        persist_state="session", **initial(key + "scenario", index=0))
    s = synthetic.SCENARIOS[name]
    return Problem((name,), s.title, f"{s.description}  \nTrue calibration curve: **{s.truth}**.", s.note, s.default_n)


def _hp_name(hp) -> str:
    return f"{hp.symbol} ({hp.name})" if hp.symbol and hp.symbol != hp.name else hp.name


def _scenario_draw(problem: Problem, tr, seed: int, labels: dict, methods: list) -> None:
    """The truth beside one sample, each calibrator's map beside the truth, the true error beside its estimates."""
    name, d = problem.args[0], tr.draw
    judged_s, judged_y = d.scores[tr.judged_rows], d.labels[tr.judged_rows]
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
            parts = [f"*{_hp_name(h)}*: {h.help}" for h in families.BINARY.hyperparams(m)]
            boxes[i % cols].caption(f"**{method_menu_label(m)}.** " + " ".join(parts or ["no hyperparameters."]))
    else:
        st.info("Choose at least one calibrator on the left.", icon=":material/arrow_back:")

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


def _estimator_study(problem: Problem, n: int, seeds: tuple, chosen: tuple, labels: dict) -> None:
    """Bias and variance of ECE and MVCE over the repeated draws, against the true error given the score or the
    prediction."""
    st.markdown(f"#### Bias and variance of the estimates over {len(seeds)} draws")
    against = st.segmented_control("Compare the estimates with the true error", list(AGAINST),
                                   format_func=AGAINST.get, key="learn.against", persist_state="session",
                                   **initial("learn.against", default="score")) or "score"
    try:
        with st.spinner(f"Repeating the draw {len(seeds)} times…", show_time=True):
            study = _study(problem.args[0], n, seeds, chosen)
    except DataError as exc:
        st.error(f"**The repeated draws cannot be made:** {exc}")
        st.stop()
    chart, text = st.columns([2, 1], gap="medium")
    chart.plotly_chart(flearn.bias_figure(flearn.bias_data(study, against), labels=labels, seed=seeds[0]),
                       key="learn.bias")
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


# -- an over-confident K-class model with a known posterior -------------------------------------------------------
@bounded_cache.cache_data(show_spinner=False, max_entries=32, budget="learn_lessons.class_trial")
def _class_trial(k: int, t: float, n: int, seed: int, chosen: tuple) -> mstudy.ClassTrial:
    return mstudy.class_trial(mstudy.overconfident(k, t), n, seed, _params(chosen))


@bounded_cache.cache_data(show_spinner=False, max_entries=16, budget="learn_lessons.size_study")
def _size_study(k: int, t: float, seeds: tuple, chosen: tuple) -> pd.DataFrame:
    return mstudy.size_study(mstudy.overconfident(k, t), mstudy.SIZES, seeds, _params(chosen))


def _overconfident(key: str) -> Problem:
    k = st.select_slider("Classes K", [3, 4, 5, 6, 8, 10], key=key + "k", persist_state="session",
                         **initial(key + "k", value=3))
    t = st.select_slider("Over-confidence T of the model", [1.0, 1.5, 2.0, 2.5, 3.0, 4.0], key=key + "t",
                         persist_state="session", **initial(key + "t", value=mstudy.TEMPERATURE),
                         help="The model reports softmax(T z(x)) where the truth is softmax(z(x)); T = 1 is "
                              "calibrated.")
    return Problem((k, float(t)), "An over-confident K-class model", (
        f"{k} classes of points in the plane, each a Gaussian around a point on a circle; the true probability "
        f"of each class at x is known (a softmax of linear functions of x). The model reports the same "
        f"ranking with its logits multiplied by **T = {t:g}**: too sure of itself, as modern neural networks "
        "are (Guo et al. 2017). Dividing its log-probabilities by T gives the truth back, so **temperature "
        "scaling** (one parameter) can fix it; **one-vs-rest binning** learns K step maps of many bins and "
        "needs far more rows."), default_n=5000)


def _class_draw(problem: Problem, tr: mstudy.ClassTrial, seed: int, labels: dict, methods: list) -> None:
    """This draw's true error table and the confidence reliability diagram of its judged half."""
    e = tr.errors.set_index("method")
    e.index = [labels.get(m, m) for m in e.index]
    e.columns = ["true error", "ECE (confidence)", "classwise ECE", "log-loss"]
    st.markdown(f"#### This draw: {len(tr.fit_rows):,} rows fit, {len(tr.judged_rows):,} rows judged")
    st.dataframe(e.style.format("{:.4f}"))
    st.caption(
        "*true error*: the mean over the judged rows of Σ_k |P(y = k | x) − q_k(x)|, from the known truth, no "
        "labels used; for a map that merges rows (binning) an upper bound of its canonical calibration error "
        "(Vaicenavicius et al. 2019). ECE, classwise ECE (15 equal-width bins) and log-loss are estimated from "
        "the judged labels, as on real data.")
    chart, text = st.columns([2, 1], gap="medium")
    conf = mdiagrams.prepare_confidence(tr.predictions, tr.draw.labels[tr.judged_rows])
    chart.plotly_chart(mdiagrams.plot_confidence(conf, names=labels, title="Confidence reliability, judged half",
                                              height=440), key="learn.mc.confidence")
    text.markdown(
        "**What this shows.** The judged half's rows binned by their top probability: each point is the share "
        "of rows whose most probable class is right against their mean confidence. The raw model's points lie "
        "below the diagonal: it is more confident than it is right. A calibrated method's points follow the "
        "diagonal within their intervals.")


def _class_size_study(problem: Problem, n: int, seeds: tuple, chosen: tuple, labels: dict) -> None:
    """The true error of each method against the sample size, over the repeated draws."""
    st.markdown(f"#### The true error as the sample grows ({len(seeds)} draws per size)")
    with st.spinner(f"Repeating the draw at {len(mstudy.SIZES)} sizes…", show_time=True):
        study = _size_study(*problem.args, seeds, chosen)
    chart, text = st.columns([2, 1], gap="medium")
    chart.plotly_chart(flearn.size_curve_figure(mstudy.size_summary(study), labels=labels), key="learn.mc.sizes")
    text.markdown(
        "**What this shows.** For each sample size, the mean true error over the draws (bars: 95% interval of "
        "the mean). The raw model's error does not depend on n: it is the model's. Temperature scaling "
        "reaches almost zero with a few hundred rows, because one number is all it learns. One-vs-rest "
        "binning starts far above it and falls slowly: each of its bins is estimated from the rows that fall "
        "in it, and its steps cannot follow the truth between the bin edges.")


# -- the lessons ---------------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class Lesson:
    """What a lesson declares: its widgets' key prefix, its problem's settings (``problem(key)`` draws them), the
    sample sizes and repeats offered, its calibrators' :class:`~pages.parts.problem.Methods` and default ones, one
    draw (``trial(*problem.args, n, seed, chosen)``) and the views of the draw (``draw_view(problem, trial, seed,
    labels, methods)``) and of the repeated draws (``study_view(problem, n, seeds, chosen, labels)``)."""

    title: str
    key: str
    problem: Callable[[str], Problem]
    sizes: tuple
    repeats: tuple
    repeats_default: int
    repeats_label: str
    family: Family
    default_methods: tuple
    trial: Callable
    draw_view: Callable
    study_view: Callable


BINARY = Lesson("Binary scores", "learn.", _scenario, sizes=(100, 200, 500, 1000, 2000, 5000, 10000),
                repeats=(5, 10, 20, 50), repeats_default=20, repeats_label="Repeated draws (bias and variance)",
                family=families.BINARY, default_methods=("platt", "isotonic", "bbq"), trial=_trial,
                draw_view=_scenario_draw, study_view=_estimator_study)
CLASSES = Lesson("K classes", "learn.mc.", _overconfident, sizes=mstudy.SIZES, repeats=(3, 5, 10, 20),
                 repeats_default=5, repeats_label="Repeated draws per size", family=families.CLASSES,
                 default_methods=mstudy.DEFAULT_STUDY_METHODS, trial=_class_trial, draw_view=_class_draw,
                 study_view=_class_size_study)
#: The page's choice of lesson.
LESSONS = {"binary": BINARY, "classes": CLASSES}
