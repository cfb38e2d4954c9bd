"""One parser for method specs: what the API, the command line and the pages call "methods".

Every caller that turns a user's choice of calibrators into calibrator
objects goes through :func:`resolve`, so a spec means the same everywhere:

* a registry name: ``"bbq"``;
* a comma-separated list: ``"platt, bbq"``;
* a list of names and/or calibrator objects: ``["platt", BBQCalibrator(c=5)]``;
* a mapping key -> what the key stands for:

  - ``{"bbq": {"n_prime": 2}}``: the method named by the key, with hyperparameters;
  - ``{"bbq fine": {"method": "bbq", "c": 5}}``: another key for a method;
  - ``{"mine": "platt"}``: a key for a registry name;
  - ``{"mine": PlattCalibrator()}``: a key for an unfitted calibrator (cloned).

The result maps each key to a new unfitted calibrator; the objects passed in
are never fitted or changed. Hyperparameters given as ``params`` (key ->
{name: value}, what ``--param KEY.NAME=VALUE`` on the command line parses
to) are set on top.
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
    """``["bbq.c=5", "histogram.n_bins=20"]`` -> ``{"bbq": {"c": 5}, "histogram": {"n_bins": 20}}``.

    Values are read as JSON where they can be (numbers, true/false, quoted
    strings), else kept as text.

    Raises
    ------
    SettingsError
        If an item is not of the form ``KEY.NAME=VALUE``.
    """
    out: dict[str, dict] = {}
    for item in items or []:
        try:
            lhs, value = str(item).split("=", 1)
            key, name = lhs.split(".", 1)
        except ValueError:
            raise SettingsError(f"a hyperparameter is given as METHOD.NAME=VALUE, got {item!r}.") from None
        if not key.strip() or not name.strip():
            raise SettingsError(f"a hyperparameter is given as METHOD.NAME=VALUE, got {item!r}.")
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
    """Key -> new unfitted calibrator, for any method spec (see the module docstring).

    Parameters
    ----------
    methods : str, Calibrator, sequence or mapping
    params : mapping key -> {hyperparameter: value}, optional
        Set on top of what ``methods`` says; every key must be one of the
        resolved keys.

    Raises
    ------
    SettingsError
        An unknown method or hyperparameter, a repeated key, the reserved key
        ``"uncalibrated"``, or a ``params`` key that names no chosen method.
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
