"""The errors of large sources: :class:`AccessDenied`, and every engine or file-system error turned into a
calibdash error whose message (:func:`safe_message`) never carries the data, a traceback, or a path outside the
data root (:func:`engine_error`)."""
from __future__ import annotations

import errno
import logging
import os
import re

from ...core.errors import CalibdashError, DataError, EnvironmentProblem
from .settings import ENV_MEMORY_LIMIT, ENV_SPILL_LIMIT

__all__ = []

log = logging.getLogger("calibdash.data.guard")

_SHOWN = 120                     # longest user text echoed in a message
_MESSAGE = 300                   # longest engine message shown
_SINGLE = re.compile(r"'(?:[^']|'')*(?:'|$)")
_DOUBLE = re.compile(r'"(?:[^"]|"")*(?:"|$)')
_PATH = re.compile(r"(?<![\w.)\]])(?:/[^\s/'\",;:()\[\]]+)+/?")


class AccessDenied(DataError):
    """A path, pattern or query reaches outside the data root, or would write, install or reconfigure.

    A :class:`calibdash.DataError`, shown like any other problem with the data; the message names what the user
    typed, never a path outside the data root.
    """


def shown_text(text: str) -> str:
    """The user's text for a message: quoted, one line, at most ``_SHOWN`` characters."""
    text = " ".join(str(text).split())
    return repr(text if len(text) <= _SHOWN else text[:_SHOWN - 3] + "...")


def path_error(shown: str, exc: OSError) -> CalibdashError:
    """A file-system error on a path the user gave, without the path's target or a traceback."""
    if exc.errno == errno.ENAMETOOLONG:
        return DataError(f"{shown} is too long a path for this file system.")
    if exc.errno == errno.ELOOP:
        return AccessDenied(f"{shown} cannot be resolved (a loop of symbolic links?).")
    if exc.errno in (errno.EACCES, errno.EPERM):
        return DataError(f"{shown} cannot be read: the server may not open it.")
    return DataError(f"{shown} cannot be read ({os.strerror(exc.errno) if exc.errno else type(exc).__name__}).")


#: ``Kind Error: detail``: the kind DuckDB puts first (the class's, never text from a query or the data).
_KIND = re.compile(r"([A-Z][A-Za-z]*(?: [A-Za-z]+){0,3} Error): ?(.*)")
#: Kinds whose detail DuckDB writes while binding a query, before any row is read: names from the
#: query and the schema, never a value; their identifiers are shown.
_SCHEMA_KINDS = ("Binder Error", "Parser Error", "Catalog Error", "Permission Error", "IO Error")
#: The kind of DuckDB's ``error(text)``, whose detail is any text a query made (a file's rows, a setting):
#: only these templates of DuckDB's own are recognised; each is shown with its slots emptied.
_INPUT_TEMPLATES = [(re.compile(p), shown) for p, shown in [
    (r"Could not parse string .* according to format specifier .*",
     "could not parse a string by its format specifier"),
    (r"Error when sniffing file .*", "could not detect the CSV file's dialect"),
    (r"Malformed JSON\b.*", "malformed JSON"),
    (r"CSV Error on Line.*", "a CSV line does not fit the columns"),
]]
_NUMBER = re.compile(r"(?<![\w.])[-+]?\d+(?:\.\d+)?(?:[eE][-+]?\d+)?(?![\w.])")
_DUCKDB_KINDS = {"InvalidInputException": "Invalid Input Error", "ConversionException": "Conversion Error",
                 "OutOfRangeException": "Out of Range Error", "BinderException": "Binder Error",
                 "ParserException": "Parser Error", "CatalogException": "Catalog Error",
                 "PermissionException": "Permission Error", "IOException": "IO Error"}


