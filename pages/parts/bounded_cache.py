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
"""
from __future__ import annotations

import functools
import pickle
import re

import streamlit as st

__all__ = ["cache_data", "pickled_size_over", "size_in_bytes", "Store"]

#: What Streamlit stores besides the value (its ``CachedResult``: the messages to replay, the ids of the
#: containers), allowed for when a value is measured against the limit.
HEADROOM = 64 * 1024
_UNITS = {"": 1, "b": 1, "kb": 1024, "kib": 1024, "mb": 1024 ** 2, "mib": 1024 ** 2, "gb": 1024 ** 3,
          "gib": 1024 ** 3, "tb": 1024 ** 4, "tib": 1024 ** 4}


def size_in_bytes(size: int | str) -> int:
    """``"512MB"`` (or an int) as bytes; units as Streamlit reads them (KB, MB, GB, KiB, ... all powers of 1024)."""
    if isinstance(size, int):
        return size
    m = re.fullmatch(r"\s*(\d+(?:\.\d*)?)\s*([a-zA-Z]*)\s*", str(size))
    if not m or m.group(2).lower() not in _UNITS:
        raise ValueError(f"not a size: {size!r} (write e.g. '512MB').")
    return int(float(m.group(1)) * _UNITS[m.group(2).lower()])


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


def cache_data(*, max_size: int | str, max_entries: int, show_spinner: bool | str = False):
    """Decorator: ``st.cache_data(max_size=..., max_entries=..., show_spinner=...)`` that never stores a value
    larger than ``max_size`` (pickled, less :data:`HEADROOM`): such a value is returned uncached.

    With every entry under the limit, Streamlit's least-recently-used eviction keeps the cache's total under
    it. The decorated function has ``.clear()`` and ``.max_size`` (bytes).
    """
    limit = size_in_bytes(max_size)

    def decorate(fn):
        @functools.wraps(fn)
        def compute_and_measure(*args, **kwargs):
            value = fn(*args, **kwargs)
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

        call.clear = cached.clear
        call.max_size = limit
        return call

    return decorate


class _Absent(Exception):
    """Nothing kept under this key (a raised call is not cached)."""


class Store:
    """Values put under a text key (what a job gave), kept by a :func:`cache_data` bounded by entries and bytes.

    :meth:`get` gives the value back, or None when nothing (or nothing any
    more) is kept under the key. ``name`` tells the stores of a module apart
    (``st.cache_data`` keys a cache by its function's name and source).
    """

    def __init__(self, name: str, *, max_entries: int, max_size: int | str):
        def kept(key: str, _value=None):
            if _value is None:
                raise _Absent(key)
            return _value

        kept.__name__ = kept.__qualname__ = f"Store.{name}"
        self._kept = cache_data(show_spinner=False, max_entries=max_entries, max_size=max_size)(kept)
        self.max_size = self._kept.max_size

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
