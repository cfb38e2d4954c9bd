"""The HTML document (:func:`build_report`), its texts, and the pipelines from a file, a ScoreSet or a ClassSet to
it (load, fit, judge, bootstrap, measure, write: ``python -m calibdash report``)."""
from __future__ import annotations

from datetime import datetime, timezone
from typing import Mapping, Sequence

import numpy as np
import pandas as pd

from .. import calibrators, diagrams, measures
from ..core import __version__
from ..evaluation import bootstrap as cboot
from ..measures import calibration as metrics
from ..evaluation.bootstrap import BootstrapResult
from ..core.errors import DataError, SettingsError
from ..evaluation.holdout import (MAX_FIT_ROWS, UNCALIBRATED, Evaluation, Scheme, default_methods, evaluate_classes,
                                  evaluate_score_set)
from ..evaluation.methods import DEFAULT_METHODS, resolve
from ..measures import class_measures as mmetrics
from .markup import escape, interval_table, methods_section, number, page

__all__ = []

#: Figure height in pixels (the dashboard's default).
FIG_HEIGHT = 520
#: Class-wise panels a K-class report draws (the worst classes), two rows of four.
PANELS = 8


def default_labels(keys, models: Mapping | None = None) -> dict[str, str]:
    """Key -> display name: "Uncalibrated" for the raw scores, the calibrator's label, else the key."""
    models = models or {}
    out = {}
    for key in keys:
        label = "Uncalibrated" if key == UNCALIBRATED else getattr(models.get(key), "label", "")
        if not label:
            try:
                label = calibrators.get_class(key).label
            except SettingsError:
                label = ""
        out[key] = label or str(key)
    return out


def measure_table(ev: Evaluation, names: Sequence[str] | None = None) -> tuple[pd.DataFrame, list[str]]:
    """:func:`calibdash.measures.table` of ``ev``'s judged rows, a failing measure left NaN.

    A measure that cannot be computed on a method's predictions (ICI's loess where most predictions tie) raises
    DataError; that method's measures are then computed one by one, the failing ones NaN.

    Returns
    -------
    (DataFrame, list of str)
        Methods x measures; and one note per method whose measures failed, saying which and why.
    """
    names = measures.check_names(names)
    labels = default_labels(ev.predictions.columns, ev.models)
    rows, notes = {}, []
    for key in ev.predictions.columns:
        p = ev.predictions[key].to_numpy()
        try:
            rows[key] = measures.compute(p, ev.labels, ev.weights, names)
            continue
        except DataError:
            pass
        values, failed, why = {}, [], ""
        for name in names:
            try:
                values[name] = measures.compute(p, ev.labels, ev.weights, [name])[name]
            except DataError as exc:
                values[name], why = np.nan, why or str(exc)
                failed.append(name)
        rows[key] = values
        notes.append(f"{', '.join(failed)} of {labels[key]} could not be computed: {why}")
    return pd.DataFrame(rows).T.reindex(columns=list(names)), notes


def describe_source(ss) -> str:
    """One line saying what a :class:`~calibdash.data.ScoreSet` holds: file, columns, rows, positives."""
    pos = int(np.asarray(ss.labels).sum())
    mapped = " (mapped to [0, 1] by the logistic function)" if ss.score in ss.report.mapped else ""
    parts = [ss.name, f"score column {ss.score!r}{mapped}",
             f"label column {ss.label_column!r} (positive class: {ss.positive_label!r})",
             f"{_usable(ss)}, {pos:,} positives ({100 * pos / max(ss.n_rows, 1):.1f}%)"]
    if ss.feature_columns:
        parts.append(f"feature columns {', '.join(map(repr, ss.feature_columns))}")
    return _joined(ss, parts)


def _usable(data) -> str:
    read = data.report.n_read
    return f"{data.n_rows:,} usable rows" + (f" of {read:,} read" if read != data.n_rows else "")


def _joined(data, parts) -> str:
    """The Source line's parts, the split column (when there is one) after the rows."""
    split = [f"split column {data.split_column!r}"] if data.split_column else []
    return " · ".join(parts[:4] + split + parts[4:])


