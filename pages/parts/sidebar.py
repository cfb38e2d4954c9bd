"""The sidebar every page shows: the active data set and the evaluation scheme."""
from __future__ import annotations

import streamlit as st

from calibdash.errors import DataError
from pages.parts.scheme import scheme_line
from pages.parts.source import active_score_set
from pages.parts.url_state import IGNORED

__all__ = ["sidebar_summary"]


def sidebar_summary() -> None:
    """The active data set and evaluation scheme, or why the data cannot be used."""
    ignored = st.session_state.get(IGNORED)
    if ignored:
        st.warning("This link holds settings that cannot be used, so the defaults stand: " + "; ".join(ignored) + ".")
    with st.sidebar:
        st.markdown("**Active data**")
        try:
            ss = active_score_set()
        except DataError as exc:
            st.error(str(exc))
            return
        st.caption(f"{ss.name} · {ss.n_rows:,} rows\n\n"
                   f"score **{ss.score}** · label **{ss.label_column}** (positive = {ss.positive_label!r})")
        if ss.report.mapped.get(ss.score):
            st.caption("Scores outside [0, 1] were mapped by the logistic function.")
        st.markdown("**Evaluation**")
        st.caption(scheme_line(ss))
