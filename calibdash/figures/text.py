"""Names from the data shown as text in figures: plotly reads ``<...>`` tags and ``&...;`` entities in them.

A column, class or group name such as ``<a href="http://host/">x</a>`` would become a link in the dashboard and the
HTML report. :func:`plain_markup` escapes every ``<``, ``>`` and ``&`` of a string except the few tags the figures
write themselves (``<b>``, ``<i>``, ``<br>``, ``<sub>``, ``<sup>``, ``<extra>``, exactly so, without attributes), and
:func:`plain_figure` applies it to every string of a figure in place. Both are idempotent (an entity already escaped
is left as it is), so a figure can pass through :func:`plain_figure` more than once.
"""
from __future__ import annotations

import re

import numpy as np

__all__ = ["plain_figure"]

#: The tags the figures write themselves, kept when exactly so (no attributes).
KEPT_TAGS = ("b", "i", "br", "sub", "sup", "extra")
_AMP = re.compile(r"&(?!(?:amp|lt|gt|quot|#\d{1,7}|#x[0-9a-fA-F]{1,6});)")
_KEPT = re.compile(r"&lt;(/?(?:" + "|".join(KEPT_TAGS) + r"))&gt;")


def plain_markup(text: str) -> str:
    """``text`` with ``<``, ``>`` and bare ``&`` escaped, except the tags of :data:`KEPT_TAGS`.

    >>> plain_markup('<b>x</b><br><img src=x onerror=alert(1)> & <a href="h">l</a>')
    '<b>x</b><br>&lt;img src=x onerror=alert(1)&gt; &amp; &lt;a href="h"&gt;l&lt;/a&gt;'
    """
    if "<" not in text and ">" not in text and "&" not in text:
        return text
    out = _AMP.sub("&amp;", text).replace("<", "&lt;").replace(">", "&gt;")
    return _KEPT.sub(r"<\1>", out)


def _clean(value):
    """``(value with every string passed through plain_markup, whether anything changed)``."""
    if isinstance(value, str):
        out = plain_markup(value)
        return out, out != value
    if isinstance(value, dict):
        pairs = {k: _clean(v) for k, v in value.items()}
        return {k: v for k, (v, _) in pairs.items()}, any(c for _, c in pairs.values())
    if isinstance(value, (list, tuple)):
        pairs = [_clean(v) for v in value]
        return type(value)(v for v, _ in pairs), any(c for _, c in pairs)
    if isinstance(value, np.ndarray) and value.dtype.kind in "OUS":
        flat = [_clean(v) for v in value.ravel().tolist()]
        if any(c for _, c in flat):
            return np.array([v for v, _ in flat], dtype=object).reshape(value.shape), True
    return value, False


def plain_figure(fig):
    """Every string of plotly figure ``fig`` (trace names, text, hover text and templates, custom data, category
    values, titles, annotations, tick labels) passed through :func:`plain_markup`, in place; returns ``fig``. The
    layout's template (plotly's own) is left alone."""
    for trace in fig.data:
        cleaned, changed = _clean(trace.to_plotly_json())
        if changed:
            trace.update({k: v for k, v in cleaned.items() if k != "type"})
    layout = {k: v for k, v in fig.layout.to_plotly_json().items() if k != "template"}
    cleaned, changed = _clean(layout)
    if changed:
        fig.update_layout({k: v for k, v in cleaned.items() if _clean(layout[k])[1]})
    return fig
