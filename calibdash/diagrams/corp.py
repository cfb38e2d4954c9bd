"""The CORP reliability diagram: the PAV fit of the labels on the scores per method (Dimitriadis, Gneiting & Jordan,
PNAS 2021), the Brier score's MCB/DSC/UNC decomposition in the legend, optionally the 90% consistency band."""
from __future__ import annotations

from dataclasses import dataclass
from typing import Callable, ClassVar, Mapping, NamedTuple

import numpy as np
import pandas as pd

from ..measures import corp
from .common import DEFAULT_TITLE, HEIGHT, N_BOOT, Diagram, columns, display_names, legend_margin

__all__ = []

CORP = "CORP"


class CorpColumn(NamedTuple):
    """One column's CORP data: ``corp_curve``, ``corp_band`` (consistency) or None, ``corp_decomposition``."""
    curve: pd.DataFrame
    band: pd.DataFrame | None
    decomposition: dict


def corp_column(p, y, sample_weight=None, *, band: bool = False, n_boot: int = N_BOOT) -> CorpColumn:
    """One column's CORP curve and decomposition, and its 90% consistency band when asked."""
    curve = corp.corp_curve(p, y, sample_weight=sample_weight)
    dec = corp.corp_decomposition(p, y, sample_weight=sample_weight)
    bnd = corp.corp_band(p, y, sample_weight=sample_weight, kind="consistency", n_boot=n_boot) if band else None
    return CorpColumn(curve, bnd, dec)


def corp_diagram(curves: Mapping[str, pd.DataFrame], bands: Mapping[str, pd.DataFrame] | None = None,
                 decompositions: Mapping[str, Mapping[str, float]] | None = None, *,
                 labels: Mapping[str, str] | None = None, title: str | None = "CORP reliability diagram",
                 height: int = HEIGHT, visible: Mapping[str, bool] | None = None):
    """Draw one or several methods' CORP curves (:func:`calibdash.measures.corp.corp_curve`: ``score``,
    ``calibrated``, ``weight``, ``block``) as the package draws them: the rows joined by straight lines, flat over
    each PAV block (drawn thick); ``bands`` (:func:`calibdash.measures.corp.corp_band`: ``score``, ``lower``,
    ``upper``) shaded in the method's colour; ``decompositions``
    (:func:`calibdash.measures.corp.corp_decomposition`): MCB, DSC and UNC in the legend. ``labels``, ``visible``: as
    :func:`calibdash.diagrams.smooth.smoothed_diagram`'s.
    """
    import plotly.graph_objects as go

    from ..figures.layout import band_traces, base_layout, identity_trace, unit_axes, visibility
    from ..figures.palette import color_of

    labels = dict(labels or {})
    bands = dict(bands or {})
    decompositions = dict(decompositions or {})
    fig = go.Figure()
    fig.add_trace(identity_trace("perfect calibration"))
    for key, c in curves.items():
        label = labels.get(key, key)
        color = color_of(key)
        vis = visibility(visible, key)
        band = bands.get(key)
        if band is not None:
            fig.add_traces(band_traces(band["score"].to_numpy(dtype=float), band["upper"].to_numpy(dtype=float),
                                       band["lower"].to_numpy(dtype=float), color, key, vis, connectgaps=True))
        d = decompositions.get(key)            # MCB, DSC and UNC in the legend
        name = label if d is None else f"{label} · " + " · ".join(
            f"{k} {d[k]:.3f}" for k in ("MCB", "DSC", "UNC") if k in d)
        x = c["score"].to_numpy(dtype=float)
        y = c["calibrated"].to_numpy(dtype=float)
        fig.add_trace(go.Scatter(
            x=x, y=y, mode="lines", name=name, legendgroup=key, visible=vis, line=dict(color=color, width=1.5),
            customdata=np.column_stack([c["weight"].to_numpy(dtype=float), c["block"].to_numpy()]),
            hovertemplate=(f"<b>{label}</b><br>forecast %{{x:.3f}}<br>recalibrated %{{y:.3f}}"
                           "<br>block %{customdata[1]:.0f}, rows %{customdata[0]:,.0f}<extra></extra>"),
        ))
        # each PAV block's flat piece (first to last row), thick (the package's CEP segments), as one polyline: NaN
        # between blocks breaks the line
        block = c["block"].to_numpy()
        first = np.flatnonzero(np.r_[True, block[1:] != block[:-1]])
        ends = np.column_stack([first, np.r_[first[1:] - 1, block.size - 1]])
        gap = np.full((first.size, 1), np.nan)
        fig.add_trace(go.Scatter(x=np.hstack([x[ends], gap]).ravel(), y=np.hstack([y[ends], gap]).ravel(),
                                 mode="lines+markers", legendgroup=key, showlegend=False, visible=vis,
                                 line=dict(color=color, width=4), marker=dict(size=4, color=color), hoverinfo="skip"))
    unit_axes(fig, "forecast probability", "recalibrated probability (PAV)")
    return base_layout(fig, title, height)


@dataclass(frozen=True)
class CorpData(Diagram):
    """A CORP reliability diagram: each method's PAV curve, decomposition and (when banded) band."""
    curves: dict[str, pd.DataFrame]
    bands: dict[str, pd.DataFrame]
    decompositions: dict[str, dict]
    band: bool = False
    n_boot: int = N_BOOT
    kind: ClassVar[str] = CORP
    title: ClassVar[str] = "CORP reliability diagram"
    position: ClassVar[float] = 3
    #: The caption, and what a band adds (``{n_boot}``: its resamples).
    text: ClassVar[str] = (
        "CORP reliability diagram (Dimitriadis, Gneiting & Jordan 2021): no binning choice: the PAV "
        "(isotonic) fit of the labels on the scores, flat over each block it pools. Legend: the Brier "
        "score's decomposition, MCB (miscalibration) − DSC (discrimination) + UNC (uncertainty).")
    band_text: ClassVar[str] = (" Shaded: the 90% consistency band ({n_boot} resamples with labels drawn from the "
                                "scores), where the curve of a calibrated forecast would fall.")

    def caption(self, names: Mapping[str, str] | None = None) -> str:
        return self.text + (self.band_text.format(n_boot=self.n_boot) if self.band else "")

    @classmethod
    def prepare(cls, predictions: pd.DataFrame, labels, sample_weight=None, *, band: bool = False, n_boot: int = N_BOOT,
                column: Callable = corp_column) -> "CorpData":
        """The CORP diagram's data, ``column(p, y, w, band=, n_boot=)`` (default :func:`corp_column`) per column;
        ``band``: the 90% consistency band of ``n_boot`` resamples."""
        parts = {k: column(p, y, w, band=band, n_boot=n_boot)
                 for k, p, y, w in columns(predictions, labels, sample_weight)}
        return cls({k: c[0] for k, c in parts.items()}, {k: c[1] for k, c in parts.items() if c[1] is not None},
                   {k: c[2] for k, c in parts.items()}, band, n_boot)

    def figure(self, *, names: Mapping[str, str] | None = None, title=DEFAULT_TITLE, height: int = HEIGHT):
        """The CORP reliability diagram, MCB/DSC/UNC in the legend, the consistency band shaded."""
        fig = corp_diagram(self.curves, self.bands, self.decompositions, labels=display_names(names, self.curves),
                           title=self._title(title), height=height)
        legend_margin(fig, len(self.curves), height)
        return fig


prepare_corp = CorpData.prepare
