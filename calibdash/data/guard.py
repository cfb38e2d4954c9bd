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
Verified with DuckDB 2.0 (see ``tests/test_guard.py``). With
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

Nothing is written: the connection is in memory, ``temp_directory`` is empty
(no spilling to disk; a query over the memory limit fails with DuckDB's
"Out of Memory" error instead), persistent secrets are off, and the typed
query can only be a ``SELECT``.

Left to the operator: hard links (they cannot be told from the files they
point to), files under the root that should not be shown, and a time limit
on queries (DuckDB has none; call ``connection.interrupt()`` from a timer).

>>> root = DataRoot("/srv/calibdash-data")                       # doctest: +SKIP
>>> con = root.connect(database="warehouse.duckdb")             # doctest: +SKIP
>>> rel = root.query(con, "SELECT score, label FROM source.main.preds")   # doctest: +SKIP
"""
from __future__ import annotations

import os
import re
from pathlib import Path

from ..errors import DataError, EnvironmentProblem, ProgrammingError, SettingsError

__all__ = ["ENV_VAR", "AccessDenied", "DataRoot", "data_root_from_env", "quote_identifier"]

#: The environment variable that turns large sources on: the directory they are read from.
ENV_VAR = "CALIBDASH_DATA_ROOT"
#: DuckDB's memory limit for queries typed in the page (DuckDB's own size syntax).
DEFAULT_MEMORY_LIMIT = "2GB"
#: DuckDB's worker threads for queries typed in the page.
DEFAULT_THREADS = 2
#: The alias of a DuckDB database file attached by :meth:`DataRoot.connect`.
DEFAULT_ALIAS = "source"

_MEMORY = re.compile(r"\d+(\.\d+)?\s*(B|KB|MB|GB|TB|KiB|MiB|GiB|TiB)", re.IGNORECASE)
_GLOB_CHARS = re.compile(r"[*?\[]")
_SHOWN = 120                     # longest user text echoed in a message


class AccessDenied(DataError):
    """A path, pattern or query reaches outside the data root, or would write, install or reconfigure.

    A :class:`calibdash.DataError`, so the dashboard shows it like any other
    problem with the data the user asked for. The message names what the
    user typed, never a path outside the data root.
    """


def _shown(text: str) -> str:
    """The user's text for a message: quoted, one line, at most ``_SHOWN`` characters."""
    text = " ".join(str(text).split())
    return repr(text if len(text) <= _SHOWN else text[:_SHOWN - 3] + "...")


def _text(value, what: str) -> str:
    if isinstance(value, os.PathLike):
        value = os.fspath(value)
    if isinstance(value, bytes):
        raise ProgrammingError(f"give the {what} as text, not bytes.")
    if not isinstance(value, str):
        raise ProgrammingError(f"give the {what} as text or a Path, not a {type(value).__name__}.")
    if not value.strip():
        raise DataError(f"no {what} given.")
    if "\x00" in value:
        raise AccessDenied(f"the {what} {_shown(value)} holds a NUL character.")
    return value.strip()


def _sql_string(text: str) -> str:
    """``text`` as a SQL string literal."""
    return "'" + text.replace("'", "''") + "'"


def quote_identifier(name: str) -> str:
    """``name`` as a double-quoted SQL identifier (quotes doubled), e.g. for a table the user picked.

    >>> print(quote_identifier('say "hi" now'))
    "say ""hi"" now"
    """
    name = _text(name, "name")
    return '"' + name.replace('"', '""') + '"'


