"""One scan for the registries of methods: the classes a package's modules define, found by walking the package.

:mod:`calibdash.calibrators` and :mod:`calibdash.multiclass` both build their registries this way, so a method is
registered by adding its module; no list names the methods.
"""
from __future__ import annotations

import importlib
import pkgutil

__all__ = ["scan"]


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
