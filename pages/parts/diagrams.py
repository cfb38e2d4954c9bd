"""The reliability chart's widgets and caches; the diagrams themselves are library code.

What each diagram type (binned, smooth, CORP) holds, its bin-count rule and
its caption are :mod:`calibdash.diagrams` (one module per type, its data
and its figure). This module keeps what only a page needs, so Data, Explore and Compare
(its overlaid chart and its small multiples) and Groups & time show the same
three diagrams:

* :func:`controls`: the diagram type, band, bins and binning widgets;
* :func:`build` / :func:`draw`: the library's prepare and plot, the smooth
  and CORP data computed per prediction column and cached (bounded
  ``st.cache_data``) on a hash of that column's full content (predictions,
  labels, weights) plus the parameters, so the overlaid chart and the small
  multiples share entries and a band (about 1 s on 65,536 score cells) is
  computed once, under a spinner. The arrays themselves are passed as
  ``_``-prefixed arguments, which Streamlit does not hash. On score cells pass
  ``weights`` (``Evaluation.weights``): each row is then a cell's positives or
  negatives and counts as that many rows.

Also here: :func:`interval_bands`, the Venn-Abers ``[p0, p1]`` bands of the
fitted calibrators, for :func:`calibdash.figures.calibration_map`, and
:func:`raw_rows`, the Data page's rows or cells.
"""
from __future__ import annotations

import hashlib
from contextlib import nullcontext
from typing import Mapping, NamedTuple

import numpy as np
import pandas as pd
import plotly.graph_objects as go
import streamlit as st

from calibdash import cells as ccells, data as cdata, diagrams as cdiagrams, evaluation
from calibdash.measures import calibration as metrics
from calibdash.diagrams import AUTO, AUTO_RULE, BINNED, CORP, KINDS, N_BOOT, SMOOTH, TITLES
from calibdash.explain.venn_abers import band_grid, interval_band
from pages.parts.text import md
from pages.parts.widgets import initial
from pages.parts import bounded_cache

__all__ = ["KINDS", "BINNED", "SMOOTH", "CORP", "AUTO", "AUTO_RULE", "BIN_CHOICES", "N_BOOT", "Choice", "controls",
           "resolve_bins", "build", "draw", "interval_bands", "raw_rows", "TITLES", "VENN_ABERS"]

#: What the bins slider offers.
BIN_CHOICES = [5, 10, 15, 20, 30, 50, AUTO]
#: Registry name of the Venn-Abers calibrator, whose interval band the calibration map can draw.
VENN_ABERS = "venn_abers"
#: The spinner's words while a band is resampled.
_SPINNERS = {SMOOTH: "Bootstrapping the band…", CORP: "Resampling the consistency band…"}
_DEFAULT_TITLE = object()


class Choice(NamedTuple):
    """What the reliability chart's widgets chose."""
    kind: str
    band: bool
    n_bins: int | str          # a bin count or AUTO
    strategy: str


def _bins_label(v) -> str:
    return f"auto ({cdiagrams.RULE_SHORT[AUTO_RULE]})" if v == AUTO else str(v)


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
        help=f"auto: {cdiagrams.RULE_SENTENCE[AUTO_RULE]}; the caption says the count.",
        **initial(k_bins, value=n_bins))
    strat = cols[3].segmented_control(
        "Binning", list(metrics.STRATEGIES), key=k_strat, persist_state="session", disabled=kind != BINNED,
        help="Equal-width bins on [0, 1] or equal-count bins (the default, as the metrics table's ECE).",
        **initial(k_strat, default=strategy)) or strategy
    return Choice(kind, bool(band) and kind != BINNED, bins, strat)


def resolve_bins(n_bins, labels, weights=None) -> tuple[int, str]:
    """``(bin count, caption text)``: ``auto`` by :data:`AUTO_RULE` on the rows (the weights' sum on cells);
    :func:`calibdash.diagrams.bin_count`."""
    return cdiagrams.bin_count(n_bins, labels, weights)


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


@bounded_cache.cache_data(show_spinner=False, max_entries=512, budget="diagrams.smooth")
def _smooth(key: str, band: bool, n_boot: int, _p, _y, _w) -> pd.DataFrame:
    return cdiagrams.smooth_column(_p, _y, _w, band=band, n_boot=n_boot)


