"""Compare's downloads, made on click only (never on every rerun): the measures table, the held-out predictions,
the fitted models, the HTML report (binary) and the figures' images."""
from __future__ import annotations

import json

from typing import Callable

import pandas as pd

import streamlit as st

from calibdash import data as cdata, report
from calibdash.io import export
from calibdash.io import export as mexport
from calibdash.evaluation.bootstrap import BootstrapResult
from calibdash.evaluation.holdout import Evaluation, Scheme
from calibdash.figures import images
from calibdash.core.safe_text import csv_text

__all__ = ["image_maker", "model_json", "models_document", "predictions_csv", "class_probabilities_csv", "report_html", "PER_CELL_CAPTION",
           "section"]

#: What the predictions download holds on score cells (shown under its button).
PER_CELL_CAPTION = ("On score cells the predictions file has one line per held-out score cell, not per row: "
                    "`rows` and `positives` say how many held-out rows (and positives) it stands for, the weights "
                    "of every metric and chart here; then the cell's score (`uncalibrated`) and each method's "
                    "prediction.")


def image_maker(fig, fmt: str):
    """A download callable rendering ``fig`` as ``fmt`` (png or svg)."""
    return lambda: images.figure_bytes(fig, fmt)


def model_json(model, ss: cdata.ScoreSet):
    """A download callable writing the fitted calibrator as calibdash JSON, with where it was fitted."""
    return lambda: export.dumps(model, fitted_on=export.provenance(ss, model)).encode()


def class_probabilities_csv(ev, classes) -> Callable[[], bytes]:
    """A download callable writing a K-class evaluation's held-out probabilities as CSV: one line per held-out
    row (``row``: its position among the usable rows), its class, and each method's probability of each class
    (``method:class``). Written when the button is clicked, not on every run (300,000 rows of 5 methods x 10
    classes are 15 million numbers)."""
    def make() -> bytes:
        cols = {"row": ev.rows, "label": [classes[i] for i in ev.labels]}
        for key, P in ev.predictions.items():
            cols.update({f"{key}:{c}": P[:, j] for j, c in enumerate(classes)})
        return csv_text(pd.DataFrame(cols), index=False).encode()
    return make


def predictions_csv(ev: Evaluation):
    """A download callable writing the held-out predictions as CSV.

    Row path: one line per held-out row (``row``: its position among the
    usable rows), its label and each method's prediction. Score cells
    (``ev.weights`` not None): one line per held-out cell, with its ``rows``
    and ``positives`` (:data:`PER_CELL_CAPTION`); a cell's positive and
    negative weighted rows share every prediction, so they are summed back
    (cells of different folds with the same score and the same predictions
    become one line, which loses nothing).
    """
    def make() -> bytes:
        if ev.weights is None:
            pred = ev.predictions.copy()
            pred.insert(0, "label", ev.labels)
            pred.index.name = "row"
            return csv_text(pred).encode()
        cols = list(ev.predictions.columns)
        counts = ev.predictions.assign(rows=ev.weights, positives=ev.weights * ev.labels)
        per_cell = counts.groupby(cols, sort=False)[["rows", "positives"]].sum().reset_index()
        per_cell = per_cell.sort_values(cols[0], kind="stable").reset_index(drop=True)
        per_cell[["rows", "positives"]] = per_cell[["rows", "positives"]].round().astype("int64")
        return csv_text(per_cell[["rows", "positives"] + cols].rename_axis("cell")).encode()
    return make


def report_html(ev: Evaluation, boot: BootstrapResult, ss: cdata.ScoreSet, scheme: Scheme, labels: dict, *,
                measures: BootstrapResult | None = None, **figure_options):
    """A download callable writing the one-page HTML report (:func:`calibdash.report.build_report`) of what
    Compare shows: the same evaluation, intervals, verdict and labels; ``measures`` is the "More measures"
    table with intervals when it was computed, else the report computes the measures without intervals on
    click; ``figure_options`` (``diagram``, ``n_bins``, ``strategy``, ``log_x``, ``features``) draw the figures as the
    page draws them. plotly.js is written inline, so the file opens offline (about 5 MB)."""
    def make() -> bytes:
        return report.build_report(
            ev, boot, title=f"Calibration report: {ss.name}", source_description=report.describe_source(ss),
            scheme_description=scheme.describe(on_cells=ev.weights is not None), labels=labels,
            measures_table=measures, notes=ss.report.messages, **figure_options).encode()
    return make


