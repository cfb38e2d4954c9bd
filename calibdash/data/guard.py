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
how many and how large the jobs may be (:mod:`calibdash.jobs`,
``CALIBDASH_SPILL_LIMIT``, ``CALIBDASH_MEMORY_LIMIT``; DuckDB has no time
limit of its own: :mod:`calibdash.jobs` stops a query with
``connection.interrupt()``).

>>> root = DataRoot("/srv/calibdash-data")                       # doctest: +SKIP
>>> con = root.connect(database="warehouse.duckdb")             # doctest: +SKIP
>>> rel = root.query(con, "SELECT score, label FROM source.main.preds")   # doctest: +SKIP
"""
from __future__ import annotations

import errno
import logging
import os
import re
import secrets
import shutil
import stat
import tempfile
import threading
import weakref
from pathlib import Path

from ..errors import CalibdashError, DataError, EnvironmentProblem, ProgrammingError, SettingsError

__all__ = ["ENV_VAR", "ENV_MEMORY_LIMIT", "ENV_SPILL_LIMIT", "AccessDenied", "DataRoot", "data_root_from_env",
           "engine_error", "quote_identifier", "safe_message"]

log = logging.getLogger("calibdash.data.guard")

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

_MEMORY = re.compile(r"\d+(\.\d+)?\s*(B|KB|MB|GB|TB|KiB|MiB|GiB|TiB)", re.IGNORECASE)
_GLOB_CHARS = re.compile(r"[*?\[]")
_SHOWN = 120                     # longest user text echoed in a message
_MESSAGE = 300                   # longest engine message shown
_SINGLE = re.compile(r"'(?:[^']|'')*(?:'|$)")
_DOUBLE = re.compile(r'"(?:[^"]|"")*(?:"|$)')
_PATH = re.compile(r"(?<![\w.)\]])(?:/[^\s/'\",;:()\[\]]+)+/?")


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
        Where DuckDB may spill past ``memory_limit``, so large aggregations
        run out of core: a directory outside the root (typically
        ``tempfile.gettempdir()``) in which a private directory is made
        fresh, on the first :meth:`connect`, by ``tempfile.mkdtemp`` (mode
        0700, its owner and mode checked), and removed with this object.
        The directory itself must be owned by this user or root and, if
        others may write to it, have the sticky bit (as ``/tmp`` has).
        Default None: no spilling.
    spill_limit : str
        Most temporary disk one connection may spill to (DuckDB's
        ``max_temp_directory_size``, e.g. ``"10GB"``).

    Raises
    ------
    EnvironmentProblem
        ``root`` does not exist, is not a directory, or is ``/``;
        ``spill_directory`` lies under the root or is not safe to make a
        private directory in.
    SettingsError
        ``memory_limit``, ``spill_limit`` or ``threads`` is not valid.
    """

    def __init__(self, root, *, memory_limit: str = DEFAULT_MEMORY_LIMIT, threads: int = DEFAULT_THREADS,
                 spill_directory=None, spill_limit: str = DEFAULT_SPILL_LIMIT):
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
        for name, value in (("memory_limit", memory_limit), ("spill_limit", spill_limit)):
            if not isinstance(value, str) or not _MEMORY.fullmatch(value.strip()):
                raise SettingsError(f"{name} {value!r} is not a size such as '2GB' or '512MB'.")
        if isinstance(threads, bool) or not isinstance(threads, int) or threads < 1:
            raise SettingsError(f"threads {threads!r} must be a whole number >= 1.")
        self._root = path
        self.memory_limit = memory_limit.strip()
        self.spill_limit = spill_limit.strip()
        self.threads = threads
        self.spill_directory = None          # where the private directory is made
        self._private = None                 # the private directory (made on first connect)
        self._private_lock = threading.Lock()
        if spill_directory is not None:
            base = Path(spill_directory).expanduser().resolve()
            if base == path or base.is_relative_to(path):
                raise EnvironmentProblem("the spill directory must lie outside the data root.")
            if not base.exists():
                base.mkdir(mode=0o700, parents=True)
            _check_spill_base(base)
            self.spill_directory = base

    @property
    def root(self) -> Path:
        """The data root, absolute, symbolic links resolved."""
        return self._root

    def __repr__(self) -> str:
        return (f"DataRoot({str(self._root)!r}, memory_limit={self.memory_limit!r}, threads={self.threads}, "
                f"spill_limit={self.spill_limit!r})")

    def _spill_path(self) -> Path | None:
        """A fresh path for one connection's spill files, inside the private directory (made on first use)."""
        if self.spill_directory is None:
            return None
        with self._private_lock:
            if self._private is None or not self._private.is_dir():
                private = Path(tempfile.mkdtemp(prefix="calibdash-spill-", dir=self.spill_directory))
                st = private.lstat()
                if (not stat.S_ISDIR(st.st_mode) or st.st_uid != os.geteuid()
                        or stat.S_IMODE(st.st_mode) != 0o700):
                    raise EnvironmentProblem("the private spill directory could not be made safely (owner or mode).")
                weakref.finalize(self, shutil.rmtree, str(private), True)
                self._private = private
        return self._private / f"c-{secrets.token_hex(8)}"   # DuckDB makes it when it spills, removes it on close

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
        try:
            exists = real.exists()
        except OSError as exc:
            raise _path_error(shown, exc) from None
        if not exists:
            raise DataError(f"there is no file {_shown(self._relative(real))} under the data root.")
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
            if not _is_file(real, shown):
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
        except OSError as exc:
            raise _path_error(shown, exc) from None
        except (RuntimeError, ValueError):
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
        ``temp_directory``: a fresh directory of this connection's own inside
        the private spill directory (see the module docstring), or ``''``
        (nothing spilled to disk: a query over the memory limit fails),
        ``max_temp_directory_size`` (``spill_limit``),
        ``autoinstall_known_extensions`` and ``autoload_known_extensions``
        false, ``allow_community_extensions`` and ``allow_persistent_secrets``
        false, ``python_enable_replacements`` false (a query cannot name the
        Python variables of the server), ``enable_progress_bar`` on without
        printing (so ``query_progress()`` answers), ``allowed_directories =
        [root]``, ``enable_external_access = false``; then ``database`` is
        attached read-only; then ``lock_configuration = true``, after which no
        setting can change. The allowed directories are then checked to be
        the root and the connection's own spill directory, and nothing else.
        See the module docstring for what DuckDB then refuses by itself.
        Paths inside queries must be absolute (DuckDB judges a relative path
        against the server's working directory, not the root).

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
        spill = self._spill_path()
        con = duckdb.connect(":memory:")
        try:
            for name, value in (("threads", str(self.threads)),
                                ("memory_limit", _sql_string(self.memory_limit)),
                                ("temp_directory", _sql_string(str(spill or ""))),
                                ("max_temp_directory_size", _sql_string(self.spill_limit)),
                                ("autoinstall_known_extensions", "false"),
                                ("autoload_known_extensions", "false"),
                                ("allow_community_extensions", "false"),
                                ("allow_persistent_secrets", "false"),
                                ("python_enable_replacements", "false"),
                                ("enable_progress_bar", "true"),
                                ("enable_progress_bar_print", "false"),
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
            allowed = {str(d).rstrip("/") for d in
                       con.execute("SELECT current_setting('allowed_directories')").fetchall()[0][0]}
            if not allowed <= {str(self._root), str(spill)}:
                raise EnvironmentProblem("this DuckDB allows reading more directories than the data root and the "
                                         "connection's own spill directory; large sources stay off.")
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
            raise DataError(f"the query could not be parsed: {safe_message(exc, self._root)}") from None
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
        path DuckDB names; other errors as :func:`engine_error` says.
        Errors found only while rows are fetched are DuckDB's own exceptions:
        fetch inside ``try`` and pass them to :func:`engine_error` too.
        """
        checked = self.check_query(sql)
        try:
            return con.sql(checked)
        except Exception as exc:  # noqa: BLE001 - every engine error becomes a short, typed message
            raise engine_error(exc, what="the query", root=self._root) from None


def _kind(stmt) -> str:
    return str(stmt.type.name if hasattr(stmt.type, "name") else stmt.type).upper()


def _check_spill_base(base: Path) -> None:
    """Refuse a directory where a private directory cannot be made safely (another user could replace it)."""
    try:
        st = base.lstat()
    except OSError:
        raise EnvironmentProblem("the spill directory cannot be read.") from None
    if not stat.S_ISDIR(st.st_mode):
        raise EnvironmentProblem("the spill directory is not a directory.")
    if st.st_uid not in (os.geteuid(), 0):
        raise EnvironmentProblem("the spill directory belongs to another user; choose one of the server's own.")
    if stat.S_IMODE(st.st_mode) & 0o022 and not st.st_mode & stat.S_ISVTX:
        raise EnvironmentProblem("others may write to the spill directory and it has no sticky bit; choose a "
                                 "directory only the server may write to, or one such as /tmp.")


def _is_file(path: Path, shown: str) -> bool:
    try:
        return path.is_file()
    except OSError as exc:
        raise _path_error(shown, exc) from None


def _path_error(shown: str, exc: OSError) -> CalibdashError:
    """A file-system error on a path the user gave, without the path's target or a traceback."""
    if exc.errno == errno.ENAMETOOLONG:
        return DataError(f"{shown} is too long a path for this file system.")
    if exc.errno == errno.ELOOP:
        return AccessDenied(f"{shown} cannot be resolved (a loop of symbolic links?).")
    if exc.errno in (errno.EACCES, errno.EPERM):
        return DataError(f"{shown} cannot be read: the server may not open it.")
    return DataError(f"{shown} cannot be read ({os.strerror(exc.errno) if exc.errno else type(exc).__name__}).")


def safe_message(exc, root=None, limit: int = _MESSAGE) -> str:
    """An engine's error text made fit for a web page: it never carries the data nor a path outside the root.

    The first line only (DuckDB's context lines and Python tracebacks go);
    every single-quoted text (a value) becomes ``'…'``; a double-quoted one
    (an identifier) stays when short and not a path, else ``"…"``; an
    absolute path is shown relative to ``root`` when under it, else as
    ``<path>``; at most ``limit`` characters, ending "(message cut)" when
    cut.

    >>> print(safe_message("Conversion Error: Could not convert string 'hunter2,1' to DOUBLE"))
    Conversion Error: Could not convert string '…' to DOUBLE
    >>> print(safe_message('Permission Error: Cannot access file "/srv/other/x.csv" - disabled'))
    Permission Error: Cannot access file "…" - disabled
    """
    text = str(exc) if not isinstance(exc, BaseException) or str(exc).strip() else type(exc).__name__
    first = (text.strip().splitlines() or [type(exc).__name__ if isinstance(exc, BaseException) else ""])[0]
    root_text = str(root).rstrip("/") + "/" if root is not None else None

    def path(p: str) -> str:
        if root_text and (p + "/").startswith(root_text) and ".." not in p.split("/"):
            return p[len(root_text):] or "."
        return "<path>"

    def double(m) -> str:
        inner = m.group(0)[1:-1] if m.group(0).endswith('"') and len(m.group(0)) > 1 else m.group(0)[1:]
        if inner.startswith("/") and root_text:
            shown = path(inner)
            return '"…"' if shown == "<path>" else f'"{shown}"'
        if len(inner) <= 64 and "/" not in inner and "\\" not in inner and inner.isprintable():
            return f'"{inner}"'
        return '"…"'

    first = _SINGLE.sub("'…'", first)
    first = _DOUBLE.sub(double, first)
    first = _PATH.sub(lambda m: path(m.group(0).rstrip("/")), first)
    first = " ".join(first.split())
    if len(first) > limit:
        first = first[:limit].rstrip() + " … (message cut)"
    return first or "no message"


def engine_error(exc: BaseException, *, what: str = "the source", root=None) -> CalibdashError:
    """The calibdash error to show for an error met while reading ``what`` (DuckDB's, the file system's, ...).

    Its message is ``what`` (the caller's words) and :func:`safe_message`
    of the error: never data, a traceback, or a path outside ``root``.

    ============================================  ===================================
    error                                         becomes
    ============================================  ===================================
    a calibdash error                             itself
    ``duckdb.PermissionException``                :class:`AccessDenied` (names no path)
    ``duckdb.OutOfMemoryException``               :class:`~calibdash.EnvironmentProblem`
                                                  (memory or spill limit, named)
    ``duckdb.IOException``, ``OSError``           :class:`~calibdash.EnvironmentProblem`, or
                                                  :class:`~calibdash.DataError` (a name too long)
    ``duckdb.InterruptException``                 :class:`~calibdash.EnvironmentProblem` ("interrupted")
    any other ``duckdb.Error`` or error           :class:`~calibdash.DataError` (an unexpected
                                                  kind is logged with its traceback)
    ============================================  ===================================
    """
    import sys

    if isinstance(exc, CalibdashError):
        return exc
    msg = safe_message(exc, root)
    duckdb = sys.modules.get("duckdb")
    if duckdb is not None and isinstance(exc, duckdb.Error):
        if isinstance(exc, duckdb.PermissionException):
            if root is not None:
                return AccessDenied(f"{what} reads a file outside the data root (or through a symbolic link "
                                    "leading out of it), a URL, or an extension; only files under the data "
                                    "root can be read, by absolute path.")
            return AccessDenied(f"{what} reads a file outside the directories this connection may read (or "
                                "through a symbolic link leading out of them), a URL, or an extension; only "
                                "files under the data root can be read.")
        if isinstance(exc, duckdb.OutOfMemoryException):
            if "max_temp_directory_size" in str(exc):
                return EnvironmentProblem(f"{what} needs more temporary disk than one job may spill to on this "
                                          f"server ({ENV_SPILL_LIMIT}); narrow the source or ask the operator.")
            return EnvironmentProblem(f"DuckDB ran out of memory reading {what} (its memory limit, "
                                      f"{ENV_MEMORY_LIMIT} on the dashboard's server): {msg}")
        if isinstance(exc, duckdb.InterruptException):
            return EnvironmentProblem(f"reading {what} was interrupted.")
        if isinstance(exc, duckdb.IOException):
            return EnvironmentProblem(f"DuckDB could not read {what}: {msg}")
        return DataError(f"DuckDB could not read {what}: {msg}")
    if isinstance(exc, OSError):
        return _path_error(what, exc) if exc.errno else EnvironmentProblem(f"{what} could not be read: {msg}")
    if isinstance(exc, MemoryError):
        return EnvironmentProblem(f"the server ran out of memory reading {what}.")
    log.warning("unexpected error while reading %s", what, exc_info=exc)
    return DataError(f"{what} could not be read ({type(exc).__name__}: {msg}).")


def data_root_from_env(value=None, *, environ=None, given=None, **kwargs) -> DataRoot | None:
    """The :class:`DataRoot` the operator configured, or None when large sources are off.

    Parameters
    ----------
    value : str or Path, optional
        The root given explicitly (the dashboard reads it from Streamlit's
        ``secrets.toml`` / config); wins over the environment when not empty.
    environ : mapping, optional
        Where to read ``CALIBDASH_DATA_ROOT``, ``CALIBDASH_MEMORY_LIMIT`` and
        ``CALIBDASH_SPILL_LIMIT`` (default ``os.environ``).
    given : mapping, optional
        Values that win over the environment, keyed by the variables' names
        in lower case (``calibdash_spill_limit``), e.g. from Streamlit's secrets.
    **kwargs
        ``memory_limit``, ``threads``, ``spill_directory``, ``spill_limit``:
        passed to :class:`DataRoot` (and win over ``given`` and the environment).

    Returns
    -------
    DataRoot or None
        None when neither ``value`` nor ``CALIBDASH_DATA_ROOT`` is set (or
        both are empty): then no server-side source may be read.

    Raises
    ------
    EnvironmentProblem
        The configured directory does not exist, is not a directory, or is
        ``/``; a limit that is not a size (naming the variable).
    """
    env = os.environ if environ is None else environ
    given = given or {}
    for key, var in (("memory_limit", ENV_MEMORY_LIMIT), ("spill_limit", ENV_SPILL_LIMIT)):
        if kwargs.get(key) is not None:
            continue
        raw = given.get(var.lower())
        raw = raw if raw is not None and str(raw).strip() else env.get(var)
        if raw is not None and str(raw).strip():
            if not _MEMORY.fullmatch(str(raw).strip()):
                raise EnvironmentProblem(f"{var} is {str(raw)[:40]!r}; set it to a size such as '2GB' or '512MB'.")
            kwargs[key] = str(raw).strip()
    kwargs = {k: v for k, v in kwargs.items() if v is not None or k == "spill_directory"}
    if value is not None and str(os.fspath(value)).strip():
        return DataRoot(value, **kwargs)
    configured = (env.get(ENV_VAR) or "").strip()
    return DataRoot(configured, **kwargs) if configured else None
