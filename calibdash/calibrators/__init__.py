"""The binary calibrators and their registry, built by scanning the package: adding a method is adding its module
(a :class:`~calibdash.calibrators.base.Calibrator` subclass with a registry ``name``); no list here names the methods.

>>> calibrators.get("platt").fit(scores, labels).predict(scores)     # doctest: +SKIP
"""
from __future__ import annotations

from ..core.errors import SettingsError
from ..core.scan import scan
from .base import Calibrator, HyperParam

__all__ = ["Calibrator", "HyperParam", "get", "available", "classes", "get_class"]

_REGISTRY: dict[str, type[Calibrator]] | None = None


def classes() -> dict[str, type[Calibrator]]:
    """Registry name -> calibrator class, in display order (the K-class family, ``multiclass``, has its own)."""
    global _REGISTRY
    if _REGISTRY is None:
        _REGISTRY = scan(__path__, __name__, Calibrator, skip=("base", "multiclass"))
    return dict(_REGISTRY)


def available() -> list[str]:
    """Names accepted by :func:`get`, in display order."""
    return list(classes())


def get_class(name: str) -> type[Calibrator]:
    """The calibrator class registered under ``name``."""
    reg = classes()
    if name not in reg:
        raise SettingsError(f"unknown calibrator {name!r}; available: {', '.join(reg)}.")
    return reg[name]


def get(name: str, **params) -> Calibrator:
    """A new, unfitted calibrator ``name`` with hyperparameters ``params``.

    Raises
    ------
    SettingsError
        If ``name`` is not registered or a parameter is unknown.
    """
    cls = get_class(name)
    known = {h.name for h in cls.hyperparams} | set(cls().get_params())
    unknown = set(params) - known
    if unknown:
        raise SettingsError(f"{name} has no hyperparameter {sorted(unknown)}; it takes {sorted(known)}.")
    return cls(**params)
