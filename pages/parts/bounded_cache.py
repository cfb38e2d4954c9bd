"""``st.cache_data`` that never holds more than its ``max_size``: an entry larger than the limit is not stored.

Streamlit's ``max_size`` drops the least recently used entries until a new
one fits, but keeps a single value larger than the whole limit anyway (it
logs "was stored anyway" and drops every other entry instead). A small
upload that unpacks into a large table would then be held past the limit,
after its session has ended, until some later entry replaced it.
:func:`cache_data` closes that gap: it measures what Streamlit would store
(the value's pickled size, counted as it is written and abandoned as soon as
it passes the limit, so measuring costs no copy), and a value over the limit
is returned to its caller without being stored, so it is recomputed when it
is asked for again. Everything else is ``st.cache_data``'s: keys (arguments
whose name starts with ``_`` are not hashed), least recently used eviction
by entries and by bytes, ``.clear()``, the spinner.

``st.cache_data`` keeps a pickled copy of each value and hands every call a
fresh copy unpickled from it: right for small results, wrong for a table of
rows, which it would hold twice per session at rest (the stored bytes and the
page's copy; three times with a ScoreSet whose ``raw`` is the same table, one
more copy per cache) and copy again on every rerun. :func:`live_cache` keeps
such values themselves, one object shared by every call and every session
(pandas' copy-on-write keeps a shared frame safe from a page's changes),
bounded by their bytes in memory (:func:`live_bytes`) and by entries.
"""
from __future__ import annotations

import contextvars
import dataclasses
import functools
import inspect
import pickle
import sys
import threading
from collections import OrderedDict

import numpy as np
import pandas as pd
import streamlit as st

from pages.parts import cache_budget
from pages.parts.cache_budget import size_in_bytes  # noqa: F401  (public here too, as before)

__all__ = ["cache_data", "live_cache", "live_bytes", "pickled_size_over", "size_in_bytes", "Store", "CACHES",
           "held_total"]

#: Every cache made with a ``budget`` name (:mod:`pages.parts.cache_budget`): name -> the cache, with ``.held()``
#: (bytes it holds now, by its own accounting) and ``.max_size``.
CACHES: dict = {}

#: What Streamlit stores besides the value (its ``CachedResult``: the messages to replay, the ids of the
#: containers), allowed for when a value is measured against the limit.
HEADROOM = 64 * 1024
class _Over(Exception):
    pass


class _Meter:
    """A file that only counts what is written to it, and stops the writer past ``limit`` bytes."""

    def __init__(self, limit: int):
        self.limit = limit
        self.n = 0

    def write(self, b) -> int:
        k = memoryview(b).nbytes
        self.n += k
        if self.n > self.limit:
            raise _Over
        return k


def pickled_size_over(value, limit: int) -> bool:
    """Whether ``value`` pickles (as ``st.cache_data`` pickles it) to more than ``limit`` bytes.

    Pickled into a counter, not into memory, and abandoned as soon as the
    count passes ``limit``: the cost is at most the time to pickle ``limit``
    bytes. Protocol 5 lets numpy hand its arrays' memory to the counter
    without a copy; its size differs from Streamlit's protocol by a few
    bytes of framing, well inside :data:`HEADROOM`.
    """
    try:
        pickle.Pickler(_Meter(limit), protocol=5).dump(value)
    except _Over:
        return True
    return False


class _TooLargeToStore(Exception):
    """Carries a computed value out of ``st.cache_data`` without it being stored (a raised call is not cached)."""

    def __init__(self, value):
        super().__init__("the value is larger than the cache's max_size; returned without being stored")
        self.value = value


def _limit(max_size, budget: str | None) -> int:
    """The byte limit of a cache: ``max_size``, or its share of the one budget (:func:`cache_budget.size`)."""
    if (max_size is None) == (budget is None):
        raise TypeError("give a cache either max_size or budget (a name of pages.parts.cache_budget.SHARES)")
    if budget is not None:
        return cache_budget.size(budget)
    return size_in_bytes(max_size)


def held_total() -> int:
    """Bytes every cache of :data:`CACHES` holds now, each by its own accounting."""
    return sum(c.held() for c in list(CACHES.values()))


