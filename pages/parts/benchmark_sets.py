"""The Benchmark page's data sets, one path for every kind, and what each kind is benchmarked with.

Every table, a sample or an upload, is read once and gives its data sets by what it is
(:func:`calibdash.data.is_multiclass`): a K-class table one data set, named with its number of classes; a
binary table one per score column. A :class:`Kind` declares what a kind of data set is ranked with (its
calibrators, their labels and hyperparameters, the measures ranked, the runner, its widgets' keys, the samples
chosen first); the page asks the chosen data sets' kind (:func:`kind_of`) and never forks on it.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

import streamlit as st

from calibdash import benchmark, calibrators, measures, samples
from calibdash import data as cdata
from calibdash.core.errors import DataError
from calibdash.evaluation.methods import resolve
from calibdash.measures import class_measures as mmetrics
from pages.parts import bounded_cache
from pages.parts import problem as families
from pages.parts.classes import using_classes
from pages.parts.problem import Methods as Family

__all__ = ["Kind", "BINARY_KIND", "CLASS_KIND", "KINDS", "kind_of", "table_sets", "available_sets", "FILES",
           "SUFFIX"]

#: How a K-class data set's name ends in the menu.
SUFFIX = " ({k} classes)"
FILES = "bench.files"      # session key: uploaded files, sha -> {"name", "data"}


@dataclass(frozen=True)
class Kind:
    """What the page needs to know of a kind of data set."""

    name: str
    family: Family
    default_methods: Callable[[], list]
    rankable: tuple
    default_metric: str
    run: Callable
    methods_key: str
    metric_key: str
    methods_title: str
    samples: tuple          # the samples whose data sets are chosen first when the active data is of this kind


BINARY_KIND = Kind("binary", families.BINARY,
                   lambda: [m for m in benchmark.DEFAULT_METHODS if m in calibrators.available()],
                   tuple(m for m in measures.ALL_NAMES if measures.rankable(m)),
                   "ECE", lambda sets, methods, **kw: benchmark.run_benchmark(sets, resolve(methods), **kw),
                   "bench.methods", "bench.metric", "Calibrators", ("circles_svm", "breast_cancer_nb"))
CLASS_KIND = Kind("multiclass", families.CLASSES, benchmark.default_class_methods,
                  tuple(mmetrics.MEASURE_NAMES), benchmark.DEFAULT_CLASS_METRIC,
                  benchmark.run_benchmark, "bench.mc.methods", "bench.mc.metric", "Calibrators (multi-class)",
                  tuple(samples.CLASS_SAMPLES))
#: The kinds by name (a run's configuration names its kind).
KINDS = {k.name: k for k in (BINARY_KIND, CLASS_KIND)}


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


def table_sets(df, info, name: str | None = None, label: str | None = None) -> dict:
    """A table's data sets, name -> ScoreSet or ClassSet: a K-class table's one (its name ending in
    :data:`SUFFIX`), else one per score column (:func:`calibdash.benchmark.datasets_from_table`).

    Raises
    ------
    DataError
        The table cannot be read as either.
    """
    if cdata.is_multiclass(df):
        return {key + SUFFIX.format(k=cs.k): cs
                for key, cs in benchmark.class_datasets_from_table(df, info, name=name, label=label).items()}
    return benchmark.datasets_from_table(df, info, name=name, label=label)


@bounded_cache.cache_data(show_spinner="Reading the sample…", max_entries=12, budget="benchmark_sets.samples")
def _sample_sets(name: str) -> dict:
    sample = {**samples.CLASS_SAMPLES, **samples.SAMPLES}[name]
    df, info = cdata.read_table(samples.sample_path(name))
    return table_sets(df, info, name=name, label=sample.label)


@bounded_cache.cache_data(show_spinner="Reading the file…", max_entries=16, budget="benchmark_sets.uploads")
def _upload_sets(sha: str, name: str, _data: bytes) -> dict:
    df, info = cdata.read_table(_data, filename=name)
    return table_sets(df, info)


def _sample_names() -> list[str]:
    """The K-class samples of a checkout (an installed calibdash ships none, and never generates them), then
    the binary ones (generated when needed)."""
    folder = samples.SAMPLE_DIR
    return [n for n, s in samples.CLASS_SAMPLES.items() if folder is not None and (folder / s.filename).is_file()
            ] + list(samples.SAMPLES)


def available_sets() -> tuple[dict, list[str], list[str]]:
    """(name -> ScoreSet or ClassSet, default selection, messages about unreadable files): the samples, then the
    files uploaded in this session (:data:`FILES`). The default selection is the samples of the active data's
    kind (Data page): the K-class samples for a K-class table, else two binary samples."""
    sets, default, problems = {}, [], []
    first = (CLASS_KIND if using_classes() else BINARY_KIND).samples
    for name in _sample_names():
        try:
            found = _sample_sets(name)
        except DataError as exc:
            problems.append(f"sample {name}: {exc}")
            continue
        sets.update(found)
        default.extend(found if name in first else ())
    for sha, up in (st.session_state.get(FILES) or {}).items():
        try:
            found = _upload_sets(sha, up["name"], up["data"])
        except DataError as exc:
            problems.append(f"{up['name']}: {exc}")
            continue
        for key, ss in found.items():
            sets[key if key not in sets else f"{key} (uploaded)"] = ss
    return sets, default, problems