def describe_class_source(cs) -> str:
    """One line saying what a :class:`calibdash.data.ClassSet` holds: file, class columns, label, rows."""
    what = "logits" if cs.logits else "probabilities"
    cols = cs.columns if len(cs.columns) <= 6 else [*cs.columns[:3], "...", cs.columns[-1]]
    return _joined(cs, [cs.name, f"{cs.k} classes, {what} in {', '.join(map(str, cols))}",
                        f"label column {cs.label_column!r}", _usable(cs)])


def _figures(ev: Evaluation, labels: Mapping[str, str], rel_data, log_x: bool, features):
    from .. import figures                     # plotly: the [app] extra

    rel = diagrams.plot(rel_data, names=labels, height=FIG_HEIGHT)
    raw = ev.predictions[UNCALIBRATED].to_numpy()
    feats = None if features is None or ev.weights is not None else features
    curves = figures.map_curves(ev.models, raw, feats, sample_weight=ev.weights)
    cmap = figures.calibration_map(curves, raw, labels=labels, log_x=log_x, sample_weight=ev.weights,
                                   height=FIG_HEIGHT)
    return [("reliability", rel), ("calibration-map", cmap)]


def check_plotlyjs(include_plotlyjs) -> None:
    """SettingsError unless ``include_plotlyjs`` is True (plotly.js inline) or "cdn"."""
    if not (include_plotlyjs is True or include_plotlyjs == "cdn"):
        raise SettingsError(f"include_plotlyjs must be True (inline, opens offline) or 'cdn', "
                            f"got {include_plotlyjs!r}.")


def figure_html(figs, include_plotlyjs) -> list[str]:
    """Each figure's ``<div>``; plotly.js (inline or its CDN tag) goes with the first one only. Names from the
    data in a figure are plain text (:func:`calibdash.figures.text.plain_figure`)."""
    import plotly.io as pio

    from calibdash.figures.text import plain_figure

    config = {"responsive": True, "displaylogo": False, "toImageButtonOptions": {"format": "png", "scale": 2}}
    return [pio.to_html(plain_figure(fig), include_plotlyjs=include_plotlyjs if i == 0 else False, full_html=False,
                        div_id=f"fig-{key}", config=config, default_height=f"{FIG_HEIGHT}px")
            for i, (key, fig) in enumerate(figs)]