def _streamlit_held(name: str) -> int:
    """Bytes ``st.cache_data`` holds for the function whose display name is ``name`` (its stored values)."""
    from streamlit.runtime.caching.cache_data_api import get_data_cache_stats_provider
    stats = get_data_cache_stats_provider().get_stats()
    return sum(s.byte_length for family in stats.values() for s in family if s.cache_name == name)


_NOTHING = object()
_GIVEN = contextvars.ContextVar("bounded_cache_given", default=_NOTHING)


def cache_data(*, max_entries: int, show_spinner: bool | str = False, max_size: int | str | None = None,
               budget: str | None = None):
    """Decorator: ``st.cache_data(max_size=..., max_entries=..., show_spinner=...)`` that never stores a value
    larger than ``max_size`` (pickled, less :data:`HEADROOM`): such a value is returned uncached.

    ``budget`` (in place of ``max_size``): the name of the cache's share of the one budget of every cache
    (:mod:`pages.parts.cache_budget`); the cache is then listed in :data:`CACHES`.

    With every entry under the limit, Streamlit's least-recently-used eviction keeps the cache's total under
    it. The decorated function has ``.clear()``, ``.max_size`` (bytes), ``.held()`` (bytes Streamlit holds for
    it) and ``.fill(value, *args)`` (keep ``value`` under those arguments as if computed, bounded as any other).
    """
    limit = _limit(max_size, budget)

    def decorate(fn):
        @functools.wraps(fn)
        def compute_and_measure(*args, **kwargs):
            given = _GIVEN.get()
            value = fn(*args, **kwargs) if given is _NOTHING else given
            if pickled_size_over(value, limit - HEADROOM):
                raise _TooLargeToStore(value)
            return value

        cached = st.cache_data(show_spinner=show_spinner, max_entries=max_entries, max_size=limit)(
            compute_and_measure)

        @functools.wraps(fn)
        def call(*args, **kwargs):
            try:
                return cached(*args, **kwargs)
            except _TooLargeToStore as exc:
                return exc.value

        def fill(value, *args, **kwargs):
            token = _GIVEN.set(value)
            try:
                return call(*args, **kwargs)
            finally:
                _GIVEN.reset(token)

        name = f"{getattr(fn, '__module__', '?')}.{getattr(fn, '__qualname__', '?')}"
        call.clear, call.max_size, call.fill = cached.clear, limit, fill
        call.held = functools.partial(_streamlit_held, name)
        if budget is not None:
            CACHES[budget] = call
        return call

    return decorate


class _Absent(Exception):
    """Nothing kept under this key (a raised call is not cached)."""


class Store:
    """Values put under a text key (what a job gave), kept by a :func:`cache_data` bounded by entries and bytes.

    :meth:`get` gives the value back, or None when nothing (or nothing any
    more) is kept under the key. ``name`` tells the stores of a module apart
    (``st.cache_data`` keys a cache by its function's name and source); ``budget`` as :func:`cache_data`'s.
    """

    def __init__(self, name: str, *, max_entries: int, max_size: int | str | None = None, budget: str | None = None):
        def kept(key: str, _value=None):
            if _value is None:
                raise _Absent(key)
            return _value

        kept.__name__ = kept.__qualname__ = f"Store.{name}"
        self._kept = cache_data(show_spinner=False, max_entries=max_entries, max_size=max_size, budget=budget)(kept)
        self.max_size = self._kept.max_size
        self.held = self._kept.held

    def put(self, key: str, value):
        """Keep ``value`` under ``key``; returns it."""
        return self._kept(key, value)

    def update(self, values: dict) -> None:
        """Keep each value under its key."""
        for key, value in values.items():
            self.put(key, value)

    def get(self, key: str):
        try:
            return self._kept(key)
        except _Absent:
            return None

    def clear(self) -> None:
        self._kept.clear()


