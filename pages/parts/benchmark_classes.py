"""The Benchmark page's K-class side: the K-class data sets it offers, and what changes when they are chosen
(the methods, their labels, the measures ranked, the runner).

K-class data sets are the multi-class samples (``sample_data/multiclass``, in a checkout) and any uploaded
K-class file (:func:`calibdash.data.is_multiclass`); each is one data set, named with its number of classes.
When every chosen data set is K-class, the page runs :func:`calibdash.benchmark.run_benchmark` on them.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

import streamlit as st

from calibdash import benchmark, calibrators, measures, multiclass, samples
from calibdash import data as cdata
from calibdash.errors import DataError
from calibdash.methods import resolve
from calibdash.multiclass import metrics as mmetrics
from pages.parts import bounded_cache
from pages.parts.class_methods import class_hyperparams, class_method_label, class_method_labels
from pages.parts.labels import method_label, method_labels

__all__ = ["Kind", "BINARY_KIND", "CLASS_KIND", "kind_of", "class_sample_sets", "upload_class_sets",
           "SUFFIX"]

#: How a K-class data set's name ends in the menu.
SUFFIX = " ({k} classes)"


@dataclass(frozen=True)
class Kind:
    """What the page needs to know of a kind of data set."""

    name: str
    methods: Callable[[], list]
    default_methods: Callable[[], list]
    label: Callable[[str], str]
    labels: Callable
    specs_of: Callable | None
    rankable: tuple
    default_metric: str
    run: Callable
    methods_key: str
    metric_key: str


BINARY_KIND = Kind("binary", calibrators.available,
                   lambda: [m for m in benchmark.DEFAULT_METHODS if m in calibrators.available()],
                   method_label, method_labels, None, tuple(m for m in measures.ALL_NAMES if measures.rankable(m)),
                   "ECE", lambda sets, methods, **kw: benchmark.run_benchmark(sets, resolve(methods), **kw),
                   "bench.methods", "bench.metric")
CLASS_KIND = Kind("multiclass", multiclass.available, benchmark.default_class_methods, class_method_label,
                  class_method_labels, class_hyperparams, tuple(mmetrics.MEASURE_NAMES), benchmark.DEFAULT_CLASS_METRIC,
                  benchmark.run_benchmark, "bench.mc.methods", "bench.mc.metric")


def kind_of(sets: dict, chosen: list[str]) -> Kind:
    """The kind of the chosen data sets: K-class when every one is (and there is one), else binary.

    Raises
    ------
    DataError
        Binary and K-class data sets chosen together (named).
    """
    multi = [d for d in chosen if isinstance(sets[d], cdata.ClassSet)]
    if multi and len(multi) < len(chosen):
        binary = next(d for d in chosen if d not in multi)
        raise DataError(f"binary and K-class data sets cannot be ranked together ({binary} is binary, {multi[0]} "
                        "is K-class): choose one kind.")
    return CLASS_KIND if multi else BINARY_KIND


def _named(cs: cdata.ClassSet, name: str) -> dict:
    return {name + SUFFIX.format(k=cs.k): cs}


@bounded_cache.cache_data(show_spinner="Reading the K-class samples…",
                          max_entries=2, budget="benchmark_classes.samples")
def class_sample_sets() -> dict:
    """The multi-class samples (``sample_data/multiclass`` of a checkout; none in an installed copy)."""
    folder = samples.SAMPLE_DIR / "multiclass" if samples.SAMPLE_DIR is not None else None
    if folder is None or not folder.is_dir():
        return {}
    out = {}
    for path in sorted(folder.glob("*.csv")):
        df, info = cdata.read_table(path)
        for name, cs in benchmark.class_datasets_from_table(df, info, name=path.stem).items():
            out.update(_named(cs, name))
    return out


@bounded_cache.cache_data(show_spinner="Reading the file…", max_entries=16, budget="benchmark_classes.uploads")
def upload_class_sets(sha: str, name: str, _data: bytes) -> dict:
    """An uploaded file's K-class data set (``{}`` when the file is not K-class)."""
    df, info = cdata.read_table(_data, filename=name)
    if not cdata.is_multiclass(df):
        return {}
    out = {}
    for key, cs in benchmark.class_datasets_from_table(df, info).items():
        out.update(_named(cs, key))
    return out
