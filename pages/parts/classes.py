"""The active data as a K-class table: whether it is one, its :class:`calibdash.data.ClassSet`, and cached fits.

A file is read as multi-class when :func:`calibdash.data.is_multiclass` says so
(a label of 3 or more classes and one probability or logit column per class),
unless the user chose the binary reading on the Data page. The user's choices
(label column, the class columns' prefix, probabilities or logits) live in
widgets keyed per file (:func:`role_key`), as the binary roles do.

Fits are cached like the binary ones (:mod:`pages.parts.fitting`): the judged
rows' uncalibrated probabilities once per data set and scheme, and what each
method adds (its held-out probabilities, its measures row, its model, seconds)
per method and hyperparameters, all keyed on the data's content key. What is row-sized (the ClassSet,
its top-label ScoreSet, the judged rows' probabilities of each fit) is kept by
:func:`pages.parts.bounded_cache.live_cache`: the objects themselves, shared, bounded by their bytes, never
pickled and unpickled again on each rerun (a 10^6-row, 10-class fit's probabilities are 80 MB).
"""
from __future__ import annotations

import numpy as np
import pandas as pd
import streamlit as st

from calibdash import data as cdata, samples
from calibdash.errors import DataError
from calibdash.multiclass import bootstrap as mboot
from calibdash.multiclass.evaluation import UNCALIBRATED, ClassEvaluation, evaluate_classes
from calibdash.scheme import Scheme
from pages.parts import bounded_cache
from pages.parts.source import SAMPLE, role_key, source_table, using_large, using_upload
from pages.parts.text import md

__all__ = ["MODE", "LABEL", "PREFIX", "KIND", "KINDS", "MODES", "detected", "using_classes", "chosen_class_roles",
           "active_class_set", "class_set_or_stop", "top_label_or_stop", "evaluate_chosen", "bootstrap_chosen",
           "frozen"]

# role keys (per file, through source.role_key)
MODE, LABEL, PREFIX, KIND = "mc.mode", "mc.label", "mc.prefix", "mc.kind"
#: The reading of the class columns the Data page offers.
KINDS = ("probabilities", "logits")
#: The values of the MODE choice: the table read as K classes, or as a binary file.
MODES = ("multiclass", "binary")


def frozen(params: dict) -> tuple:
    """Hyperparameters as a hashable, order-free cache key."""
    return tuple(sorted(params.items()))


@bounded_cache.cache_data(show_spinner=False, max_entries=32, max_size="1MB")
def _detected(sha: str, _df: pd.DataFrame) -> bool:
    return cdata.is_multiclass(_df)


def detected(sha: str, df: pd.DataFrame) -> bool:
    """Whether the table of file ``sha`` looks like a K-class table (:func:`calibdash.data.is_multiclass`),
    whatever the user chose; cached per file."""
    return _detected(sha, df)


def _sample_roles() -> dict:
    """The label and class columns a multi-class sample declares ({} for an upload or a binary sample)."""
    if using_upload():
        return {}
    s = samples.CLASS_SAMPLES.get(st.session_state.get(SAMPLE, samples.DEFAULT_SAMPLE))
    return {} if s is None else {"label": s.label, "logits" if s.logits else "probs": s.prefix}


def using_classes() -> bool:
    """Whether the active source is read as a K-class table (detected, unless the user chose binary)."""
    if using_large():
        return False
    try:
        df, info = source_table()
    except DataError:
        return False
    mode = st.session_state.get(role_key(info.sha256, MODE))
    if mode is not None:
        return mode == "multiclass"
    return _detected(info.sha256, df)


def chosen_class_roles(sha: str) -> dict:
    """The user's choices for file ``sha``: ``label`` and ``probs`` or ``logits`` (a prefix); missing ones taken
    from a multi-class sample's declaration, else guessed."""
    state = st.session_state
    roles = _sample_roles()
    label = state.get(role_key(sha, LABEL))
    if label:
        roles["label"] = label
    prefix = state.get(role_key(sha, PREFIX))
    if prefix:
        roles.pop("probs", None)
        roles.pop("logits", None)
        roles["logits" if state.get(role_key(sha, KIND)) == "logits" else "probs"] = prefix
    return roles


def _class_set_bytes(cs: cdata.ClassSet) -> int:
    """What a ClassSet holds beyond its table (``raw``, weighed by the tables' cache)."""
    return bounded_cache.live_bytes(cs, {id(cs.raw)})


@bounded_cache.live_cache(show_spinner=False, max_entries=16, max_size="512MB", weigh=_class_set_bytes)
def _class_set(sha: str, roles: tuple, _df: pd.DataFrame, _info) -> cdata.ClassSet:
    return cdata.build_class_set(_df, info=_info, name=_info.name, **dict(roles))


