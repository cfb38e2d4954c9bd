"""The smoothed reliability diagram: SmoothECE's kernel-smoothed curve per method (Błasiok & Nakkiran, ICLR 2024),
optionally with its pointwise 95% Poisson-bootstrap band, smECE and its bandwidth in the legend, the density below."""
from __future__ import annotations

from dataclasses import dataclass
from typing import Callable, ClassVar, Mapping

import numpy as np
import pandas as pd

from ..measures import smooth_ece
from .common import DEFAULT_TITLE, HEIGHT, N_BOOT, Diagram, columns, display_names, legend_margin

__all__ = []

SMOOTH = "Smooth"


def smooth_column(p, y, sample_weight=None, *, band: bool = False, n_boot: int = N_BOOT) -> pd.DataFrame:
    """One column's smoothed curve (:func:`calibdash.measures.smooth_ece.smoothed_curve`), with its band when asked
    (:func:`calibdash.measures.smooth_ece.smoothed_curve_band`, ``n_boot`` Poisson resamples)."""
    if band:
        return smooth_ece.smoothed_curve_band(p, y, sample_weight=sample_weight, n_boot=n_boot)
    return smooth_ece.smoothed_curve(p, y, sample_weight=sample_weight)


def _name(label: str, curve: pd.DataFrame) -> str:
    """Legend entry: the method, with SmoothECE and its bandwidth when the curve carries them."""
    value, sigma = curve.attrs.get("smooth_ece"), curve.attrs.get("bandwidth")
    if value is None:
        return label
    text = f"{label} · smECE {value:.3f}"
    return text + (f" (σ {sigma:.3f})" if sigma is not None else "")


def smoothed_diagram(curves: Mapping[str, pd.DataFrame], *, labels: Mapping[str, str] | None = None,
                     title: str | None = "Smoothed reliability diagram", show_density: bool = True,
                     height: int = HEIGHT, visible: Mapping[str, bool] | None = None):
    """Draw one or several methods' smoothed reliability curves in one figure.

    Parameters
    ----------
    curves : mapping method key -> DataFrame
        Columns ``score``, ``calibrated``, ``density`` and, when present, ``lower`` and ``upper`` (a band, drawn
        shaded). ``attrs["smooth_ece"]`` and ``attrs["bandwidth"]``, when present, are shown in the legend.
    labels : mapping key -> display name, optional
    show_density : bool
        The smoothed density of the predictions in a panel under the diagram (shared x axis): the curve means little
        where the density is low.
    visible : mapping key -> bool, optional
        Methods drawn but hidden ("legendonly"), so the legend toggles them.
    """
    import plotly.graph_objects as go
    from plotly.subplots import make_subplots

    from ..figures.layout import UNIT, band_traces, base_layout, identity_trace, visibility
    from ..figures.palette import color_of, rgba

    labels = dict(labels or {})
    rows = 2 if show_density else 1
    fig = make_subplots(rows=rows, cols=1, shared_xaxes=True, vertical_spacing=0.04,
                        row_heights=[0.75, 0.25] if show_density else [1.0])
    fig.add_trace(identity_trace("perfect calibration"), row=1, col=1)
    for key, c in curves.items():
        label = labels.get(key, key)
        color = color_of(key)
        vis = visibility(visible, key)
        x = c["score"].to_numpy(dtype=float)
        if {"lower", "upper"} <= set(c.columns):
            level = c.attrs.get("level")
            band = f"{label}: {level:.0%} bootstrap band" if level else f"{label}: bootstrap band"
            for trace in band_traces(x, c["upper"].to_numpy(dtype=float), c["lower"].to_numpy(dtype=float), color,
                                     key, vis, band):
                fig.add_trace(trace, row=1, col=1)
        fig.add_trace(go.Scatter(
            x=x, y=c["calibrated"].to_numpy(dtype=float), mode="lines", name=_name(label, c), legendgroup=key,
            visible=vis, line=dict(color=color, width=2.5), connectgaps=False,
            customdata=c["density"].to_numpy(dtype=float),
            hovertemplate=(f"<b>{label}</b><br>prediction %{{x:.3f}}<br>smoothed frequency %{{y:.3f}}"
                           "<br>density %{customdata:.2f}<extra></extra>"),
        ), row=1, col=1)
        if show_density:
            fig.add_trace(go.Scatter(
                x=x, y=c["density"].to_numpy(dtype=float), mode="lines", name=label, legendgroup=key,
                showlegend=False, visible=vis, line=dict(color=color, width=1.5), fill="tozeroy",
                fillcolor=rgba(color, 0.12), hovertemplate=f"{label}<br>density %{{y:.2f}}<extra></extra>",
            ), row=2, col=1)
    ys = [np.nanmin(c["calibrated"]) for c in curves.values() if np.isfinite(c["calibrated"]).any()]
    ye = [np.nanmax(c["calibrated"]) for c in curves.values() if np.isfinite(c["calibrated"]).any()]
    low = min([-0.02] + [v - 0.02 for v in ys])
    high = max([1.02] + [v + 0.02 for v in ye])
    fig.update_xaxes(range=UNIT, row=rows, col=1, title_text="predicted probability")
    fig.update_yaxes(range=[low, high], row=1, col=1, title_text="smoothed observed frequency")
    if show_density:
        fig.update_yaxes(title_text="density", row=2, col=1, rangemode="tozero")
    return base_layout(fig, title, height)


