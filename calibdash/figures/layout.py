"""House style shared by every figure, and the traces and axes many figures repeat."""
from __future__ import annotations

import numpy as np
import plotly.graph_objects as go

from .palette import rgba
from .text import plain_figure

__all__ = ["base_layout", "identity_trace", "visibility", "band_traces", "error_bars", "UNIT", "unit_axes"]

FONT = "Inter, Segoe UI, Helvetica, Arial, sans-serif"
#: Grey of the training rows drawn behind a calibration map.
DATA_GREY = "#7F7F7F"
#: The range of a probability axis, with a margin so points at 0 and 1 show whole.
UNIT = (-0.02, 1.02)
#: Opacity of the heaviest model's map in :func:`faint_maps`; the others scale with their weight.
MAX_OPACITY = 0.6
#: At most this many models are drawn by :func:`faint_maps` (the heaviest).
MAX_MODELS_DRAWN = 60


def base_layout(fig: go.Figure, title: str | None = None, height: int | None = None) -> go.Figure:
    """Apply the house style (white template, compact margins, legend on top) in place; return ``fig``, its strings so
    far made plain text (:func:`calibdash.figures.text.plain_figure`; the pages and the report redo it at the end)."""
    fig.update_layout(
        template="plotly_white",
        font=dict(family=FONT, size=13),
        margin=dict(l=60, r=20, t=50 if title else 20, b=120),
        # Under the plot, anchored to the figure's bottom edge: a legend that wraps grows upward into the
        # margin instead of over the title or the data.
        legend=dict(orientation="h", yref="container", yanchor="bottom", y=0.01, xanchor="left", x=0),
        hoverlabel=dict(font_size=12),
    )
    if title:
        fig.update_layout(title=dict(text=title, x=0.01, xanchor="left", y=0.985, yanchor="top",
                                     yref="container", font=dict(size=15)))
    if height:
        fig.update_layout(height=height)
    return plain_figure(fig)


def unit_axes(fig: go.Figure, x: str = "score", y: str = "calibrated probability", **where) -> None:
    """Both axes on [0, 1] (with :data:`UNIT`'s margin), titled ``x`` and ``y``; ``where``: row/col."""
    fig.update_xaxes(title_text=x, range=UNIT, **where)
    fig.update_yaxes(title_text=y, range=UNIT, **where)


def identity_trace(name: str | None = "identity", lo: float = 0, hi: float = 1, **kw) -> go.Scatter:
    """The dashed diagonal from ``(lo, lo)`` to ``(hi, hi)`` (no hover)."""
    return go.Scatter(x=[lo, hi], y=[lo, hi], mode="lines", name=name, hoverinfo="skip",
                      line=dict(color="#BBBBBB", dash="dash", width=1), **kw)


def map_trace(x, y, name: str, color: str, hover: str, width: float = 3, dash: str | None = None,
              **kw) -> go.Scatter:
    """A method's map as a line; its hover: ``hover`` (a line, when given), the score and its image."""
    return go.Scatter(x=x, y=y, mode="lines", name=name, line=dict(color=color, width=width, dash=dash),
                      hovertemplate=(hover + "<br>" if hover else "") + "score %{x:.4f} → %{y:.4f}<extra></extra>",
                      **kw)


def faint_maps(fig: go.Figure, heaviest, curve, noun: str, colour: str, max_models: int = MAX_MODELS_DRAWN,
               **kw) -> None:
    """The maps of the first ``max_models`` models of ``heaviest`` (key -> weight, heaviest first), each
    ``curve(key, weight)`` -> ``(x, y, hover)``, thin, opacity in proportion to weight, one legend entry (``noun``)."""
    drawn = heaviest.head(max_models)
    top = float(drawn.max())
    label = f"{noun} (opacity ∝ weight)"
    if len(drawn) < len(heaviest):
        label = f"{len(drawn)} heaviest of {len(heaviest)} {label}"
    for i, (key, wt) in enumerate(drawn.items()):
        x, y, hover = curve(key, wt)
        fig.add_trace(map_trace(x, y, label, colour, hover, width=1.2, meta="model", legendgroup="models",
                                opacity=MAX_OPACITY * float(wt) / top, showlegend=i == 0, **kw))


