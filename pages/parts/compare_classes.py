"""Compare on a K-class table: multi-class calibrators on the same held-out rows, their measures with paired
intervals and a verdict, the confidence diagram, class-wise small multiples, the per-class table, the
simplex map (K = 3) and downloads.

Every number and figure comes from :mod:`calibdash.multiclass` and :mod:`calibdash.diagrams`:
the fits and intervals through the caches of :mod:`pages.parts.classes`, the diagrams' data from
:mod:`calibdash.diagrams`. This module only wires widgets to them.
"""
from __future__ import annotations

import numpy as np
import pandas as pd
import streamlit as st

from calibdash import data as cdata, diagrams as mdiagrams, export, multiclass
from calibdash.diagrams import AUTO, BINNINGS, bin_count
from calibdash.errors import DataError
from calibdash import bootstrap as mboot
from calibdash.multiclass import metrics as mmetrics
from calibdash import evaluation as mevaluation
from calibdash.evaluation import ClassEvaluation, fit_notes
from calibdash.safe_text import csv_text
from pages.parts import downloads, url_state
from pages.parts.classes import bootstrap_chosen, class_set_or_stop, evaluate_chosen
from pages.parts.explore_classes import class_metrics_frame
from pages.parts.class_methods import class_hyperparams, class_method_label, class_method_labels
from pages.parts.scheme import current_scheme
from pages.parts.tables import interval_frame
from pages.parts.widgets import hyperparam_panel, initial
from pages.parts.text import chart, md

__all__ = ["METHODS", "FALLBACK", "default_methods", "measure_direction", "compare_classes"]

#: Widget key of the chosen multi-class methods (apart from the binary page's calibrators; also the URL's).
METHODS = url_state.CLASS_METHODS
#: Added to the defaults while fewer than two of them exist.
FALLBACK = "top_label:histogram"
#: What the bins slider offers.
BIN_CHOICES = [5, 10, 15, 20, 30, AUTO]
#: What the class-wise panels' own bins slider offers: by default the rule on the rows per class
#: (:func:`calibdash.diagrams.classwise_bin_count`), a count to override it.
CLASSWISE_BINS = "compare.classes.classwise_bins"
CLASSWISE_CHOICES = [AUTO, 3, 5, 10, 15, 20, 30]
#: What the per-class table shows per method: a column prefix of :func:`calibdash.diagrams.class_table`.
PER_CLASS = {"ECE": "class's ECE", "mean p": "mean predicted probability"}
#: Width in pixels of a "value [low, high]" column of the measures table.
INTERVAL_WIDTH = 172
#: Class-wise panels shown before the user picks classes, and panels per row.
SHOWN_CLASSES, PANEL_COLUMNS = 8, 4
#: The orders of the class picker (:data:`calibdash.diagrams.ORDERS`), in words.
ORDER_NAMES = {"worst": "worst first (largest class-wise ECE, uncalibrated)", "index": "in the file's order",
               "frequency": "most frequent first"}


def default_methods(available, k: int) -> list[str]:
    """The library's defaults for ``k`` classes (:func:`calibdash.evaluation.default_methods`) that
    are ``available``, with :data:`FALLBACK` while fewer than two are."""
    chosen = [m for m in mevaluation.default_methods(k) if m in available]
    if len(chosen) < 2 and FALLBACK in available:
        chosen.append(FALLBACK)
    return chosen


def measure_direction(name: str, values: np.ndarray) -> np.ndarray:
    """A measure's values turned lower-is-better (:meth:`calibdash.measures.registry.Measure.oriented`),
    for the table's bold best."""
    return mmetrics.MEASURES[name].oriented(values)


def _bins_controls(prefix: str) -> tuple:
    """Bins and binning of the class diagrams; keys ``<prefix>.n_bins``, ``<prefix>.strategy``."""
    k_bins, k_strat = f"{prefix}.n_bins", f"{prefix}.strategy"
    b1, b2 = st.columns([3, 2], vertical_alignment="bottom")
    if k_bins in st.session_state and st.session_state[k_bins] not in BIN_CHOICES:
        del st.session_state[k_bins]
    bins = b1.select_slider("Bins of the diagrams", BIN_CHOICES, key=k_bins, persist_state="session",
                            help="15 equal-width bins are the papers' choice for CIFAR and the measures' bins.",
                            **initial(k_bins, value=mmetrics.N_BINS))
    strategy = b2.segmented_control("Binning", list(BINNINGS), key=k_strat, format_func=BINNINGS.get,
                                    required=True, persist_state="session",
                                    **initial(k_strat, default="uniform")) or "uniform"
    return bins, strategy


