"""The sidebar every page shows: the active data set and the evaluation scheme."""
from __future__ import annotations

import streamlit as st

from calibdash.errors import DataError
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
        if using_classes():
            _class_summary()
            return
        try:
            ss = active_score_set()
        except DataError as exc:
            st.error(md(exc))
            return
        st.caption(f"{md(ss.name)} · {ss.n_rows:,} rows\n\n"
                   f"score **{md(ss.score)}** · label **{md(ss.label_column)}** "
                   f"(positive = {md(repr(ss.positive_label))})")
        if ss.report.mapped.get(ss.score):
            st.caption("Scores outside [0, 1] were mapped by the logistic function.")
        st.markdown("**Evaluation**")
        st.caption(scheme_line(ss))


def _class_summary() -> None:
    """The active K-class table: rows, classes, label and class columns, scheme; or why it cannot be read."""
    try:
        cs = active_class_set()
    except DataError as exc:
        st.error(md(exc))
        return
    what = "logits, softmaxed" if cs.logits else "probabilities"
    columns = f"prefix **{md(cs.prefix)}**" if cs.prefix else "named after the classes"
    st.caption(f"{md(cs.name)} · {cs.n_rows:,} rows · **{cs.k} classes**\n\n"
               f"label **{md(cs.label_column)}** · class columns {columns} ({what})")
    st.markdown("**Evaluation**")
    st.caption(scheme_line(cs))


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
