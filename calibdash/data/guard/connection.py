"""The locked DuckDB connection of a :class:`DataRoot`, with its private spill directory, the check that a
typed query is one ``SELECT``, and the data root the operator configured (:func:`data_root_from_env`)."""
from __future__ import annotations

import os
import secrets
import shutil
import stat
import tempfile
import threading
import weakref
from pathlib import Path

from ...core.errors import DataError, EnvironmentProblem, ProgrammingError, SettingsError
from .refusals import AccessDenied, engine_error, safe_message, shown_text
from .paths import RootPaths, quote_identifier, sql_string
from .settings import (DEFAULT_ALIAS, DEFAULT_MEMORY_LIMIT, DEFAULT_SPILL_LIMIT, DEFAULT_THREADS, ENV_MEMORY_LIMIT,
                       ENV_SPILL_LIMIT, ENV_VAR, SIZE)

__all__ = []


class DataRoot(RootPaths):
    """The directory large sources are read from, and the only one.

    Parameters
    ----------
    root : str or Path
        An existing directory (``~`` expanded, symbolic links resolved once, here). Not the file-system root.
    memory_limit, threads : str, int
        DuckDB's ``memory_limit`` (e.g. ``"2GB"``) and ``threads`` for :meth:`connect`.
    spill_directory : str or Path, optional
        Where DuckDB may spill past ``memory_limit``: a directory outside the root (typically
        ``tempfile.gettempdir()``), owned by this user or root and, if others may write to it, with the sticky
        bit (as ``/tmp``). A private directory is made in it on the first :meth:`connect` by
        ``tempfile.mkdtemp`` (mode 0700, owner and mode checked) and removed with this object. None: no spilling.
    spill_limit : str
        Most temporary disk one connection may spill to (``max_temp_directory_size``, e.g. ``"10GB"``).

    Raises
    ------
    EnvironmentProblem
        ``root`` does not exist, is not a directory, or is ``/``; ``spill_directory`` lies under the root or is
        not safe to make a private directory in.
    SettingsError
        ``memory_limit``, ``spill_limit`` or ``threads`` is not valid.
    """

    def __init__(self, root, *, memory_limit: str = DEFAULT_MEMORY_LIMIT, threads: int = DEFAULT_THREADS,
                 spill_directory=None, spill_limit: str = DEFAULT_SPILL_LIMIT):
        super().__init__(root)
        path = self._root
        for name, value in (("memory_limit", memory_limit), ("spill_limit", spill_limit)):
            if not isinstance(value, str) or not SIZE.fullmatch(value.strip()):
                raise SettingsError(f"{name} {value!r} is not a size such as '2GB' or '512MB'.")
        if isinstance(threads, bool) or not isinstance(threads, int) or threads < 1:
            raise SettingsError(f"threads {threads!r} must be a whole number >= 1.")
        self.memory_limit = memory_limit.strip()
        self.spill_limit = spill_limit.strip()
        self.threads = threads
        self.spill_directory = None
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

    def connect(self, database=None, *, alias: str = DEFAULT_ALIAS):
        """An in-memory DuckDB connection locked down for queries typed in a web page.

        The settings (in the code's order) end with ``lock_configuration = true``, after ``database`` is attached
        read-only; the allowed directories are then checked to be the root and the connection's own spill
        directory only. Paths inside queries must be absolute (DuckDB judges a relative path against the server's
        working directory, not the root).

        Parameters
        ----------
        database : str or Path, optional
            A DuckDB database file under the root (:meth:`resolve`), attached ``READ_ONLY`` as ``alias``.
        alias : str
            The attached database's name in queries (``source.main.table``).

        Returns a ``duckdb.DuckDBPyConnection`` to close when done. Run typed SQL through :meth:`query` (or
        :meth:`check_query` first): the connection alone still accepts ``COPY``/``EXPORT``/``ATTACH`` under the
        root. Raises AccessDenied or DataError for ``database`` as :meth:`resolve`, or when it is not a DuckDB
        database.
        """
        import duckdb

        db_path = None
        if database is not None:
            db_path = self.resolve(database)
            if not db_path.is_file():
                raise DataError(f"{shown_text(str(database))} is a directory, not a DuckDB database file.")
        spill = self._spill_path()
        con = duckdb.connect(":memory:")
        try:
            for name, value in (("threads", str(self.threads)), ("memory_limit", sql_string(self.memory_limit)),
                                ("temp_directory", sql_string(str(spill or ""))),
                                ("max_temp_directory_size", sql_string(self.spill_limit)),
                                ("autoinstall_known_extensions", "false"), ("autoload_known_extensions", "false"),
                                ("allow_community_extensions", "false"), ("allow_persistent_secrets", "false"),
                                # a query cannot name the server's Python variables
                                ("python_enable_replacements", "false"),
                                # without printing, so that query_progress() answers
                                ("enable_progress_bar", "true"), ("enable_progress_bar_print", "false"),
                                ("TimeZone", "'UTC'"),   # zoned timestamps fall in UTC periods (keyed cells)
                                ("allowed_directories", f"[{sql_string(str(self._root))}]"),
                                ("enable_external_access", "false")):
                con.execute(f"SET {name} = {value}")
            if db_path is not None:
                try:
                    con.execute(f"ATTACH {sql_string(str(db_path))} AS {quote_identifier(alias)} (READ_ONLY)")
                except duckdb.Error as exc:
                    raise DataError(f"{shown_text(str(database))} could not be opened as a DuckDB database "
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

        Judged by DuckDB's parser (``duckdb.extract_statements`` and the statement type), so a ``;`` inside a
        string or a comment is no statement of its own and ``COPY``, ``EXPORT``, ``ATTACH``, ``INSTALL``,
        ``LOAD``, ``SET``, ``CREATE``, ``PRAGMA``, ``CALL``, ... are refused whatever their spelling.

        Returns the statement's text as DuckDB split it (leading comments and a trailing ``;`` removed). To use it
        inside a larger query, prefer DuckDB's relational API on :meth:`query`'s relation; if text is composed,
        end it with a newline before the closing parenthesis (a trailing ``--`` comment) and check it again.
        Several statements, or one that is not a ``SELECT``, are refused (AccessDenied); empty text or text that
        does not parse is a DataError.
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

        DuckDB's refusals become :class:`AccessDenied` without repeating the path DuckDB names; other errors as
        :func:`engine_error` says. Errors found only while rows are fetched are DuckDB's own exceptions: fetch
        inside ``try`` and pass them to :func:`engine_error` too.
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


def data_root_from_env(value=None, *, environ=None, given=None, **kwargs) -> DataRoot | None:
    """The :class:`DataRoot` the operator configured, or None when large sources are off.

    Parameters
    ----------
    value : str or Path, optional
        The root given explicitly (e.g. from Streamlit's ``secrets.toml``); wins over the environment when not empty.
    environ : mapping, optional
        Where to read ``CALIBDASH_DATA_ROOT``, ``CALIBDASH_MEMORY_LIMIT`` and ``CALIBDASH_SPILL_LIMIT``
        (default ``os.environ``).
    given : mapping, optional
        Values that win over the environment, keyed by the variables' names in lower case
        (``calibdash_spill_limit``), e.g. from Streamlit's secrets.
    **kwargs
        ``memory_limit``, ``threads``, ``spill_directory``, ``spill_limit``: passed to :class:`DataRoot` (and
        win over ``given`` and the environment).

    None when neither ``value`` nor ``CALIBDASH_DATA_ROOT`` is set (or both are empty): no server-side source.
    EnvironmentProblem when the configured directory does not exist, is not a directory, or is ``/``, or a limit
    is not a size (naming the variable).
    """
    env = os.environ if environ is None else environ
    given = given or {}
    for key, var in (("memory_limit", ENV_MEMORY_LIMIT), ("spill_limit", ENV_SPILL_LIMIT)):
        if kwargs.get(key) is not None:
            continue
        raw = given.get(var.lower())
        raw = raw if raw is not None and str(raw).strip() else env.get(var)
        if raw is not None and str(raw).strip():
            if not SIZE.fullmatch(str(raw).strip()):
                raise EnvironmentProblem(f"{var} is {str(raw)[:40]!r}; set it to a size such as '2GB' or '512MB'.")
            kwargs[key] = str(raw).strip()
    kwargs = {k: v for k, v in kwargs.items() if v is not None or k == "spill_directory"}
    if value is not None and str(os.fspath(value)).strip():
        return DataRoot(value, **kwargs)
    configured = (env.get(ENV_VAR) or "").strip()
    return DataRoot(configured, **kwargs) if configured else None
