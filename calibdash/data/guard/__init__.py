"""Large sources on the server (a path, a glob, a table of a DuckDB file, a typed SQL query), kept inside one
directory: the data root.

The operator turns large sources on by setting ``CALIBDASH_DATA_ROOT`` to the one directory that holds them
(:func:`data_root_from_env`; unset or empty: none). :class:`DataRoot` resolves paths and globs only under the root
(after ``..`` and every symbolic link), gives in-memory DuckDB connections that read files under the root only,
cannot install or load extensions, have bounded memory and threads and a locked configuration, and accepts one
``SELECT`` statement only, judged by DuckDB's own parser (statement types), not by regular expressions. Each
refusal is an :class:`AccessDenied` (a :class:`calibdash.DataError`) naming what the user typed, never a path
outside the root (nor a link's target).

What DuckDB refuses by itself, and what is checked here (verified with DuckDB 2.0, ``tests/data/test_guard.py``):
with ``allowed_directories = [root]``, ``enable_external_access = false`` and ``lock_configuration = true``
DuckDB refuses reading any file outside the root (also through ``..`` or a link under the root leading out),
``read_text``/``sniff_csv``/``glob`` outside the root, URLs, ``COPY ... TO`` and ``ATTACH`` outside the root,
``INSTALL``, ``LOAD`` and every ``SET``/``RESET`` after the lock. It does **not** refuse ``COPY ... TO``,
``EXPORT DATABASE`` or ``ATTACH`` *under* the root, nor ``CREATE``, ``DETACH`` or ``CALL checkpoint()``: these
are what :meth:`DataRoot.check_query` refuses, by allowing a single statement of type ``SELECT`` only (DuckDB's
``query()`` table function itself accepts a single ``SELECT`` only).

Nothing is written but DuckDB's own buffer files: the connection is in memory, persistent secrets are off, the
typed query can only be a ``SELECT``. Without ``spill_directory`` nothing spills (a query over the memory limit
fails with "Out of Memory"). With it, each connection spills into a directory of its own inside a private
directory made fresh for this :class:`DataRoot` by ``tempfile.mkdtemp`` (mode 0700, owner and mode checked,
never a path another local user could plant a link at), at most ``spill_limit`` bytes
(``max_temp_directory_size``). DuckDB needs that one directory in ``allowed_directories`` to spill (it adds it
itself), so a query can name its own connection's buffer files, never another's, nor the private directory.

Every DuckDB or file-system error met while reading becomes a calibdash error (:func:`engine_error`) whose
message is :func:`safe_message`: the first line only, quoted values removed, paths outside the root not named,
at most a few hundred characters: never the rows, never a traceback.

Left to the operator: hard links (they cannot be told from the files they point to), files under the root that
should not be shown, and how long, how many and how large the jobs may be (:mod:`calibdash.core.jobs`,
``CALIBDASH_SPILL_LIMIT``, ``CALIBDASH_MEMORY_LIMIT``; DuckDB has no time limit of its own:
:mod:`calibdash.core.jobs` stops a query with ``connection.interrupt()``).

>>> root = DataRoot("/srv/calibdash-data")                       # doctest: +SKIP
>>> con = root.connect(database="warehouse.duckdb")             # doctest: +SKIP
>>> rel = root.query(con, "SELECT score, label FROM source.main.preds")   # doctest: +SKIP
"""
from __future__ import annotations

from .connection import DataRoot, data_root_from_env
from .refusals import AccessDenied, engine_error, safe_message
from .paths import quote_identifier
from .settings import ENV_MEMORY_LIMIT, ENV_SPILL_LIMIT, ENV_VAR

__all__ = [
    "ENV_VAR", "ENV_MEMORY_LIMIT", "ENV_SPILL_LIMIT", "AccessDenied", "DataRoot", "data_root_from_env",
    "engine_error", "quote_identifier", "safe_message"
]
