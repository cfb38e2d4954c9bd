"""The shareable view of Compare in the address bar: sample, methods, their hyperparameters, scheme.

The binary Compare's calibrators travel as ``methods``, the K-class Compare's multi-class methods as
``mc_methods`` (names of :func:`calibdash.multiclass.available`, composites such as ``ovr:isotonic``
included); each method's hyperparameters as ``<method>.<name>``, the widgets' keys
(:func:`pages.parts.widgets.hp_key`) for both kinds.
"""
from __future__ import annotations

import logging

import streamlit as st

from calibdash import calibrators, multiclass, samples
from calibdash.methods import split_names
from pages.parts import scheme
from pages.parts.source import SAMPLE, SOURCE, using_upload
from pages.parts.widgets import hp_key

__all__ = ["METHODS", "CLASS_METHODS", "IGNORED", "url_spec", "apply_url_state", "write_url_state"]

log = logging.getLogger("calibdash.app")

#: Widget key of Compare's choice of calibrators.
METHODS = "compare.methods"
#: Widget key of the K-class Compare's choice of multi-class methods (pages/parts/compare_classes.py).
CLASS_METHODS = "compare.mc.methods"
_URL_WRITTEN = "_url_written"      # the parameters this session last wrote
#: session_state key: the link's parameters that could not be used, with why (shown in the sidebar).
IGNORED = "_url_ignored"


def _within(parse, low, high, choices=None):
    """``parse`` that also refuses values outside [low, high] (or not among ``choices``)."""
    def checked(text):
        value = parse(text)
        if choices is not None and value not in choices:
            raise ValueError(f"not one of {', '.join(map(str, choices))}")
        if low is not None and not (low <= value <= high):
            raise ValueError(f"outside {low:g} to {high:g}")
        return value
    return checked


def _hp_codec(hp):
    """(parse, format) between a hyperparameter's value and its URL text."""
    if hp.kind == "bool":
        return (lambda t: t.lower() in ("1", "true", "yes")), (lambda v: "true" if v else "false")
    if hp.kind == "int":
        return _within(int, hp.low, hp.high), str
    if hp.kind == "float":
        return _within(float, hp.low, hp.high), repr
    if hp.choices:
        by_text = {str(c): c for c in hp.choices}
        return _within(lambda t: by_text.get(t, t), None, None, tuple(hp.choices)), str
    return str, str


def _known_methods(text: str) -> list[str]:
    known = calibrators.available()
    return [m for m in split_names(text) if m in known]


def _known_class_methods(text: str) -> list[str]:
    known = multiclass.available()
    return [m for m in split_names(text) if m in known]


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
        "sample": (SAMPLE, str, str),
        "methods": (METHODS, _known_methods, ",".join),
        "mc_methods": (CLASS_METHODS, _known_class_methods, ",".join),
        "scheme": (scheme.KIND, str, str),
        "test_size": (scheme.TEST_SIZE, _within(float, *scheme.TEST_SIZE_RANGE), repr),
        "seed": (scheme.SEED, int, str),
        "folds": (scheme.N_FOLDS, _within(int, *scheme.N_FOLDS_RANGE), str),
    }
    spec.update(_hp_entries(methods, calibrators.available(), lambda m: calibrators.get_class(m).hyperparams))
    spec.update(_hp_entries(class_methods, multiclass.available(), lambda m: multiclass.get(m).hyperparams))
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
            st.session_state[key] = parse(text)
        except (TypeError, ValueError) as exc:
            log.warning("ignoring URL parameter %s=%r", param, text)
            ignored.append(f"{param}={text} ({exc})")
    st.session_state[IGNORED] = ignored
    if "sample" in qp and (qp["sample"] in samples.SAMPLES or qp["sample"] in samples.CLASS_SAMPLES):
        st.session_state[SOURCE] = "Sample"


def write_url_state(methods, class_methods=()) -> None:
    """Put the shareable state (sample, methods, their hyperparameters, scheme) in the address bar: the
    hyperparameters of the binary ``methods`` and of the multi-class ``class_methods`` on the page."""
    out = {}
    for param, (key, _, fmt) in url_spec(methods, class_methods).items():
        if param == "sample" and using_upload():
            continue                       # an uploaded file cannot travel in a link
        value = st.session_state.get(key)
        if value is not None and value != "":
            out[param] = fmt(value)
    if out != st.query_params.to_dict():
        st.query_params.from_dict(out)
    st.session_state[_URL_WRITTEN] = out
