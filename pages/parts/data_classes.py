"""The Data page of a K-class table: what was found, the validation report, the classes, the overrides.

The reading itself is :func:`calibdash.data.build_class_set` (through
:func:`pages.parts.classes.active_class_set`); this module draws it and the
widgets that change it, which write the per-file role keys of
:mod:`pages.parts.classes` (MODE, LABEL, PREFIX, KIND). The evaluation scheme
widgets are the binary page's (:mod:`pages.parts.scheme`), on the ClassSet.
"""
from __future__ import annotations

import pandas as pd
import streamlit as st

from calibdash import data as cdata, diagrams as mdiagrams
from calibdash.errors import DataError, SettingsError
from calibdash.multiclass import budget, metrics as mmetrics
from calibdash.evaluation import UNCALIBRATED
from pages.parts import bounded_cache, scheme
from pages.parts.classes import KIND, KINDS, LABEL, MODE, MODES, PREFIX, active_class_set, detected, evaluate_chosen
from pages.parts.source import role_key
from pages.parts.text import chart, md
from pages.parts.validation import show_report
from pages.parts.widgets import initial

__all__ = ["MODE_NAMES", "mode_control", "class_page", "class_summary"]

#: What the Data page calls each reading of a table (:data:`pages.parts.classes.MODES`).
MODE_NAMES = {"multiclass": "K classes (multi-class)", "binary": "Binary (one score, two classes)"}
#: Class columns named in full up to this many; beyond, the first and last few.
_NAMED = 12


def mode_control(sha: str, df: pd.DataFrame, box=st) -> str:
    """The choice of reading (K-class or binary) of file ``sha``, default what detection says; returns it."""
    key = role_key(sha, MODE)
    found = detected(sha, df)
    return box.segmented_control(
        "Read this table as", list(MODES), key=key, format_func=MODE_NAMES.get, required=True,
        persist_state="session", **initial(key, default="multiclass" if found else "binary"),
        help="K classes: a label of three or more classes and one probability (or logit) column per class. "
             + ("This table looks like one." if found else "This table was not recognised as one: choose K "
                "classes and name the class columns' prefix to read it so.")) or ("multiclass" if found else "binary")


def _names(items, limit: int = _NAMED) -> str:
    """Up to ``limit`` names (escaped Markdown); beyond, the first ``limit - 1``, how many more, and the last."""
    items = [md(c) for c in items]
    if len(items) <= limit:
        return ", ".join(items)
    return ", ".join(items[:limit - 1]) + f", … {len(items) - limit} more …, " + items[-1]


def _role_widgets(sha: str, df: pd.DataFrame, current: cdata.ClassSet | None) -> None:
    """Label column, class-column prefix and their reading, defaulting to ``current`` (else the guess)."""
    if current is not None:
        label, prefix, logits = current.label_column, current.prefix, current.logits
    else:
        guess = cdata.guess_class_columns(df)
        label = guess.label if guess else df.columns[0]
        prefix, logits = (guess.prefix, guess.logits) if guess else ("", False)
    cols = list(df.columns)
    r1, r2, r3 = st.columns(3)
    k_label, k_prefix, k_kind = (role_key(sha, r) for r in (LABEL, PREFIX, KIND))
    r1.selectbox("Label (true class)", cols, key=k_label, persist_state="session",
                 help="The column holding each row's class: three or more distinct values.",
                 **initial(k_label, index=cols.index(label) if label in cols else 0))
    r2.text_input("Class columns' prefix", key=k_prefix, persist_state="session",
                  help="The class columns are this prefix followed by the class (p_cat, p_dog, …). Leave it "
                       "empty to find columns named p_, prob_, proba_ or logit_ plus a class, or named "
                       "exactly after the classes.",
                  **initial(k_prefix, value=prefix or ""))
    r3.segmented_control("The class columns hold", list(KINDS), key=k_kind, persist_state="session",
                         required=True, help="Logits (any real numbers) are turned into probabilities by the "
                                             "softmax; probabilities must be non-negative rows summing to 1.",
                         **initial(k_kind, default="logits" if logits else "probabilities"))
    if not st.session_state.get(k_prefix) and st.session_state.get(k_kind) == "logits" and not logits:
        r3.caption("Name the prefix to read the columns as logits.")


@bounded_cache.cache_data(show_spinner=False, max_entries=16, budget="data_classes.raw_view")
def _raw_view(data_key: str, _cs: cdata.ClassSet) -> tuple:
    """The per-class table, the measures and the confidence diagram's data of all usable rows."""
    P = _cs.scores().probabilities
    table = mdiagrams.class_table({UNCALIBRATED: P}, _cs.labels, class_names=[str(c) for c in _cs.classes])
    return table, mmetrics.compute(P, _cs.labels), mdiagrams.prepare_confidence({UNCALIBRATED: P}, _cs.labels)


