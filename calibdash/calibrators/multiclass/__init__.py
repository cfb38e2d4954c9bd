"""Multi-class calibration: calibrators of K-class probabilities or logits.

Methods are found by scanning :mod:`calibdash.calibrators.multiclass.methods` (one module per method), so adding
one is adding its module. Two names are composite and reuse every binary calibrator: ``"ovr:<binary>"``
(one-vs-rest) and ``"top_label:<binary>"``.
"""
from __future__ import annotations

from ...core.errors import SettingsError
from ...core.scan import scan
from .base import MulticlassCalibrator, Scores

__all__ = ["MulticlassCalibrator", "Scores", "get", "get_class", "available", "classes", "COMPOSITES"]

#: Composite prefixes: ``prefix:<binary method>``, each a class named for the prefix, taking ``binary``.
COMPOSITES = ("ovr", "top_label")

_REGISTRY: dict[str, type[MulticlassCalibrator]] | None = None


def classes() -> dict[str, type[MulticlassCalibrator]]:
    """Registry name -> class, in display order (the composites under their prefix)."""
    global _REGISTRY
    if _REGISTRY is None:
        from . import methods
        _REGISTRY = scan(methods.__path__, methods.__name__, MulticlassCalibrator)
    return dict(_REGISTRY)


def available(binary: bool = True) -> list[str]:
    """Names :func:`get` accepts, in display order; with ``binary``, each composite once per binary
    calibrator (``ovr:isotonic``, ``top_label:bbq``, ...) in place of its bare prefix."""
    from ... import calibrators
    out = []
    for name in classes():
        if name in COMPOSITES:
            if binary:
                out += [f"{name}:{b}" for b in calibrators.available()
                        if not calibrators.get_class(b).uses_features]
        else:
            out.append(name)
    return out


def get_class(name: str) -> type[MulticlassCalibrator]:
    """The class registered under ``name`` (a composite's prefix for ``"ovr:isotonic"``)."""
    prefix = name.split(":", 1)[0]
    reg = classes()
    if prefix not in reg:
        raise SettingsError(f"unknown multi-class method {name!r}; available: "
                            f"{', '.join(available(binary=False))} (ovr and top_label take a binary method "
                            "after a colon: ovr:isotonic).")
    return reg[prefix]


def get(name: str, **params) -> MulticlassCalibrator:
    """A new, unfitted multi-class calibrator ``name`` with hyperparameters ``params`` (for a composite, the
    binary method's and its own); :class:`SettingsError` for an unknown name or parameter, or a composite
    without its binary method."""
    cls = get_class(name)
    prefix, _, binary = name.partition(":")
    if prefix in COMPOSITES:
        if not binary:
            raise SettingsError(f"{prefix} takes a binary method after a colon, e.g. {prefix}:isotonic.")
        return cls.make(binary.strip(), **params)
    if binary:
        raise SettingsError(f"{prefix} takes no binary method; ovr and top_label do.")
    known = {h.name for h in cls.hyperparams} | set(cls().get_params())
    unknown = set(params) - known
    if unknown:
        raise SettingsError(f"{name} has no hyperparameter {sorted(unknown)}; it takes {sorted(known)}.")
    return cls(**params)