def active_class_set() -> cdata.ClassSet:
    """The ClassSet every page works on when :func:`using_classes`.

    Raises
    ------
    DataError
        With a message for the user, when the table cannot be read as K classes.
    """
    df, info = source_table()
    roles = chosen_class_roles(info.sha256)
    return _class_set(info.sha256, tuple(sorted(roles.items())), df, info)


def _refuse(what: str, exc: DataError) -> None:
    """An error box saying ``what`` and why, a link to the Data page, and a stop (never a traceback)."""
    st.error(f"**{what}:** {md(exc)}")
    st.page_link("pages/data.py", label="Go to the Data page to choose the columns or another file",
                 icon=":material/folder_open:")
    st.stop()


def class_set_or_stop() -> cdata.ClassSet:
    """The active ClassSet, or an error box, a link to the Data page and a stop (never a traceback)."""
    try:
        return active_class_set()
    except DataError as exc:
        _refuse("This table cannot be read as K classes", exc)


@bounded_cache.live_cache(show_spinner=False, max_entries=8, max_size="256MB")
def _top_label(data_key: str, _cs: cdata.ClassSet) -> cdata.ScoreSet:
    return _cs.top_label()


def top_label_or_stop() -> tuple[cdata.ClassSet, cdata.ScoreSet]:
    """The active ClassSet and its top-label reduction (:meth:`calibdash.data.ClassSet.top_label`: the
    confidence as the score, "the top class is right" as the label), cached on the data's content key; or
    an error box, a link to the Data page and a stop."""
    cs = class_set_or_stop()
    try:
        return cs, _top_label(cs.content_key(), cs)
    except DataError as exc:
        _refuse("This table's top-label reading cannot be used", exc)


@bounded_cache.live_cache(show_spinner=False, max_entries=16, max_size="256MB")
def _shared(data_key: str, scheme: Scheme, _cs: cdata.ClassSet) -> ClassEvaluation:
    """The evaluation of no method: the judged rows, their labels and uncalibrated probabilities, the notes."""
    return evaluate_classes(_cs.scores(), _cs.labels, {}, scheme, split=_cs.split, classes=_cs.classes)


@bounded_cache.live_cache(show_spinner=False, max_entries=256, max_size="512MB")
def _fit_one(data_key: str, scheme: Scheme, method: str, params: tuple, _cs: cdata.ClassSet) -> dict:
    """What ``method`` adds to the shared evaluation: its held-out probabilities, measures row, model, seconds."""
    ev = evaluate_classes(_cs.scores(), _cs.labels, {method: dict(params)}, scheme, split=_cs.split,
                          classes=_cs.classes)
    return {"predictions": ev.predictions[method], "metrics": ev.metrics.loc[[method]],
            "model": ev.models[method], "seconds": ev.fit_seconds[method]}


def evaluate_chosen(cs: cdata.ClassSet, scheme: Scheme, chosen: dict[str, dict]) -> ClassEvaluation:
    """Held-out evaluation of ``chosen`` (method -> params) on ``cs``, each fit cached on data + scheme + params."""
    key = cs.content_key()
    shared = _shared(key, scheme, cs)
    if not chosen:
        return shared
    with st.spinner("Fitting calibrators…", show_time=True):
        fits = {m: _fit_one(key, scheme, m, frozen(p), cs) for m, p in chosen.items()}
    return ClassEvaluation(
        scheme=shared.scheme, rows=shared.rows, labels=shared.labels,
        predictions={UNCALIBRATED: shared.predictions[UNCALIBRATED], **{m: f["predictions"] for m, f in fits.items()}},
        metrics=pd.concat([shared.metrics] + [f["metrics"] for f in fits.values()]),
        models={m: f["model"] for m, f in fits.items()}, fit_rows=shared.fit_rows,
        fit_seconds={m: f["seconds"] for m, f in fits.items()}, classes=shared.classes, notes=shared.notes)


@bounded_cache.cache_data(show_spinner="Bootstrapping intervals…", max_entries=32, max_size="64MB")
def _bootstrap(data_key: str, scheme: Scheme, chosen: tuple, _ev: ClassEvaluation):
    return mboot.bootstrap_multiclass(_ev.predictions, _ev.labels)


def bootstrap_chosen(ev: ClassEvaluation, cs: cdata.ClassSet, scheme: Scheme, chosen: dict[str, dict]):
    """Paired bootstrap intervals of every measure (:func:`calibdash.multiclass.bootstrap.bootstrap_multiclass`),
    cached on data + scheme + methods + parameters."""
    key = tuple((m, frozen(p)) for m, p in chosen.items())
    return _bootstrap(cs.content_key(), scheme, key, ev)