def build_report(evaluation, boot: BootstrapResult, *, title: str, source_description: str,
                 scheme_description: str, labels: Mapping[str, str] | None = None,
                 measures_table: pd.DataFrame | BootstrapResult | None = None, notes: Sequence[str] = (),
                 include_plotlyjs=True, n_bins: int = metrics.DEFAULT_N_BINS,
                 strategy: str = metrics.DEFAULT_STRATEGY, log_x: bool = False, features: pd.DataFrame | None = None,
                 calibration_metric: str = "ECE", generated: datetime | None = None, diagram: str = "binned",
                 panels: int = PANELS) -> str:
    """One self-contained HTML document reporting ``evaluation`` and its intervals ``boot``.

    Parameters
    ----------
    evaluation : Evaluation
        Its predictions draw the figures and give the judged rows; its models the calibration map and papers.
    boot : BootstrapResult
        The metrics with intervals (:func:`calibdash.evaluation.bootstrap.bootstrap_evaluation`, or the Compare
        page's); the verdict is drawn from it.
    title, source_description, scheme_description : str
        The page's heading and ``<title>``; where the rows came from (:func:`describe_source`); how they were split
        and judged (:meth:`Scheme.describe`, with ``on_cells`` on score cells).
    labels : mapping key -> display name, optional
        Default :func:`default_labels`.
    measures_table : DataFrame or BootstrapResult, optional
        Binary: methods x measures (:func:`measure_table`, the default), or
        :func:`calibdash.evaluation.bootstrap.bootstrap_measures`' result for intervals; an empty DataFrame leaves
        the section out.
    notes : sequence of str
        Shown as a list (a K-class evaluation's notes are added).
    include_plotlyjs : True or "cdn"
        True (default): plotly.js inline once, the file opens offline (about 4.8 MB); ``"cdn"``: a ``<script
        src>`` to plotly's CDN (a small file whose charts need the network).
    n_bins, strategy
        Bins of the binned reliability diagram (default: the metrics table's); ``n_bins`` may be ``"auto"``
        (:func:`calibdash.diagrams.auto_bin_count`'s cube-root rule).
    log_x, features
        Log-scaled score axis of the calibration map; the judged rows' feature columns, for a feature-aware
        model's map (row path only).
    calibration_metric : str, default "ECE"
        The metric the binary verdict ranks by (K classes: :func:`calibdash.evaluation.bootstrap.verdict`'s
        confidence ECE among the methods whose accuracy is not shown below the raw probabilities').
    generated : datetime, optional
        The date printed (default: now, UTC).
    diagram : {"binned", "smooth", "corp"}
        Binary: the reliability diagram (:data:`calibdash.diagrams.KINDS`, any case): binned, SmoothECE's
        smoothed curve, or the CORP (PAV) curve with the MCB/DSC/UNC decomposition in its legend.
    panels : int
        K classes: the class-wise panels drawn, the worst classes (largest raw per-class ECE) first.

    Returns
    -------
    str
        The HTML document.

    Raises
    ------
    SettingsError
        ``include_plotlyjs`` is neither True nor "cdn", or ``diagram`` not a diagram type.
    """
    check_plotlyjs(include_plotlyjs)
    ev = evaluation
    classes = getattr(ev, "classes", None)
    k_class = classes is not None and len(classes) > 2        # K classes; binary is K = 2 with one score
    if not k_class:
        diagrams.check_kind(diagram)
    keys = list(ev.predictions) if k_class else list(dict.fromkeys([*boot.table.index, *ev.predictions.columns]))
    labels = {**default_labels(keys, ev.models), **dict(labels or {})}
    when = (generated or datetime.now(timezone.utc)).strftime("%Y-%m-%d %H:%M %Z").strip()
    level = int(round(100 * boot.level))
    if k_class:
        verdict, data, sections, notes, what = _class_parts(ev, boot, labels, level, list(notes), panels,
                                                            include_plotlyjs)
    else:
        verdict, data, sections, notes, what = _binary_parts(
            ev, boot, labels, level, list(notes), measures_table, include_plotlyjs, n_bins=n_bins,
            strategy=strategy, log_x=log_x, features=features, calibration_metric=calibration_metric,
            diagram=diagram)
    data_html = "".join(f"<dt>{escape(k)}</dt><dd>{escape(v)}</dd>" for k, v in [
        ("Source", source_description), data[0], ("Split and judged by", scheme_description), *data[1:]])
    notes_html = ("<section><h2>Notes</h2><ul class=\"notes\">"
                  + "".join(f"<li>{escape(n)}</li>" for n in notes) + "</ul></section>") if notes else ""
    body = f"""<p class="verdict" id="verdict"><strong>Verdict</strong>{escape(verdict)}</p>
<section><h2>Data</h2><dl class="data">{data_html}</dl></section>
{sections}
{methods_section(ev, labels)}
</section>
{notes_html}"""
    footer = f"Made with calibdash {escape(__version__)} on {escape(when)}: {what} as the Data section says."
    return page(title, when, body, footer)


