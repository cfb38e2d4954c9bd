"""Learn: synthetic problems with a known truth; each calibrator beside the truth, and the true calibration error
beside its estimates over repeated draws.

One flow over the chosen lesson (:mod:`pages.parts.learn_lessons`): a binary score with a known calibration curve,
or an over-confident K-class model with a known posterior. The lesson declares its problem's settings, its
calibrators and the views of one draw and of the repeated draws; the page draws, fits and lays them out."""
import streamlit as st

from calibdash.core.errors import DataError
from calibdash.evaluation.holdout import UNCALIBRATED
from pages.parts.learn_lessons import LESSONS
from pages.parts.routing import route_guard
from pages.parts.widgets import hyperparam_widgets, initial

route_guard("pages/learn.py")

K_MODE = "learn.mode"

st.title("Learn calibration with a known truth")
mode = st.segmented_control("Kind of data", list(LESSONS), format_func=lambda m: LESSONS[m].title, key=K_MODE,
                            persist_state="session", **initial(K_MODE, default="binary")) or "binary"
st.caption("Synthetic data whose true probability of a positive (or of each class) is known. Every draw is split in two "
           "stratified halves: calibrators are fitted on one half, and the raw scores and every calibrator are "
           "judged on the other; the true error comes from the known truth, not from a sample.")
lesson = LESSONS[mode]
key = lesson.key
family = lesson.family
available = family.available()
left, right = st.columns([1, 3], gap="large")
with left:
    problem = lesson.problem(key)
    n = st.select_slider("Sample size n (half fits, half judges)", lesson.sizes, key=key + "n", persist_state="session",
                         format_func=lambda v: f"{v:,}", **initial(key + "n", value=problem.default_n))
    seed = st.slider("Seed of the draw", 0, 99, key=key + "seed", persist_state="session",
                     help="The same seed gives the same rows; move it to see another sample of the same population.",
                     **initial(key + "seed", value=0))
    methods = st.multiselect("Calibrators", available, key=key + "methods", format_func=family.label,
                             persist_state="session",
                             **initial(key + "methods", default=[m for m in lesson.default_methods if m in available]))
    repeats = st.select_slider(lesson.repeats_label, lesson.repeats, key=key + "repeats", persist_state="session",
                               help="The study below repeats the draw with seeds seed, seed + 1, …",
                               **initial(key + "repeats", value=lesson.repeats_default))
    params = {}
    if methods:
        with st.expander("Hyperparameters", expanded=False):
            for m in methods:
                st.markdown(f"**{family.label(m)}**")
                params[m] = hyperparam_widgets(m, specs=family.hyperparams(m))

chosen = tuple((m, tuple(sorted(params.get(m, {}).items()))) for m in methods)
labels = family.labels([UNCALIBRATED, *methods])
try:
    with st.spinner("Drawing and fitting…", show_time=True):
        tr = lesson.trial(*problem.args, n, seed, chosen)
except DataError as exc:
    right.error(f"**This draw cannot be used:** {exc}")
    st.stop()

with right:
    st.subheader(problem.title)
    st.markdown(problem.description)
    if problem.note:
        st.info(problem.note, icon=":material/school:")
    lesson.draw_view(problem, tr, seed, labels, methods)
    lesson.study_view(problem, n, tuple(range(seed, seed + repeats)), chosen, labels)
