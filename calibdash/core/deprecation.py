"""Old import paths kept for users: a module-level ``__getattr__`` that forwards to the new home with a warning."""
from __future__ import annotations

import warnings
from types import ModuleType

__all__ = ["forwarding"]


def forwarding(old: str, *homes: ModuleType, names: frozenset[str] | None = None):
    """A ``__getattr__`` for the deprecated module ``old`` (PEP 562): a public name of the first of ``homes`` that
    has it (only ``names``, when given) is returned with a :class:`DeprecationWarning` naming its new home."""
    def __getattr__(name: str):
        if not name.startswith("_") and (names is None or name in names):
            for home in homes:
                if hasattr(home, name):
                    warnings.warn(f"{old}.{name} moved to {home.__name__}.{name}; the old path will be removed",
                                  DeprecationWarning, stacklevel=2)
                    return getattr(home, name)
        raise AttributeError(f"module {old!r} has no attribute {name!r}")
    return __getattr__
