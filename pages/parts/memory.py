"""Giving freed memory back to the operating system after each script run.

A page run on a large upload allocates and frees hundreds of MB (parsing, fits, bootstrap resamples). glibc's
allocator keeps freed blocks in the arena of the thread that freed them, and Streamlit runs every session's
script in a thread of its own, so the server's resident memory stayed at its peaks long after (measured with
``bench/bench_sessions.py``). ``malloc_trim(0)`` returns the free pages of every arena; it costs a few
milliseconds, and nothing where glibc is not the allocator (the call is then skipped).

pyarrow allocates through a pool of its own (mimalloc by default) that keeps freed pages too, and more of
them: reading a 10^7-row Parquet upload peaked 75 MB higher under mimalloc than under the system allocator
and left about 400 MB held after the table was converted. The server therefore makes the system allocator
pyarrow's pool (:func:`use_system_allocator`, from ``app.py``: large Arrow buffers are then ``mmap``-ed and
unmapped when freed, the rest trimmed with the Python heap); the pool's ``release_unused`` is called after
each run as well, for a pool chosen otherwise (``ARROW_DEFAULT_MEMORY_POOL``).
"""
from __future__ import annotations

import ctypes
import ctypes.util
import sys

__all__ = ["give_back", "use_system_allocator"]


def _trim():
    try:
        libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6")
        return libc.malloc_trim
    except (OSError, AttributeError):          # not glibc (macOS, musl without it): nothing to give back
        return None


_MALLOC_TRIM = _trim()


def use_system_allocator() -> None:
    """Make the system allocator pyarrow's default memory pool (once per process; the library's readers use
    the default pool, so they follow). Left as it is when the operator chose a pool with
    ``ARROW_DEFAULT_MEMORY_POOL``."""
    import os

    import pyarrow as pa

    if not os.environ.get("ARROW_DEFAULT_MEMORY_POOL") and pa.default_memory_pool().backend_name != "system":
        pa.set_memory_pool(pa.system_memory_pool())


def give_back() -> bool:
    """Return the allocator's free pages to the system; False where that cannot be done."""
    pa = sys.modules.get("pyarrow")
    if pa is not None:
        pa.default_memory_pool().release_unused()
    if _MALLOC_TRIM is None:
        return False
    _MALLOC_TRIM(0)
    return True