def _images(figures: dict) -> None:
    """A PNG and an SVG button per figure (name -> figure), or why images cannot be made here."""
    reason = images.available()
    if reason:
        st.caption(reason)
    for name, fig in figures.items():
        for fmt in ([] if reason else images.FORMATS):
            st.download_button(f"{name.replace('_', ' ').capitalize()} ({fmt.upper()})", image_maker(fig, fmt),
                               f"{name}.{fmt}", "image/png" if fmt == "png" else "image/svg+xml",
                               key=f"compare.dl.{name}.{fmt}", icon=":material/image:")


def models_document(problem, ev) -> dict:
    """Each fitted model's export JSON (what its download holds), by method: what a saved run keeps."""
    payloads = {m: (lambda model=model: mexport.dumps(model).encode()) if problem.is_classes
                else model_json(model, problem.data) for m, model in ev.models.items()}
    return {m: json.loads(make()) for m, make in payloads.items()}


def section(problem, ev, table: pd.DataFrame, labels: dict, figures: dict, report_maker=None) -> None:
    """Compare's downloads: the held-out predictions (per row, or per score cell), each fitted model as JSON,
    the measures ``table`` (method x (measure, value/low/high)), the report when ``report_maker`` is given, and
    ``figures`` (name -> figure) as images."""
    st.subheader("Downloads")
    d1, d2, d3 = st.columns(3)
    cells_path = getattr(ev, "weights", None) is not None
    if problem.is_classes:
        d1.download_button("Calibrated probabilities (CSV)", class_probabilities_csv(ev, problem.data.classes),
                           "calibrated_probabilities.csv", "text/csv", key="compare.dl.pred",
                           icon=":material/download:", help="One line per held-out row: its position among the "
                                                            "usable rows, its class, each method's probabilities.")
    else:
        d1.download_button("Calibrated predictions (CSV)", predictions_csv(ev),
                           "calibrated_predictions_per_cell.csv" if cells_path else "calibrated_predictions.csv",
                           "text/csv", key="compare.dl.pred", icon=":material/download:",
                           help=PER_CELL_CAPTION if cells_path else "One line per held-out row.")
    if cells_path:
        d1.caption(PER_CELL_CAPTION)
    for m, model in ev.models.items():
        payload, how = ((lambda model=model: mexport.dumps(model).encode(), "calibdash.io.export.loads")
                        if problem.is_classes else (model_json(model, problem.data), "calibdash.io.export.loads, or "
                                                    "apply it: python -m calibdash apply MODEL.json FILE"))
        d1.download_button(f"Fitted {labels.get(m, m)} (JSON)", payload, f"{m.replace(':', '_')}.json",
                           "application/json", key=f"compare.dl.model.{m}", icon=":material/save:",
                           help=f"Load it with {how}")
    flat = table.copy()
    flat.columns = [f"{m}_{s}" for m, s in flat.columns]
    d2.download_button("Measures table (CSV)", csv_text(flat.rename_axis("method")).encode(), "measures.csv",
                       "text/csv", key="compare.dl.metrics", icon=":material/download:")
    if report_maker is not None:
        d2.download_button("Report (HTML)", report_maker, f"{problem.data.name.rsplit('.', 1)[0]}_calibration_report"
                           ".html", "text/html", key="compare.dl.report", icon=":material/description:",
                           help="One page to keep or share: the verdict, this table with its intervals, the two "
                                "charts (interactive), more calibration measures, the data and the methods' papers. "
                                "About 5 MB: plotly.js is inside, so it opens without a network.")
    with d3:
        _images(figures)
