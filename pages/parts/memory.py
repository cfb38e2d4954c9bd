"""Giving freed memory back to the operating system after each script run.

A page run on a large upload allocates and frees hundreds of MB (parsing, fits, bootstrap resamples). glibc's
allocator keeps freed blocks in the arena of the thread that freed them, and Streamlit runs every session's
script in a thread of its own, so the server's resident memory stayed at its peaks long after (measured with
``bench/bench_sessions.py``). ``malloc_trim(0)`` returns the free pages of every arena; it costs a few
milliseconds, and nothing where glibc is not the allocator (the call is then skipped).

pyarrow allocates through a pool of its own (mimalloc or jemalloc) that keeps freed pages too: reading a
10^7-row Parquet upload left about 400 MB of them held after the table was converted. The pool's
``release_unused`` gives them back, when pyarrow has been imported.
"""
from __future__ import annotations

import ctypes
import ctypes.util
import sys

__all__ = ["give_back"]


def _trim():
    try:
        libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6")
        return libc.malloc_trim
    except (OSError, AttributeError):          # not glibc (macOS, musl without it): nothing to give back
        return None


_MALLOC_TRIM = _trim()


def give_back() -> bool:
    """Return the allocator's free pages to the system; False where that cannot be done."""
    pa = sys.modules.get("pyarrow")
    if pa is not None:
        pa.default_memory_pool().release_unused()
    if _MALLOC_TRIM is None:
        return False
    _MALLOC_TRIM(0)
    return True
