"""Groups & time on a K-class table: what the page says and adds when it reads one through its top-label reduction.

The page (``pages/segments.py``) reads a K-class table as its top-label reduction
(:meth:`calibdash.data.ClassSet.top_label`: the confidence as the score, "the top class is right" as the 0/1
outcome); this part holds the words for it, the statistics' names, and the per-group class-wise ECE
(:func:`calibdash.multiclass.groups.classwise_ece_by_group`), cached. Each function takes the
:class:`~calibdash.data.ClassSet` or None (a binary table), and does nothing for None.
"""
from __future__ import annotations

import pandas as pd
import streamlit as st

from calibdash.groups import column_for_rows
from calibdash.keyed.rows import row_keys
from calibdash.multiclass.groups import classwise_ece_by_group
from pages.parts import bounded_cache
from pages.parts.text import md

__all__ = ["TOP_LABEL_NAMES", "CLASSWISE", "stat_names", "intro", "true_class_warning", "classwise",
           "classwise_note", "on_confidence_note", "last_columns"]

#: The class-wise ECE column of a K-class table's groups and periods.
CLASSWISE = "cwECE"
#: What the statistics of the top-label reduction are called (the outcome: the top class is right).
TOP_LABEL_NAMES = {"positive_rate": "accuracy", "mean_score": "mean confidence", "ECE": "confidence ECE"}


def stat_names(cs, names: dict) -> dict:
    """The page's statistic names, renamed for a K-class table's top-label reduction."""
    return names if cs is None else {**names, **TOP_LABEL_NAMES}


def predicted_column(ss) -> str:
    """The reduction's predicted-class column (its last)."""
    return ss.raw.columns[-1]


def intro(cs, ss) -> None:
    """The caption under the title, and for a K-class table what the page judges of it."""
    if cs is None:
        st.caption(f"{md(ss.name)} · score **{md(ss.score)}** · label **{md(ss.label_column)}** · "
                   f"{ss.n_rows:,} usable rows")
        return
    st.caption(f"{md(ss.name)} · **K = {cs.k}** classes · score **{md(ss.score)}** (the top class's probability) · "
               f"outcome **{md(ss.label_column)}** · {ss.n_rows:,} usable rows")
    st.info(f"A K-class table: this page judges its **top-label (confidence) calibration**, the binary view of "
            f"Gupta & Ramdas (2022): each row's confidence (the probability of its most probable class) against "
            f"whether that class is the true one. Per group and per period: the accuracy, the mean confidence, "
            f"the confidence ECE, and the Brier score, log-loss and AUC of that pair (AUC: how well the "
            f"confidence tells right from wrong); **{CLASSWISE}** adds the class-wise ECE (every class's "
            f"probability). Group by **{md(predicted_column(ss))}** (the reduction's last column) to check top-label "
            "calibration class by class.", icon=":material/info:")


def true_class_warning(cs, ss, column: str) -> None:
    """A warning when a K-class table is grouped by its true class (not a calibration check)."""
    if cs is not None and column == cs.label_column:
        st.warning(f"Grouped by the **true** class: groups chosen by the outcome are not calibrated even for a "
                   f"calibrated model (picking rows by their true class changes how often the top class is right "
                   f"at a given confidence), so these ECEs are not calibration errors. Group by "
                   f"**{md(predicted_column(ss))}** for top-label calibration class by class.",
                   icon=":material/warning:")


@bounded_cache.cache_data(show_spinner=False, max_entries=32, budget="segments_classes.classwise")
def _classwise(cells_id: str, n_bins: int, strategy: str, _kc, _ss, _cs) -> pd.Series:
    rows = row_keys(column_for_rows(_ss, _kc.spec.column), _kc)
    return classwise_ece_by_group(_cs.scores().probabilities, _cs.labels, rows, list(_kc.labels), n_bins, strategy)


def classwise(cs, ss, cells, report):
    """The class-wise ECE of each group (or period) of a K-class table's rows, in the keyed cells' order (each
    row keyed by the cells' rule, :func:`calibdash.keyed.rows.row_keys`; cached on the cells and the binning);
    None for a binary table. ``cells``: :class:`pages.parts.segments_data.Cells` of the top-label reduction
    ``ss``."""
    if cs is None:
        return None
    return _classwise(cells.id, report.n_bins, report.strategy, cells.kc, ss, cs)


def classwise_note(cs, report) -> str:
    """What the class-wise ECE column is ("" for a binary table)."""
    if cs is None:
        return ""
    return (f" {CLASSWISE}: the class-wise ECE (Kull et al. 2019), the mean over the {cs.k} classes of each "
            f"class's ECE within the rows ({report.binning} per class), without an interval.")


def on_confidence_note(cs) -> str:
    """What a binary calibrator does on a K-class table here ("" for a binary table)."""
    if cs is None:
        return ""
    return (" On a K-class table the calibrators are binary ones fitted on the confidence: each maps the top "
            "class's probability (pooled over the predicted classes, Gupta & Ramdas' confidence reduction) and "
            "the predicted class stays; the judged ECE is the confidence ECE. The K-class calibrators are on "
            "Compare.")


def last_columns(cs, ss) -> tuple:
    """Columns offered as groups only after the others: a K-class table's predicted and true class."""
    return () if cs is None else (predicted_column(ss), cs.label_column)
