"""The ``evaluate --json`` document of an evaluation in memory, binary or K-class: what the command prints and
what a page saves with a run (:mod:`calibdash.io.runs`), one shape (``calibdash/io/schemas/evaluate.json``)."""
from __future__ import annotations

import numpy as np

from .. import engines
from ..data import ClassSet
from ..evaluation.scheme import Scheme
from ..measures import class_measures as mmetrics
from ..measures.binning import reliability_table
from .output import evaluate_json, finite_or_none, report_validation

__all__ = ["evaluation_document", "reliability_document", "CLASS_BINNING"]

CLASS_BINNING = (f"ECE, MCE and cwECE: {mmetrics.N_BINS} equal-width bins (of the top probability; of each "
                 f"class's probability for cwECE); dCE: {mmetrics.N_BINS} equal-mass bins")


def evaluation_facts(data, ev, scheme: Scheme) -> dict:
    """What ``evaluate --json`` says of ``ev``, the evaluation of ``data`` (a ScoreSet or a ClassSet) in memory
    under ``scheme``: :func:`.output.evaluate_json`'s keywords but the engine."""
    on_cells = getattr(ev, "weights", None) is not None         # then ``cells``: how score cells were used
    how = (ev.note.removesuffix("; ".join(["", *ev.notes])) if ev.notes else ev.note) if on_cells else None
    both = dict(file=data.name, label=data.label_column, rows_judged=ev.n_judged if on_cells else int(ev.rows.size),
                scheme=scheme.describe(on_cells=on_cells))
    if isinstance(data, ClassSet):
        return dict(both, classes=data.classes, class_columns=data.columns, prefix=data.prefix, logits=data.logits,
                    cells=None, binning=CLASS_BINNING,
                    validation=report_validation(data.report, data.report.class_counts))
    n_pos = int(data.labels.sum())
    validation = report_validation(data.report, {data.negative_label: data.n_rows - n_pos,
                                                 data.positive_label: n_pos})
    return dict(both, classes=[data.negative_label, data.positive_label], positive=data.positive_label,
                score=data.score, cells=how, binning=ev.binning, validation=validation)


def evaluation_document(data, ev, scheme: Scheme) -> dict:
    """``evaluate --json`` of ``ev``, the evaluation of ``data`` (a ScoreSet or a ClassSet) under ``scheme``."""
    return evaluate_json(ev, engine=engines.find(out_of_core=False), **evaluation_facts(data, ev, scheme))


def reliability_document(ev, n_bins: int = 10, strategy: str = "quantile") -> dict:
    """Each method's binned reliability on the judged rows (binary: the score; K classes: the top label's
    confidence and correctness), as a saved run keeps it for the Runs page: ``bins`` of ``mean_pred``,
    ``obs_freq`` and ``count``."""
    out = {}
    weights = getattr(ev, "weights", None)
    for method, pred in ev.predictions.items():
        p = np.asarray(pred, dtype=float)
        if p.ndim == 2:
            p, y = mmetrics.top_label(p, ev.labels)
        else:
            y = ev.labels
        t = reliability_table(p, y, n_bins, strategy, sample_weight=weights)
        out[method] = {k: [finite_or_none(v) for v in t[k]] for k in ("mean_pred", "obs_freq", "count")}
    return {"binning": f"{n_bins} {'equal-count' if strategy == 'quantile' else 'equal-width'} bins", "methods": out}