def safe_message(exc, root=None, limit: int = _MESSAGE) -> str:
    """An engine's error text made fit for a web page: it never carries the data nor a path outside the root.

    The first line only (no context lines, no traceback). What else stays depends on the kind DuckDB puts first
    (for a DuckDB exception, its class): for errors met while binding a query (Binder, Parser, Catalog,
    Permission, IO) and texts of no kind, single-quoted values become ``'…'`` and double-quoted identifiers stay
    when short and not a path; ``Invalid Input Error`` (DuckDB's ``error(text)``, which can carry any text a query
    made: a file's rows through ``string_agg``) shows only the kind, or one of DuckDB's own templates with its
    slots left out; any other kind, raised while rows are read, loses everything from the first quote to the last
    (a value holding quotes cannot step out) and every number. Then an absolute path is shown relative to ``root``
    when under it, else as ``<path>``; at most ``limit`` characters, ending "(message cut)" when cut.

    >>> print(safe_message("Conversion Error: Could not convert string 'hunter2,1' to DOUBLE"))
    Conversion Error: Could not convert string '…' to DOUBLE
    >>> print(safe_message('Conversion Error: date field value out of range: "2024-13-45" when casting from '
    ...                    'source column segment'))
    Conversion Error: date field value out of range: '…' when casting from source column segment
    >>> print(safe_message("Invalid Input Error: alice:hunter2,bob:pw"))
    Invalid Input Error (its text is not shown: it may hold the data)
    >>> print(safe_message('Permission Error: Cannot access file "/srv/other/x.csv" - disabled'))
    Permission Error: Cannot access file "…" - disabled
    """
    text = str(exc) if not isinstance(exc, BaseException) or str(exc).strip() else type(exc).__name__
    first = (text.strip().splitlines() or [type(exc).__name__ if isinstance(exc, BaseException) else ""])[0]
    root_text = str(root).rstrip("/") + "/" if root is not None else None
    m = _KIND.fullmatch(first.strip())
    kind, detail = (m.group(1), m.group(2)) if m else (None, first)
    kind = _DUCKDB_KINDS.get(type(exc).__name__, kind) if isinstance(exc, BaseException) else kind

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

    if kind == "Invalid Input Error":
        said = next((shown for p, shown in _INPUT_TEMPLATES if p.fullmatch(detail.strip())), None)
        first = f"{kind}: {said}" if said else f"{kind} (its text is not shown: it may hold the data)"
    elif kind is None or kind in _SCHEMA_KINDS:
        detail = _SINGLE.sub("'…'", detail)
        detail = _DOUBLE.sub(double, detail)
        first = f"{kind}: {detail}" if kind else detail
    else:
        quotes = [i for i, c in enumerate(detail) if c in "'\"`"]
        if quotes:
            detail = detail[:quotes[0]] + "'…'" + (detail[quotes[-1] + 1:] if len(quotes) > 1 else "")
        first = f"{kind}: {_NUMBER.sub('…', detail)}"
    first = _PATH.sub(lambda m: path(m.group(0).rstrip("/")), first)
    first = " ".join(first.split())
    if len(first) > limit:
        first = first[:limit].rstrip() + " … (message cut)"
    return first or "no message"


def engine_error(exc: BaseException, *, what: str = "the source", root=None) -> CalibdashError:
    """The calibdash error to show for an error met while reading ``what`` (DuckDB's, the file system's, ...).

    Its message is ``what`` (the caller's words) and :func:`safe_message` of the error. A calibdash error stays
    itself; a DuckDB permission error becomes :class:`AccessDenied` (naming no path); running out of memory or
    spill, an interruption or an I/O error an :class:`~calibdash.EnvironmentProblem`; anything else a
    :class:`~calibdash.DataError` (an unexpected kind is logged with its traceback).
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
        return path_error(what, exc) if exc.errno else EnvironmentProblem(f"{what} could not be read: {msg}")
    if isinstance(exc, MemoryError):
        return EnvironmentProblem(f"the server ran out of memory reading {what}.")
    log.warning("unexpected error while reading %s", what, exc_info=exc)
    return DataError(f"{what} could not be read ({type(exc).__name__}: {msg}).")
