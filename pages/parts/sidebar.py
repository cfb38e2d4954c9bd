"""The sidebar every page shows: the active data set and the evaluation scheme."""
from __future__ import annotations

import streamlit as st

from calibdash.data import ClassSet
from calibdash.core.errors import DataError
from pages.parts.classes import active_class_set, using_classes
from pages.parts.scheme import current_scheme, scheme_line
from pages.parts.source import active_score_set, using_large
from pages.parts.text import md
from pages.parts.url_state import IGNORED

__all__ = ["sidebar_summary"]


def sidebar_summary() -> None:
    """The active data set and evaluation scheme, or why the data cannot be used."""
    ignored = st.session_state.get(IGNORED)
    if ignored:
        st.warning("This link holds settings that cannot be used, so the defaults stand: "
                   + md("; ".join(ignored)) + ".")
    with st.sidebar:
        st.markdown("**Active data**")
        if using_large():
            _large_summary()
            return
        try:
            data = active_class_set() if using_classes() else active_score_set()
        except DataError as exc:
            st.error(md(exc))
            return
        st.caption(_roles(data))
        if data.report.mapped.get(getattr(data, "score", None)):          # a binary score read as log-odds
            st.caption("Scores outside [0, 1] were mapped by the logistic function.")
        st.markdown("**Evaluation**")
        st.caption(scheme_line(data))


def _roles(data) -> str:
    """The data's name, rows and columns' roles: a K-class table's classes, label and class columns; a binary
    table's score and label."""
    if isinstance(data, ClassSet):
        what = "logits, softmaxed" if data.logits else "probabilities"
        columns = f"prefix **{md(data.prefix)}**" if data.prefix else "named after the classes"
        return (f"{md(data.name)} · {data.n_rows:,} rows · **{data.k} classes**\n\n"
                f"label **{md(data.label_column)}** · class columns {columns} ({what})")
    return (f"{md(data.name)} · {data.n_rows:,} rows\n\n"
            f"score **{md(data.score)}** · label **{md(data.label_column)}** "
            f"(positive = {md(repr(data.positive_label))})")


def _large_summary() -> None:
    """The active large source: rows summarised into score cells, roles, scheme (nothing is aggregated here)."""
    from pages.parts import large_source

    ld = large_source.peek()
    if isinstance(ld, str):
        st.caption(f"Large data · {md(ld)}")
        return
    st.caption(f"{md(ld.name)} · {md(ld.describe())}\n\n"
               f"score **{md(ld.score)}** · label **{md(ld.label_column)}** "
               f"(positive = {md(repr(ld.positive_label))})")
    if ld.mapped_range:
        st.caption("Scores outside [0, 1] were mapped by the logistic function.")
    st.markdown("**Evaluation**")
    scheme = current_scheme(ld)
    st.caption(f"The split column {md(ld.split_column)}" if scheme.kind == "column"
               else md(scheme.describe(on_cells=True)))
