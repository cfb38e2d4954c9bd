"""The reliability chart of every page: its type (binned, smooth, CORP), its band, its bins, and its drawing.

One place offers the choice (:func:`controls`) and draws it (:func:`build`,
:func:`draw`), so Data, Explore and Compare (its overlaid chart and its small
multiples) show the same three diagrams:

* **Binned** (the classical reliability diagram,
  :func:`calibdash.figures.reliability_diagram`): observed frequency against
  mean prediction per bin, a fixed bin count or ``auto``, the stated rule of
  :func:`calibdash.clinical.auto_bin_count` (cube root of n), whose rule and
  count the caption gives (:func:`calibdash.clinical.describe_rule`);
* **Smooth** (Błasiok & Nakkiran, "Smooth ECE", ICLR 2024): the kernel
  smoothed curve ``t + r(t)`` at SmoothECE's own bandwidth
  (:func:`calibdash.smooth_ece.smoothed_curve`), optionally with its
  pointwise 95% Poisson-bootstrap band
  (:func:`calibdash.smooth_ece.smoothed_curve_band`);
* **CORP** (Dimitriadis, Gneiting & Jordan, PNAS 2021): the PAV (isotonic)
  fit of the labels on the scores (:func:`calibdash.corp.corp_curve`), with
  the Brier score's MCB/DSC/UNC decomposition in the legend
  (:func:`calibdash.corp.corp_decomposition`) and optionally the 90%
  consistency band (:func:`calibdash.corp.corp_band`, ``kind="consistency"``).

Data is computed per prediction column and cached (``st.cache_data``) on a
hash of that column's full content (predictions, labels, weights) plus the
parameters, so the overlaid chart and the small multiples share entries and a
band (about 1 s on 65,536 score cells) is computed once. The arrays
themselves are passed as ``_``-prefixed arguments, which Streamlit does not
hash. On score cells pass ``weights`` (``Evaluation.weights``): each row is
then a cell's positives or negatives and counts as that many rows.

Also here: :func:`interval_bands`, the Venn-Abers ``[p0, p1]`` bands of the
fitted calibrators, for :func:`calibdash.figures.calibration_map`.
"""
from __future__ import annotations

import hashlib
from contextlib import nullcontext
from typing import Mapping, NamedTuple

import numpy as np
import pandas as pd
import plotly.graph_objects as go
import streamlit as st

from calibdash import cells as ccells, clinical, corp, data as cdata, evaluation, figures, metrics, smooth_ece
from calibdash.errors import SettingsError
from calibdash.explain.venn_abers import band_grid, interval_band
from calibdash.figures.corp import corp_diagram
from calibdash.figures.smooth_ece import smoothed_diagram
from pages.parts.widgets import initial
from pages.parts import bounded_cache

__all__ = ["KINDS", "BINNED", "SMOOTH", "CORP", "AUTO", "AUTO_RULE", "BIN_CHOICES", "N_BOOT", "Choice", "controls",
           "resolve_bins", "build", "draw", "interval_bands", "raw_rows", "TITLES", "VENN_ABERS"]

BINNED, SMOOTH, CORP = "Binned", "Smooth", "CORP"
#: The diagram types, in the order the segmented control offers them.
KINDS = (BINNED, SMOOTH, CORP)
#: The bins choice that asks for the stated rule's count.
AUTO = "auto"
#: The rule behind ``auto`` (:func:`calibdash.clinical.auto_bin_count`).
AUTO_RULE = "cuberoot"
#: What the bins slider offers.
BIN_CHOICES = [5, 10, 15, 20, 30, 50, AUTO]
#: Resamples of a band (the default of both ``smoothed_curve_band`` and ``corp_band``; ``relplot`` and
#: ``reliabilitydiag`` also draw 100 by default).
N_BOOT = 100
#: Registry name of the Venn-Abers calibrator, whose interval band the calibration map can draw.
VENN_ABERS = "venn_abers"

