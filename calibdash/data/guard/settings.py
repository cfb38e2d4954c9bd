"""The operator's settings of large sources: the environment variables and the defaults of a :class:`DataRoot`
(:mod:`calibdash.data.guard`)."""
from __future__ import annotations

import re

__all__ = []

#: The environment variable that turns large sources on: the directory they are read from.
ENV_VAR = "CALIBDASH_DATA_ROOT"
#: The environment variable of DuckDB's memory limit per connection (:data:`DEFAULT_MEMORY_LIMIT` when unset).
ENV_MEMORY_LIMIT = "CALIBDASH_MEMORY_LIMIT"
#: The environment variable of the spill limit per connection (:data:`DEFAULT_SPILL_LIMIT` when unset).
ENV_SPILL_LIMIT = "CALIBDASH_SPILL_LIMIT"
#: DuckDB's memory limit for queries typed in the page (DuckDB's own size syntax).
DEFAULT_MEMORY_LIMIT = "2GB"
#: Most temporary disk one connection may spill to (DuckDB's ``max_temp_directory_size``).
DEFAULT_SPILL_LIMIT = "10GB"
#: DuckDB's worker threads for queries typed in the page.
DEFAULT_THREADS = 2
#: The alias of a DuckDB database file attached by :meth:`DataRoot.connect`.
DEFAULT_ALIAS = "source"
#: A size in DuckDB's syntax (``2GB``, ``512MB``): what a memory or spill limit must match.
SIZE = re.compile(r"\d+(\.\d+)?\s*(B|KB|MB|GB|TB|KiB|MiB|GiB|TiB)", re.IGNORECASE)
