"""A one-page HTML report of a held-out comparison of calibrators, binary or K-class.

:func:`build_report` turns an :class:`~calibdash.evaluation.holdout.Evaluation` and its bootstrap intervals into one
self-contained document; :func:`report_for_file`, :func:`report_for_score_set` and :func:`report_for_class_set` run
the whole pipeline. Offline by default (plotly.js inline once; ``include_plotlyjs="cdn"`` links plotly's CDN). Every
text from the user is escaped; the figures' data is JSON written by plotly, which escapes ``<``, ``>`` and ``/``.
Printed, the page keeps tables and figures whole, each figure at most 660 px wide (an A4 or Letter page).
"""
from __future__ import annotations

from .build import (build_report, default_labels, describe_source, measure_table, report_for_class_set, report_for_file,
                    report_for_score_set)

__all__ = [
    "build_report", "report_for_score_set", "describe_source", "default_labels", "report_for_class_set",
    "report_for_file", "measure_table"
]
