"""The ``evaluate --json`` document of an evaluation in memory, binary or K-class: what the command prints and
what a page saves with a run (:mod:`calibdash.io.runs`), one shape (``calibdash/io/schemas/evaluate.json``)."""
from __future__ import annotations

from .. import engines
from ..data import ClassSet
from ..evaluation.scheme import Scheme
from ..measures import class_measures as mmetrics
from .output import evaluate_json, metrics_json, report_validation

__all__ = ["evaluation_document", "CLASS_BINNING"]

CLASS_BINNING = (f"ECE, MCE and cwECE: {mmetrics.N_BINS} equal-width bins (of the top probability; of each "
                 "class's probability)")


def judged_text(ev, scheme: Scheme) -> tuple[int, str, str | None]:
    """Rows judged, the scheme as said, and how score cells were used (None on rows)."""
    if getattr(ev, "weights", None) is not None:
        how = ev.note.removesuffix("; ".join(["", *ev.notes])) if ev.notes else ev.note
        return ev.n_judged, scheme.describe(on_cells=True), how
    return int(ev.rows.size), scheme.describe(), None


def evaluation_document(data, ev, scheme: Scheme) -> dict:
    """``evaluate --json`` of ``ev``, the evaluation of ``data`` (a ScoreSet or a ClassSet) under ``scheme``."""
    judged, scheme_text, how = judged_text(ev, scheme)
    engine = engines.find(out_of_core=False)
    if isinstance(data, ClassSet):
        return evaluate_json(file=data.name, engine=engine, label=data.label_column, classes=data.classes,
                             class_columns=data.columns, prefix=data.prefix, logits=data.logits, rows_judged=judged,
                             scheme=scheme_text, cells=None, notes=ev.notes, binning=CLASS_BINNING,
                             validation=report_validation(data.report, data.report.class_counts),
                             metrics=metrics_json(ev))
    n_pos = int(data.labels.sum())
    validation = report_validation(data.report, {data.negative_label: data.n_rows - n_pos,
                                                 data.positive_label: n_pos})
    return evaluate_json(file=data.name, engine=engine, label=data.label_column,
                         classes=[data.negative_label, data.positive_label], positive=data.positive_label,
                         score=data.score, rows_judged=judged, scheme=scheme_text, cells=how, notes=ev.notes,
                         binning=ev.binning, validation=validation, metrics=metrics_json(ev))