#: Each diagram type's default title.
TITLES = {BINNED: "Reliability diagram", SMOOTH: "Smoothed reliability diagram", CORP: "CORP reliability diagram"}
_DEFAULT_TITLE = object()
#: The house layout's bottom margin (calibdash.figures.layout.base_layout), where the legend sits.
LEGEND_MARGIN = 120


class Choice(NamedTuple):
    """What the reliability chart's widgets chose."""
    kind: str
    band: bool
    n_bins: int | str          # a bin count or AUTO
    strategy: str


def _bins_label(v) -> str:
    return "auto (cube root of n)" if v == AUTO else str(v)


def controls(prefix: str, cols=None, *, n_bins: int | str = metrics.DEFAULT_N_BINS,
             strategy: str = metrics.DEFAULT_STRATEGY) -> Choice:
    """The chart's widgets: diagram type, band, bins and binning; keys ``<prefix>.diagram``, ``.band``,
    ``.n_bins``, ``.strategy`` (kept for the session).

    ``cols``: four containers for the four widgets (default: a new row of columns); pass the same container
    four times to stack them. ``n_bins`` and ``strategy`` are the defaults of the binned diagram. The bins
    widgets are disabled, not hidden, for Smooth and CORP (which have no bins), so their values stay put.
    """
    if cols is None:
        cols = st.columns([2.2, 1, 2, 1.8], vertical_alignment="bottom")
    k_kind, k_band, k_bins, k_strat = (f"{prefix}.{n}" for n in ("diagram", "band", "n_bins", "strategy"))
    kind = cols[0].segmented_control(
        "Diagram", list(KINDS), key=k_kind, persist_state="session", required=True,
        help="Binned: observed frequency per bin. Smooth: the kernel-smoothed curve of SmoothECE (Błasiok & "
             "Nakkiran). CORP: the isotonic (PAV) fit of the labels on the scores, no binning choice "
             "(Dimitriadis, Gneiting & Jordan).",
        **initial(k_kind, default=BINNED)) or BINNED
    band = cols[1].toggle(
        "Band", key=k_band, persist_state="session", disabled=kind == BINNED,
        help=f"Smooth: a 95% bootstrap band ({N_BOOT} Poisson resamples). CORP: the 90% consistency band, "
             "where a calibrated forecast's curve would fall. Costs about a second on large data. (Binned "
             "draws each bin's 95% interval.)",
        **initial(k_band, value=False))
    if k_bins in st.session_state and st.session_state[k_bins] not in BIN_CHOICES:
        del st.session_state[k_bins]
    bins = cols[2].select_slider(
        "Bins of the reliability diagram", BIN_CHOICES, key=k_bins, persist_state="session",
        format_func=_bins_label, disabled=kind != BINNED,
        help="auto: the cube root of the number of rows (rounded up, 2 to 100 bins); the caption says the count.",
        **initial(k_bins, value=n_bins))
    strat = cols[3].segmented_control(
        "Binning", list(metrics.STRATEGIES), key=k_strat, persist_state="session", disabled=kind != BINNED,
        help="Equal-width bins on [0, 1] or equal-count bins (the default, as the metrics table's ECE).",
        **initial(k_strat, default=strategy)) or strategy
    return Choice(kind, bool(band) and kind != BINNED, bins, strat)


def _n_rows(labels, weights) -> float:
    return float(np.sum(weights)) if weights is not None else float(len(labels))


def resolve_bins(n_bins, labels, weights=None) -> tuple[int, str]:
    """``(bin count, caption text)``: ``auto`` by :data:`AUTO_RULE` on the rows (the weights' sum on cells)."""
    if n_bins == AUTO:
        n = _n_rows(labels, weights)
        return clinical.auto_bin_count(n, AUTO_RULE), "auto: " + clinical.describe_rule(n, AUTO_RULE)
    return int(n_bins), f"{int(n_bins)} bins"