def _binary_parts(ev: Evaluation, boot, labels, level: int, notes: list, measures_table, include_plotlyjs, *,
                  n_bins, strategy, log_x, features, calibration_metric, diagram):
    """A binary report's verdict, Data entries, sections up to the methods' heading, notes and footer phrase."""
    if measures_table is None:
        measures_table, failed = measure_table(ev)
        notes += failed
    verdict = cboot.verdict(boot, calibration_metric, labels)
    cells_text = (f"yes: {ev.note}; each metric, figure and interval weighs a cell by the rows it holds"
                  if ev.weights is not None else "no: every held-out row was used")
    w = np.ones(ev.labels.size) if ev.weights is None else ev.weights
    pos = float(np.sum(w * ev.labels))
    judged = (f"{ev.n_judged:,} held-out rows, {int(round(pos)):,} positives "
              f"({100 * pos / max(float(w.sum()), 1e-300):.1f}%)")
    how = (f"{boot.n_boot} resamples of the held-out rows" if ev.weights is None else
           f"{boot.n_boot} Poisson resamples of the {ev.n_judged:,} held-out rows, drawn per score cell")
    data = [("Judged", judged), ("Score cells", cells_text), ("ECE and MCE", ev.binning),
            ("Intervals", f"{level}% paired bootstrap percentile intervals, {how}"
                          + (f". {boot.note}" if boot.note else ""))]
    rel_data = diagrams.prepare(diagram, ev.predictions, ev.labels, ev.weights, n_bins=n_bins, strategy=strategy)
    figs = figure_html(_figures(ev, labels, rel_data, log_x, features), include_plotlyjs)
    if rel_data.kind == diagrams.BINNED:
        rel_caption = (f"The reliability diagram: observed frequency of positives against mean prediction in "
                       f"{escape(metrics.binning_label(rel_data.n_bins, strategy))}, each with its 95% interval, and "
                       "the rows per bin underneath.")
    else:
        rel_caption = escape(rel_data.caption(labels))
    fig_caption = (
        f"{rel_caption} The calibration map: each calibrator's output against the raw score, with the "
        "scores' histogram underneath. Hover for values; click a legend entry to hide or show a method; "
        "drag to zoom, double-click to reset.")
    measures_html, boxed = "", isinstance(measures_table, BootstrapResult)
    if boxed or len(measures_table.columns) > 0:
        how = f"value [{int(round(100 * measures_table.level))}% paired bootstrap interval]" if boxed else "value"
        measures_html = (
            "<section><h2>More calibration measures</h2>"
            + interval_table(measures_table, labels, "measures")
            + f'<p class="caption">Each cell: {how}, on the same held-out rows'
            + (" (weighted by the rows each score cell holds)" if ev.weights is not None else "")
            + "; the best value of each measure in bold (closest to the ideal for CITL, Slope and "
              "Spiegelhalter's z; UNC is the same for every method); a dash marks a measure that cannot be "
              "computed on a method's predictions. Hover a heading for what it measures and its source."
            + (f" {escape(measures_table.note)}" if boxed and measures_table.note else "") + "</p></section>")
    sections = f"""<section><h2>Metrics on the held-out rows</h2>
{interval_table(boot, labels, "metrics")}
<p class="caption">Each cell: value [{level}% paired bootstrap interval]; the best value of each metric in bold.
Lower is better except AUC and ACC. ECE and MCE use {escape(ev.binning)}. Hover a heading for what it measures.</p>
</section>
<section><h2>Reliability and calibration map</h2>
<div class="figures">
<figure>{figs[0]}</figure>
<figure>{figs[1]}</figure>
</div>
<p class="caption">{fig_caption}</p>
</section>
{measures_html}
<section><h2>Methods</h2>"""
    return verdict, data, sections, notes, "calibration of binary classifiers, each method\nfitted and judged"


def class_heading(name: str):
    """A K-class measure's column for :func:`calibdash.report.markup.interval_table`: (arrow, tooltip,
    orient), from :data:`calibdash.measures.class_measures.MEASURES`."""
    m = mmetrics.MEASURES[name]
    arrow = {True: "↓", False: "↑", None: "→ 0"}[m.lower_is_better]
    return arrow, f"{m.label} ({m.phrase()}): {m.caption}", m.oriented


