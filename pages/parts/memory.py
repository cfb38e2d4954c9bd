"""Giving freed memory back to the operating system after each script run.

A page run on a large upload allocates and frees hundreds of MB (parsing, fits, bootstrap resamples). glibc's
allocator keeps freed blocks in the arena of the thread that freed them, and Streamlit runs every session's
script in a thread of its own, so the server's resident memory stayed at its peaks long after (measured with
``bench/bench_sessions.py``). ``malloc_trim(0)`` returns the free pages of every arena; it costs a few
milliseconds, and nothing where glibc is not the allocator (the call is then skipped).
"""
from __future__ import annotations

import ctypes
import ctypes.util

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
    if _MALLOC_TRIM is None:
        return False
    _MALLOC_TRIM(0)
    return True
