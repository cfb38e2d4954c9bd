"""One colour per method, the same in every chart: each calibrator class declares its own (``Calibrator.color``: Okabe
& Ito's colour-blind-safe palette, then Paul Tol's schemes). Here only grey for the uncalibrated scores, black for a
known true curve, and stable colours for any other name."""
from __future__ import annotations

import hashlib

from .. import calibrators

__all__ = ["class_color_of", "color_of", "rgba"]

UNCALIBRATED = "uncalibrated"

#: Colours of the names that are no method.
_FIXED = {
    UNCALIBRATED: "#7F7F7F",   # grey
    "truth": "#000000",        # the known true curve in teaching demos
}
#: Colours handed out to names outside the table (other score columns, models).
_EXTRA = ("#44AA99", "#88CCEE", "#DDCC77", "#661100", "#6699CC", "#E6AB02", "#A6761D", "#1B9E77")


def _multiclass_color(key: str) -> str | None:
    """The colour a multi-class method declares: its class's, or for a composite (``ovr:isotonic``) its instance's,
    derived from its binary method; None when ``key`` names no multi-class method."""
    from ..core.errors import SettingsError
    prefix, colon, _ = key.partition(":")
    cls = calibrators.classes("classes").get(prefix)
    if cls is None:
        return None
    if colon and prefix in calibrators.composites():
        try:
            return calibrators.get(key, "classes").color
        except SettingsError:
            return None
    return cls.color


def color_of(name: str) -> str:
    """Hex colour of a method (registry name: the colour its class declares, binary or multi-class) or, stably, of any
    other name."""
    key = str(name).lower()
    if key in _FIXED:
        return _FIXED[key]
    cls = calibrators.classes().get(key)
    if cls is not None and cls.color:
        return cls.color
    color = _multiclass_color(key)
    if color:
        return color
    digest = int(hashlib.sha1(key.encode()).hexdigest(), 16)
    return _EXTRA[digest % len(_EXTRA)]


def class_color_of(name: str) -> str:
    """Hex colour of a name in a multi-class chart: the multi-class method's declared colour first (the multi-class
    ``temperature`` is not the binary one), else :func:`color_of`."""
    key = str(name).lower()
    return (None if key in _FIXED else _multiclass_color(key)) or color_of(key)


def rgba(hex_color: str, alpha: float) -> str:
    """``'#RRGGBB'`` with an opacity, as a plotly ``rgba(...)`` string."""
    h = hex_color.lstrip("#")
    r, g, b = (int(h[i:i + 2], 16) for i in (0, 2, 4))
    return f"rgba({r},{g},{b},{alpha:.3g})"


#: Colours of the classes' curves (Paul Tol's muted scheme, colour-blind safe, 10 colours).
CLASS_COLORS = ("#332288", "#88CCEE", "#44AA99", "#117733", "#999933", "#DDCC77", "#CC6677", "#882255",
                "#AA4499", "#DDDDDD")
