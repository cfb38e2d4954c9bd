"""How the Data page reads the active table: as K classes or binary (:func:`mode_control`), the column roles of
each reading, what was found, and the raw probabilities' per-class view.

The readings themselves are :func:`calibdash.data.build_score_set` and :func:`calibdash.data.build_class_set`
(through :mod:`pages.parts.source` and :mod:`pages.parts.classes`); the widgets here write their per-file role
keys (:func:`pages.parts.source.role_key`: ``label``, ``score``, ... and MODE, LABEL, PREFIX, KIND).
"""
from __future__ import annotations

import pandas as pd
import streamlit as st

from calibdash import data as cdata
from calibdash.data.roles import reads_as_numbers
from calibdash import diagrams as mdiagrams
from calibdash.measures import class_measures as mmetrics
from calibdash.evaluation.holdout import UNCALIBRATED
from pages.parts import bounded_cache, labels
from pages.parts.classes import KIND, KINDS, LABEL, MODE, MODES, PREFIX, detected
from pages.parts.source import NONE, role_key
from pages.parts.text import md, md_list
from pages.parts.widgets import initial

__all__ = ["MODE_NAMES", "mode_control", "numeric_columns", "choose_roles", "score_roles", "class_roles", "found",
           "class_view", "class_summary"]

#: What the Data page calls each reading of a table (:data:`pages.parts.classes.MODES`).
MODE_NAMES = {"multiclass": "K classes (multi-class)", "binary": "Binary (one score, two classes)"}
#: Class columns named in full up to this many; beyond, the first and last few.
_NAMED = 12


def mode_control(sha: str, df: pd.DataFrame, box=st) -> str:
    """The choice of reading (K-class or binary) of file ``sha``, default what detection says; returns it."""
    key = role_key(sha, MODE)
    found_k = detected(sha, df)
    return box.segmented_control(
        "Read this table as", list(MODES), key=key, format_func=MODE_NAMES.get, required=True,
        persist_state="session", **initial(key, default="multiclass" if found_k else "binary"),
        help="K classes: a label of three or more classes and one probability (or logit) column per class. "
             + ("This table looks like one." if found_k else "This table was not recognised as one: choose K "
                "classes and name the class columns' prefix to read it so.")) or ("multiclass" if found_k else "binary")


@bounded_cache.cache_data(show_spinner=False, max_entries=32, budget="data.numeric_columns")
def numeric_columns(sha: str, _df: pd.DataFrame) -> list:
    """The columns of numbers (numeric, or text that reads as numbers), once per file, not on every rerun."""
    return [c for c in _df.columns if pd.api.types.is_numeric_dtype(_df[c]) or reads_as_numbers(_df[c])]


def choose_roles(sha: str, df: pd.DataFrame) -> None:
    """When the guessed binary roles are refused (a two-class file whose guessed score is the negative class's
    column, two complementary columns whose names say no class, ...), the user names the label and the score
    here; the page then reads the file with them (a chosen column is used as it is, said in the report)."""
    st.subheader("Choose the columns")
    st.caption("Name the label and the score column yourself; the file is then read with them.")
    cols = list(df.columns)
    c1, c2 = st.columns(2)
    c1.selectbox("Label (true outcome)", cols, index=None, key=role_key(sha, "label"),
                 placeholder="Choose the label column", persist_state="session")
    c2.selectbox("Score (the model to look at)", numeric_columns(sha, df), index=None, key=role_key(sha, "score"),
                 placeholder="Choose the score column", persist_state="session",
                 help="Probabilities in [0, 1] of the positive class; margins or logits are mapped by the "
                      "logistic function.")


def score_roles(sha: str, df: pd.DataFrame, ss: cdata.ScoreSet) -> None:
    """A binary reading's roles: label and positive class, score (several score columns said), split, features."""
    cols = list(df.columns)
    numeric = [c for c in numeric_columns(sha, df) if c != ss.label_column]
    r1, r2, r3 = st.columns(3)
    r1.selectbox("Label (true outcome)", cols, index=cols.index(ss.label_column), key=role_key(sha, "label"),
                 persist_state="session", help="The column holding the two classes.")
    label_values, positive_index = labels.positive_class_options(df[ss.label_column], ss.positive_label)
    r1.selectbox("Positive class", label_values, index=positive_index,
                 key=role_key(sha, "positive"), persist_state="session",
                 help="Which label value counts as 1 (the event the score predicts).")
    score_opts = [c for c in numeric if c not in (ss.split_column,)] or [ss.score]
    r2.selectbox("Score (the model to look at)", score_opts,
                 index=score_opts.index(ss.score) if ss.score in score_opts else 0,
                 key=role_key(sha, "score"), persist_state="session",
                 help="Probabilities in [0, 1]; margins or logits are mapped by the logistic function.")
    if len(ss.score_columns) > 1:
        r2.caption("Score columns found: " + md_list(ss.score_columns))
    split_opts = [NONE] + [c for c in cols if c not in (ss.label_column, ss.score)]
    r3.selectbox("Split column (optional)", split_opts,
                 index=split_opts.index(ss.split_column) if ss.split_column in split_opts else 0,
                 key=role_key(sha, "split"), persist_state="session",
                 help="A column such as train/test that says which rows fit the calibrators.")
    feat_opts = [c for c in cols if c not in (ss.label_column, ss.score, ss.split_column)]
    offered = set(feat_opts)
    r3.multiselect("Feature columns (for MBCT)", feat_opts, default=[c for c in ss.feature_columns if c in offered],
                   key=role_key(sha, "features"), persist_state="session")


def class_roles(sha: str, df: pd.DataFrame, current: cdata.ClassSet | None) -> None:
    """A K-class reading's roles: label column, class-column prefix and their reading, defaulting to ``current``
    (else the guess)."""
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


def _names(items, limit: int = _NAMED) -> str:
    """Up to ``limit`` names (escaped Markdown); beyond, the first ``limit - 1``, how many more, and the last."""
    items = [md(c) for c in items]
    if len(items) <= limit:
        return ", ".join(items)
    return ", ".join(items[:limit - 1]) + f", … {len(items) - limit} more …, " + items[-1]


def found(cs: cdata.ClassSet) -> None:
    """What a K-class reading found: K, the label column, the classes and their columns, logits softmaxed."""
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


@bounded_cache.cache_data(show_spinner=False, max_entries=16, budget="reading.raw_view")
def class_view(data_key: str, _cs: cdata.ClassSet, n_bins=mmetrics.N_BINS, strategy: str = "uniform") -> tuple:
    """The per-class table (15 equal-width bins), the measures and the confidence diagram's data (``n_bins``,
    ``strategy``) of all usable rows' probabilities of ``_cs`` (content key ``data_key``), cached."""
    P = _cs.scores().probabilities
    table = mdiagrams.class_table({UNCALIBRATED: P}, _cs.labels, class_names=[str(c) for c in _cs.classes])
    conf = mdiagrams.prepare_confidence({UNCALIBRATED: P}, _cs.labels, n_bins=n_bins, strategy=strategy)
    return table, mmetrics.compute(P, _cs.labels), conf


def class_summary(cs: cdata.ClassSet) -> pd.DataFrame:
    """One row per class: its column, rows, frequency, mean predicted probability and class-wise ECE (all rows)."""
    out = class_view(cs.content_key(), cs)[0].rename(columns={f"mean p ({UNCALIBRATED})": "mean predicted probability",
                                            f"ECE ({UNCALIBRATED})": "class-wise ECE"})
    out.insert(1, "column", cs.columns)
    return out.set_index("class")
