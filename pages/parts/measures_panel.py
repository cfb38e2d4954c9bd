"""Compare's "More measures": smooth ECE, ICI, the calibration slope, CORP, Murphy and the two tests, with intervals.

Computed on request (a toggle kept for the session), because their paired
intervals measure every method on every resample (about 10 ms apiece).
"""
from __future__ import annotations

import pandas as pd
import streamlit as st

from calibdash import measures
from calibdash.evaluation import Evaluation, Scheme
from pages.parts import fitting
from pages.parts.tables import interval_frame

__all__ = ["show_measures", "TOGGLE"]

TOGGLE = "compare.measures"


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
