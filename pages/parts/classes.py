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

The fits and the bootstrap are bounded before they start (:mod:`calibdash.evaluation.class_budget`: the number of
classes, and each method's work for its family) and run as jobs of :mod:`calibdash.core.jobs` owned by the session,
with a Cancel button, stopped when the session leaves (:func:`evaluate_chosen` says how).
"""
from __future__ import annotations

import functools
import hashlib

import pandas as pd
import streamlit as st

from calibdash import calibrators, data as cdata, samples
from calibdash.core.errors import DataError
from calibdash.evaluation import bootstrap as mboot
from calibdash.evaluation import class_budget as budget
from calibdash.evaluation.holdout import UNCALIBRATED, ClassEvaluation, evaluate_classes
from calibdash.evaluation.scheme import Scheme
from pages.parts import bounded_cache, fitting, job_panel
from pages.parts.source import SAMPLE, role_key, source_table, using_large, using_upload
from pages.parts.text import md

__all__ = ["MODE", "LABEL", "PREFIX", "KIND", "KINDS", "MODES", "detected", "using_classes", "chosen_class_roles",
           "active_class_set", "class_set_or_stop", "top_label_or_stop", "evaluate_chosen", "bootstrap_chosen",
           "frozen", "within_budget", "BOOTS", "SYNCHRONOUS"]

# role keys (per file, through source.role_key)
MODE, LABEL, PREFIX, KIND = "mc.mode", "mc.label", "mc.prefix", "mc.kind"
#: The reading of the class columns the Data page offers.
KINDS = ("probabilities", "logits")
#: The values of the MODE choice: the table read as K classes, or as a binary file.
MODES = ("multiclass", "binary")
#: Whether the script waits for its fitting jobs (None: only where no browser can poll their progress,
#: :func:`_synchronous`); tests may set it.
SYNCHRONOUS: bool | None = None


#: Hyperparameters as a hashable, order-free cache key (the binary fits' own).
frozen = fitting.frozen_params


@bounded_cache.cache_data(show_spinner=False, max_entries=32, budget="classes.detected")
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


@bounded_cache.live_cache(show_spinner=False, max_entries=16, budget="classes.class_sets", weigh=_class_set_bytes)
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


@bounded_cache.live_cache(show_spinner=False, max_entries=8, budget="classes.top_label")
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


@bounded_cache.live_cache(show_spinner=False, max_entries=16, budget="classes.shared")
def _shared(data_key: str, scheme: Scheme, _cs: cdata.ClassSet) -> ClassEvaluation:
    """The evaluation of no method: the judged rows, their labels and uncalibrated probabilities, the notes."""
    return evaluate_classes(_cs.scores(), _cs.labels, {}, scheme, split=_cs.split, classes=_cs.classes)


def _fit(cs: cdata.ClassSet, scheme: Scheme, method: str, params: dict, should_stop=None) -> dict:
    """What ``method`` adds to the shared evaluation: its held-out probabilities, measures row, model, seconds."""
    ev = evaluate_classes(cs.scores(), cs.labels, {method: params}, scheme, split=cs.split, classes=cs.classes,
                          should_stop=should_stop)
    return {"predictions": ev.predictions[method], "metrics": ev.metrics.loc[[method]],
            "model": ev.models[method], "seconds": ev.fit_seconds[method]}


@bounded_cache.live_cache(show_spinner=False, max_entries=256, budget="classes.fits")
def _fit_one(data_key: str, scheme: Scheme, method: str, params: tuple, _cs: cdata.ClassSet) -> dict:
    """One method's fit (:func:`_fit`), kept; the pages' jobs :meth:`put` what they fitted here."""
    return _fit(_cs, scheme, method, dict(params))


def _job_key(kind: str, *parts) -> str:
    """A job's key: a digest of what it computes (its first characters tell the pages' widgets apart)."""
    return hashlib.sha256(repr(parts).encode()).hexdigest()[:24] + f":classes-{kind}"


def _synchronous() -> bool:
    """Whether the script waits for its job: :data:`SYNCHRONOUS` if set, else unless a real Streamlit server runs
    this script (AppTest's stand-in runtime and bare mode have no browser to poll the progress fragment)."""
    if SYNCHRONOUS is not None:
        return SYNCHRONOUS
    try:
        from streamlit.runtime import Runtime

        return not (Runtime.exists() and type(Runtime.instance()) is Runtime)
    except Exception:  # noqa: BLE001 - no runtime at all: nothing polls
        return True


def within_budget(cs: cdata.ClassSet, chosen: dict[str, dict]) -> dict[str, dict]:
    """``chosen`` without the methods over their bounds (:func:`calibdash.evaluation.class_budget.fitting`, on every
    usable row: an upper bound of a fit's rows); a warning names each left out, why, and the methods that fit.

    Raises
    ------
    DataError
        The table is over the bounds of any K-class work, or none of ``chosen`` fits (naming the methods that do).
    """
    ok, refused = budget.fitting(chosen, cs.n_rows, cs.k)
    if not refused:
        return chosen
    fits, _ = budget.fitting(calibrators.available("classes"), cs.n_rows, cs.k)
    text = (f"not fitted on {cs.n_rows:,} rows x {cs.k:,} classes: "
            + "; ".join(f"{m}: {why}" for m, why in refused.items())
            + f". Methods that fit here: {', '.join(fits) or 'none'}.")
    if not ok:
        raise DataError(text[0].upper() + text[1:])
    st.warning(f"Some calibrators are {md(text)}", icon=":material/block:")
    return {m: chosen[m] for m in ok}


def _fit_job(cs: cdata.ClassSet, scheme: Scheme, missing: dict[str, dict]):
    """The work of a job fitting ``missing`` (method -> params) one after the other, stopping between fits,
    folds and methods when the job is cancelled (:func:`calibdash.evaluation.holdout.evaluate_classes`'s
    ``should_stop``)."""
    def work(job) -> dict:
        out = {}
        for i, (method, params) in enumerate(missing.items()):
            job.set_stage(f"fitting {method} ({i + 1} of {len(missing)})", i / len(missing))
            out[method] = _fit(cs, scheme, method, params, should_stop=lambda: job.cancelled)
        return out

    return work


def evaluate_chosen(cs: cdata.ClassSet, scheme: Scheme, chosen: dict[str, dict]) -> ClassEvaluation:
    """Held-out evaluation of ``chosen`` (method -> params) on ``cs``, each fit cached on data + scheme + params.

    The methods over their bounds are left out first (:func:`within_budget`); the fits not kept yet run in one
    job of :mod:`calibdash.core.jobs` owned by this session (:func:`pages.parts.job_panel.run`: its progress with a
    Cancel button; the page stops here until it is done). The job stops at its next fit, fold or method when the
    session cancels it, moves on to other methods, or ends (a closed tab stops renewing its lease): Python cannot
    stop a thread from outside, so the stop is cooperative, and :mod:`calibdash.evaluation.class_budget` bounds the one
    fit that runs to its end. A subprocess could be killed at once but would copy the rows (80 MB for 10^6 x 10)
    and the model back, and fork is unsafe in a threaded server.

    Raises
    ------
    DataError
        The table is over the bounds of K-class work, or none of ``chosen`` fits (:func:`within_budget`).
    """
    budget.check_table(cs.n_rows, cs.k)
    key = cs.content_key()
    shared = _shared(key, scheme, cs)
    chosen = within_budget(cs, chosen)
    if not chosen:
        return shared
    fits = {m: _fit_one.get(key, scheme, m, frozen(p)) for m, p in chosen.items()}
    missing = {m: chosen[m] for m, f in fits.items() if f is None}
    if missing:
        def keep(got: dict) -> None:
            for m, f in got.items():
                _fit_one.put(f, key, scheme, m, frozen(missing[m]))

        what = f"Fitting {', '.join(missing)} on {cs.n_rows:,} rows x {cs.k} classes"
        got = job_panel.run("classes.fit", _job_key("fit", key, scheme, sorted((m, frozen(p)) for m, p in
                                                                                 missing.items())),
                            what, _fit_job(cs, scheme, missing), keep, "The calibrators could not be fitted",
                            rows_note="", synchronous=_synchronous())
        fits.update(got)
    return ClassEvaluation(
        scheme=shared.scheme, rows=shared.rows, labels=shared.labels,
        predictions={UNCALIBRATED: shared.predictions[UNCALIBRATED], **{m: f["predictions"] for m, f in fits.items()}},
        metrics=pd.concat([shared.metrics] + [f["metrics"] for f in fits.values()]),
        models={m: f["model"] for m, f in fits.items()}, fit_rows=shared.fit_rows,
        fit_seconds={m: f["seconds"] for m, f in fits.items()}, classes=shared.classes, notes=shared.notes)


#: Bootstrap intervals the jobs gave (a few KB each), by job key.
BOOTS = bounded_cache.Store("classes.boot", max_entries=32, budget="classes.boot")


def bootstrap_chosen(ev: ClassEvaluation, cs: cdata.ClassSet, scheme: Scheme, chosen: dict[str, dict]):
    """Paired bootstrap intervals of every measure (:func:`calibdash.evaluation.bootstrap.bootstrap_multiclass`),
    kept per data + scheme + the methods ``ev`` holds + their parameters in ``chosen``; computed in a job of this
    session as the fits are (:func:`evaluate_chosen`), stopping between blocks of resamples when cancelled.

    Raises
    ------
    DataError
        Over :data:`calibdash.evaluation.class_budget.BOOTSTRAP_LIMIT` (the caller shows the measures without intervals).
    """
    key = _job_key("boot", cs.content_key(), scheme, tuple((m, frozen(chosen.get(m, {}))) for m in ev.predictions))
    got = BOOTS.get(key)
    if got is not None:
        return got
    budget.check_bootstrap(len(ev.rows), cs.k, len(ev.predictions))
    return job_panel.run("classes.boot", key, f"Bootstrapping intervals of {len(ev.predictions)} methods",
                         lambda job: mboot.bootstrap_multiclass(ev.predictions, ev.labels,
                                                                should_stop=lambda: job.cancelled),
                         functools.partial(BOOTS.put, key), "The intervals could not be computed", rows_note="",
                         synchronous=_synchronous())
