"""Widgets of the calibrators' hyperparameters, and the rule for a widget's default under a shared link."""
from __future__ import annotations

import streamlit as st

from calibdash import calibrators
from pages.parts.labels import method_label

__all__ = ["initial", "hp_key", "hyperparam_widgets", "hyperparam_panel"]


def initial(key: str, **default) -> dict:
    """The default argument of a widget unless session state (a shared link) already holds its value.

    Passing both makes Streamlit warn on the page, so the default is left out
    when the state was set before the widget was drawn.
    """
    return {} if key in st.session_state else default


def hp_key(method: str, name: str) -> str:
    """Widget key of hyperparameter ``name`` of ``method``, shared by every page."""
    return f"hp.{method}.{name}"


def _fmt(v) -> str:
    return f"{v:g}" if isinstance(v, float) else str(v)


def hyperparam_widgets(method: str, container=None, specs=None) -> dict:
    """One widget per declared hyperparameter of ``method``; returns name -> value.

    Keys are ``hp.<method>.<name>`` and persist for the session, so Explore,
    Compare and Benchmark share one setting per method. ``specs``: the
    HyperParam records to draw (default: the binary calibrator ``method``'s;
    a multi-class method passes its own).
    """
    box = container or st
    values = {}
    for hp in (calibrators.get_class(method).hyperparams if specs is None else specs):
        key = hp_key(method, hp.name)
        label = f"{hp.symbol} — {hp.name}" if hp.symbol and hp.symbol != hp.name else hp.name
        if hp.kind == "bool":
            values[hp.name] = box.toggle(label, key=key, help=hp.help, persist_state="session",
                                         **initial(key, value=bool(hp.default)))
        elif hp.kind == "choice":
            opts = list(hp.choices)
            values[hp.name] = box.selectbox(label, opts, key=key, help=hp.help, persist_state="session",
                                            **initial(key, index=opts.index(hp.default)))
        else:
            grid = hp.grid()
            if key in st.session_state and st.session_state[key] not in grid:
                del st.session_state[key]          # a value from a link that is not on the slider
            values[hp.name] = box.select_slider(label, options=grid, key=key,
                                                help=hp.help + (" (log scale)" if hp.log else ""),
                                                format_func=_fmt, persist_state="session",
                                                **initial(key, value=hp.default))
    return values


def hyperparam_panel(methods, title: str = "Hyperparameters", *, label=method_label, specs_of=None) -> dict:
    """A collapsed panel with each method's hyperparameter widgets in up to three columns; method -> values.

    ``label`` names a method; ``specs_of(method)`` gives its HyperParam records (default: the binary
    calibrators').
    """
    params = {}
    with st.expander(title, expanded=False):
        cols = st.columns(max(1, min(3, len(methods))))
        for i, m in enumerate(methods):
            box = cols[i % len(cols)]
            box.markdown(f"**{label(m)}**")
            params[m] = hyperparam_widgets(m, box, None if specs_of is None else specs_of(m))
    return params
