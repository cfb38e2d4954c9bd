"""One colour per method, the same in every chart.

Okabe & Ito's colour-blind-safe palette (Color Universal Design, 2008) for
the methods, grey for the uncalibrated scores, and two colours from Paul
Tol's muted scheme where Okabe-Ito runs out. Yellow is avoided on white.
"""
from __future__ import annotations

import hashlib

UNCALIBRATED = "uncalibrated"

_COLORS = {
    UNCALIBRATED: "#7F7F7F",   # grey
    "platt": "#E69F00",        # orange
    "histogram": "#56B4E9",    # sky blue
    "isotonic": "#009E73",     # bluish green
    "bbq": "#0072B2",          # blue
    "sbb": "#D55E00",          # vermillion
    "abb": "#CC79A7",          # reddish purple
    "elite": "#332288",        # indigo (Tol)
    "mbct": "#882255",         # wine (Tol)
    "enir": "#CC6677",         # rose (Tol)
    "beta": "#117733",         # green (Tol)
    "temperature": "#999933",  # olive (Tol)
    "venn_abers": "#AA4499",   # purple (Tol)
    "truth": "#000000",        # the known true curve in teaching demos
}
#: Colours handed out to names outside the table (other score columns, models).
_EXTRA = ("#44AA99", "#88CCEE", "#DDCC77", "#661100", "#6699CC", "#E6AB02", "#A6761D", "#1B9E77")


def color_of(name: str) -> str:
    """Hex colour of a method (registry name) or, stably, of any other name."""
    key = str(name).lower()
    if key in _COLORS:
        return _COLORS[key]
    digest = int(hashlib.sha1(key.encode()).hexdigest(), 16)
    return _EXTRA[digest % len(_EXTRA)]


def rgba(hex_color: str, alpha: float) -> str:
    """``'#RRGGBB'`` with an opacity, as a plotly ``rgba(...)`` string."""
    h = hex_color.lstrip("#")
    r, g, b = (int(h[i:i + 2], 16) for i in (0, 2, 4))
    return f"rgba({r},{g},{b},{alpha:.3g})"
