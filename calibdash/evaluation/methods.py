"""One parser for method specs, so "methods" means the same in the API, the command line and the pages.

A spec is a registry name (``"bbq"``), a comma-separated list (``"platt, bbq"``), a list of names and/or calibrators,
or a mapping key -> ``{hyperparameters}`` (the method the key names), ``{"method": name, ...}``, a registry name or an
unfitted calibrator. :func:`resolve` maps each key to a new unfitted calibrator (the objects passed are never fitted);
``params`` (key -> {name: value}, what ``--param KEY.NAME=VALUE`` parses to) are set on top.
"""
from __future__ import annotations

import json
from typing import Mapping, Sequence

from sklearn.base import clone

from .. import calibrators
from ..calibrators.base import Calibrator
from ..core.errors import SettingsError

__all__ = ["split_names", "parse_params", "resolve", "RAW", "DEFAULT_METHODS"]

#: The key reserved for the uncalibrated scores in every table.
RAW = "uncalibrated"
#: What ``evaluate`` and ``report`` fit unless told otherwise: the three classic calibrators.
DEFAULT_METHODS = ("platt", "histogram", "isotonic")


def split_names(text: str) -> list[str]:
    """``"platt, bbq,,abb "`` -> ``["platt", "bbq", "abb"]`` (empty items dropped)."""
    return [part.strip() for part in str(text).split(",") if part.strip()]


def parse_params(items: Sequence[str] | None) -> dict[str, dict]:
    """``["bbq.c=5", "histogram.n_bins=20"]`` -> ``{"bbq": {"c": 5}, "histogram": {"n_bins": 20}}``; values read as
    JSON where they can be, else kept as text. SettingsError when an item is not ``KEY.NAME=VALUE``."""
    out: dict[str, dict] = {}
    for item in items or []:
        try:
            lhs, value = str(item).split("=", 1)
            key, name = lhs.split(".", 1)
            if not key.strip() or not name.strip():
                raise ValueError(item)
        except ValueError:
            raise SettingsError(f"a hyperparameter is given as METHOD.NAME=VALUE, got {item!r}.") from None
        try:
            parsed = json.loads(value)
        except json.JSONDecodeError:
            parsed = value
        out.setdefault(key.strip(), {})[name.strip()] = parsed
    return out


def _one(key: str, value) -> Calibrator:
    if isinstance(value, Calibrator):
        return clone(value)
    if value is None:
        return calibrators.get(key)
    if isinstance(value, str):
        return calibrators.get(value.strip())
    if isinstance(value, Mapping):
        params = dict(value)
        name = params.pop("method", key)
        return calibrators.get(str(name), **params)
    raise SettingsError(f"method {key!r} is given as a {type(value).__name__}; give a registry name, "
                        "a dict of hyperparameters or an unfitted calibrator.")


def resolve(methods, params: Mapping[str, Mapping] | None = None) -> dict[str, Calibrator]:
    """Key -> new unfitted calibrator, for any method spec (see the module docstring), ``params`` (key ->
    {hyperparameter: value}, every key one of the resolved keys) set on top. SettingsError for an unknown method or
    hyperparameter, a repeated key, the reserved key ``"uncalibrated"``, or a ``params`` key naming no chosen method.
    """
    if isinstance(methods, str):
        methods = split_names(methods)
    elif isinstance(methods, Calibrator):
        methods = [methods]
    if isinstance(methods, Mapping):
        items = [(str(k), v) for k, v in methods.items()]
    elif isinstance(methods, Sequence):
        items = [(m.name, m) if isinstance(m, Calibrator) else (str(m).strip(), None) for m in methods]
    else:
        raise SettingsError(f"methods must be a name, a list or a mapping, not a {type(methods).__name__}.")
    out: dict[str, Calibrator] = {}
    for key, value in items:
        if key == RAW:
            raise SettingsError(f"{RAW!r} names the raw scores; give the calibrators other keys.")
        if key in out:
            raise SettingsError(f"method {key!r} is chosen twice; give each a key of its own.")
        out[key] = _one(key, value)
    for key, extra in (params or {}).items():
        if key not in out:
            raise SettingsError(f"hyperparameters are given for {key!r}, which is not among the chosen "
                                f"methods ({', '.join(out) or 'none'}).")
        cal = out[key]
        known = set(cal.get_params())
        unknown = sorted(set(extra) - known)
        if unknown:
            raise SettingsError(f"{key} has no hyperparameter {unknown}; it takes {sorted(known)}.")
        cal.set_params(**dict(extra))
    return out