def visibility(visible, key):
    """Plotly's ``visible`` of method ``key``: True, or ``"legendonly"`` when ``visible`` hides it."""
    return True if visible is None or visible.get(key, True) else "legendonly"


def band_traces(x, upper, lower, color: str, key, vis, name: str | None = None, **kw) -> list[go.Scatter]:
    """A band shaded in ``color`` between ``upper`` and ``lower`` (legend group ``key``, no hover): an edge, then a
    trace (named ``name``) filled to it; ``kw`` goes to both."""
    edge = dict(mode="lines", line=dict(width=0), legendgroup=key, showlegend=False, visible=vis, hoverinfo="skip")
    return [go.Scatter(x=x, y=upper, **edge, **kw),
            go.Scatter(x=x, y=lower, fill="tonexty", fillcolor=rgba(color, 0.18), name=name, **edge, **kw)]


def error_bars(table, color: str, alpha: float = 0.5, thickness: float = 1.2, width: float = 3) -> dict:
    """Error bars from a reliability table's ``obs_freq`` to its ``ci_low`` and ``ci_high``."""
    y = table["obs_freq"].to_numpy(dtype=float)
    return dict(type="data", symmetric=False, array=table["ci_high"].to_numpy() - y,
                arrayminus=y - table["ci_low"].to_numpy(), color=rgba(color, alpha), thickness=thickness, width=width)


def group_sizes(rows) -> np.ndarray:
    """Marker sizes of groups of rows, growing with the square root of their rows (or weight)."""
    w = np.asarray(rows, dtype=float)
    return 5 + 9 * np.sqrt(w / w.max()) if w.size and w.max() > 0 else np.full(w.size, 6.0)


def data_groups_trace(groups) -> go.Scatter:
    """The training rows as grey equal-count groups (columns ``score``, ``rate``, ``rows``), behind a map."""
    return go.Scatter(
        x=groups["score"], y=groups["rate"], mode="markers", name="training rows (equal-count groups)",
        marker=dict(color=rgba(DATA_GREY, 0.45), size=5), customdata=groups["rows"],
        hovertemplate="mean score %{x:.4f}<br>positive rate %{y:.4f}<br>%{customdata:,} rows<extra></extra>")


def weighted_groups_trace(groups) -> go.Scatter:
    """The training rows as grey equal-weight groups (``score``, ``rate``, ``weight``), sized by weight."""
    return go.Scatter(
        x=groups["score"], y=groups["rate"], mode="markers", name="training rows (equal-weight groups)",
        meta="groups", marker=dict(color=rgba(DATA_GREY, 0.5), size=group_sizes(groups["weight"])),
        customdata=groups["weight"],
        hovertemplate="mean score %{x:.4f}<br>positive rate %{y:.4f}<br>weight %{customdata:,.4g}<extra></extra>")


def stems(x, height, color: str) -> go.Scatter:
    """Vertical lines from 0 to each ``height`` at ``x`` (bars have no sensible width on a log axis)."""
    xs = np.repeat(np.asarray(x, dtype=float), 3)
    ys = np.c_[np.zeros(len(xs) // 3), height, np.full(len(xs) // 3, np.nan)].ravel()
    xs[2::3] = np.nan
    return go.Scatter(x=xs, y=ys, mode="lines", line=dict(color=color, width=2), hoverinfo="skip", showlegend=False)


def steps(lower, value) -> tuple[np.ndarray, np.ndarray]:
    """A step map's points for ``line_shape="hv"``: its value on ``[lower_k, lower_(k+1))`` is ``value_k``, to 1."""
    return np.append(lower, 1.0), np.append(value, value[-1])


def capped_range(delta, cap: float) -> list[float]:
    """A criterion-minus-best axis's range: up to the largest finite ``delta``, at most ``cap``."""
    finite = delta.dropna()
    top = min(float(finite.max()) if len(finite) else 1.0, cap)
    return [-0.04 * top - 0.5, top * 1.05 + 0.5]