def class_summary(cs: cdata.ClassSet) -> pd.DataFrame:
    """One row per class: its column, rows, frequency, mean predicted probability and class-wise ECE (all rows)."""
    table = _raw_view(cs.content_key(), cs)[0]
    out = table.rename(columns={f"mean p ({UNCALIBRATED})": "mean predicted probability",
                                f"ECE ({UNCALIBRATED})": "class-wise ECE"})
    out.insert(1, "column", cs.columns)
    return out.set_index("class")


def _found(cs: cdata.ClassSet) -> None:
    st.subheader("What was found")
    m1, m2, m3 = st.columns(3)
    m1.metric("Classes (K)", f"{cs.k}")
    m2.metric("Label column", md(cs.label_column))
    m3.metric("Class columns hold", "logits" if cs.logits else "probabilities")
    prefix = f"prefix {md(cs.prefix)}" if cs.prefix else "named after the classes"
    st.markdown(f"**Classes:** {_names(cs.classes)}  \n**Class columns** ({prefix}): {_names(cs.columns)}"
                + (f"  \n**Split column:** {md(cs.split_column)}" if cs.split_column else ""))
    if cs.logits:
        st.info("**These columns hold logits.** Each row was turned into probabilities by the softmax, "
                "p_k = e^(z_k) / Σ_j e^(z_j), for every measure, table and diagram; the calibrators read the "
                "logits themselves.", icon=":material/functions:")


def _report(cs: cdata.ClassSet) -> None:
    st.subheader("Validation report")
    accuracy = mmetrics.accuracy(cs.scores().probabilities, cs.labels)
    show_report(cs.report, ("Accuracy (top class)", f"{accuracy:.1%}"))
    with st.expander("Details", expanded=False):
        for msg in cs.report.messages:
            st.markdown(f"- {md(msg)}")


def _classes_and_calibration(cs: cdata.ClassSet) -> None:
    st.subheader("The classes")
    summary = class_summary(cs)
    st.dataframe(summary.style.format({"frequency": "{:.2%}", "mean predicted probability": "{:.2%}",
                                       "class-wise ECE": "{:.4f}"}),
                 height=min(36 * (len(summary) + 1) + 3, 420))
    st.caption("Per class, over all usable rows: the rows labelled with it and their share, the mean probability "
               "the model gives it (equal to the share for a model calibrated in the large), and its class-wise "
               "ECE (15 equal-width bins).")
    st.subheader("How calibrated are these probabilities?")
    _, measures, conf = _raw_view(cs.content_key(), cs)
    g1, g2 = st.columns([1, 1])
    chart(g1, mdiagrams.plot_confidence(conf, names={UNCALIBRATED: "uncalibrated"},
                                                title="Confidence reliability (all rows)"),
                    key="data.classes.confidence")
    g1.caption(conf.caption())
    g2.dataframe(pd.DataFrame({"value": list(measures.values()),
                               "measure": [mmetrics.MEASURES[n].label for n in measures]}, index=list(measures))
                 .style.format({"value": "{:.4f}"}))
    g2.caption("Computed on all usable rows, before any calibration.")


def class_page(df: pd.DataFrame, info) -> None:
    """The Data page's body for a table read as K classes (after the source widgets)."""
    sha = info.sha256
    try:
        cs, problem = active_class_set(), None
    except DataError as exc:
        cs, problem = None, str(exc)
    st.subheader("Column roles")
    mode_control(sha, df)
    _role_widgets(sha, df, cs)
    if cs is None:
        st.error(f"**This table cannot be read as K classes:** {md(problem)}")
        with st.expander("Preview of the file", expanded=True):
            st.dataframe(df.head(50))
        return
    _found(cs)
    _report(cs)
    _classes_and_calibration(cs)
    st.subheader("Evaluation scheme")
    try:
        budget.check_table(cs.n_rows, cs.k)        # over the server's bounds: said as such, not as a scheme's fault
    except DataError as exc:
        st.error(f"**This table is over the server's bounds for K-class work:** {md(exc)}")
    else:
        chosen = scheme.scheme_widgets(cs)
        try:
            base = evaluate_chosen(cs, chosen, {})
            st.success(scheme.scheme_line(cs) + (f" ({md(base.note)})" if base.note else "")
                       + f": {len(base.rows):,} rows are held out.")
        except (DataError, SettingsError) as exc:
            st.error(f"**This evaluation scheme does not work here:** {md(exc)}")
    with st.expander("Preview of the file", expanded=False):
        st.dataframe(df.head(200))