# -- the data of the smooth and CORP diagrams, cached per column ---------------------------------------
def _content_key(p: np.ndarray, y: np.ndarray, w) -> str:
    """A hash of the whole column (every value, not a sample), its labels and weights."""
    h = hashlib.blake2b(digest_size=16)
    for a in (p, y) + (() if w is None else (w,)):
        a = np.ascontiguousarray(a)
        h.update(str(a.dtype).encode())
        h.update(a.tobytes())
    h.update(b"w" if w is not None else b"-")
    return h.hexdigest()


@bounded_cache.cache_data(show_spinner=False, max_entries=512, max_size="64MB")
def _smooth(key: str, band: bool, n_boot: int, _p, _y, _w) -> pd.DataFrame:
    if band:
        return smooth_ece.smoothed_curve_band(_p, _y, sample_weight=_w, n_boot=n_boot)
    return smooth_ece.smoothed_curve(_p, _y, sample_weight=_w)


@bounded_cache.cache_data(show_spinner=False, max_entries=512, max_size="128MB")
def _corp(key: str, band: bool, n_boot: int, _p, _y, _w) -> tuple:
    curve = corp.corp_curve(_p, _y, sample_weight=_w)
    dec = corp.corp_decomposition(_p, _y, sample_weight=_w)
    bnd = corp.corp_band(_p, _y, sample_weight=_w, kind="consistency", n_boot=n_boot) if band else None
    return curve, bnd, dec


def _columns(predictions: pd.DataFrame, labels, weights):
    y = np.asarray(labels)
    w = None if weights is None else np.asarray(weights, dtype=float)
    for col in predictions.columns:
        p = predictions[col].to_numpy(dtype=float)
        yield str(col), p, y, w, _content_key(p, y, w)


def _names(names, keys) -> dict:
    names = dict(names or {})
    return {k: names.get(k, k) for k in keys}


def _legend_margin(fig: go.Figure, n_entries: int, height: int) -> None:
    """Room under the plot for a legend of long entries (smECE, or MCB/DSC/UNC), one a line: the house legend
    grows upward from the figure's bottom, so the margin and the figure grow by the same amount and the plot
    keeps its size."""
    need = 70 + 24 * n_entries
    if n_entries > 1 and need > LEGEND_MARGIN:
        fig.update_layout(margin=dict(b=need), height=height + need - LEGEND_MARGIN)


