"""What Groups & time reads of the active problem: one binary reduction, and what the problem adds to it.

The page measures every group and period on a score and a 0/1 outcome. A binary table gives its score; a
K-class table its top-label reduction (:meth:`calibdash.data.ClassSet.top_label`: the confidence as the score,
"the top class is right" as the outcome, Gupta & Ramdas 2022), and adds what only K classes have: the
class-wise ECE of each group (:func:`calibdash.monitoring.class_groups.classwise_ece_by_group`, Kull et al. 2019),
its predicted and true class as group columns (offered after the others, the true class with a warning) and
the words for the reduction's statistics. :func:`problem_or_stop` asks the active data which it is; every view
of the page asks the :class:`Problem` what it offers.
"""
from __future__ import annotations

from dataclasses import dataclass

import pandas as pd
import streamlit as st

from calibdash.data import ClassSet
from calibdash.monitoring.groups import STATS, column_for_rows
from calibdash.monitoring.keyed.from_rows import row_keys
from calibdash.monitoring.class_groups import classwise_ece_by_group
from pages.parts import bounded_cache
from pages.parts.classes import top_label_or_stop, using_classes
from pages.parts.source import score_set_or_stop
from pages.parts.tables import group_table
from pages.parts.text import md

__all__ = ["STAT_NAMES", "TOP_LABEL_NAMES", "CLASSWISE", "Problem", "problem_or_stop"]

#: What the statistics of a score and its 0/1 outcome are called.
STAT_NAMES = {"positive_rate": "positive rate", "mean_score": "mean score", "ECE": "ECE", "Brier": "Brier",
              "LogLoss": "log-loss", "AUC": "AUC"}
#: ... and in the top-label reduction (the outcome: the top class is right).
TOP_LABEL_NAMES = {"positive_rate": "accuracy", "mean_score": "mean confidence", "ECE": "confidence ECE"}
#: The class-wise ECE column of a K-class table's groups and periods.
CLASSWISE = "cwECE"


@bounded_cache.cache_data(show_spinner=False, max_entries=32, budget="segments_problem.classwise")
def _classwise(cells_id: str, n_bins: int, strategy: str, _kc, _ss, _cs) -> pd.Series:
    rows = row_keys(column_for_rows(_ss, _kc.spec.column), _kc)
    return classwise_ece_by_group(_cs.scores().probabilities, _cs.labels, rows, list(_kc.labels), n_bins, strategy)


@dataclass(frozen=True)
class Problem:
    """The page's data: ``ss``, the binary reduction measured (a ScoreSet, a large source's LargeData, or a
    K-class table's top label), and ``classes``, the K-class table it reduces (None for a binary table)."""

    ss: object
    classes: ClassSet | None = None

    @property
    def stat_names(self) -> dict:
        """The statistics' names in the page's tables."""
        return STAT_NAMES if self.classes is None else {**STAT_NAMES, **TOP_LABEL_NAMES}

    @property
    def predicted_column(self) -> str | None:
        """The top-label reduction's predicted-class column (its last), None for a binary table."""
        return None if self.classes is None else self.ss.raw.columns[-1]

    @property
    def last_columns(self) -> tuple:
        """Columns offered as groups only after the others: a K-class table's predicted and true class."""
        return () if self.classes is None else (self.predicted_column, self.classes.label_column)

    def intro(self) -> None:
        """The caption under the title and, for a K-class table, what the page judges of it."""
        ss, cs = self.ss, self.classes
        if cs is None:
            st.caption(f"{md(ss.name)} · score **{md(ss.score)}** · label **{md(ss.label_column)}** · "
                       f"{ss.n_rows:,} usable rows")
            return
        st.caption(f"{md(ss.name)} · **K = {cs.k}** classes · score **{md(ss.score)}** (the top class's "
                   f"probability) · outcome **{md(ss.label_column)}** · {ss.n_rows:,} usable rows")
        st.info(f"A K-class table: this page judges its **top-label (confidence) calibration**, the binary view of "
                f"Gupta & Ramdas (2022): each row's confidence (the probability of its most probable class) against "
                f"whether that class is the true one. Per group and per period: the accuracy, the mean confidence, "
                f"the confidence ECE, and the Brier score, log-loss and AUC of that pair (AUC: how well the "
                f"confidence tells right from wrong); **{CLASSWISE}** adds the class-wise ECE (every class's "
                f"probability). Group by **{md(self.predicted_column)}** (the reduction's last column) to check "
                "top-label calibration class by class.", icon=":material/info:")

    def true_class_warning(self, column: str) -> None:
        """A warning when a K-class table is grouped by its true class (not a calibration check)."""
        if self.classes is not None and column == self.classes.label_column:
            st.warning(f"Grouped by the **true** class: groups chosen by the outcome are not calibrated even for a "
                       f"calibrated model (picking rows by their true class changes how often the top class is "
                       f"right at a given confidence), so these ECEs are not calibration errors. Group by "
                       f"**{md(self.predicted_column)}** for top-label calibration class by class.",
                       icon=":material/warning:")

    def classwise(self, cells, report) -> pd.Series | None:
        """The class-wise ECE of each group (or period) of a K-class table's rows, in the keyed cells' order (each
        row keyed by the cells' rule, :func:`calibdash.monitoring.keyed.from_rows.row_keys`; cached on the cells and the
        binning); None for a binary table. ``cells``: :class:`pages.parts.segments_data.Cells` of ``ss``."""
        if self.classes is None:
            return None
        return _classwise(cells.id, report.n_bins, report.strategy, cells.kc, self.ss, self.classes)

    def table(self, cells, report, what: str, rows: str = "") -> None:
        """The table of every group (or period, ``what``) of ``report`` with its intervals, the class-wise ECE
        where the problem has classes, and a caption saying what a cell is (``rows``: which rows were read)."""
        st.dataframe(group_table(report.table, STATS, self.stat_names, classwise=self.classwise(cells, report)))
        text = (f"Each cell: value [{int(report.level * 100)}% interval, {report.n_boot} Poisson-bootstrap "
                f"resamples of the {what}'s rows]. ECE uses {report.binning}"
                + (f". {rows}; " if rows else "; ") + f"{md(cells.kc.cells.describe())}.")
        if self.classes is not None:
            text += (f" {CLASSWISE}: the class-wise ECE (Kull et al. 2019), the mean over the {self.classes.k} "
                     f"classes of each class's ECE within the rows ({report.binning} per class), without an "
                     "interval.")
        st.caption(text)

    @property
    def calibrator_note(self) -> str:
        """What a binary calibrator does on a K-class table here ("" for a binary table)."""
        if self.classes is None:
            return ""
        return (" On a K-class table the calibrators are binary ones fitted on the confidence: each maps the top "
                "class's probability (pooled over the predicted classes, Gupta & Ramdas' confidence reduction) "
                "and the predicted class stays; the judged ECE is the confidence ECE. The K-class calibrators are "
                "on Compare.")


def problem_or_stop() -> Problem:
    """The active data as the page reads it, or an error box, a link to the Data page and a stop.

    On a large source ``ss`` is its LargeData: the page works on keyed cells aggregated by DuckDB."""
    if using_classes():
        cs, ss = top_label_or_stop()
        return Problem(ss, cs)
    return Problem(score_set_or_stop())