# -- values kept as they are ------------------------------------------------------------------------------
def live_bytes(value, _seen: set | None = None) -> int:
    """Bytes that ``value`` holds in memory, each object counted once (a frame and its columns, arrays,
    strings and bytes, and what containers, dataclasses and plain objects hold).

    A frame's columns count by ``memory_usage(deep=True)``, so two frames sharing a column's buffers (pandas'
    copy-on-write views) are both counted in full: the sum is an upper bound of what they hold together.
    """
    seen = set() if _seen is None else _seen
    if id(value) in seen:
        return 0
    seen.add(id(value))
    if isinstance(value, pd.DataFrame):
        return int(value.memory_usage(deep=True, index=True).sum())
    if isinstance(value, (pd.Series, pd.Index)):
        return int(value.memory_usage(deep=True))
    if isinstance(value, np.ndarray):
        extra = sum(live_bytes(v, seen) for v in value.ravel()) if value.dtype == object else 0
        return int(value.nbytes) + extra
    if isinstance(value, (str, bytes, bytearray, int, float, bool, type(None))):
        return sys.getsizeof(value)
    if isinstance(value, dict):
        return sys.getsizeof(value) + sum(live_bytes(k, seen) + live_bytes(v, seen) for k, v in value.items())
    if isinstance(value, (list, tuple, set, frozenset)):
        return sys.getsizeof(value) + sum(live_bytes(v, seen) for v in value)
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return sys.getsizeof(value) + sum(live_bytes(getattr(value, f.name), seen)
                                          for f in dataclasses.fields(value))
    if hasattr(value, "__dict__") and not isinstance(value, type):
        return sys.getsizeof(value) + live_bytes(vars(value), seen)
    return sys.getsizeof(value)


def live_cache(*, max_entries: int, show_spinner: bool | str = False, weigh=None, max_size: int | str | None = None,
               budget: str | None = None):
    """Decorator: keep each result itself (no pickled copy, no copy per call), shared by every session of the
    server, least recently used dropped first to stay within ``max_entries`` and ``max_size`` bytes
    (:func:`live_bytes` of the values).

    For row-sized values (a parsed table, a ScoreSet): a session then holds no copy of its own, and a rerun
    costs a look-up instead of an unpickling. The key is the arguments whose name does not start with ``_``
    (they must be hashable), as ``st.cache_data`` keys; a value larger than ``max_size`` is returned without
    being stored; an exception is not cached. The values are shared: callers must not change them in place
    (a DataFrame's copy-on-write already keeps derived frames apart). ``weigh(value)`` replaces
    :func:`live_bytes` for values that share memory with another cache's (say so where it is used). The
    decorated function has ``.clear()``, ``.max_size`` (bytes), ``.held()`` (bytes held now), ``.get(*args)``
    (the value kept for those arguments, or None: nothing computed) and ``.put(value, *args)`` (keep a value
    computed elsewhere, e.g. by a job, under those arguments; bounded as any other). ``budget`` as
    :func:`cache_data`'s.
    """
    limit = _limit(max_size, budget)

    def decorate(fn):
        signature = inspect.signature(fn)
        kept: OrderedDict = OrderedDict()            # key -> (value, bytes), least recently used first
        lock = threading.Lock()

        def key_of(args, kwargs) -> tuple:
            bound = signature.bind_partial(*args, **kwargs)
            bound.apply_defaults()
            return tuple((k, v) for k, v in bound.arguments.items() if not k.startswith("_"))

        def look_up(key):
            with lock:
                if key in kept:
                    kept.move_to_end(key)
                    return kept[key]
            return None

        def keep(key, value):
            size = (weigh or live_bytes)(value)
            if size > limit:
                return value
            with lock:
                kept[key] = (value, size)
                kept.move_to_end(key)
                total = sum(b for _, b in kept.values())
                while kept and (len(kept) > max_entries or total > limit):
                    _, (_, b) = kept.popitem(last=False)
                    total -= b
            return value

        @functools.wraps(fn)
        def call(*args, **kwargs):
            key = key_of(args, kwargs)
            got = look_up(key)
            if got is not None:
                return got[0]
            if show_spinner:
                with st.spinner(show_spinner if isinstance(show_spinner, str) else f"Running {fn.__name__}(…)"):
                    value = fn(*args, **kwargs)
            else:
                value = fn(*args, **kwargs)
            return keep(key, value)

        def get(*args, **kwargs):
            """The value kept for these arguments, or None (nothing is computed)."""
            got = look_up(key_of(args, kwargs))
            return None if got is None else got[0]

        def put(value, *args, **kwargs):
            """Keep ``value`` as the result for these arguments (computed elsewhere: a job); returns it."""
            return keep(key_of(args, kwargs), value)

        def clear() -> None:
            with lock:
                kept.clear()

        def held() -> int:
            with lock:
                return sum(b for _, b in kept.values())

        call.clear, call.held, call.max_size, call.get, call.put = clear, held, limit, get, put
        if budget is not None:
            CACHES[budget] = call
        return call

    return decorate