def _measures(ev: ClassEvaluation, cs: cdata.ClassSet, scheme, params: dict, labels: dict) -> pd.DataFrame:
    """The measures table with paired intervals and the verdict; returns the table (for the download)."""
    st.subheader("Measures on the held-out rows")
    try:
        boot = bootstrap_chosen(ev, cs, scheme, params)
    except DataError as exc:             # over the bootstrap's bound: the measures without intervals
        st.warning(f"**No intervals:** {md(exc)}", icon=":material/block:")
        st.dataframe(class_metrics_frame(ev.metrics, labels))
        return ev.metrics.set_axis(pd.MultiIndex.from_tuples([(c, "value") for c in ev.metrics.columns]), axis=1)
    # cells in bold (the best) are wider than the width the grid measures on plain text: room given by hand
    wide = {name: st.column_config.TextColumn(name, width=INTERVAL_WIDTH, help=mmetrics.MEASURES[name].label)
            for name in dict.fromkeys(boot.table.columns.get_level_values(0))}
    st.dataframe(interval_frame(boot, labels, measure_direction), height=36 * (len(boot.table) + 1) + 3,
                 column_config=wide)
    st.info(mboot.verdict(boot, "ECE", labels), icon=":material/lightbulb:")
    st.caption(f"Each cell: value [{int(round(boot.level * 100))}% paired bootstrap interval]; the best value per "
               f"column is highlighted. {boot.note} "
               + " ".join(f"**{n}**: {m.label}." for n, m in mmetrics.MEASURES.items()))
    return boot.table


def _confidence(ev: ClassEvaluation, labels: dict, bins, strategy: str) -> None:
    data = mdiagrams.prepare_confidence(ev.predictions, ev.labels, n_bins=bins, strategy=strategy)
    chart(st, mdiagrams.plot_confidence(data, names=labels), key="compare.classes.confidence")
    st.caption(data.caption(labels))


def _classwise(ev: ClassEvaluation, cs: cdata.ClassSet, labels: dict, strategy: str) -> None:
    names = [str(c) for c in cs.classes]
    c1, c2 = st.columns([1.3, 4])
    bins = c1.select_slider(
        "Bins of the class-wise panels", CLASSWISE_CHOICES, key=CLASSWISE_BINS, persist_state="session",
        format_func=lambda v: "auto (per class)" if v == AUTO else str(v),
        help="auto: the binary diagrams' rule (cube root, rounded up) on the rows per class, n / K: each panel "
             "rests on about that many rows of its class. A count overrides it.",
        **initial(CLASSWISE_BINS, value=AUTO))
    order = c1.radio("Order of the classes", mdiagrams.ORDERS, key="compare.classes.order",
                     persist_state="session", format_func=ORDER_NAMES.get)
    full = mdiagrams.prepare_classwise(ev.predictions, ev.labels, n_bins=bins, order=order, class_names=names,
                                       strategy=strategy)
    options = [names[c] for c in full.order]
    key = f"compare.classes.picked.{cs.content_key()[:8]}.{order}"
    picked = c2.multiselect("Classes to draw", options, key=key, persist_state="session",
                            help=f"{cs.k} classes, in the order chosen on the left.",
                            **initial(key, default=options[:SHOWN_CLASSES]))
    if not picked:
        st.info("Pick at least one class to draw its reliability.", icon=":material/info:")
        return
    data = mdiagrams.prepare_classwise(ev.predictions, ev.labels, classes=picked, n_bins=bins, order=order,
                                       class_names=names, strategy=strategy)
    chart(st, mdiagrams.plot_classwise(data, names=labels, cols=min(PANEL_COLUMNS, len(picked))),
                    key="compare.classes.classwise")
    st.caption(data.caption(labels) + f" The picker lists the {cs.k} classes "
               + ORDER_NAMES[order] + ".")


def _class_table(ev: ClassEvaluation, cs: cdata.ClassSet, labels: dict, bins, strategy: str) -> None:
    table = mdiagrams.class_table(ev.predictions, ev.labels, class_names=[str(c) for c in cs.classes],
                                  n_bins=bin_count(bins, ev.labels)[0], strategy=strategy)
    shown = st.segmented_control("Per method", list(PER_CLASS), key="compare.classes.per_class", required=True,
                                 format_func=PER_CLASS.get, persist_state="session",
                                 **initial("compare.classes.per_class", default="ECE")) or "ECE"
    out = table[["class", "rows", "frequency"]].assign(
        **{labels.get(k, k): table[f"{shown} ({k})"] for k in ev.predictions}).set_index("class")
    numbers = {c: "{:.4f}" for c in out.columns if c not in ("rows", "frequency")}
    numbers["frequency"] = "{:.2%}"
    st.dataframe(out.style.format(numbers), height=min(36 * (len(out) + 1) + 3, 460))
    st.caption("One row per class, on the held-out rows: its rows and share, then per method "
               + ("the class's ECE (its class-wise reliability binned as the diagrams)." if shown == "ECE" else
                  "the mean probability given to the class, equal to its share when calibrated in the large.")
               + " Click a column to sort.")


