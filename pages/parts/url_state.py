"""The shareable view of Compare in the address bar: sample, methods, their hyperparameters, scheme.

The binary Compare's calibrators travel as ``methods``, the K-class Compare's multi-class methods as
``mc_methods`` (names of :func:`calibdash.calibrators.available` ``("classes")``, composites such as ``ovr:isotonic``
included); each method's hyperparameters as ``<method>.<name>``, the widgets' keys
(:func:`pages.parts.widgets.hp_key`) for both kinds.

Anyone can write an address, so every field is checked before it reaches a widget: a number within
the range its widget offers (finite, of the widget's type), a word among the widget's choices, a list
of known names each once (a name twice would give two widgets one key). A field that fails is left
out, and the sidebar says which and why (:data:`IGNORED`); the page runs on its defaults.
"""
from __future__ import annotations

import logging
import math

import streamlit as st

from calibdash import calibrators, samples
from calibdash.evaluation.methods import split_names
from pages.parts import scheme
from pages.parts.source import SAMPLE, SOURCE, using_upload
from pages.parts.widgets import hp_key

__all__ = ["METHODS", "CLASS_METHODS", "IGNORED", "url_spec", "apply_url_state", "write_url_state"]

log = logging.getLogger("calibdash.app")

#: Widget key of Compare's choice of calibrators.
METHODS = "compare.methods"
#: Widget key of Compare's choice of multi-class methods on a K-class problem.
CLASS_METHODS = "compare.mc.methods"
_URL_WRITTEN = "_url_written"      # the parameters this session last wrote
#: Longest value a field may have (a list of every method's name fits many times over).
MAX_VALUE_CHARS = 2_000
_TRUE, _FALSE = ("1", "true", "yes", "on"), ("0", "false", "no", "off")
#: session_state key: the link's parameters that could not be used, with why (shown in the sidebar).
IGNORED = "_url_ignored"


def _within(parse, low, high, choices=None):
    """``parse`` that also refuses values outside [low, high] (or not among ``choices``)."""
    def checked(text):
        value = parse(text)
        if choices is not None and value not in choices:
            raise ValueError(f"not one of {', '.join(map(str, choices))}")
        if isinstance(value, float) and not math.isfinite(value):
            raise ValueError("not a finite number")
        if low is not None and not (low <= value <= high):
            raise ValueError(f"outside {low:g} to {high:g}")
        return value
    return checked


def _boolean(text: str) -> bool:
    word = text.strip().lower()
    if word not in _TRUE + _FALSE:
        raise ValueError("not true or false")
    return word in _TRUE


def _hp_codec(hp):
    """(parse, format) between a hyperparameter's value and its URL text."""
    if hp.kind == "bool":
        return _boolean, (lambda v: "true" if v else "false")
    if hp.kind == "int":
        return _within(int, hp.low, hp.high), str
    if hp.kind == "float":
        return _within(float, hp.low, hp.high), repr
    if hp.choices:
        by_text = {str(c): c for c in hp.choices}
        return _within(lambda t: by_text.get(t, t), None, None, tuple(hp.choices)), str
    return str, str


def _known(available):
    """Parse of a list of names: the known ones, each once, in the order given (unknown names are dropped)."""
    def names(text: str) -> list[str]:
        known = set(available())
        return list(dict.fromkeys(m for m in split_names(text) if m in known))
    return names


def _samples() -> tuple:
    return (*samples.SAMPLES, *samples.CLASS_SAMPLES)


def _hp_entries(methods, known, specs) -> dict:
    """``<method>.<name>`` -> (session key, parse, format) for each hyperparameter of the ``known`` ``methods``."""
    out = {}
    for m in methods:
        if m not in known:
            continue
        for hp in specs(m):
            parse, fmt = _hp_codec(hp)
            out[f"{m}.{hp.name}"] = (hp_key(m, hp.name), parse, fmt)
    return out


def url_spec(methods, class_methods=()) -> dict:
    """URL parameter -> (session key, parse, format) for the shareable state of Compare: the binary
    ``methods``' hyperparameters and the multi-class ``class_methods``' ones."""
    spec = {
        "sample": (SAMPLE, _within(str, None, None, _samples()), str),
        "methods": (METHODS, _known(calibrators.available), ",".join),
        "mc_methods": (CLASS_METHODS, _known(lambda: calibrators.available("classes")), ",".join),
        "scheme": (scheme.KIND, _within(str, None, None, tuple(scheme.KINDS)), str),
        "test_size": (scheme.TEST_SIZE, _within(float, *scheme.TEST_SIZE_RANGE), repr),
        "seed": (scheme.SEED, _within(int, *scheme.SEED_RANGE), str),
        "folds": (scheme.N_FOLDS, _within(int, *scheme.N_FOLDS_RANGE), str),
    }
    spec.update(_hp_entries(methods, calibrators.available(), lambda m: calibrators.get_class(m).hyperparams))
    spec.update(_hp_entries(class_methods, calibrators.available("classes"),
                            lambda m: calibrators.get(m, "classes").hyperparams))
    return spec


def apply_url_state() -> None:
    """Load the state a shared link carries into the widgets, before they are drawn.

    Only when the address differs from what this session last wrote: so a
    link opened in a new tab restores its view, and later widget changes are
    not overwritten by the old address.
    """
    qp = st.query_params.to_dict()
    if not qp or qp == st.session_state.get(_URL_WRITTEN):
        return
    spec = url_spec(split_names(qp.get("methods", "")), split_names(qp.get("mc_methods", "")))
    ignored = []
    for param, text in qp.items():
        if param not in spec:
            continue
        key, parse, _ = spec[param]
        try:
            if len(text) > MAX_VALUE_CHARS:
                raise ValueError(f"longer than {MAX_VALUE_CHARS:,} characters")
            st.session_state[key] = parse(text)
        except (TypeError, ValueError, OverflowError) as exc:
            log.warning("ignoring URL parameter %s=%r", param, text[:200])
            ignored.append(f"{param}={text[:80]}{'…' if len(text) > 80 else ''} ({exc})")
    st.session_state[IGNORED] = ignored
    if qp.get("sample") in _samples():
        st.session_state[SOURCE] = "Sample"


def write_url_state(problem, chosen) -> None:
    """Put the shareable state (sample, methods, their hyperparameters, scheme) in the address bar: the
    ``chosen`` methods of the ``problem``'s family (:class:`pages.parts.problem.Problem`) and their
    hyperparameters."""
    out = {}
    spec = url_spec((), chosen) if problem.is_classes else url_spec(chosen)
    for param, (key, _, fmt) in spec.items():
        if param == "sample" and using_upload():
            continue                       # an uploaded file cannot travel in a link
        value = st.session_state.get(key)
        if value is not None and value != "":
            out[param] = fmt(value)
    if out != st.query_params.to_dict():
        st.query_params.from_dict(out)
    st.session_state[_URL_WRITTEN] = out
