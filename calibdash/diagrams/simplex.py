"""A 3-class calibration map on the probability simplex: the map evaluated on a grid of the triangle
(:func:`prepare_simplex_map`), drawn as arrows on a ternary plot (``go.Scatterternary``) from each grid point to its
image, coloured by the distance moved."""
from __future__ import annotations

from dataclasses import dataclass
from typing import Callable, ClassVar, Mapping, Sequence

import numpy as np

from ..core.errors import DataError, SettingsError
from ..core.validation import check_probabilities
from .common import DEFAULT_TITLE, HEIGHT, Diagram, class_labels

__all__ = []

SIMPLEX = "Simplex map"


@dataclass(frozen=True)
class SimplexMapData(Diagram):
    """A 3-class calibration map on a grid of the simplex: ``inputs`` (m, 3) and their images ``outputs``."""
    inputs: np.ndarray
    outputs: np.ndarray
    n_grid: int
    interior: bool
    kind: ClassVar[str] = SIMPLEX
    title: ClassVar[str] = "Calibration map on the simplex"
    problem: ClassVar[str] = "classes"
    position: ClassVar[float] = 3
    text: ClassVar[str] = (
        "Calibration map on the probability simplex: each arrow starts at a grid point (a row of "
        "probabilities given to the calibrator, {points} points, {spacing}) and ends at the "
        "calibrated probabilities; colour: the total variation distance moved.")

    @property
    def shift(self) -> np.ndarray:
        """Total variation distance each point moves: ``(1/2) sum_k |out_k - in_k|``, in [0, 1]."""
        return 0.5 * np.abs(self.outputs - self.inputs).sum(axis=1)

    def caption(self, names: Mapping[str, str] | None = None) -> str:
        spacing = f"spacing 1/{self.n_grid}" + (", inside the triangle" if self.interior else "")
        return self.text.format(points=len(self.inputs), spacing=spacing)


def simplex_grid(n_grid: int = 10, interior: bool = True) -> np.ndarray:
    """The points ``(i, j, l) / n_grid`` with ``i + j + l = n_grid``: (m, 3) rows of probabilities.

    ``interior``: only the points with every coordinate at least ``1/n_grid`` (``(n_grid - 1)(n_grid - 2) / 2``
    points), so no class has probability 0 (where log-based maps such as Dirichlet calibration are extreme).
    """
    low = 1 if interior else 0
    if int(n_grid) != n_grid or n_grid < 3 * low or n_grid < 1:
        raise SettingsError(f"n_grid must be a whole number of at least {max(1, 3 * low)}, got {n_grid!r}.")
    n = int(n_grid)
    pts = [(i, j, n - i - j) for i in range(low, n + 1) for j in range(low, n + 1) if n - i - j >= low]
    return np.array(pts, dtype=float) / n


def prepare_simplex_map(predict_proba: Callable[[np.ndarray], np.ndarray], n_grid: int = 10,
                        interior: bool = True) -> SimplexMapData:
    """Evaluate a 3-class calibration map on :func:`simplex_grid` (``predict_proba``: any callable taking (m, 3) rows
    of probabilities to (m, 3) calibrated rows, such as a fitted calibrator's ``predict_proba``).

    Raises
    ------
    DataError
        If the callable's output is not (m, 3) rows of probabilities summing to 1.
    """
    grid = simplex_grid(n_grid, interior)
    out = np.asarray(predict_proba(grid.copy()), dtype=float)
    if out.shape != grid.shape:
        raise DataError(f"the map returned shape {out.shape} for {grid.shape[0]} rows of 3 classes; "
                        f"it must return one row of 3 probabilities per row.")
    return SimplexMapData(grid, check_probabilities(out, "the map's output"), int(n_grid), bool(interior))


def plot_simplex_map(data: SimplexMapData, *, class_names: Sequence[str] | None = None,
                     title=DEFAULT_TITLE, height: int = HEIGHT, colorscale: str = "Viridis"):
    """The map as arrows on the probability triangle: three ternary traces, the segments from each grid point to its
    image (grey), the grid points (small, grey) and the images (coloured by the distance moved)."""
    import plotly.graph_objects as go

    from ..figures.layout import base_layout

    a_name, b_name, c_name = class_labels(3, class_names)
    inp, out = data.inputs, data.outputs
    # one line trace for every segment, separated by gaps
    seg = np.full((len(inp) * 3, 3), np.nan)
    seg[0::3], seg[1::3] = inp, out
    fig = go.Figure()
    fig.add_trace(go.Scatterternary(a=seg[:, 0], b=seg[:, 1], c=seg[:, 2], mode="lines", name="map",
                                    line=dict(color="#999999", width=1), hoverinfo="skip", showlegend=False))
    fig.add_trace(go.Scatterternary(a=inp[:, 0], b=inp[:, 1], c=inp[:, 2], mode="markers", name="input",
                                    marker=dict(size=4, color="#7F7F7F"),
                                    hovertemplate=f"input<br>{a_name} %{{a:.3f}}<br>{b_name} %{{b:.3f}}<br>"
                                                  f"{c_name} %{{c:.3f}}<extra></extra>"))
    fig.add_trace(go.Scatterternary(
        a=out[:, 0], b=out[:, 1], c=out[:, 2], mode="markers", name="calibrated",
        marker=dict(size=8, symbol="triangle-up", color=data.shift, colorscale=colorscale, showscale=True,
                    colorbar=dict(title="moved", thickness=12)),
        customdata=np.column_stack([inp, data.shift]),
        hovertemplate=(f"calibrated<br>{a_name} %{{a:.3f}} (from %{{customdata[0]:.3f}})<br>{b_name} %{{b:.3f}} "
                       f"(from %{{customdata[1]:.3f}})<br>{c_name} %{{c:.3f}} (from %{{customdata[2]:.3f}})<br>"
                       "moved %{customdata[3]:.3f}<extra></extra>")))
    fig.update_layout(ternary=dict(sum=1, aaxis=dict(title=a_name, min=0), baxis=dict(title=b_name, min=0),
                                   caxis=dict(title=c_name, min=0)))
    return base_layout(fig, data._title(title), height)


SimplexMapData.prepare = staticmethod(prepare_simplex_map)
SimplexMapData.figure = plot_simplex_map