@bounded_cache.cache_data(show_spinner=False, max_entries=512, budget="diagrams.corp")
def _corp(key: str, band: bool, n_boot: int, _p, _y, _w) -> tuple:
    return tuple(cdiagrams.corp_column(_p, _y, _w, band=band, n_boot=n_boot))


def _cached_smooth(p, y, w, *, band: bool, n_boot: int) -> pd.DataFrame:
    return _smooth(_content_key(p, y, w), band, n_boot, p, y, w)


def _cached_corp(p, y, w, *, band: bool, n_boot: int) -> tuple:
    return _corp(_content_key(p, y, w), band, n_boot, p, y, w)


def build(predictions: pd.DataFrame, labels, weights=None, *, kind: str = BINNED, band: bool = False,
          n_bins=metrics.DEFAULT_N_BINS, strategy: str = metrics.DEFAULT_STRATEGY,
          names: Mapping[str, str] | None = None, title=_DEFAULT_TITLE, height: int = 520,
          n_boot: int = N_BOOT) -> tuple[go.Figure, str]:
    """The reliability chart of every column of ``predictions`` and its caption: ``(figure, caption)``.

    The arguments are those of :func:`calibdash.diagrams.diagram`: ``kind`` one of :data:`KINDS`;
    ``band`` the smooth diagram's 95% bootstrap band or CORP's 90% consistency band (ignored for Binned, which
    draws each bin's interval); ``n_bins`` (a count or ``"auto"``) and ``strategy`` the binned diagram's;
    ``weights`` ``Evaluation.weights`` on score cells; ``title`` default the type's. The smooth and CORP data
    come from this module's caches, under a spinner while a band is resampled. The caption is Markdown, the
    columns' names in it escaped (:func:`pages.parts.text.md`).
    """
    kind = cdiagrams.check_kind(kind)
    if kind == BINNED:
        data = cdiagrams.prepare_binned(predictions, labels, weights, n_bins=n_bins, strategy=strategy)
    else:
        prepare, column = ((cdiagrams.prepare_smooth, _cached_smooth) if kind == SMOOTH
                           else (cdiagrams.prepare_corp, _cached_corp))
        with st.spinner(_SPINNERS[kind]) if band else nullcontext():
            data = prepare(predictions, labels, weights, band=band, n_boot=n_boot, column=column)
    kw = {} if title is _DEFAULT_TITLE else {"title": title}
    shown = {k: md(v) for k, v in cdiagrams.display_names(names, predictions.columns).items()}
    return cdiagrams.plot(data, names=names, height=height, **kw), data.caption(shown)


def draw(predictions: pd.DataFrame, labels, weights=None, **kw) -> go.Figure:
    """The figure of :func:`build` (same arguments)."""
    return build(predictions, labels, weights, **kw)[0]


def interval_bands(models: Mapping[str, object]) -> dict[str, pd.DataFrame]:
    """Key -> Venn-Abers ``[p0, p1]`` band (:func:`calibdash.explain.venn_abers.interval_band` on its
    :func:`~calibdash.explain.venn_abers.band_grid`) for each fitted Venn-Abers calibrator in ``models``."""
    return {k: interval_band(m, band_grid(m)) for k, m in models.items()
            if getattr(type(m), "name", None) == VENN_ABERS}


@bounded_cache.cache_data(show_spinner="Summarising the rows into score cells…",
                          max_entries=8, budget="diagrams.raw_cells")
def _raw_cells(data_key: str, _ss: cdata.ScoreSet) -> tuple:
    c = ccells.aggregate(_ss.scores, _ss.labels)
    return c.weighted_predictions(c.score)


def raw_rows(ss: cdata.ScoreSet) -> tuple:
    """``(scores, labels, weights)`` of all usable rows for the Data page's chart: the rows themselves (weights
    None), or above ``CELLS_MIN_ROWS`` rows their score cells' weighted rows (as ``fitting.raw_summary``)."""
    if evaluation.use_cells_for(ss.n_rows):
        return _raw_cells(ss.content_key(), ss)
    return np.asarray(ss.scores, dtype=float), np.asarray(ss.labels), None