def class_table_html(table: pd.DataFrame, methods: Sequence[str], labels: Mapping[str, str]) -> str:
    """The per-class table (:func:`calibdash.diagrams.class_table`) as HTML: one row per class
    with its rows and frequency, then per method its mean probability of the class and the class's ECE;
    each row's lowest ECE in bold."""
    head = ('<th scope="col">Class</th><th scope="col">Rows</th><th scope="col" title="share of the judged rows '
            'labelled with the class">Frequency</th>')
    for key in methods:
        name = escape(labels.get(key, key))
        head += (f'<th scope="col" title="mean predicted probability of the class over all judged rows (equal to '
                 f'the frequency when calibrated in the large)">{name}<span class="dir">mean p</span></th>'
                 f'<th scope="col" title="the class\'s ECE, one-vs-rest, {mmetrics.N_BINS} equal-width bins">'
                 f'{name}<span class="dir">ECE ↓</span></th>')
    body = []
    for _, row in table.iterrows():
        eces = np.array([row[f"ECE ({key})"] for key in methods], dtype=float)
        low = np.nanmin(eces) if np.isfinite(eces).any() else np.nan
        cells = [f"<td>{int(row['rows']):,}</td>" if float(row["rows"]).is_integer() else
                 f"<td>{number(row['rows'], 1)}</td>", f"<td>{number(row['frequency'])}</td>"]
        for key, e in zip(methods, eces):
            best = ' class="best"' if np.isfinite(e) and np.isclose(e, low) else ""
            cells.append(f"<td>{number(row[f'mean p ({key})'])}</td><td{best}>{number(e)}</td>")
        body.append(f'<tr><th scope="row">{escape(row["class"])}</th>{"".join(cells)}</tr>')
    return (f'<div class="scroll"><table class="measures classes"><thead><tr>{head}</tr></thead>'
            f'<tbody>{"".join(body)}</tbody></table></div>')


def _class_parts(ev, boot, labels, level: int, notes: list, panels: int, include_plotlyjs):
    """A K-class report's verdict, Data entries, sections up to the methods' heading, notes and footer phrase."""
    keys = list(ev.predictions)
    names = diagrams.class_labels(len(ev.classes), [str(c) for c in ev.classes])
    data = [("Judged", f"{ev.rows.size:,} held-out rows of {len(names)} classes"),
            ("Bins", f"ECE, MCE and class-wise ECE: {mmetrics.N_BINS} equal-width bins; dCE: {mmetrics.N_BINS} "
                     "equal-mass bins"),
            ("Intervals", f"{level}% paired bootstrap percentile intervals, {boot.n_boot} resamples of the "
                          f"held-out rows. {boot.note}")]
    conf = diagrams.prepare_confidence(ev.predictions, ev.labels)
    cw = diagrams.prepare_classwise(ev.predictions, ev.labels, class_names=names, max_panels=panels)
    divs = figure_html([("confidence", diagrams.plot_confidence(conf, names=labels)),
                        ("classwise", diagrams.plot_classwise(cw, names=labels))], include_plotlyjs)
    table = diagrams.class_table(ev.predictions, ev.labels, class_names=names)
    sections = f"""<section id="measures"><h2>Measures on the held-out rows</h2>
{interval_table(boot, labels, "metrics", heading=class_heading)}
<p class="caption">Each cell: value [{level}% paired bootstrap interval]; the best value of each measure in bold
(closest to 0 for Overconfidence). Hover a heading for what it measures and its source.</p>
</section>
<section id="reliability"><h2>Confidence reliability</h2>
<div class="figures"><figure>{divs[0]}</figure></div>
<p class="caption">{escape(conf.caption(labels))}</p>
</section>
<section id="classwise"><h2>Class-wise reliability</h2>
<figure style="max-width:100%">{divs[1]}</figure>
<p class="caption">{escape(cw.caption(labels))}</p>
</section>
<section id="classes"><h2>Per class</h2>
{class_table_html(table, keys, labels)}
<p class="caption">Per class: its rows among the held-out ones and their share, then for each method the mean
probability it gives the class over all rows (calibrated in the large when it equals the frequency) and the
class's ECE (one-vs-rest, {mmetrics.N_BINS} equal-width bins), the lowest of each row in bold.</p>
</section>
<section id="methods"><h2>Methods</h2>"""
    return (cboot.verdict(boot, labels=labels), data, sections, [*notes, *ev.notes],
            "calibration of a K-class classifier's probabilities, each method fitted and judged")