class DataRoot:
    """The directory large sources are read from, and the only one.

    Parameters
    ----------
    root : str or Path
        An existing directory (``~`` is expanded; symbolic links in it are
        resolved once, here). Not the file-system root.
    memory_limit : str
        DuckDB's ``memory_limit`` for :meth:`connect` (e.g. ``"2GB"``).
    threads : int
        DuckDB's ``threads`` for :meth:`connect`.
    spill_directory : str or Path, optional
        A server-owned directory outside the root (created, mode 0700) where
        DuckDB may spill past ``memory_limit``, so large aggregations run out
        of core; default None: no spilling.

    Raises
    ------
    EnvironmentProblem
        ``root`` does not exist, is not a directory, or is ``/``.
    SettingsError
        ``memory_limit`` or ``threads`` is not valid.
    """

    def __init__(self, root, *, memory_limit: str = DEFAULT_MEMORY_LIMIT, threads: int = DEFAULT_THREADS,
                 spill_directory=None):
        given = _text(root, "data root")
        try:
            path = Path(given).expanduser().resolve(strict=True)
        except (OSError, RuntimeError):
            raise EnvironmentProblem(f"the data root {given} ({ENV_VAR}) does not exist or cannot be "
                                     "read; set it to the directory holding the large files.") from None
        if not path.is_dir():
            raise EnvironmentProblem(f"the data root {given} ({ENV_VAR}) is not a directory.")
        if path == Path(path.anchor):
            raise EnvironmentProblem(f"the data root ({ENV_VAR}) is the file-system root {path}; set it "
                                     "to the one directory holding the large files.")
        if not isinstance(memory_limit, str) or not _MEMORY.fullmatch(memory_limit.strip()):
            raise SettingsError(f"memory_limit {memory_limit!r} is not a size such as '2GB' or '512MB'.")
        if isinstance(threads, bool) or not isinstance(threads, int) or threads < 1:
            raise SettingsError(f"threads {threads!r} must be a whole number >= 1.")
        self._root = path
        self.memory_limit = memory_limit.strip()
        self.threads = threads
        self.spill_directory = None
        if spill_directory is not None:
            spill = Path(spill_directory).expanduser().resolve()
            if spill == path or spill.is_relative_to(path):
                raise EnvironmentProblem("the spill directory must lie outside the data root.")
            spill.mkdir(mode=0o700, parents=True, exist_ok=True)
            self.spill_directory = spill

    @property
    def root(self) -> Path:
        """The data root, absolute, symbolic links resolved."""
        return self._root

    def __repr__(self) -> str:
        return f"DataRoot({str(self._root)!r}, memory_limit={self.memory_limit!r}, threads={self.threads})"

    # -- paths --------------------------------------------------------------------------------------
    def _inside(self, real: Path) -> bool:
        return real == self._root or real.is_relative_to(self._root)

    def _relative(self, real: Path) -> str:
        return real.relative_to(self._root).as_posix() or "."

    def _refuse_outside(self, shown: str, lexical: Path) -> AccessDenied:
        """The refusal of a path whose resolved form is outside the root (the target is not named)."""
        if self._inside(Path(os.path.normpath(lexical))):
            return AccessDenied(f"{shown} goes through a symbolic link that leads outside the data root; "
                                "only files under the data root can be read.")
        return AccessDenied(f"{shown} is outside the data root; only files under the data root can be read "
                            "(give a path relative to it, without '..').")

    def resolve(self, user_path) -> Path:
        """The existing file or directory ``user_path`` names, if it is under the root.

        Parameters
        ----------
        user_path : str or Path
            Relative to the root, or absolute (then it must lie under the root).

        Returns
        -------
        Path
            Absolute, ``..`` and symbolic links resolved, under :attr:`root`.

        Raises
        ------
        AccessDenied
            The path leads outside the root (by ``..``, by being absolute
            elsewhere, or through a symbolic link), holds a NUL, or cannot be
            resolved (a link loop).
        DataError
            Nothing exists at that path under the root (said only for paths
            under the root, so the message is no probe of the rest of the
            file system).
        """
        text = _text(user_path, "path")
        shown = _shown(text)
        lexical = self._root / Path(text)          # an absolute path replaces the root
        try:
            real = lexical.resolve(strict=False)
        except (OSError, RuntimeError, ValueError):
            raise AccessDenied(f"{shown} cannot be resolved (a loop of symbolic links?).") from None
        if not self._inside(real):
            raise self._refuse_outside(shown, lexical)
        if not real.exists():
            raise DataError(f"there is no file {self._relative(real)!r} under the data root.")
        return real

    def resolve_glob(self, pattern) -> list[Path]:
        """The files under the root that ``pattern`` matches (``*``, ``?``, ``[...]``, ``**``).

        The part before the first wildcard must resolve under the root; the
        wildcard part may not hold ``..``; each match is resolved (symbolic
        links followed) and must lie under the root: one match that leads out
        refuses the whole pattern, as DuckDB does. A pattern without wildcards
        is :meth:`resolve`.

        Returns
        -------
        list of Path
            The matching files (not directories), resolved, in sorted order,
            each once.

        Raises
        ------
        AccessDenied
            As :meth:`resolve`, or a match leads outside the root.
        DataError
            No file matches.
        """
        text = _text(pattern, "pattern")
        shown = _shown(text)
        parts = Path(text).parts
        first = next((i for i, p in enumerate(parts) if _GLOB_CHARS.search(p)), None)
        if first is None:
            real = self.resolve(text)
            if not real.is_file():
                raise DataError(f"{shown} is a directory, not a file; add a pattern such as '*.parquet'.")
            return [real]
        rest = parts[first:]
        if ".." in rest:
            raise AccessDenied(f"{shown} has '..' after a wildcard; only files under the data root can be read.")
        lexical = self._root.joinpath(*parts[:first])  # an absolute pattern replaces the root
        try:
            base = lexical.resolve(strict=False)
        except (OSError, RuntimeError, ValueError):
            raise AccessDenied(f"{shown} cannot be resolved (a loop of symbolic links?).") from None
        if not self._inside(base):
            raise self._refuse_outside(shown, lexical)
        try:
            matches = [m for m in base.glob(str(Path(*rest))) if m.is_file()]
            reals = [m.resolve(strict=True) for m in matches]
        except (OSError, RuntimeError, ValueError):
            raise AccessDenied(f"{shown} cannot be resolved (a loop of symbolic links?).") from None
        outside = sum(not self._inside(r) for r in reals)
        if outside:
            raise AccessDenied(f"{outside} of the {len(reals)} files matching {shown} lead outside the data "
                               "root through symbolic links; only files under the data root can be read.")
        if not reals:
            raise DataError(f"no file under the data root matches {shown}.")
        return sorted(set(reals))

    # -- DuckDB -------------------------------------------------------------------------------------
    def connect(self, database=None, *, alias: str = DEFAULT_ALIAS):
        """An in-memory DuckDB connection locked down for queries typed in a web page.

        Settings, in this order: ``threads``, ``memory_limit``,
        ``temp_directory``: the server's own ``spill_directory`` (outside the
        root; DuckDB's buffer files only, which no query can name), or ``''``
        (nothing spilled to disk: a query over the memory limit fails),
        ``autoinstall_known_extensions`` and ``autoload_known_extensions``
        false, ``allow_community_extensions`` and ``allow_persistent_secrets``
        false, ``python_enable_replacements`` false (a query cannot name the
        Python variables of the server), ``allowed_directories = [root]``,
        ``enable_external_access = false``; then ``database`` is attached
        read-only; then ``lock_configuration = true``, after which no setting
        can change. See the module docstring for what DuckDB then refuses by
        itself. Paths inside queries must be absolute (DuckDB judges a
        relative path against the server's working directory, not the root).

        Parameters
        ----------
        database : str or Path, optional
            A DuckDB database file under the root (:meth:`resolve`), attached
            ``READ_ONLY`` as ``alias``.
        alias : str
            The attached database's name in queries (``source.main.table``).

        Returns
        -------
        duckdb.DuckDBPyConnection
            Close it when done. Run typed SQL through :meth:`query` (or
            :meth:`check_query` first): the connection alone still accepts
            ``COPY``/``EXPORT``/``ATTACH`` under the root.

        Raises
        ------
        AccessDenied, DataError
            ``database`` as :meth:`resolve`, or it is not a DuckDB database.
        """
        import duckdb                     # optional at import time: calibdash imports without DuckDB

        db_path = None
        if database is not None:
            db_path = self.resolve(database)
            if not db_path.is_file():
                raise DataError(f"{_shown(str(database))} is a directory, not a DuckDB database file.")
        con = duckdb.connect(":memory:")
        try:
            for name, value in (("threads", str(self.threads)),
                                ("memory_limit", _sql_string(self.memory_limit)),
                                ("temp_directory", _sql_string(str(self.spill_directory or ""))),
                                ("autoinstall_known_extensions", "false"),
                                ("autoload_known_extensions", "false"),
                                ("allow_community_extensions", "false"),
                                ("allow_persistent_secrets", "false"),
                                ("python_enable_replacements", "false"),
                                ("allowed_directories", f"[{_sql_string(str(self._root))}]"),
                                ("enable_external_access", "false")):
                con.execute(f"SET {name} = {value}")
            if db_path is not None:
                try:
                    con.execute(f"ATTACH {_sql_string(str(db_path))} AS {quote_identifier(alias)} (READ_ONLY)")
                except duckdb.Error as exc:
                    raise DataError(f"{_shown(str(database))} could not be opened as a DuckDB database "
                                    f"({type(exc).__name__}).") from None
            con.execute("SET lock_configuration = true")
        except BaseException:
            con.close()
            raise
        return con

    def check_query(self, sql: str) -> str:
        """``sql`` if it is exactly one ``SELECT`` statement (``WITH ... SELECT``, ``FROM ...``, ``VALUES``).

        Judged by DuckDB's parser (``duckdb.extract_statements`` and the
        statement type), so a ``;`` inside a string or a comment is no
        statement of its own and ``COPY``, ``EXPORT``, ``ATTACH``,
        ``INSTALL``, ``LOAD``, ``SET``, ``CREATE``, ``PRAGMA``, ``CALL``, ...
        are refused whatever their spelling.

        Returns
        -------
        str
            The statement's text as DuckDB split it (leading comments and a
            trailing ``;`` removed). To use it inside a larger query, prefer
            DuckDB's relational API on :meth:`query`'s relation; if text is
            composed, end it with a newline before the closing parenthesis (a
            trailing ``--`` comment) and check the composed text again.

        Raises
        ------
        AccessDenied
            Several statements, or one that is not a ``SELECT``.
        DataError
            The text is empty or does not parse.
        """
        import duckdb

        if not isinstance(sql, str):
            raise ProgrammingError(f"give the query as text, not a {type(sql).__name__}.")
        if not sql.strip():
            raise DataError("no query given.")
        try:
            statements = duckdb.extract_statements(sql)
        except duckdb.Error as exc:
            raise DataError(f"the query could not be parsed: {_first_line(exc)}") from None
        if not statements:
            raise DataError("no query given (only comments).")
        if len(statements) > 1:
            kinds = ", ".join(_kind(s) for s in statements)
            raise AccessDenied(f"the query holds {len(statements)} statements ({kinds}); only one SELECT "
                               "statement can be run here, without ';' between statements.")
        (stmt,) = statements
        if stmt.type != duckdb.StatementType.SELECT:
            raise AccessDenied(f"only a SELECT query can be run here (WITH ... SELECT, FROM ..., VALUES); "
                               f"this is a {_kind(stmt)} statement, which could write files, load "
                               "extensions or change settings.")
        return stmt.query.strip().rstrip(";").rstrip()

    def query(self, con, sql: str):
        """Check ``sql`` (:meth:`check_query`) and run it on ``con``: a lazy ``duckdb.DuckDBPyRelation``.

        DuckDB's refusals are turned into :class:`AccessDenied` (a file
        outside the root, a setting after the lock) without repeating the
        path DuckDB names; other DuckDB errors into :class:`DataError`.
        Errors found only while rows are fetched are DuckDB's own exceptions.
        """
        import duckdb

        checked = self.check_query(sql)
        try:
            return con.sql(checked)
        except duckdb.PermissionException:
            raise AccessDenied("the query reads a file outside the data root (or through a symbolic link "
                               "leading out of it), a URL, or an extension; only files under the data "
                               "root can be read, by absolute path.") from None
        except duckdb.Error as exc:
            raise DataError(f"the query failed: {_first_line(exc)}") from None


