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

from calibdash.evaluation import cells as ccells, holdout as evaluation
from calibdash import data as cdata, diagrams as cdiagrams
from calibdash.measures import calibration as metrics
from calibdash.diagrams import AUTO, AUTO_RULE, BINNED, CORP, KINDS, N_BOOT, SMOOTH, TITLES
from calibdash.explain.venn_abers import band_grid, interval_band
from pages.parts.text import chart, md
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
             strategy: str = metrics.DEFAULT_STRATEGY, kinds=KINDS) -> Choice:
    """The chart's widgets: diagram type, band, bins and binning; keys ``<prefix>.diagram``, ``.band``,
    ``.n_bins``, ``.strategy`` (kept for the session).

    ``cols``: four containers for the four widgets (default: a new row of columns); pass the same container
    four times to stack them. ``n_bins`` and ``strategy`` are the defaults of the binned diagram. The bins
    widgets are disabled, not hidden, for Smooth and CORP (which have no bins), so their values stay put.
    ``kinds``: the diagram types the problem's reduction offers (a K-class table's confidence and class-wise
    diagrams are binned only: then only the bins widgets are drawn).
    """
    if len(kinds) == 1:
        cols = [None, None] + list(cols[2:] if cols is not None else
                                   st.columns([3, 2], vertical_alignment="bottom"))
    elif cols is None:
        cols = st.columns([2.2, 1, 2, 1.8], vertical_alignment="bottom")
    k_kind, k_band, k_bins, k_strat = (f"{prefix}.{n}" for n in ("diagram", "band", "n_bins", "strategy"))
    kind = kinds[0] if len(kinds) == 1 else cols[0].segmented_control(
        "Diagram", list(KINDS), key=k_kind, persist_state="session", required=True,
        help="Binned: observed frequency per bin. Smooth: the kernel-smoothed curve of SmoothECE (Błasiok & "
             "Nakkiran). CORP: the isotonic (PAV) fit of the labels on the scores, no binning choice "
             "(Dimitriadis, Gneiting & Jordan).",
        **initial(k_kind, default=BINNED)) or BINNED
    band = len(kinds) > 1 and cols[1].toggle(
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
        format_func=cdiagrams.BINNINGS.get if len(kinds) == 1 else str,     # the words where there is room
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

    The arguments are those of :func:`calibdash.diagrams.prepare` and the data's ``figure``: ``kind`` one of
    :data:`KINDS`; ``band`` the smooth diagram's 95% bootstrap band or CORP's 90% consistency band (ignored for
    Binned, which draws each bin's interval); ``n_bins`` (a count or ``"auto"``) and ``strategy`` the binned diagram's;
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


# -- the K-class views: confidence, class-wise small multiples, the simplex map ---------------------------
#: Class-wise panels shown before the user picks classes, and panels per row.
SHOWN_CLASSES, PANEL_COLUMNS = 8, 4
#: Widget key of the class-wise panels' own bins: by default the rule on the rows per class
#: (:func:`calibdash.diagrams.classwise_bin_count`), a count to override it.
CLASSWISE_BINS = "compare.classes.classwise_bins"
CLASSWISE_CHOICES = [AUTO, 3, 5, 10, 15, 20, 30]
#: The orders of the class picker (:data:`calibdash.diagrams.ORDERS`), in words.
ORDER_NAMES = {"worst": "worst first (largest class-wise ECE, uncalibrated)", "index": "in the file's order",
               "frequency": "most frequent first"}


def confidence(box, ev, labels: dict, diagram: Choice, key: str, *, data=None, **kw) -> go.Figure:
    """The confidence (top-label) reliability of every method of a K-class evaluation in ``box``, captioned;
    ``data``: the diagram's data when the caller prepared (and cached) it."""
    if data is None:
        data = cdiagrams.prepare_confidence(ev.predictions, ev.labels, n_bins=diagram.n_bins,
                                            strategy=diagram.strategy)
    fig = cdiagrams.plot_confidence(data, names=labels, **kw)
    chart(box, fig, key=key)
    box.caption(data.caption(labels))
    return fig


def classwise(box, ev, labels: dict, class_names: list, n_bins, *, key: str, **kw) -> None:
    """Class-wise reliability panels (the worst classes first) in ``box``, captioned."""
    wise = cdiagrams.prepare_classwise(ev.predictions, ev.labels, n_bins=n_bins, class_names=class_names, **kw)
    chart(box, cdiagrams.plot_classwise(wise, names=labels, cols=3, panel_height=250,
                                          title="Class-wise reliability: before and after (worst classes)"),
          key=key)
    box.caption(wise.caption(labels))


def classwise_picked(ev, cs: cdata.ClassSet, labels: dict, strategy: str) -> None:
    """Compare's class-wise small multiples: their own bins, the order of the classes, the classes to draw."""
    names = [str(c) for c in cs.classes]
    c1, c2 = st.columns([1.3, 4])
    bins = c1.select_slider(
        "Bins of the class-wise panels", CLASSWISE_CHOICES, key=CLASSWISE_BINS, persist_state="session",
        format_func=lambda v: "auto (per class)" if v == AUTO else str(v),
        help="auto: the binary diagrams' rule (cube root, rounded up) on the rows per class, n / K: each panel "
             "rests on about that many rows of its class. A count overrides it.",
        **initial(CLASSWISE_BINS, value=AUTO))
    order = c1.radio("Order of the classes", cdiagrams.ORDERS, key="compare.classes.order",
                     persist_state="session", format_func=ORDER_NAMES.get)
    full = cdiagrams.prepare_classwise(ev.predictions, ev.labels, n_bins=bins, order=order, class_names=names,
                                       strategy=strategy)
    options = [names[c] for c in full.order]
    key = f"compare.classes.picked.{cs.content_key()[:8]}.{order}"
    picked = c2.multiselect("Classes to draw", options, key=key, persist_state="session",
                            help=f"{cs.k} classes, in the order chosen on the left.",
                            **initial(key, default=options[:SHOWN_CLASSES]))
    if not picked:
        st.info("Pick at least one class to draw its reliability.", icon=":material/info:")
        return
    data = cdiagrams.prepare_classwise(ev.predictions, ev.labels, classes=picked, n_bins=bins, order=order,
                                       class_names=names, strategy=strategy)
    chart(st, cdiagrams.plot_classwise(data, names=labels, cols=min(PANEL_COLUMNS, len(picked))),
          key="compare.classes.classwise")
    st.caption(data.caption(labels) + f" The picker lists the {cs.k} classes " + ORDER_NAMES[order] + ".")


def simplex(ev, cs: cdata.ClassSet, labels: dict) -> None:
    """The calibration map of one fitted method on the simplex (K = 3)."""
    st.subheader("Calibration map on the simplex")
    fitted = list(ev.models)
    if not fitted:
        st.info("Choose a calibrator above to see its map.", icon=":material/info:")
        return
    key = st.selectbox("Calibrator", fitted, key="compare.classes.simplex", format_func=labels.get,
                       persist_state="session") or fitted[0]
    model = ev.models[key if key in ev.models else fitted[0]]
    # the grid holds probabilities; a calibrator of logits reads their logarithms (softmax(log p) = p)
    data = cdiagrams.prepare_simplex_map(lambda G: model.predict_proba(np.log(G) if model.logits else G))
    chart(st, cdiagrams.plot_simplex_map(data, class_names=[str(c) for c in cs.classes],
                                           title=f"{labels.get(key, key)} on the simplex"),
          key="compare.classes.simplex_map")
    st.caption(data.caption() + (" The calibrator reads logits: each grid point is given as its log-"
                                 "probabilities." if model.logits else ""))
