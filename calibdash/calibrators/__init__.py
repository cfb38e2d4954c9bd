"""The calibrators: two families under one registry, built by scanning, so adding a method is adding its module.

``"binary"``: a :class:`~calibdash.calibrators.base.Calibrator` subclass with a registry ``name`` in ``calibrators/``.
``"classes"`` (K classes): a :class:`~calibdash.calibrators.multiclass.base.MulticlassCalibrator` subclass in
``calibrators/multiclass/methods/``; its composites (:func:`composites`) are the bridge, ``"ovr:<binary>"`` and
``"top_label:<binary>"`` for every binary calibrator that reads no features. A name may be in both families
(``"temperature"``): every function takes the ``family``, ``"binary"`` unless given (a model file's ``kind``).

>>> calibrators.get("platt").fit(scores, labels).predict(scores)                      # doctest: +SKIP
>>> calibrators.get("ovr:isotonic", "classes").fit(P, y).predict_proba(P)             # doctest: +SKIP
"""
from __future__ import annotations

from ..core.errors import SettingsError
from ..core.scan import scan
from .base import Calibrator, HyperParam, check_params

__all__ = ["Calibrator", "HyperParam", "FAMILIES", "get", "available", "classes", "get_class", "composites"]

#: The registry's families: binary calibrators (a score) and K-class ones (a row of K probabilities or logits).
FAMILIES = ("binary", "classes")

_FOUND: dict[str, dict[str, type]] = {}


def classes(family: str = "binary") -> dict[str, type]:
    """Registry name -> class of ``family`` (one of :data:`FAMILIES`, else SettingsError), in display order; both
    families are scanned once, at the first call."""
    if family not in FAMILIES:
        raise SettingsError(f"unknown calibrator family {family!r}; it is one of {', '.join(FAMILIES)}.")
    if not _FOUND:
        from .multiclass import MulticlassCalibrator, methods
        _FOUND.update(binary=scan(__path__, __name__, Calibrator, skip=("base", "multiclass")),
                      classes=scan(methods.__path__, methods.__name__, MulticlassCalibrator))
    return dict(_FOUND[family])


def composites() -> tuple[str, ...]:
    """The K-class names that take a binary method after a colon (``ovr`` in ``ovr:isotonic``): their classes
    declare ``composite``."""
    return tuple(name for name, cls in classes("classes").items() if cls.composite)


def available(family: str = "binary", expand: bool = True) -> list[str]:
    """Names :func:`get` accepts for ``family``, in display order.

    Parameters
    ----------
    family : {"binary", "classes"}, default "binary"
    expand : bool, default True
        For ``"classes"``: each composite once per binary calibrator that reads no features (``ovr:isotonic``,
        ``top_label:bbq``, ...) in place of its bare prefix (``ovr``).
    """
    bridge = composites() if expand and family == "classes" else ()
    out = []
    for name in classes(family):
        if name in bridge:
            out += [f"{name}:{b}" for b, cls in classes().items() if not cls.uses_features]
        else:
            out.append(name)
    return out


def get_class(name: str, family: str = "binary") -> type:
    """The class registered under ``name`` in ``family`` (a composite's for ``"ovr:isotonic"``); SettingsError if
    there is none."""
    reg = classes(family)
    key = name.split(":", 1)[0] if family == "classes" else name
    if key in reg:
        return reg[key]
    if family == "binary":
        raise SettingsError(f"unknown calibrator {name!r}; available: {', '.join(reg)}.")
    bridge = composites()
    raise SettingsError(f"unknown multi-class method {name!r}; available: {', '.join(reg)} ({' and '.join(bridge)} "
                        f"take a binary method after a colon: {bridge[0]}:isotonic).")


def get(name: str, family: str = "binary", **params):
    """A new, unfitted calibrator.

    Parameters
    ----------
    name : str
        A name of :func:`available` (a composite's hyperparameters are its binary method's and its own).
    family : {"binary", "classes"}, default "binary"
    **params
        Hyperparameters.

    Raises
    ------
    SettingsError
        For an unknown name or hyperparameter, a composite without its binary method, another method with one.
    """
    cls = get_class(name, family)
    prefix, _, binary = name.partition(":")
    if family == "classes" and prefix in composites():
        if not binary:
            raise SettingsError(f"{prefix} takes a binary method after a colon, e.g. {prefix}:isotonic.")
        return cls.make(binary.strip(), **params)
    if binary:
        raise SettingsError(f"{prefix} takes no binary method; {' and '.join(composites())} do.")
    check_params(name, params, cls)
    return cls(**params)
