"""Large sources on the server, kept inside one directory: the data root.

The dashboard can read large sources that live on the server, not in an
upload: a path, a glob of files, a table of a DuckDB database file, or a SQL
query typed in the page. Each is a way into the server, so all of them go
through a :class:`DataRoot`:

- the operator turns large sources on by setting the environment variable
  ``CALIBDASH_DATA_ROOT`` to the one directory that holds them (or by passing
  the value explicitly, e.g. from Streamlit's ``secrets.toml``; see
  :func:`data_root_from_env`). Unset or empty: no large sources at all;
- :meth:`DataRoot.resolve` and :meth:`DataRoot.resolve_glob` accept a path or
  a pattern only when, after ``..`` and every symbolic link are resolved, it
  lies under the root (``Path.resolve`` then ``Path.is_relative_to``);
- :meth:`DataRoot.connect` gives an in-memory DuckDB connection that can read
  files under the root only, cannot install or load extensions, has bounded
  memory and threads, and whose configuration is locked;
- :meth:`DataRoot.check_query` accepts one ``SELECT`` (or ``WITH ... SELECT``)
  statement only, judged by DuckDB's own parser (statement types), not by
  regular expressions; :meth:`DataRoot.query` checks and runs it.

Each refusal is an :class:`AccessDenied` (a :class:`calibdash.DataError`)
whose message names what the user typed, never a path outside the root (the
target of a link is not shown).

What DuckDB refuses by itself, and what is checked here
-------------------------------------------------------
Verified with DuckDB 2.0 (see ``tests/data/test_guard.py``). With
``allowed_directories = [root]``, ``enable_external_access = false`` and
``lock_configuration = true`` DuckDB itself refuses (``PermissionException``
or ``InvalidInputException``): reading any file outside the root, including
through ``..`` or a symbolic link under the root that leads out (DuckDB
resolves links), ``read_text``/``sniff_csv``/``glob`` outside the root, URLs,
``COPY ... TO`` a file outside the root, ``ATTACH`` of a file outside the
root, ``INSTALL`` and ``LOAD``, and every ``SET``/``RESET`` after the lock.
It does **not** refuse ``COPY ... TO``, ``EXPORT DATABASE`` or ``ATTACH``
(which creates a new database file) *under* the root, nor ``CREATE``,
``DETACH``, ``SET``-free statements such as ``CALL checkpoint()``: these are
what :meth:`DataRoot.check_query` refuses, by allowing only a single
statement of type ``SELECT``. DuckDB's ``query()`` table function itself
accepts a single ``SELECT`` only.

Nothing is written but DuckDB's own buffer files: the connection is in
memory, persistent secrets are off, and the typed query can only be a
``SELECT``. Without ``spill_directory`` nothing spills (a query over the
memory limit fails with DuckDB's "Out of Memory" error). With it, each
connection spills into a directory of its own, inside a private directory
made fresh for this :class:`DataRoot` by ``tempfile.mkdtemp`` (mode 0700,
owner and mode checked, never a path another local user could plant a link
at), at most ``spill_limit`` bytes (DuckDB's ``max_temp_directory_size``);
DuckDB makes and removes it. DuckDB needs that one directory in
``allowed_directories`` to spill (it adds it itself when external access is
turned off, and checks its own spill files against it): so a query can name
its own connection's buffer files, never another connection's, nor the
private directory that holds them.

Errors. Every DuckDB or file-system error met while reading is turned into
a calibdash error by :func:`engine_error`, whose message is
:func:`safe_message`: the first line only, quoted values removed, paths
outside the root not named, and at most a few hundred characters (saying
so when cut): a message never carries the rows, and never a traceback.

Left to the operator: hard links (they cannot be told from the files they
point to), files under the root that should not be shown, and how long,
how many and how large the jobs may be (:mod:`calibdash.core.jobs`,
``CALIBDASH_SPILL_LIMIT``, ``CALIBDASH_MEMORY_LIMIT``; DuckDB has no time
limit of its own: :mod:`calibdash.core.jobs` stops a query with
``connection.interrupt()``).

Layout: :mod:`~calibdash.data.guard.settings` (the environment variables
and defaults), :mod:`~calibdash.data.guard.refusals` (:class:`AccessDenied`,
:func:`safe_message`, :func:`engine_error`),
:mod:`~calibdash.data.guard.paths` (paths and globs under the root),
:mod:`~calibdash.data.guard.connection` (:class:`DataRoot`: the locked
connection, its spill directory, the query check; :func:`data_root_from_env`).

>>> root = DataRoot("/srv/calibdash-data")                       # doctest: +SKIP
>>> con = root.connect(database="warehouse.duckdb")             # doctest: +SKIP
>>> rel = root.query(con, "SELECT score, label FROM source.main.preds")   # doctest: +SKIP
"""
from __future__ import annotations

# Re-exports: every public name of calibdash.data.guard keeps importing from here.
from .connection import DataRoot, data_root_from_env
from .refusals import AccessDenied, engine_error, safe_message
from .paths import quote_identifier
from .settings import ENV_MEMORY_LIMIT, ENV_SPILL_LIMIT, ENV_VAR

__all__ = [
    "ENV_VAR", "ENV_MEMORY_LIMIT", "ENV_SPILL_LIMIT", "AccessDenied", "DataRoot", "data_root_from_env",
    "engine_error", "quote_identifier", "safe_message"
]
