"""Paths under the data root: :class:`RootPaths` resolves a path or a glob only when, after ``..`` and every
symbolic link are resolved, it lies under the root."""
from __future__ import annotations

import os
import re
from pathlib import Path

from ...core.errors import DataError, EnvironmentProblem, ProgrammingError
from .refusals import AccessDenied, path_error, shown_text
from .settings import ENV_VAR

__all__ = []

_GLOB_CHARS = re.compile(r"[*?\[]")


def user_text(value, what: str) -> str:
    if isinstance(value, os.PathLike):
        value = os.fspath(value)
    if isinstance(value, bytes):
        raise ProgrammingError(f"give the {what} as text, not bytes.")
    if not isinstance(value, str):
        raise ProgrammingError(f"give the {what} as text or a Path, not a {type(value).__name__}.")
    if not value.strip():
        raise DataError(f"no {what} given.")
    if "\x00" in value:
        raise AccessDenied(f"the {what} {shown_text(value)} holds a NUL character.")
    return value.strip()


def sql_string(text: str) -> str:
    """``text`` as a SQL string literal."""
    return "'" + text.replace("'", "''") + "'"


def quote_identifier(name: str) -> str:
    """``name`` as a double-quoted SQL identifier (quotes doubled), e.g. for a table the user picked.

    >>> print(quote_identifier('say "hi" now'))
    "say ""hi"" now"
    """
    name = user_text(name, "name")
    return '"' + name.replace('"', '""') + '"'


class RootPaths:
    """The data root and the paths under it: the path half of :class:`~calibdash.data.guard.DataRoot`
    (``root`` and its refusals as there)."""

    def __init__(self, root):
        given = user_text(root, "data root")
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
        self._root = path

    @property
    def root(self) -> Path:
        """The data root, absolute, symbolic links resolved."""
        return self._root

    def _inside(self, real: Path) -> bool:
        return real == self._root or real.is_relative_to(self._root)

    def _relative(self, real: Path) -> str:
        return real.relative_to(self._root).as_posix() or "."

    def _under_root(self, shown: str, lexical: Path) -> Path:
        """``lexical`` resolved (links followed), refused (AccessDenied, the target not named) outside the root."""
        try:
            real = lexical.resolve(strict=False)
        except (OSError, RuntimeError, ValueError):
            raise AccessDenied(f"{shown} cannot be resolved (a loop of symbolic links?).") from None
        if self._inside(real):
            return real
        if self._inside(Path(os.path.normpath(lexical))):
            raise AccessDenied(f"{shown} goes through a symbolic link that leads outside the data root; "
                               "only files under the data root can be read.")
        raise AccessDenied(f"{shown} is outside the data root; only files under the data root can be read "
                           "(give a path relative to it, without '..').")

    def resolve(self, user_path) -> Path:
        """The existing file or directory ``user_path`` (relative to the root, or absolute under it) names, absolute,
        ``..`` and symbolic links resolved.

        Raises
        ------
        AccessDenied
            The path leads outside the root (by ``..``, by being absolute elsewhere, or through a symbolic
            link), holds a NUL, or cannot be resolved (a link loop).
        DataError
            Nothing exists at that path under the root (said only for paths under the root, so the message is
            no probe of the rest of the file system).
        """
        text = user_text(user_path, "path")
        shown = shown_text(text)
        real = self._under_root(shown, self._root / Path(text))   # an absolute path replaces the root
        try:
            exists = real.exists()
        except OSError as exc:
            raise path_error(shown, exc) from None
        if not exists:
            raise DataError(f"there is no file {shown_text(self._relative(real))} under the data root.")
        return real

    def resolve_glob(self, pattern) -> list[Path]:
        """The files under the root that ``pattern`` matches (``*``, ``?``, ``[...]``, ``**``), resolved, sorted, once.

        The part before the first wildcard must resolve under the root; the wildcard part may not hold ``..``; each
        match is resolved (links followed) and must lie under the root: one match that leads out refuses the whole
        pattern (AccessDenied), as DuckDB does. No match is a DataError. A pattern without wildcards is :meth:`resolve`.
        """
        text = user_text(pattern, "pattern")
        shown = shown_text(text)
        parts = Path(text).parts
        first = next((i for i, p in enumerate(parts) if _GLOB_CHARS.search(p)), None)
        if first is None:
            real = self.resolve(text)
            try:
                is_file = real.is_file()
            except OSError as exc:
                raise path_error(shown, exc) from None
            if not is_file:
                raise DataError(f"{shown} is a directory, not a file; add a pattern such as '*.parquet'.")
            return [real]
        rest = parts[first:]
        if ".." in rest:
            raise AccessDenied(f"{shown} has '..' after a wildcard; only files under the data root can be read.")
        base = self._under_root(shown, self._root.joinpath(*parts[:first]))   # an absolute pattern replaces the root
        try:
            matches = [m for m in base.glob(str(Path(*rest))) if m.is_file()]
            reals = [m.resolve(strict=True) for m in matches]
        except OSError as exc:
            raise path_error(shown, exc) from None
        except (RuntimeError, ValueError):
            raise AccessDenied(f"{shown} cannot be resolved (a loop of symbolic links?).") from None
        outside = sum(not self._inside(r) for r in reals)
        if outside:
            raise AccessDenied(f"{outside} of the {len(reals)} files matching {shown} lead outside the data "
                               "root through symbolic links; only files under the data root can be read.")
        if not reals:
            raise DataError(f"no file under the data root matches {shown}.")
        return sorted(set(reals))