#: Paired resamples of a K-class report's intervals unless told otherwise.
CLASS_N_BOOT = 200


def report_for_file(path, methods=None, score: str | None = None, label: str | None = None,
                    scheme: Scheme | None = None, **options) -> str:
    """The HTML report of a CSV, .csv.gz or Parquet file: load it (:func:`calibdash.data.load_scores`, the
    ``score`` and ``label`` columns guessed when not given), then :func:`report_for_score_set` with the other
    arguments."""
    from ..data import load_scores

    return report_for_score_set(load_scores(path, score=score, label=label), methods, scheme, **options)


def report_for_score_set(ss, methods=None, scheme: Scheme | None = None, *,
                         params: Mapping[str, Mapping] | None = None, cells: str = "auto",
                         n_boot: int | None = None, title: str | None = None, include_plotlyjs=True,
                         generated: datetime | None = None, diagram: str = "binned") -> str:
    """The report of a :class:`~calibdash.data.ScoreSet`: fit and judge ``methods`` (default
    :data:`calibdash.evaluation.methods.DEFAULT_METHODS`, with ``params`` and ``cells`` as
    :func:`calibdash.evaluation.holdout.evaluate_score_set` takes them) on ``scheme`` (default ``Scheme()``) as
    ``python -m calibdash evaluate`` does, bootstrap (``n_boot`` resamples, default the Compare page's), measure,
    write. ``title`` defaults to ``"Calibration report: <file name>"``; ``include_plotlyjs``, ``generated`` and
    ``diagram`` as for :func:`build_report`."""
    diagrams.check_kind(diagram)                # before the fits, not after
    scheme = scheme or Scheme()
    ev = evaluate_score_set(ss, resolve(DEFAULT_METHODS if methods is None else methods, params), scheme,
                            cells=cells)
    boot = cboot.bootstrap_evaluation(ev, n_boot)
    table, failed = measure_table(ev)
    feats = (ss.features.iloc[ev.rows].reset_index(drop=True)
             if ss.features is not None and ev.weights is None and any(
                 getattr(m, "uses_features", False) for m in ev.models.values()) else None)
    return build_report(ev, boot, title=title or f"Calibration report: {ss.name}",
                        source_description=describe_source(ss),
                        scheme_description=scheme.describe(on_cells=ev.weights is not None),
                        measures_table=table, notes=[*ss.report.messages, *failed],
                        features=feats, include_plotlyjs=include_plotlyjs, generated=generated, diagram=diagram)


def report_for_class_set(cs, methods=None, scheme: Scheme | None = None, *, params: Mapping[str, Mapping] | None = None,
                         n_boot: int = CLASS_N_BOOT, title: str | None = None, include_plotlyjs=True,
                         generated: datetime | None = None, max_fit_rows: int | None = MAX_FIT_ROWS) -> str:
    """The report of a :class:`calibdash.data.ClassSet`: ``methods`` (default: the K-class defaults for its K)
    fitted and judged by :func:`~calibdash.evaluation.holdout.evaluate_classes` (with ``max_fit_rows``), ``n_boot``
    paired resamples; the other arguments as for :func:`report_for_score_set`."""
    check_plotlyjs(include_plotlyjs)              # before the fits, not after
    scheme = scheme or Scheme()
    ev = evaluate_classes(cs.scores(), cs.labels, default_methods(cs.k) if methods is None else methods, scheme,
                          split=cs.split, classes=cs.classes, params=params, max_fit_rows=max_fit_rows)
    boot = cboot.bootstrap_multiclass(ev.predictions, ev.labels, n_boot=n_boot, seed=scheme.seed)
    return build_report(ev, boot, title=title or f"Calibration report: {cs.name}",
                        source_description=describe_class_source(cs), scheme_description=scheme.describe(),
                        notes=cs.report.messages, include_plotlyjs=include_plotlyjs, generated=generated)