@dataclass(frozen=True)
class SmoothData(Diagram):
    """A smoothed reliability diagram: each method's curve (``score``, ``calibrated``, ``density``, with ``lower`` and
    ``upper`` when banded; ``attrs``: ``smooth_ece``, ``bandwidth``)."""
    curves: dict[str, pd.DataFrame]
    band: bool = False
    n_boot: int = N_BOOT
    kind: ClassVar[str] = SMOOTH
    title: ClassVar[str] = "Smoothed reliability diagram"
    position: ClassVar[float] = 2
    #: The caption; ``{bandwidths}``: each method's name and SmoothECE bandwidth. ``band_text``: what a band adds.
    text: ClassVar[str] = (
        "Smoothed reliability diagram (SmoothECE, Błasiok & Nakkiran 2024): the kernel regression "
        "t + r(t) of the labels on the predictions, reflected Gaussian kernel at SmoothECE's own "
        "bandwidth σ (where smECE_σ = σ): {bandwidths}. The area between the curve and the diagonal, "
        "weighted by the density below, is the smECE in the legend.")
    band_text: ClassVar[str] = " Shaded: the pointwise 95% bootstrap band ({n_boot} Poisson resamples of the rows)."

    def caption(self, names: Mapping[str, str] | None = None) -> str:
        names = display_names(names, self.curves)
        sig = ", ".join(f"{names[k]} {c.attrs['bandwidth']:.4f}" for k, c in self.curves.items())
        return self.text.format(bandwidths=sig) + (self.band_text.format(n_boot=self.n_boot) if self.band else "")

    @classmethod
    def prepare(cls, predictions: pd.DataFrame, labels, sample_weight=None, *, band: bool = False, n_boot: int = N_BOOT,
                column: Callable = smooth_column) -> "SmoothData":
        """The smoothed diagram's data, ``column(p, y, w, band=, n_boot=)`` (default :func:`smooth_column`) per
        column; ``band``: the pointwise 95% bootstrap band of ``n_boot`` Poisson resamples."""
        curves = {k: column(p, y, w, band=band, n_boot=n_boot)
                  for k, p, y, w in columns(predictions, labels, sample_weight)}
        return cls(curves, band, n_boot)

    def figure(self, *, names: Mapping[str, str] | None = None, title=DEFAULT_TITLE, height: int = HEIGHT):
        """The smoothed reliability diagram, smECE and its bandwidth in the legend, the density underneath."""
        fig = smoothed_diagram(self.curves, labels=display_names(names, self.curves), title=self._title(title),
                               height=height)
        legend_margin(fig, len(self.curves), height)
        return fig


prepare_smooth = SmoothData.prepare
