"""One byte budget for every cache of the dashboard, split among them from one number.

The operator sets the total with ``CALIBDASH_CACHE_BYTES`` (read when the server starts; a size such as
``"1.5GB"``, ``"800MB"`` or a number of bytes); the default, 1.5 GB, leaves room for three users' page runs
on a 24 GB machine. Every cache of the pages (the row-sized values kept as they are,
:func:`pages.parts.bounded_cache.live_cache`; the pickled ones, :func:`pages.parts.bounded_cache.cache_data`;
the jobs' results, :class:`pages.parts.bounded_cache.Store`) names its share of :data:`SHARES` with
``budget="..."`` and is bounded by :func:`size` of it, so the caches together never hold more than the total
(each evicts its least recently used entries, and stores no value larger than its share).

Before, each cache had a size of its own, 7.3 GB together; the shares keep their proportions where the
values are small (fitted models, summaries) and give the row-sized caches (the parsed tables, the K-class
tables and fits) most of the total. A value larger than its cache's share is returned without being
kept, so it is computed again when asked for.
"""
from __future__ import annotations

import os
import re

from calibdash.core.errors import EnvironmentProblem

__all__ = ["size_in_bytes", "ENV_CACHE_BYTES", "DEFAULT_TOTAL", "SHARES", "REFERENCE", "total", "size"]

ENV_CACHE_BYTES = "CALIBDASH_CACHE_BYTES"
#: The total when the operator sets none: 1.5 GB.
DEFAULT_TOTAL = 1536 * 1024 ** 2
#: Each cache's share of the total, in MB at the default total (they add up to :data:`REFERENCE`, 1,536 MB);
#: keyed ``module.cache``.
SHARES = {
    # row-sized values kept as they are (live_cache)
    "source.tables": 273, "source.samples": 48, "source.score_sets": 96,
    "classes.class_sets": 160, "classes.top_label": 48, "classes.shared": 64, "classes.fits": 160,
    # pickled values (cache_data) and what jobs gave (Store)
    "classes.detected": 1, "classes.boot": 8, "explaining.classes": 16, "reading.raw_view": 4,
    "learn_lessons.class_trial": 16, "learn_lessons.size_study": 4,
    "fitting.evaluate_one": 128, "fitting.cells": 48, "fitting.shared_on_cells": 24, "fitting.fit_on_cells": 24,
    "fitting.bootstrap": 16, "fitting.measures_bootstrap": 16, "fitting.raw_summary": 4,
    "fitting.raw_summary_large": 4,
    "diagrams.smooth": 16, "diagrams.corp": 24, "diagrams.raw_cells": 16, "explaining.explain": 40,
    "segments_columns.upload_guesses": 1, "segments_problem.classwise": 4,
    "segments_data.rows_keyed": 32, "segments_data.by_key": 16, "segments_data.fix_keys": 24,
    "segments_data.over_periods": 16, "segments_data.staleness": 8,
    "large_source.cells": 32, "large_source.reads": 4, "large_source.keyed": 16,
    "benchmark_sets.samples": 48, "benchmark_sets.uploads": 64, "data.numeric_columns": 1, "learn_lessons.trial": 8, "learn_lessons.study": 4,
}
#: What the shares add up to (MB at :data:`DEFAULT_TOTAL`).
REFERENCE = 1536


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


def total(environ=None) -> int:
    """The bytes all caches may hold together: ``CALIBDASH_CACHE_BYTES``, else :data:`DEFAULT_TOTAL`.

    Raises
    ------
    EnvironmentProblem
        The variable is not a size of at least 1 MB.
    """
    raw = (os.environ if environ is None else environ).get(ENV_CACHE_BYTES, "").strip()
    if not raw:
        return DEFAULT_TOTAL
    try:
        value = size_in_bytes(int(raw) if raw.isdigit() else raw)
    except ValueError:
        value = None
    if value is None or value < 1024 ** 2:
        raise EnvironmentProblem(f"{ENV_CACHE_BYTES} is {raw[:40]!r}; set it to a size of at least 1MB, such as "
                                 "1.5GB or 800MB.")
    return value


def size(name: str, environ=None) -> int:
    """Bytes of cache ``name``: its share of :func:`total`.

    Raises
    ------
    KeyError
        ``name`` has no share (every cache must have one: add it to :data:`SHARES`).
    """
    return total(environ) * SHARES[name] // REFERENCE
