"""Learn, K classes: an over-confident K-class model with a known true posterior
(:mod:`calibdash.synthetic.multiclass_study`), where temperature scaling fixes it and one-vs-rest binning
needs more data.

Draws, fits and the study are cached on their arguments; the study's methods are those the user chose.
"""
from __future__ import annotations

import streamlit as st

from calibdash import diagrams as mdiagrams, multiclass
from calibdash.errors import DataError
from calibdash.figures.charts.learn import size_curve_figure
from calibdash.evaluation import UNCALIBRATED
from calibdash.synthetic import multiclass_study as mstudy
from pages.parts import bounded_cache
from pages.parts.class_methods import class_method_label, class_method_labels
from pages.parts.widgets import initial

__all__ = ["render", "SIZES", "K_CLASSES", "K_T", "K_N", "K_SEED", "K_METHODS", "K_REPEATS"]

SIZES = [200, 500, 1000, 2000, 5000, 10000]
REPEATS = [3, 5, 10, 20]
K_CLASSES, K_T, K_N, K_SEED, K_METHODS, K_REPEATS = ("learn.mc.k", "learn.mc.t", "learn.mc.n", "learn.mc.seed",
                                                     "learn.mc.methods", "learn.mc.repeats")


@bounded_cache.cache_data(show_spinner=False, max_entries=32, budget="learn_classes.trial")
def _trial(k: int, t: float, n: int, seed: int, methods: tuple) -> mstudy.ClassTrial:
    return mstudy.class_trial(mstudy.overconfident(k, t), n, seed, list(methods))


@bounded_cache.cache_data(show_spinner=False, max_entries=16, budget="learn_classes.study")
def _study(k: int, t: float, seeds: tuple, methods: tuple):
    return mstudy.size_study(mstudy.overconfident(k, t), SIZES, seeds, list(methods))


def render() -> None:
    """The K-class lesson (the page's title and mode switch are drawn by pages/learn.py)."""
    available = multiclass.available()
    left, right = st.columns([1, 3], gap="large")
    with left:
        k = st.select_slider("Classes K", [3, 4, 5, 6, 8, 10], key=K_CLASSES, persist_state="session",
                             **initial(K_CLASSES, value=3))
        t = st.select_slider("Over-confidence T of the model", [1.0, 1.5, 2.0, 2.5, 3.0, 4.0], key=K_T,
                             persist_state="session", **initial(K_T, value=mstudy.TEMPERATURE),
                             help="The model reports softmax(T z(x)) where the truth is softmax(z(x)); "
                                  "T = 1 is calibrated.")
        n = st.select_slider("Sample size n (half fits, half judges)", SIZES, key=K_N, persist_state="session",
                             format_func=lambda v: f"{v:,}", **initial(K_N, value=5000))
        seed = st.slider("Seed of the draw", 0, 99, key=K_SEED, persist_state="session", **initial(K_SEED, value=0))
        default = [m for m in mstudy.DEFAULT_STUDY_METHODS if m in available]
        methods = st.multiselect("Calibrators", available, key=K_METHODS, format_func=class_method_label,
                                 persist_state="session", **initial(K_METHODS, default=default))
        repeats = st.select_slider("Repeated draws per size", REPEATS, key=K_REPEATS, persist_state="session",
                                   **initial(K_REPEATS, value=5),
                                   help="The curve repeats each sample size with seeds seed, seed + 1, …")
    labels = class_method_labels([UNCALIBRATED, *methods])
    try:
        with st.spinner("Drawing and fitting…", show_time=True):
            tr = _trial(k, float(t), n, seed, tuple(methods))
    except DataError as exc:
        right.error(f"**This draw cannot be used:** {exc}")
        st.stop()
    with right:
        st.subheader("An over-confident K-class model")
        st.markdown(
            f"{k} classes of points in the plane, each a Gaussian around a point on a circle; the true probability "
            f"of each class at x is known (a softmax of linear functions of x). The model reports the same "
            f"ranking with its logits multiplied by **T = {t:g}**: too sure of itself, as modern neural networks "
            "are (Guo et al. 2017). Dividing its log-probabilities by T gives the truth back, so **temperature "
            "scaling** (one parameter) can fix it; **one-vs-rest binning** learns K step maps of many bins and "
            "needs far more rows.")
        _this_draw(tr, labels)
        st.markdown(f"#### The true error as the sample grows ({repeats} draws per size)")
        seeds = tuple(range(seed, seed + repeats))
        with st.spinner(f"Repeating the draw at {len(SIZES)} sizes…", show_time=True):
            study = _study(k, float(t), seeds, tuple(methods))
        chart, text = st.columns([2, 1], gap="medium")
        chart.plotly_chart(size_curve_figure(mstudy.size_summary(study), labels=labels), key="learn.mc.sizes")
        text.markdown(
            "**What this shows.** For each sample size, the mean true error over the draws (bars: 95% interval of "
            "the mean). The raw model's error does not depend on n: it is the model's. Temperature scaling "
            "reaches almost zero with a few hundred rows, because one number is all it learns. One-vs-rest "
            "binning starts far above it and falls slowly: each of its bins is estimated from the rows that fall "
            "in it, and its steps cannot follow the truth between the bin edges.")


def _this_draw(tr: mstudy.ClassTrial, labels: dict) -> None:
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
