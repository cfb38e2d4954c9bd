"""Compare's measures: the problem's measures table with paired intervals and the verdict, then (binary) "More
measures": smooth ECE, ICI, the calibration slope, CORP, Murphy and the two tests, with intervals.

The more measures are computed on request (a toggle kept for the session), because their paired
intervals measure every method on every resample (about 10 ms apiece).
"""
from __future__ import annotations

import pandas as pd
import streamlit as st

from calibdash import measures
from calibdash.core.errors import DataError
from calibdash.evaluation.holdout import CELLS_MIN_ROWS, Evaluation, Scheme
from calibdash.measures import class_measures as mmetrics
from pages.parts import fitting
from pages.parts.tables import binning_note, interval_frame, metrics_frame
from pages.parts.text import md

__all__ = ["measures_table", "show_measures", "TOGGLE"]

TOGGLE = "compare.measures"
#: Width in pixels of a "value [low, high]" column of a K-class measures table (its bold best cells are wider
#: than the width the grid measures on plain text).
INTERVAL_WIDTH = 172


def _caption(problem, boot, ev) -> str:
    """How the cells were drawn and what each measure is."""
    if problem.is_classes:
        return (f"Each cell: value [{int(round(boot.level * 100))}% paired bootstrap interval]; the best value "
                f"per column is highlighted. {boot.note} "
                + " ".join(f"**{n}**: {m.label}." for n, m in mmetrics.MEASURES.items()))
    mvce = "MVCE averages 100 random equal-count partitions (MBCT, Eq. 10)"
    if ev.weights is not None:       # bootstrap_cells measures MVCE's resamples with metrics.mvce's partition views
        mvce += (" whose " + ("value and " if ev.n_judged > CELLS_MIN_ROWS else "")
                 + "resampled values come from the exact moments of a random partition of the rows")
    return (f"Each cell: value [{fitting.interval_caption(boot, ev)}]; the best value per column is highlighted. "
            f"{binning_note(ev.binning)} {mvce}. Lower is better except AUC and ACC.")


def measures_table(problem, ev, scheme: Scheme, params: dict, labels: dict) -> pd.DataFrame:
    """The problem's measures on the held-out rows with paired intervals (its family's bootstrap) and the
    verdict on ECE; returns the table for the download (values only when the intervals are over their bound)."""
    st.subheader("Measures on the held-out rows")
    try:
        boot = problem.methods.bootstrap(ev, problem.data, scheme, params)
    except DataError as exc:             # over the K-class bootstrap's bound: the measures without intervals
        st.warning(f"**No intervals:** {md(exc)}", icon=":material/block:")
        st.dataframe(metrics_frame(ev.metrics, labels, problem.direction))
        return ev.metrics.set_axis(pd.MultiIndex.from_tuples([(c, "value") for c in ev.metrics.columns]), axis=1)
    wide = ({name: st.column_config.TextColumn(name, width=INTERVAL_WIDTH, help=mmetrics.MEASURES[name].label)
             for name in dict.fromkeys(boot.table.columns.get_level_values(0))} if problem.is_classes else None)
    st.dataframe(interval_frame(boot, labels, problem.direction), height=36 * (len(boot.table) + 1) + 3,
                 column_config=wide)                                 # every method, no scrolling
    st.info(problem.methods.verdict(boot, "ECE", labels), icon=":material/lightbulb:")
    st.caption(_caption(problem, boot, ev))
    return boot.table


def _tests(ev: Evaluation, labels: dict) -> pd.DataFrame:
    """Spiegelhalter's z and Hosmer-Lemeshow per method, each with its p-value and one-line reading."""
    rows = {}
    for key in ev.predictions.columns:
        p = ev.predictions[key].to_numpy()
        tests = measures.hypothesis_tests(p, ev.labels, ev.weights)
        z, hl = tests["Spieg. z"], tests["HL"]
        rows[labels.get(key, key)] = {"Spiegelhalter z": z["statistic"], "p (z)": z["p_value"],
                                      "reading (z)": z["reading"], "Hosmer-Lemeshow": hl["statistic"], "p (HL)": hl["p_value"],
                                      "reading (HL)": hl["reading"]}
    return pd.DataFrame.from_dict(rows, orient="index")


def show_measures(ev: Evaluation, ss, scheme: Scheme, params: dict, labels: dict) -> None:
    """The section: a toggle, then the measures table with intervals, the tests with their readings, and a legend."""
    st.subheader("More measures")
    on = st.toggle("Smooth ECE, ICI, calibration slope, CORP decomposition and the tests, with intervals",
                   key=TOGGLE, persist_state="session",
                   help=f"Computed on request: {fitting.MEASURES_BOOT} paired resamples measure every method.")
    if not on:
        st.caption("Turn this on for the measures of the clinical and machine-learning literature beside the "
                   "papers' metrics; they take a few seconds.")
        return
    boot = fitting.measures_bootstrap(ev, ss, scheme, params)
    st.dataframe(interval_frame(boot))
    st.caption(f"Each cell: value [95% interval]; the best value per column is highlighted (for CITL, Slope and "
               f"Spieg. z the one closest to its ideal). {boot.note}")
    st.dataframe(_tests(ev, labels).style.format({"Spiegelhalter z": "{:.3f}", "p (z)": "{:.3g}",
                                                   "Hosmer-Lemeshow": "{:.2f}", "p (HL)": "{:.3g}"}))
    with st.expander("What each measure is"):
        st.markdown("\n".join(f"- **{name}**: {measures.describe(name)}" for name in measures.MEASURE_NAMES))
