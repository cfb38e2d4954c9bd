"""The report of a file, a loaded ScoreSet or a loaded ClassSet: load, fit, judge, bootstrap, measure, write
(:func:`calibdash.report.build.build_report`); the path of ``python -m calibdash report``."""
from __future__ import annotations

from datetime import datetime
from typing import Mapping

from ..evaluation import bootstrap as cboot
from .. import diagrams
from ..evaluation.holdout import MAX_FIT_ROWS, Scheme, default_methods, evaluate_classes, evaluate_score_set
from ..evaluation.methods import DEFAULT_METHODS, resolve
from .build import build_report, check_plotlyjs, describe_class_source, describe_source, measure_table

__all__ = []

#: Paired resamples of a K-class report's intervals unless told otherwise.
CLASS_N_BOOT = 200


def report_for_file(path, methods=None, score: str | None = None, label: str | None = None,
                    scheme: Scheme | None = None, **options) -> str:
    """The HTML report of a CSV, .csv.gz or Parquet file: load it (:func:`calibdash.data.load_scores`, the
    ``score`` and ``label`` columns guessed when not given), then :func:`report_for_score_set` with the other
    arguments."""
    from ..data import load_scores

    return report_for_score_set(load_scores(path, score=score, label=label), methods, scheme, **options)


def report_for_score_set(ss, methods=None, scheme: Scheme | None = None, *,
                         params: Mapping[str, Mapping] | None = None, cells: str = "auto",
                         n_boot: int | None = None, title: str | None = None, include_plotlyjs=True,
                         generated: datetime | None = None, diagram: str = "binned") -> str:
    """The report of a :class:`~calibdash.data.ScoreSet`: fit and judge ``methods`` as ``python -m calibdash
    evaluate`` does (:func:`calibdash.evaluation.holdout.evaluate_score_set`), bootstrap, measure, write.

    Parameters
    ----------
    ss : ScoreSet
    methods : method spec, default :data:`calibdash.evaluation.methods.DEFAULT_METHODS`
    scheme : Scheme, default ``Scheme()``
    params : mapping method -> {hyperparameter: value}, optional
    cells : {"auto", "always", "never"}
    n_boot : int, optional
        Resamples of the intervals (default: as the Compare page).
    title : str, optional
        Default ``"Calibration report: <file name>"``.
    include_plotlyjs, generated, diagram
        As for :func:`build_report`.
    """
    diagrams.check_kind(diagram)                # before the fits, not after
    scheme = scheme or Scheme()
    ev = evaluate_score_set(ss, resolve(DEFAULT_METHODS if methods is None else methods, params), scheme,
                            cells=cells)
    boot = cboot.bootstrap_evaluation(ev, n_boot)
    table, failed = measure_table(ev)
    feats = (ss.features.iloc[ev.rows].reset_index(drop=True)
             if ss.features is not None and ev.weights is None and any(
                 getattr(m, "uses_features", False) for m in ev.models.values()) else None)
    return build_report(ev, boot, title=title or f"Calibration report: {ss.name}",
                        source_description=describe_source(ss),
                        scheme_description=scheme.describe(on_cells=ev.weights is not None),
                        measures_table=table, notes=[*ss.report.messages, *failed],
                        features=feats, include_plotlyjs=include_plotlyjs, generated=generated, diagram=diagram)


def report_for_class_set(cs, methods=None, scheme: Scheme | None = None, *, params: Mapping[str, Mapping] | None = None,
                         n_boot: int = CLASS_N_BOOT, title: str | None = None, include_plotlyjs=True,
                         generated: datetime | None = None, max_fit_rows: int | None = MAX_FIT_ROWS) -> str:
    """The report of a :class:`calibdash.data.ClassSet`: fit and judge ``methods`` (default
    :func:`calibdash.evaluation.holdout.default_methods` for its K; ``max_fit_rows`` as
    :func:`~calibdash.evaluation.holdout.evaluate_classes` takes it), bootstrap (``n_boot`` paired resamples),
    write; the other arguments as for :func:`report_for_score_set`."""
    check_plotlyjs(include_plotlyjs)              # before the fits, not after
    scheme = scheme or Scheme()
    ev = evaluate_classes(cs.scores(), cs.labels, default_methods(cs.k) if methods is None else methods, scheme,
                          split=cs.split, classes=cs.classes, params=params, max_fit_rows=max_fit_rows)
    boot = cboot.bootstrap_multiclass(ev.predictions, ev.labels, n_boot=n_boot, seed=scheme.seed)
    return build_report(ev, boot, title=title or f"Calibration report: {cs.name}",
                        source_description=describe_class_source(cs), scheme_description=scheme.describe(),
                        notes=cs.report.messages, include_plotlyjs=include_plotlyjs, generated=generated)
