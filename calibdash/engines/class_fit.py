"""Multi-class calibrators fitted and judged on a large source, from score cells aggregated where the rows live.

Without ``methods`` the engine's :class:`~calibdash.evaluation.cells.ClassCells` give every measure; no row
enters Python. With them: 1. each fitting part is sampled where it lives to ``max_fit_rows`` rows, stratified by
class and chosen by content (:func:`calibdash.engines.classes.fit_samples`); 2. every method is fitted on the
sample sorted by class, key and values. Unlike :func:`~calibdash.evaluation.holdout.evaluate_classes`, which fits
the one-vs-rest and top-label composites on every fitting row, *every* method is fitted on the sample here (the
notes say so); 3. the judged rows stream in batches, calibrated and added to each method's
:class:`~calibdash.evaluation.cells.ClassCellAccumulator`. Memory is bounded by a batch, the sample and the cells.
Parts depend on row positions as in the binary engines; given the parts nothing depends on row order."""
from __future__ import annotations

import contextlib
import time
from dataclasses import dataclass, field
from typing import Mapping

import numpy as np
import pandas as pd

from ..evaluation.cells import MAX_EXACT, ClassCellAccumulator, ClassCells, cell_measures
from .classes import (BATCH_ROWS, ClassSource, aggregate_classes, class_source, fit_samples, open_class_rows,
                               softmax_rows)
from .. import engines
from .plan import NO_JOB
from ..core.errors import DataError, SettingsError
from ..evaluation.holdout import MAX_FIT_ROWS, UNCALIBRATED, resolve_classes
from ..evaluation.scheme import Scheme, part_plan

__all__ = ["evaluate_class_source"]

#: The stages :func:`evaluate_class_source` reports to its job when it fits methods, in order.
STAGES = ("1. checking the rows (one scan)", "2. counting the rows per part and class (one scan)",
          "3. drawing the fitting sample by content (one scan)", "4. fitting the methods on the sample",
          "5. calibrating the judged rows batch by batch (one scan)")


@dataclass
class ClassSourceResult:
    """The measures of a K-class source's probabilities and of calibrators fitted on it, and their cells.

    Attributes
    ----------
    source, scheme : ClassSource, Scheme
    cells : ClassCells
        The judged rows' uncalibrated cells (a split's held-out part; every row for ``"insample"``, ``"kfold"``).
    metrics : DataFrame
        One row per method, ``"uncalibrated"`` first, a column per measure.
    exact : bool
        Whether every method's every reduction's cells were exact (then the measures equal the rows').
    notes : list of str
        What was sampled, fitted and judged, and on what cells.
    method_cells, models, fit_seconds : dict
        Method key -> the judged rows' cells of its calibrated probabilities; the calibrator fitted on the
        fitting part's sample (k-fold: one per fold); the seconds spent fitting it (every fold).
    fit_rows : list of int
        The rows each fit was made on (one per fitting part; k-fold: per fold), after sampling.
    n_rows : int
        Rows in the source (checked; the judged ones are ``cells.n_rows``).
    """

    source: ClassSource
    scheme: Scheme
    cells: ClassCells
    metrics: pd.DataFrame
    exact: bool
    notes: list = field(default_factory=list)
    method_cells: dict = field(default_factory=dict)
    models: dict = field(default_factory=dict)
    fit_rows: list = field(default_factory=list)
    fit_seconds: dict = field(default_factory=dict)
    n_rows: int = 0


def _fit_all(cals: dict, samples: list, job) -> tuple[list[dict], dict]:
    """One fitted copy of every method per fitting part's sample, and each method's seconds."""
    from sklearn.base import clone

    fitted, seconds = [], {k: 0.0 for k in cals}
    for i, (X, y) in enumerate(samples):
        models = {}
        for key, cal in cals.items():
            job.set_stage(f"{STAGES[3]}: {key}" + (f" (fold {i + 1} of {len(samples)})" if len(samples) > 1 else ""))
            start = time.perf_counter()
            models[key] = clone(cal).fit(X, y)
            seconds[key] += time.perf_counter() - start
        fitted.append(models)
    return fitted, seconds


