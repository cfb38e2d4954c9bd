"""The registries' scan: the classes a package's modules define, so that a method is registered by adding its
module (no list names the methods)."""
from __future__ import annotations

import importlib
import pkgutil

from .errors import ProgrammingError

__all__ = ["scan", "Declarations"]


def scan(path, package: str, base: type, skip: tuple = ()) -> dict[str, type]:
    """``name`` -> class, for every subclass of ``base`` with a non-empty ``name`` defined in a module of the
    package at ``path`` (``__path__``) named ``package``; modules whose name starts with ``_`` or is in ``skip``
    are not read. Sorted by the classes' declared ``order`` (ascending, those without one after), then name."""
    found: dict[str, type] = {}
    for info in pkgutil.iter_modules(path):
        if info.name.startswith("_") or info.name in skip:
            continue
        module = importlib.import_module(f"{package}.{info.name}")
        for obj in vars(module).values():
            if isinstance(obj, type) and issubclass(obj, base) and obj.name and obj.__module__ == module.__name__:
                found[obj.name] = obj
    rank = lambda kv: (kv[1].order is None, 0.0 if kv[1].order is None else float(kv[1].order), kv[0])
    return dict(sorted(found.items(), key=rank))


class Declarations:
    """Class -> function, as the modules of one package declare them with :meth:`declare` (a decorator); read by
    importing every module of the package once."""

    def __init__(self, package: str, verb: str):
        self.package, self.verb, self._found, self._read = package, verb, {}, False

    def declare(self, *classes: type):
        """Decorator: the function is the one for ``classes`` (and their subclasses that declare none)."""
        def mark(fn):
            for cls in classes:
                if self._found.get(cls, fn) is not fn:
                    raise ProgrammingError(f"{cls.__name__} is {self.verb} twice: by {self._found[cls].__module__} "
                                           f"and {fn.__module__}.")
                self._found[cls] = fn
            return fn
        return mark

    def found(self) -> dict:
        """Class -> function, every module of the package read."""
        if not self._read:
            for info in pkgutil.iter_modules(importlib.import_module(self.package).__path__):
                importlib.import_module(f"{self.package}.{info.name}")
            self._read = True
        return dict(self._found)

    def along(self, cls: type) -> list:
        """The functions declared for ``cls`` and its bases, nearest first."""
        found = self.found()
        return [found[c] for c in cls.__mro__ if c in found]