def _simplex(ev: ClassEvaluation, cs: cdata.ClassSet, labels: dict) -> None:
    st.subheader("Calibration map on the simplex")
    fitted = list(ev.models)
    if not fitted:
        st.info("Choose a calibrator above to see its map.", icon=":material/info:")
        return
    key = st.selectbox("Calibrator", fitted, key="compare.classes.simplex", format_func=labels.get,
                       persist_state="session") or fitted[0]
    model = ev.models[key if key in ev.models else fitted[0]]
    # the grid holds probabilities; a calibrator of logits reads their logarithms (softmax(log p) = p)
    data = mdiagrams.prepare_simplex_map(lambda G: model.predict_proba(np.log(G) if model.logits else G))
    chart(st, mdiagrams.plot_simplex_map(data, class_names=[str(c) for c in cs.classes],
                                                 title=f"{labels.get(key, key)} on the simplex"),
                    key="compare.classes.simplex_map")
    st.caption(data.caption() + (" The calibrator reads logits: each grid point is given as its log-"
                                 "probabilities." if model.logits else ""))


def _downloads(ev: ClassEvaluation, cs: cdata.ClassSet, table: pd.DataFrame, labels: dict) -> None:
    st.subheader("Downloads")
    d1, d2 = st.columns(2)
    flat = table.copy()
    flat.columns = [f"{m}_{s}" for m, s in flat.columns]
    d1.download_button("Measures table (CSV)", csv_text(flat.rename_axis("method")).encode(), "measures.csv",
                       "text/csv", key="compare.classes.dl.measures", icon=":material/download:")
    d1.download_button("Calibrated probabilities (CSV)", downloads.class_probabilities_csv(ev, cs.classes),
                       "calibrated_probabilities.csv", "text/csv", key="compare.classes.dl.pred",
                       icon=":material/download:", help="One line per held-out row: its position among the "
                                                        "usable rows, its class, each method's probabilities.")
    for key, model in ev.models.items():
        d2.download_button(f"Fitted {labels.get(key, key)} (JSON)", export.dumps(model),
                           f"{key.replace(':', '_')}.json", "application/json",
                           key=f"compare.classes.dl.model.{key}", icon=":material/save:",
                           help="Load it with calibdash.export.loads.")


def _held_back(params: dict, k: int) -> dict:
    """``params`` without the full K x K maps above :data:`~calibdash.evaluation.FULL_MAP_MAX_K`
    classes, unless the user asks for them (their penalty search takes minutes there): said on the page."""
    full = [m for m in params if getattr(multiclass.get_class(m), "matrix", None) == "full"]
    if k <= mevaluation.FULL_MAP_MAX_K or not full:
        return params
    names = ", ".join(class_method_label(m) for m in full)
    if st.toggle(f"Fit {names} too", key="compare.mc.full_maps",
                 help=f"A full map has K² + K = {k * k + k:,} parameters at K = {k}; choosing its penalties "
                      "fits it 31 times, which takes minutes on a small server."):
        return params
    st.info(f"{names} not fitted yet: {k} classes make a full K × K map slow to fit (minutes). "
            "Turn on the switch above to fit it.", icon=":material/hourglass_empty:")
    return {m: p for m, p in params.items() if m not in full}


def compare_classes() -> None:
    """The Compare page for a table read as K classes."""
    cs = class_set_or_stop()
    scheme = current_scheme(cs)
    available = multiclass.available()
    chosen = st.multiselect("Multi-class calibrators", available, key=METHODS, format_func=class_method_label,
                            persist_state="session",
                            help="Every method is fitted on the same rows and judged on the same held-out rows. "
                                 "ovr: one binary calibrator per class; top_label: the top class's probability.",
                            **initial(METHODS, default=default_methods(available, cs.k)))
    params = hyperparam_panel(chosen, label=class_method_label, specs_of=class_hyperparams)
    url_state.write_url_state((), class_methods=chosen)        # the view travels in the address bar
    params = _held_back(params, cs.k)
    ev = evaluate_chosen(cs, scheme, params)
    labels = class_method_labels(ev.predictions)
    what = "logits, softmaxed for the uncalibrated row" if cs.logits else "probabilities"
    st.caption(f"{md(cs.name)} · **K = {cs.k}** classes ({what}) · judged on {len(ev.rows):,} held-out rows · "
               f"{md(scheme.describe())}" + (f" · {md(ev.note)}" if ev.note else "")
               + " · the address bar holds this view: copy it to share")
    notes = fit_notes(ev.models)
    if notes:
        st.warning("**What the fits say:**\n" + "\n".join(f"- {md(n)}" for n in notes), icon=":material/info:")
    table = _measures(ev, cs, scheme, params, labels)
    st.subheader("Reliability")
    bins, strategy = _bins_controls("compare.classes")
    confidence, classwise = st.tabs(["Confidence", "Class-wise"])
    with confidence:
        _confidence(ev, labels, bins, strategy)
    with classwise:
        _classwise(ev, cs, labels, strategy)
    st.subheader("Per class")
    _class_table(ev, cs, labels, bins, strategy)
    if cs.k == 3:
        _simplex(ev, cs, labels)
    _downloads(ev, cs, table, labels)