def _judge(rows, cals: dict, fitted: list[dict], judged: list[list[int]], total: int, logits: bool,
           max_exact: int, batch_rows: int, job) -> dict[str, ClassCells]:
    """Stream the judged rows, calibrate each batch by the model of its part, accumulate every method's cells."""
    model_of = {p: i for i, parts in enumerate(judged) for p in parts}
    accs = {key: ClassCellAccumulator(rows.k, max_exact) for key in [UNCALIBRATED, *cals]}
    done = [0]
    job.set_stage(STAGES[4])
    job.progress_from(None if not total else (lambda: done[0] / total))
    try:
        for X, y, part in rows.batches(sorted(model_of), batch_rows):
            accs[UNCALIBRATED].add(softmax_rows(X) if logits else X, y, part)
            for key in cals:
                out = np.empty_like(X)
                for p in np.unique(part):
                    sel = part == p
                    out[sel] = fitted[model_of[int(p)]][key].predict_proba(X[sel])
                accs[key].add(out, y, part)
            done[0] += y.size
    finally:
        job.progress_from(None)
    return {key: acc.result() for key, acc in accs.items()}


def evaluate_class_source(source, label: str | None = None, probs=None, logits=None, *, split: str | None = None,
                          scheme: Scheme | None = None, engine: str | None = None, methods=None,
                          params: Mapping[str, Mapping] | None = None, max_fit_rows: int | None = MAX_FIT_ROWS,
                          measures=None, max_exact: int = MAX_EXACT, memory_limit: str = "1GB",
                          threads: int | None = None, spark=None, batch_rows: int = BATCH_ROWS,
                          job=None) -> ClassSourceResult:
    """The measures of a K-class model's probabilities on a large source, and of calibrators fitted on it.

    Parameters
    ----------
    source : str, list of str or ClassSource
        A Parquet or CSV path or glob (its class columns found by :func:`calibdash.engines.classes.class_source`
        from ``label``, ``probs`` and ``logits``, ignored for a ``ClassSource``), or a ``ClassSource``.
    scheme : Scheme, default every row
        ``"split"`` or ``"column"``: fitted on part 0, only the held-out part measured; ``"kfold"``: each fold
        judged by models fitted on the others; ``"insample"``: fitted and judged on every row.
    methods, params : optional
        What :func:`calibdash.evaluation.holdout.resolve_classes` takes (``"temperature,dirichlet,ovr:isotonic"``,
        a list, a mapping; key -> hyperparameters). No methods: the uncalibrated probabilities only.
    max_fit_rows : int or None, default :data:`~calibdash.evaluation.holdout.MAX_FIT_ROWS`
        Every method is fitted on a content-keyed, class-stratified sample of this many rows of a larger fitting
        part; None fetches every fitting row.
    measures : list of str, optional
        Names of :data:`calibdash.measures.class_measures.MEASURES` (default all).
    engine, max_exact, memory_limit, threads, spark
        As :func:`calibdash.engines.classes.aggregate_classes` takes them.
    batch_rows : int
        Judged rows per batch (memory holds about ``batch_rows * K`` values per method at once).
    job : calibdash.core.jobs.Job, optional
        Told each stage (:data:`STAGES`) and the share of judged rows done; its cancel interrupts DuckDB
        (default :data:`calibdash.engines.plan.NO_JOB`: run in the caller's thread).

    Raises
    ------
    DataError, SettingsError
        As :func:`~calibdash.engines.classes.class_source` and :func:`~calibdash.engines.classes.aggregate_classes`;
        an unknown measure or method; a fitting part with one class only.
    """
    from ..measures.class_measures import check_names

    names = check_names(measures)
    scheme = scheme or Scheme(kind="insample")
    csrc = source if isinstance(source, ClassSource) else class_source(source, label, probs, logits, split=split)
    if not methods:
        cells = aggregate_classes(csrc, scheme, engine=engine, max_exact=max_exact, memory_limit=memory_limit,
                                  threads=threads, spark=spark)
        judged = cells.select_parts([1]) if scheme.kind in ("split", "column") else cells
        table = pd.DataFrame([cell_measures(judged, names)], index=pd.Index([UNCALIBRATED], name="method"))
        return ClassSourceResult(source=csrc, scheme=scheme, cells=judged, metrics=table, exact=judged.exact,
                                 notes=[judged.describe()], n_rows=cells.n_rows)
    if max_fit_rows is not None and (int(max_fit_rows) != max_fit_rows or max_fit_rows < 1):
        raise SettingsError(f"max_fit_rows must be a whole number of at least 1 (or None), got {max_fit_rows!r}.")
    if int(batch_rows) < 1:
        raise SettingsError(f"batch_rows must be at least 1, got {batch_rows!r}.")
    cals = resolve_classes(methods, params, logits=csrc.logits)
    job = job or NO_JOB
    fit_parts, judged_parts = part_plan(scheme)
    with contextlib.ExitStack() as stack:
        job.set_stage(STAGES[0])
        rows = stack.enter_context(open_class_rows(
            csrc, scheme, engine, memory_limit=memory_limit, threads=threads, spark=spark,
            **engines.get(engine or engines.default_engine()).watched(job, stack)))
        job.set_stage(STAGES[1])
        samples, counts = fit_samples(rows, fit_parts, max_fit_rows, seed=scheme.seed,
                                      on_scan=lambda: job.set_stage(STAGES[2]))
        if any(counts[p].sum() == 0 for parts in judged_parts for p in parts):
            raise DataError("the held-out part is empty.")
        total = int(sum(counts[p].sum() for parts in judged_parts for p in parts))
        fitted, seconds = _fit_all(cals, samples, job)
        cells = _judge(rows, cals, fitted, judged_parts, total, csrc.logits, max_exact, batch_rows, job)
    table = pd.DataFrame([cell_measures(c, names) for c in cells.values()],
                         index=pd.Index(list(cells), name="method"))
    notes = _notes(csrc, scheme, cals, counts, fit_parts, samples, max_fit_rows, cells)
    models = ({k: [m[k] for m in fitted] for k in cals} if scheme.kind == "kfold" else dict(fitted[0]))
    return ClassSourceResult(source=csrc, scheme=scheme, cells=cells[UNCALIBRATED], metrics=table,
                             exact=all(c.exact for c in cells.values()), notes=notes,
                             method_cells={k: cells[k] for k in cals}, models=models,
                             fit_rows=[int(y.size) for _, y in samples], fit_seconds=seconds,
                             n_rows=int(counts.sum()))