def build(predictions: pd.DataFrame, labels, weights=None, *, kind: str = BINNED, band: bool = False,
          n_bins=metrics.DEFAULT_N_BINS, strategy: str = metrics.DEFAULT_STRATEGY,
          names: Mapping[str, str] | None = None, title=_DEFAULT_TITLE, height: int = 520,
          n_boot: int = N_BOOT) -> tuple[go.Figure, str]:
    """The reliability chart of every column of ``predictions`` and its caption: ``(figure, caption)``.

    Parameters
    ----------
    predictions : DataFrame
        One column per method (key), one row per (weighted) row.
    labels : array-like of 0/1
    weights : array-like, optional
        ``Evaluation.weights`` on score cells (each row counts that many rows).
    kind : {"Binned", "Smooth", "CORP"}
    band : bool
        Smooth: the 95% bootstrap band; CORP: the 90% consistency band; ignored for Binned (which draws each
        bin's interval).
    n_bins : int or "auto"
        Binned only; ``"auto"`` is :data:`AUTO_RULE` on the number of rows.
    strategy : {"uniform", "quantile"}
        Binned only.
    names : mapping key -> display name, optional
    title : str or None
        Default: the diagram type's title.
    """
    if kind not in KINDS:
        raise SettingsError(f"kind must be one of {KINDS}, got {kind!r}.")
    title = TITLES[kind] if title is _DEFAULT_TITLE else title
    names = _names(names, [str(c) for c in predictions.columns])
    if kind == BINNED:
        bins, said = resolve_bins(n_bins, labels, weights)
        tables = figures.reliability_tables(predictions, labels, bins, strategy, sample_weight=weights)
        fig = figures.reliability_diagram(tables, labels=names, title=title, height=height)
        how = "equal-count" if strategy == "quantile" else "equal-width"
        caption = (f"Binned reliability diagram: {said}, {how}; each point is a bin's observed frequency against "
                   "its mean prediction, with its 95% interval; the bars count its rows.")
        return fig, caption
    if kind == SMOOTH:
        with st.spinner("Bootstrapping the band…") if band else nullcontext():
            curves = {k: _smooth(key, band, n_boot, p, y, w) for k, p, y, w, key in _columns(predictions, labels,
                                                                                                weights)}
        fig = smoothed_diagram(curves, labels=names, title=title, height=height)
        _legend_margin(fig, len(curves), height)
        sig = ", ".join(f"{names[k]} {c.attrs['bandwidth']:.4f}" for k, c in curves.items())
        caption = ("Smoothed reliability diagram (SmoothECE, Błasiok & Nakkiran 2024): the kernel regression "
                   "t + r(t) of the labels on the predictions, reflected Gaussian kernel at SmoothECE's own "
                   f"bandwidth σ (where smECE_σ = σ): {sig}. The area between the curve and the diagonal, "
                   "weighted by the density below, is the smECE in the legend.")
        if band:
            caption += f" Shaded: the pointwise 95% bootstrap band ({n_boot} Poisson resamples of the rows)."
        return fig, caption
    with st.spinner("Resampling the consistency band…") if band else nullcontext():
        data = {k: _corp(key, band, n_boot, p, y, w) for k, p, y, w, key in _columns(predictions, labels, weights)}
    fig = corp_diagram({k: d[0] for k, d in data.items()},
                       {k: d[1] for k, d in data.items() if d[1] is not None},
                       {k: d[2] for k, d in data.items()}, labels=names, title=title, height=height)
    _legend_margin(fig, len(data), height)
    caption = ("CORP reliability diagram (Dimitriadis, Gneiting & Jordan 2021): no binning choice: the PAV "
               "(isotonic) fit of the labels on the scores, flat over each block it pools. Legend: the Brier "
               "score's decomposition, MCB (miscalibration) − DSC (discrimination) + UNC (uncertainty).")
    if band:
        caption += (f" Shaded: the 90% consistency band ({n_boot} resamples with labels drawn from the scores), "
                    "where the curve of a calibrated forecast would fall.")
    return fig, caption


def draw(predictions: pd.DataFrame, labels, weights=None, **kw) -> go.Figure:
    """The figure of :func:`build` (same arguments)."""
    return build(predictions, labels, weights, **kw)[0]


def interval_bands(models: Mapping[str, object]) -> dict[str, pd.DataFrame]:
    """Key -> Venn-Abers ``[p0, p1]`` band (:func:`calibdash.explain.venn_abers.interval_band` on its
    :func:`~calibdash.explain.venn_abers.band_grid`) for each fitted Venn-Abers calibrator in ``models``."""
    return {k: interval_band(m, band_grid(m)) for k, m in models.items()
            if getattr(type(m), "name", None) == VENN_ABERS}


@bounded_cache.cache_data(show_spinner="Summarising the rows into score cells…", max_entries=8, max_size="64MB")
def _raw_cells(data_key: str, _ss: cdata.ScoreSet) -> tuple:
    c = ccells.aggregate(_ss.scores, _ss.labels)
    return c.weighted_predictions(c.score)


def raw_rows(ss: cdata.ScoreSet) -> tuple:
    """``(scores, labels, weights)`` of all usable rows for the Data page's chart: the rows themselves (weights
    None), or above ``CELLS_MIN_ROWS`` rows their score cells' weighted rows (as ``fitting.raw_summary``)."""
    if evaluation.use_cells_for(ss.n_rows):
        return _raw_cells(ss.content_key(), ss)
    return np.asarray(ss.scores, dtype=float), np.asarray(ss.labels), None
