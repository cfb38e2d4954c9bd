"""The evaluation scheme: its widgets (on the Data page), their state, and the :class:`Scheme` they make.

Defaults come from ``calibdash.evaluation.holdout.Scheme()``, so the dashboard and
the library agree on them.
"""
from __future__ import annotations

import pandas as pd
import streamlit as st

from calibdash import data as cdata
from calibdash.evaluation.holdout import Scheme, use_cells_for
from pages.parts.text import md
from pages.parts.widgets import initial

__all__ = ["KINDS", "KIND", "TEST_SIZE", "SEED", "N_FOLDS", "TRAIN_VALUE", "DEFAULT", "current_scheme",
           "scheme_line", "scheme_widgets"]

#: Scheme kind -> what the Data page calls it.
KINDS = {"split": "Random split", "column": "File's split column", "kfold": "K-fold cross-fitting",
         "insample": "In-sample (optimistic)"}
# widget keys (also the URL's, see pages.parts.url_state)
KIND, TEST_SIZE, SEED, N_FOLDS, TRAIN_VALUE = ("scheme.kind", "scheme.test_size", "scheme.seed", "scheme.n_folds",
                                               "scheme.train_value")
#: The library's default scheme: every default below is one of its fields.
DEFAULT = Scheme()


#: What the Data page's sliders offer (a shared link outside these is ignored, with a warning).
TEST_SIZE_RANGE = (0.1, 0.5)
N_FOLDS_RANGE = (2, 10)
SEED_RANGE = (0, 10_000)


#: What the scheme reads of the data: a binary ScoreSet (or a large source) or a K-class ClassSet; both carry
#: ``split_column`` and ``split`` (the file's own split) and ``n_rows``.
Data = cdata.ScoreSet | cdata.ClassSet


def _default_kind(ss: Data | None) -> str:
    """The file's own split when it has one, else the library's default."""
    return "column" if ss is not None and ss.split_column else DEFAULT.kind


def current_scheme(ss: Data | None = None) -> Scheme:
    """The evaluation scheme chosen on the Data page (default: the file's split if it has one)."""
    kind = st.session_state.get(KIND) or _default_kind(ss)
    if kind == "column" and (ss is None or not ss.split_column):
        kind = DEFAULT.kind
    state = st.session_state
    return Scheme(kind=kind,
                  test_size=float(state.get(TEST_SIZE, DEFAULT.test_size)),
                  seed=int(state.get(SEED, DEFAULT.seed)),
                  n_folds=int(state.get(N_FOLDS, DEFAULT.n_folds)),
                  train_value=state.get(TRAIN_VALUE) or DEFAULT.train_value)


def scheme_line(ss: Data) -> str:
    """The scheme in words (Markdown, the names in it escaped), naming the split column and its parts when the
    file's own split is used.

    Above ``CELLS_MIN_ROWS`` rows binary evaluations run on score cells, whose
    rows are divided by a hash of their position: the line says so, and that
    MBCT with feature columns is judged on rows (stratified) instead. K-class
    tables are always judged on rows (:func:`calibdash.evaluation.holdout.evaluate_classes`).
    """
    scheme = current_scheme(ss)
    if scheme.kind == "column" and ss.split_column:
        parts = pd.Series(ss.split).value_counts()
        return (f"The file's split column {md(ss.split_column)}: "
                + ", ".join(f"{md(k)} ({v:,} rows)" for k, v in parts.items()))
    if isinstance(ss, cdata.ClassSet) or not use_cells_for(ss.n_rows):
        return md(scheme.describe())
    line = md(scheme.describe(on_cells=True))
    if ss.features is not None and scheme.kind in ("split", "kfold"):
        line += "; stratified on rows when MBCT reads the feature columns"
    return line


def _seed_input() -> None:
    st.number_input("Seed", *SEED_RANGE, key=SEED, persist_state="session", **initial(SEED, value=DEFAULT.seed))


def scheme_widgets(ss: Data) -> Scheme:
    """The Data page's choice of evaluation scheme (kind, then its settings); returns the chosen scheme."""
    kinds = [k for k in KINDS if k != "column" or ss.split_column]
    left, right = st.columns([2, 3])
    kind = left.radio("Judge calibrators on", kinds, index=kinds.index(_default_kind(ss)), key=KIND,
                      format_func=KINDS.get, persist_state="session",
                      help="Calibrators are fitted on one part of the rows and judged on another.")
    with right:
        if kind == "split":
            st.slider("Held-out fraction", *TEST_SIZE_RANGE, step=0.05, key=TEST_SIZE, persist_state="session",
                      **initial(TEST_SIZE, value=DEFAULT.test_size))
            _seed_input()
        elif kind == "kfold":
            st.slider("Folds (K)", *N_FOLDS_RANGE, key=N_FOLDS, persist_state="session",
                      **initial(N_FOLDS, value=DEFAULT.n_folds))
            _seed_input()
        elif kind == "column":
            values = sorted(map(str, pd.unique(ss.split)))
            st.selectbox("Value marking the fitting rows", [""] + values, key=TRAIN_VALUE,
                         persist_state="session", format_func=lambda v: v or "(recognise train/test by name)")
        else:
            st.warning("In-sample scores are optimistic: every calibrator is judged on the rows it learned from.")
    return current_scheme(ss)
