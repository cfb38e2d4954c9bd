"""The validation report as the Data page shows it, for a binary ScoreSet and a K-class ClassSet alike."""
from __future__ import annotations

import streamlit as st

from calibdash.data import ValidationReport
from pages.parts.text import md, md_list

__all__ = ["show_report"]


def show_report(rep: ValidationReport, last: tuple[str, str]) -> None:
    """Rows read, used and dropped, then ``last`` (a metric's label and value, such as the positive rate), and
    one warning per reason rows were dropped, with the examples the report kept."""
    m1, m2, m3, m4 = st.columns(4)
    m1.metric("Rows read", f"{rep.n_read:,}")
    m2.metric("Rows used", f"{rep.n_used:,}")
    m3.metric("Rows dropped", f"{sum(rep.dropped.values()):,}")
    m4.metric(last[0], md(last[1]))
    for reason, n in rep.dropped.items():
        if n:
            such = rep.dropped_examples.get(reason)
            st.warning(f"{n:,} rows dropped: {md(reason)}" + (f", such as {md_list(map(repr, such))}" if such else "")
                       + ".")