def _notes(csrc, scheme, cals, counts, fit_parts, samples, max_fit_rows, cells) -> list[str]:
    """What was sampled, fitted and judged, for people."""
    sizes = [int(counts[p].sum()) for p in fit_parts]
    taken = [int(y.size) for _, y in samples]
    what = "every method (the one-vs-rest and top-label composites too)"
    if any(t < n for t, n in zip(taken, sizes)):
        parts = ", ".join(f"{n:,}" for n in sorted(set(sizes)))
        notes = [f"{what} fitted on a sample of {max(taken):,} of the {parts} fitting rows (stratified by class, "
                 f"chosen by a hash of each row's values and class with seed {scheme.seed}, computed where the "
                 "rows live; only the sample is fetched), as every method is at this scale; judged on every "
                 "held-out row"]
    else:
        notes = [f"{what} fitted on every fitting row ({', '.join(f'{n:,}' for n in sizes)})"]
    unc = cells[UNCALIBRATED]
    grid = [k for k, c in cells.items() if not c.exact]
    how = ("every method's cells exact (the measures are the rows')" if not grid else
           f"cells on the grid for {', '.join(grid)} (ECE, MCE and cwECE within 2^-16 of the rows' unless a bin "
           "edge falls inside a cell; Brier within 2^-15 per class)")
    notes.append(f"judged on score cells: {unc.n_rows:,} rows of {unc.k} classes streamed in batches and "
                 f"aggregated per method; {how}")
    if scheme.kind in ("split", "kfold"):
        notes.append("parts by a hash of each row's position, as the engines divide rows (another row order "
                     "gives other parts; a split column does not)")
    return notes
