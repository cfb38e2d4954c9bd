"""Benchmark calibrators over several data sets: repeated K-fold cross-fitting, ranks, Friedman and Holm.

The protocol of the BBQ and ELiTE papers' real-data experiments, after
Demšar (2006):

1. Every (data set, method, repeat) *unit* is one call of
   :func:`calibdash.evaluation.holdout.evaluate` (a K-class data set:
   :func:`calibdash.evaluation.holdout.evaluate_classes`) with ``Scheme("kfold", seed=seed +
   repeat)``: each row's calibrated value comes from a model fitted on the
   other K - 1 folds, and the metrics are computed once on all the
   out-of-fold predictions. Within a repeat every method sees the same folds
   (same seed); the uncalibrated scores are a unit of their own (``method =
   "uncalibrated"``), ranked like a method, as the papers rank the base
   classifier. A unit depends only on its data, calibrator, K and seed, so
   callers can cache units (``cache=``) and an interrupted run resumes.
2. A data set's value of a metric for a method is the mean over repeats.
   Demšar (section 3.2.3) warns that folds and repeats are not independent
   observations, so they are averaged, never used as extra blocks.
3. On each data set the methods are ranked (1 = best, ties get mid-ranks);
   average ranks per metric, Friedman's test with the Iman-Davenport
   correction, and Holm's step-down procedure against a reference method
   follow. As in the papers, the post-hoc comparison counts only when the
   Friedman test rejects: otherwise every method is reported as not
   significantly different from the reference.

The modules, one job each:

:mod:`~calibdash.benchmark.engine`
    Plans and runs the units (:func:`run_benchmark`, :func:`run_unit`,
    :class:`UnitCache`), binary or K-class as the data sets are (:func:`problem_of`).
:mod:`~calibdash.benchmark.statistics`
    Steps 2-3 from a unit table (:func:`summarise`), so another ranking
    metric, reference or alpha needs no refitting.
:mod:`~calibdash.benchmark.outcome`
    What a benchmark found (:class:`BenchmarkResult`), with its sentences
    (:func:`describe`) and JSON (:func:`to_json`).
:mod:`~calibdash.benchmark.rank_tests`
    The tests themselves: ranks, Friedman / Iman-Davenport, Holm.
:mod:`~calibdash.benchmark.report`
    The tables shown to people (:func:`report_tables`, each a
    :class:`ReportTable` with its :class:`TableKind`).
:mod:`~calibdash.benchmark.datasets`
    Data sets from tables and files, one per score column of a binary table, one per K-class table
    (:func:`load_datasets`; :func:`load_benchmark_datasets` tells binary and K-class files apart).
:mod:`~calibdash.benchmark.catalogue`
    Which measures a kind of data keeps and which value of each is best.

The command line ``python -m calibdash benchmark FILES...`` is in
:mod:`calibdash.cli`.
"""
from .datasets import class_datasets_from_table, datasets_from_table, load_benchmark_datasets, load_datasets
from .catalogue import CLASS_MEASURES
from .in_place import EngineDataset
from .engine import (DEFAULT_CLASS_METRIC, DEFAULT_FOLDS, DEFAULT_METHODS, DEFAULT_REPEATS, UnitCache,
                     default_class_methods, run_benchmark, unit_key)
from .report import TableKind, report_tables
from .statistics import DEFAULT_ALPHA, DEFAULT_METRIC, default_reference, summarise

__all__ = [
    "EngineDataset", "UnitCache", "TableKind", "run_benchmark", "default_reference", "report_tables",
    "datasets_from_table", "DEFAULT_METHODS", "DEFAULT_FOLDS", "DEFAULT_REPEATS", "DEFAULT_METRIC",
    "DEFAULT_ALPHA", "DEFAULT_CLASS_METRIC", "default_class_methods", "class_datasets_from_table",
    "load_benchmark_datasets", "load_datasets", "CLASS_MEASURES", "unit_key", "summarise"
]