def _kind(stmt) -> str:
    return str(stmt.type.name if hasattr(stmt.type, "name") else stmt.type).upper()


def _first_line(exc: Exception) -> str:
    return (str(exc).strip().splitlines() or [type(exc).__name__])[0]


def data_root_from_env(value=None, *, environ=None, **kwargs) -> DataRoot | None:
    """The :class:`DataRoot` the operator configured, or None when large sources are off.

    Parameters
    ----------
    value : str or Path, optional
        The root given explicitly (the dashboard reads it from Streamlit's
        ``secrets.toml`` / config); wins over the environment when not empty.
    environ : mapping, optional
        Where to read ``CALIBDASH_DATA_ROOT`` (default ``os.environ``).
    **kwargs
        ``memory_limit``, ``threads``, ``spill_directory``: passed to :class:`DataRoot`.

    Returns
    -------
    DataRoot or None
        None when neither ``value`` nor ``CALIBDASH_DATA_ROOT`` is set (or
        both are empty): then no server-side source may be read.

    Raises
    ------
    EnvironmentProblem
        The configured directory does not exist, is not a directory, or is ``/``.
    """
    if value is not None and str(os.fspath(value)).strip():
        return DataRoot(value, **kwargs)
    env = os.environ if environ is None else environ
    configured = (env.get(ENV_VAR) or "").strip()
    return DataRoot(configured, **kwargs) if configured else None
