"""The active data: a sample or the uploaded file, its cached reading, the column roles, the ScoreSet.

State lives in widgets with stable keys and ``persist_state="session"`` (so a
choice made on one page holds on the others); the one thing kept by hand in
``st.session_state`` is the uploaded file (name, bytes, SHA-256), because the
uploader widget lives on the Data page only.

The readings and score sets are kept by :func:`pages.parts.bounded_cache.live_cache`:
the objects themselves, one table per file shared by every session and every rerun
(no pickled copy in a cache, no copy per page: a session holds its upload's bytes
and, through this cache, one parsed table and its score set), bounded by their bytes
in memory, never storing an entry larger than the limit, so the caches hold at most
their limits, whatever was uploaded; a file too large to read is refused by :func:`calibdash.data.read_table`
before it is read, and a refusal is never cached.
"""
from __future__ import annotations

import hashlib

import pandas as pd
import streamlit as st

from calibdash import data as cdata, samples
from calibdash.core.errors import DataError
from pages.parts import bounded_cache, cache_budget
from pages.parts.text import md

__all__ = ["UPLOAD", "SOURCE", "SAMPLE", "SOURCES", "NONE", "remember_upload", "using_upload", "source_table",
           "role_key", "chosen_roles", "active_score_set", "score_set_or_stop", "using_large", "LARGE"]

UPLOAD = "upload"          # session_state key of the uploaded file
SOURCE = "source"          # "Sample" or "Upload"
SAMPLE = "sample"          # sample name
SOURCES = ("Sample", "Upload")
LARGE = "Large data"       # the third source, offered when the operator configured a data root (large_source)
NONE = "(none)"            # choice meaning "no such column"
ROLES = ("label", "score", "positive", "split")


#: Bytes of parsed tables kept (the tables themselves, shared by every session: :func:`bounded_cache.live_cache`).
#: A 10^6-row upload with a score, a label and two text columns of few values parses into about 11 MB (the text
#: held as categories, :mod:`calibdash.data.read`); 10^7 such rows (a 96 MB Parquet) into 110 MB; a table of
#: free text (every value distinct) stays as strings and can be four times that. Its share of the caches' one
#: budget (:mod:`pages.parts.cache_budget`: 273 MB of the default 1.5 GB).
TABLES_MAX = cache_budget.size("source.tables")
#: Bytes of score sets kept, each weighed without the table it reads (:func:`_score_set_bytes`): its scores and
#: labels (9 bytes a row) and what it copied of the table (nothing when every row is usable); 96 MB of 1.5 GB.
SCORE_SETS_MAX = cache_budget.size("source.score_sets")


@bounded_cache.live_cache(show_spinner="Reading the file…", max_entries=8, budget="source.tables")
def _read_bytes(sha: str, name: str, _data: bytes):
    """Parse uploaded bytes; keyed on our own SHA-256 of them (st hashes big inputs by sampling)."""
    return cdata.read_table(_data, filename=name)


@bounded_cache.live_cache(show_spinner="Reading the sample…", max_entries=8, budget="source.samples")
def _read_sample(name: str):
    path = samples.sample_path(name)
    return cdata.read_table(path.read_bytes(), filename=path.name)


def _score_set_bytes(ss: cdata.ScoreSet) -> int:
    """What a ScoreSet holds beyond its table (``raw``, weighed by the tables' cache): its arrays, and its
    features and split when rows were dropped (with every row kept the features are the table's own columns)."""
    shared = {id(ss.raw)} | ({id(ss.features)} if ss.features is not None and len(ss.features) == len(ss.raw)
                             else set())
    return bounded_cache.live_bytes(ss, shared)


@bounded_cache.live_cache(show_spinner=False, max_entries=32, budget="source.score_sets", weigh=_score_set_bytes)
def _score_set(sha: str, roles: tuple, _df: pd.DataFrame, _info) -> cdata.ScoreSet:
    return cdata.build_score_set(_df, info=_info, name=_info.name, **dict(roles))


def remember_upload(uploaded) -> None:
    """Keep an uploaded file in the session (its bytes and our hash of them)."""
    raw = uploaded.getvalue()
    sha = hashlib.sha256(raw).hexdigest()
    current = st.session_state.get(UPLOAD)
    if not current or current["sha"] != sha:
        st.session_state[UPLOAD] = {"name": uploaded.name, "data": raw, "sha": sha}


def using_upload() -> bool:
    """Whether the active source is an uploaded file (else a sample)."""
    return st.session_state.get(SOURCE, "Sample") == "Upload" and bool(st.session_state.get(UPLOAD))


def using_large() -> bool:
    """Whether the active source is a large source on the server (:mod:`pages.parts.large_source`); only when
    the operator turned large sources on."""
    if st.session_state.get(SOURCE) != LARGE:
        return False
    from pages.parts import large_source

    return large_source.available()


def source_table():
    """(DataFrame, FileInfo) of the active source: the chosen sample or the uploaded file.

    Raises
    ------
    DataError
        For an unreadable file.
    """
    if using_upload():
        up = st.session_state[UPLOAD]
        return _read_bytes(up["sha"], up["name"], up["data"])
    return _read_sample(st.session_state.get(SAMPLE, samples.DEFAULT_SAMPLE))


def role_key(sha: str, role: str) -> str:
    """Widget key of a column-role choice; roles are remembered per file."""
    return f"role.{role}.{sha[:12]}"


def chosen_roles(sha: str) -> dict:
    """The user's column roles for file ``sha`` (missing ones are guessed by calibdash)."""
    roles = {}
    for role in ROLES:
        v = st.session_state.get(role_key(sha, role))
        if v == NONE and role == "split":
            roles["split"] = ""          # calibdash: "" means no split column
        elif v not in (None, "", NONE):
            roles[role] = v
    feats = st.session_state.get(role_key(sha, "features"))
    if feats is not None:
        roles["features"] = list(feats)
    return roles


def _freeze(roles: dict) -> tuple:
    return tuple(sorted((k, tuple(v) if isinstance(v, list) else v) for k, v in roles.items()))


def active_score_set() -> cdata.ScoreSet:
    """The ScoreSet every page works on.

    Raises
    ------
    DataError
        With a message for the user, when the source cannot be used.
    """
    df, info = source_table()
    roles = chosen_roles(info.sha256)
    if not using_upload():
        sample = samples.SAMPLES.get(st.session_state.get(SAMPLE, samples.DEFAULT_SAMPLE))
        if sample is not None:
            roles.setdefault("score", sample.score)
            roles.setdefault("label", sample.label)
    try:
        return _score_set(info.sha256, _freeze(roles), df, info)
    except DataError:
        if not roles:
            raise
        # A remembered role no longer fits (e.g. a column choice from before): fall back to guesses.
        return _score_set(info.sha256, (), df, info)


def score_set_or_stop() -> cdata.ScoreSet:
    """The active ScoreSet, or an error box, a link to the Data page and a stop (never a traceback).

    On a large source (:func:`using_large`) a :class:`pages.parts.large_source.LargeData` instead: it answers
    what Compare and Explore read of a ScoreSet, with score cells in place of rows (pages that need rows
    check :func:`using_large` first).
    """
    if using_large():
        from pages.parts import large_source

        return large_source.large_data_or_stop()
    try:
        return active_score_set()
    except DataError as exc:
        st.error(f"**This data cannot be used:** {md(exc)}")
        st.page_link("pages/data.py", label="Go to the Data page to choose another file or sample",
                     icon=":material/folder_open:")
        st.stop()
