"""Routing: every page runs inside app.py's ``st.navigation``, even when a deep link arrives first."""
from __future__ import annotations

import contextvars

import streamlit as st

__all__ = ["DEEP_LINK", "ROUTED", "route_guard"]

#: session_state key of a page asked for before the router had run (see :func:`route_guard`).
DEEP_LINK = "_deep_link"

#: True while app.py's router is running a page.
ROUTED: contextvars.ContextVar[bool] = contextvars.ContextVar("calibdash_routed", default=False)


def route_guard(page_path: str) -> None:
    """Send a page that was opened without app.py's router back through it.

    Because the product's layout has a ``pages/`` folder, Streamlit's first
    request for a deep link (``/explore`` on a fresh server) runs the page file
    alone, in the old folder-based mode, without app.py's set-up and
    navigation. The page then remembers where the user wanted to go and
    switches to app.py, which routes there.
    """
    if not ROUTED.get():
        st.session_state[DEEP_LINK] = page_path
        st.switch_page("app.py")
