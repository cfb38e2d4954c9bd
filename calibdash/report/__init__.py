"""A one-page HTML report of a held-out comparison of calibrators, binary or K-class.

:func:`build_report` turns what the Compare page and ``python -m calibdash evaluate`` compute (an
:class:`~calibdash.evaluation.holdout.Evaluation` and its :class:`~calibdash.evaluation.bootstrap.BootstrapResult`)
into one self-contained HTML document: the verdict, the data (source, split, score cells, binning, intervals), the
metrics with their paired bootstrap intervals and the best value of each in bold, the reliability diagram and the
calibration map as interactive plotly figures (K classes: the confidence and class-wise diagrams and a per-class
table), the further measures, the methods with their papers, the notes. :func:`report_for_file`,
:func:`report_for_score_set` and :func:`report_for_class_set` run the whole pipeline: load, fit, judge,
bootstrap, measure, write.

Offline by default: plotly.js (about 4.8 MB) is written into the document once; ``include_plotlyjs="cdn"`` links
plotly's CDN instead (about 100 KB, needs the network). Every text from the user (file and column names, title,
notes, method labels) is escaped; the figures' data is JSON written by plotly, which escapes ``<``, ``>`` and
``/``. The CSS is inline; printed, the page keeps tables and figures whole and stacks the figures, each at most
660 px wide so it fits an A4 or Letter page.
"""
from __future__ import annotations

from .build import (build_report, default_labels, describe_source, measure_table, report_for_class_set, report_for_file,
                    report_for_score_set)

__all__ = [
    "build_report", "report_for_score_set", "describe_source", "default_labels", "report_for_class_set",
    "report_for_file", "measure_table"
]
