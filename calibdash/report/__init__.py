"""A one-page HTML report of a held-out comparison of calibrators.

:func:`build_report` turns what the Compare page and ``python -m calibdash
evaluate`` compute (an :class:`~calibdash.evaluation.holdout.Evaluation` and its
:class:`~calibdash.evaluation.bootstrap.BootstrapResult`) into one self-contained HTML
document, in this order:

1. the verdict sentence (:func:`calibdash.evaluation.bootstrap.verdict`);
2. the data: where the rows came from, how many were judged and how many of
   them are positives, how the rows were split and judged, whether they were
   summarised into score cells (:mod:`calibdash.evaluation.cells`), the binning of ECE
   and MCE and how the intervals were drawn;
3. the metrics table, each cell ``value [low, high]`` (the paired bootstrap's
   percentile interval), the best value of each metric in bold, as the
   dashboard shows it;
4. the reliability diagram (binned, smooth or CORP: ``diagram=``, drawn by
   :mod:`calibdash.diagrams` as on the
   pages) and the calibration map, as interactive plotly figures (hover,
   zoom, a legend that hides and shows methods);
5. the measures of :mod:`calibdash.measures` (smooth ECE, ICI, calibration
   slope, CORP MCB/DSC/UNC, ...), the best of each in bold;
6. the methods: their hyperparameters, fitting time and paper
   (:attr:`Calibrator.paper`); then the notes, the calibdash version and the
   date.

Offline by default: plotly.js (about 4.8 MB) is written into the document
once, so the file opens without a network and keeps working when plotly's CDN
changes; ``include_plotlyjs="cdn"`` writes a ``<script src>`` to plotly's CDN
instead (a file of about 100 KB that needs the network to draw its charts).
Every text that comes from the user (the file's and columns' names, the
title, the notes, method labels) is escaped with :func:`html.escape`; the
figures' data is JSON written by plotly, which escapes ``<``, ``>`` and ``/``.
The CSS is inline and uses the system's fonts; printed (or saved as PDF) the
page drops its screen margins, keeps tables and figures whole, and stacks the
two figures, each at most 660 px wide so it fits an A4 or Letter page.

:func:`report_for_file` (and :func:`report_for_score_set`, from a loaded
file) does the whole pipeline, as the command line's ``evaluate`` does
(:func:`calibdash.evaluation.holdout.evaluate_score_set`): load, fit, judge, bootstrap
(:func:`calibdash.evaluation.bootstrap.bootstrap_evaluation`), measure, write.

The page is written by these modules: :mod:`calibdash.report.pipeline` (from a
file or a ScoreSet to the page), :mod:`calibdash.report.build` (the document:
verdict, sections, figures), :mod:`calibdash.report.text` (method names, the
measures table, the Data section's lines) and :mod:`calibdash.report.markup`
(escaping, tables, CSS, the page). A K-class file's report is the same builder's: :func:`build_report`
takes a K-class evaluation (:func:`report_for_class_set` from a loaded ClassSet) and draws the confidence
and class-wise reliability diagrams and the per-class table in place of the binary figures and measures.
Every public name imports from here.
"""
from __future__ import annotations

from .build import build_report
from .pipeline import report_for_class_set, report_for_file, report_for_score_set
from .text import default_labels, describe_source, measure_table

__all__ = [
    "build_report", "report_for_score_set", "describe_source", "default_labels", "report_for_class_set",
    "report_for_file", "measure_table"
]
