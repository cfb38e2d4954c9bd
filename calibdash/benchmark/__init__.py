"""Benchmark calibrators over several data sets: repeated K-fold cross-fitting, ranks, Friedman and Holm.

The protocol of the BBQ and ELiTE papers' real-data experiments, after Demšar (2006):

1. Every (data set, method, repeat) *unit* is one K-fold evaluation with ``Scheme("kfold", seed=seed + repeat)``,
   the metrics computed once on all the out-of-fold predictions; within a repeat every method sees the same folds,
   the raw scores ranked like a method, as the papers rank the base classifier. A unit depends only on its data,
   calibrator, K and seed, so units are cached and an interrupted run resumes.
2. A data set's value of a metric for a method is the mean over repeats: Demšar (section 3.2.3) warns that folds
   and repeats are not independent observations, so they are averaged, never used as extra blocks.
3. On each data set the methods are ranked (1 = best, mid-ranks for ties); average ranks per metric, Friedman's
   test with the Iman-Davenport correction, and Holm's step-down procedure against a reference method follow.
   As in the papers, the post-hoc comparison counts only when the Friedman test rejects.
"""
from .datasets import class_datasets_from_table, datasets_from_table, load_benchmark_datasets
from .outcome import CLASS_MEASURES
from .engine import (DEFAULT_CLASS_METRIC, DEFAULT_FOLDS, DEFAULT_METHODS, DEFAULT_REPEATS, EngineDataset, UnitCache,
                     default_class_methods, run_benchmark, unit_key)
from .report import TableKind, report_tables
from .statistics import DEFAULT_ALPHA, DEFAULT_METRIC, default_reference, summarise

__all__ = [
    "EngineDataset", "UnitCache", "TableKind", "run_benchmark", "default_reference", "report_tables",
    "datasets_from_table", "DEFAULT_METHODS", "DEFAULT_FOLDS", "DEFAULT_REPEATS", "DEFAULT_METRIC",
    "DEFAULT_ALPHA", "DEFAULT_CLASS_METRIC", "default_class_methods", "class_datasets_from_table",
    "load_benchmark_datasets", "CLASS_MEASURES", "unit_key", "summarise"
]
