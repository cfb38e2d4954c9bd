"""A one-page HTML report of a held-out comparison of calibrators.

:func:`build_report` turns what the Compare page and ``python -m calibdash
evaluate`` compute (an :class:`~calibdash.evaluation.Evaluation` and its
:class:`~calibdash.bootstrap.BootstrapResult`) into one self-contained HTML
document, in this order:

1. the verdict sentence (:func:`calibdash.bootstrap.verdict`);
2. the data: where the rows came from, how many were judged and how many of
   them are positives, how the rows were split and judged, whether they were
   summarised into score cells (:mod:`calibdash.cells`), the binning of ECE
   and MCE and how the intervals were drawn;
3. the metrics table, each cell ``value [low, high]`` (the paired bootstrap's
   percentile interval), the best value of each metric in bold, as the
   dashboard shows it;
4. the reliability diagram (binned, smooth or CORP: ``diagram=``, drawn by
   :mod:`calibdash.diagrams` and :mod:`calibdash.figures.diagrams` as on the
   pages) and the calibration map, as interactive plotly figures (hover,
   zoom, a legend that hides and shows methods);
5. the measures of :mod:`calibdash.measures` (smooth ECE, ICI, calibration
   slope, CORP MCB/DSC/UNC, ...), the best of each in bold;
6. the methods: their hyperparameters, fitting time and paper
   (:attr:`Calibrator.paper`); then the notes, the calibdash version and the
   date.

Offline by default: plotly.js (about 4.8 MB) is written into the document
once, so the file opens without a network and keeps working when plotly's CDN
changes; ``include_plotlyjs="cdn"`` writes a ``<script src>`` to plotly's CDN
instead (a file of about 100 KB that needs the network to draw its charts).
Every text that comes from the user (the file's and columns' names, the
title, the notes, method labels) is escaped with :func:`html.escape`; the
figures' data is JSON written by plotly, which escapes ``<``, ``>`` and ``/``.
The CSS is inline and uses the system's fonts; printed (or saved as PDF) the
page drops its screen margins, keeps tables and figures whole, and stacks the
two figures, each at most 660 px wide so it fits an A4 or Letter page.

:func:`report_for_file` (and :func:`report_for_score_set`, from a loaded
file) does the whole pipeline, as the command line's ``evaluate`` does
(:func:`calibdash.evaluation.evaluate_score_set`): load, fit, judge, bootstrap
(:func:`calibdash.bootstrap.bootstrap_evaluation`), measure, write.
"""
from __future__ import annotations

import html
from datetime import datetime, timezone
from typing import Mapping, Sequence

import numpy as np
import pandas as pd

from . import __version__, bootstrap as cboot, calibrators, diagrams, measures, metrics
from .bootstrap import BootstrapResult
from .errors import DataError, SettingsError
from .evaluation import UNCALIBRATED, Evaluation, Scheme, evaluate_score_set
from .methods import DEFAULT_METHODS, resolve

__all__ = ["build_report", "report_for_file", "report_for_score_set", "measure_table", "describe_source", "default_labels", "PLOTLYJS_MODES"]

#: What ``include_plotlyjs`` accepts: True (plotly.js written inline, the default: opens offline) or "cdn".
PLOTLYJS_MODES = (True, "cdn")
#: What each metric of :data:`calibdash.metrics.METRIC_NAMES` is, for the table's header tooltips.
_METRIC_HELP = {
    "AUC": "area under the ROC curve (discrimination)",
    "ACC": "accuracy at the threshold 0.5",
    "RMSE": "root mean squared error of the probabilities",
    "Brier": "Brier score, the mean squared error",
    "LogLoss": "log loss (cross-entropy)",
    "ECE": "expected calibration error",
    "MCE": "maximum calibration error over the bins",
    "MVCE": "multi-view calibration error (MBCT, Eq. 10)",
}
#: Figure height in pixels (the dashboard's default).
_FIG_HEIGHT = 520


# ---------------------------------------------------------------------------------------------
# The pipeline from a file (the command line's path)
# ---------------------------------------------------------------------------------------------
def measure_table(ev: Evaluation, names: Sequence[str] | None = None) -> tuple[pd.DataFrame, list[str]]:
    """:func:`calibdash.measures.table` of ``ev``'s judged rows, a failing measure left NaN.

    A measure that cannot be computed on one method's predictions (ICI's
    loess has no width where most predictions tie, as after histogram
    binning on few rows) raises :class:`~calibdash.errors.DataError` from
    :func:`calibdash.measures.compute`; that method's measures are then
    computed one by one and the failing ones are NaN, so the rest of the
    table is still shown.

    Returns
    -------
    (DataFrame, list of str)
        One row per method, one column per measure; and one note per
        method whose measures failed, saying which and why.
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
    read = ss.report.n_read
    rows = f"{ss.n_rows:,} usable rows" + (f" of {read:,} read" if read != ss.n_rows else "")
    mapped = " (mapped to [0, 1] by the logistic function)" if ss.score in ss.report.mapped else ""
    parts = [ss.name, f"score column {ss.score!r}{mapped}",
             f"label column {ss.label_column!r} (positive class: {ss.positive_label!r})",
             f"{rows}, {pos:,} positives ({100 * pos / max(ss.n_rows, 1):.1f}%)"]
    if ss.split_column:
        parts.append(f"split column {ss.split_column!r}")
    if ss.feature_columns:
        parts.append(f"feature columns {', '.join(map(repr, ss.feature_columns))}")
    return " · ".join(parts)


def report_for_file(path, methods=None, score: str | None = None, label: str | None = None,
                    scheme: Scheme | None = None, **options) -> str:
    """The report of a file: load it (:func:`calibdash.data.load_scores`), then :func:`report_for_score_set`.

    Parameters
    ----------
    path : str or Path
        CSV, .csv.gz or Parquet file.
    methods : method spec, default :data:`calibdash.methods.DEFAULT_METHODS` (Platt, histogram, isotonic)
    score, label : str, optional
        Column names (default: guessed).
    scheme : Scheme, default ``Scheme()``
    **options
        ``params``, ``cells``, ``n_boot``, ``title``, ``include_plotlyjs``,
        ``generated``, ``diagram``: as for :func:`report_for_score_set`.

    Returns
    -------
    str
        The HTML document.
    """
    from .data import load_scores

    return report_for_score_set(load_scores(path, score=score, label=label), methods, scheme, **options)


def report_for_score_set(ss, methods=None, scheme: Scheme | None = None, *,
                         params: Mapping[str, Mapping] | None = None, cells: str = "auto",
                         n_boot: int | None = None, title: str | None = None, include_plotlyjs=True,
                         generated: datetime | None = None, diagram: str = "binned") -> str:
    """The report of a :class:`~calibdash.data.ScoreSet`: fit and judge ``methods``, bootstrap, measure, write.

    The path of ``python -m calibdash evaluate`` (:func:`calibdash.evaluation.evaluate_score_set`),
    then :func:`calibdash.bootstrap.bootstrap_evaluation`, :func:`measure_table` and
    :func:`build_report`.

    Parameters
    ----------
    ss : ScoreSet
    methods : method spec, default :data:`calibdash.methods.DEFAULT_METHODS` (Platt, histogram, isotonic)
    scheme : Scheme, default ``Scheme()``
    params : mapping method -> {hyperparameter: value}, optional
    cells : {"auto", "always", "never"}
    n_boot : int, optional
        Resamples of the intervals (default: as the Compare page).
    title : str, optional
        Default ``"Calibration report: <file name>"``.
    include_plotlyjs, generated, diagram
        As for :func:`build_report`.
    """

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


# ---------------------------------------------------------------------------------------------
# The document
# ---------------------------------------------------------------------------------------------
def default_labels(keys, models: Mapping | None = None) -> dict[str, str]:
    """Key -> display name: "Uncalibrated" for the raw scores, the calibrator's label, else the key."""
    models = models or {}
    out = {}
    for key in keys:
        if key == UNCALIBRATED:
            out[key] = "Uncalibrated"
            continue
        label = getattr(models.get(key), "label", "")
        if not label:
            try:
                label = calibrators.get_class(key).label
            except SettingsError:
                label = ""
        out[key] = label or str(key)
    return out


def _number(v, digits: int = 4) -> str:
    v = float(v)
    if np.isnan(v):
        return "–"
    if np.isinf(v):
        return "∞" if v > 0 else "−∞"
    return f"{v:.{digits}f}"


def _e(text) -> str:
    return html.escape(str(text), quote=True)


def _best(values: np.ndarray) -> np.ndarray:
    """True where a value is (to ``np.isclose``) the least finite one: the cells to bold (as
    ``pages.parts.tables.best_cells``, on values already turned so that lower is better)."""
    out = np.zeros(values.shape, dtype=bool)
    finite = np.isfinite(values)
    if finite.any():
        out[finite] = np.isclose(values[finite], values[finite].min())
    return out


def _badness(name: str, values: np.ndarray) -> np.ndarray | None:
    """``values`` turned so that lower is better (:func:`calibdash.measures.oriented`); None when the column
    ranks nothing."""
    return measures.oriented(name, values) if measures.rankable(name) else None


def _direction(name: str) -> tuple[str, str]:
    """(arrow, words) of a column's best value (:func:`calibdash.measures.best_phrase`)."""
    words = measures.best_phrase(name)
    m = measures.MEASURES.get(name)
    if m is not None and m.best == "target":
        return f"→ {m.target:g}", words
    return {"lower is better": "↓", "higher is better": "↑"}.get(words, ""), words


def _help(name: str) -> str:
    """A column heading's tooltip: what it is, which value is best, where it comes from."""
    if name in measures.MEASURES:
        return measures.describe(name)
    return f"{_METRIC_HELP.get(name, name)} ({_direction(name)[1]})"


def _grid(names, index, value, interval) -> tuple[list, list]:
    """Columns (name, arrow, tooltip) and cells (html, best) of a methods x names table."""
    columns, grid = [], [[] for _ in index]
    for name in names:
        columns.append((name, _direction(name)[0], _help(name)))
        bad = _badness(name, value[name])
        bold = np.zeros(len(index), bool) if bad is None else _best(bad)
        for i, v in enumerate(value[name]):
            lo_hi = (interval[name][0][i], interval[name][1][i]) if name in interval else (None, None)
            grid[i].append((_cell(v, *lo_hi), bool(bold[i])))
    return columns, grid


def _table(rows: list[str], columns: list[tuple[str, str, str]], cells: list[list[tuple[str, bool]]],
           css_class: str) -> str:
    """An HTML table: ``columns`` (name, arrow, tooltip), ``cells[i][j]`` (text, best) for method ``rows[i]``."""
    head = "".join(f'<th scope="col" title="{_e(tip)}">{_e(name)}'
                   + (f'<span class="dir">{_e(arrow)}</span>' if arrow else "") + "</th>"
                   for name, arrow, tip in columns)
    body = []
    for label, line in zip(rows, cells):
        tds = "".join(f'<td class="best">{text}</td>' if best else f"<td>{text}</td>" for text, best in line)
        body.append(f'<tr><th scope="row">{_e(label)}</th>{tds}</tr>')
    return (f'<div class="scroll"><table class="{css_class}"><thead><tr><th scope="col">Method</th>{head}'
            f'</tr></thead><tbody>{"".join(body)}</tbody></table></div>')


def _cell(value, low=None, high=None, digits: int = 4) -> str:
    """A table cell's HTML: the value, and its interval (on a second line on screen) when given."""
    if low is None:
        return _e(_number(value, digits))
    return (f'<span class="v">{_e(_number(value, digits))}</span> '
            f'<span class="ci">[{_e(_number(low, 3))}, {_e(_number(high, 3))}]</span>')


def _frame_parts(table) -> tuple[list, list, dict, dict]:
    """(names, methods, name -> values, name -> (lows, highs)) of a BootstrapResult or a plain DataFrame."""
    if isinstance(table, BootstrapResult):
        t = table.table
        names = list(dict.fromkeys(t.columns.get_level_values(0)))
        value = {n: t[(n, "value")].to_numpy(dtype=float) for n in names}
        interval = {n: (t[(n, "low")].to_numpy(dtype=float), t[(n, "high")].to_numpy(dtype=float)) for n in names}
        return names, list(t.index), value, interval
    names = [str(c) for c in table.columns]
    return names, list(table.index), {n: table[c].to_numpy(dtype=float) for n, c in zip(names, table.columns)}, {}


def _interval_table(table, labels: Mapping[str, str], css_class: str) -> str:
    """The metrics (or measures) table: a BootstrapResult (each cell "value [low, high]") or a DataFrame of
    values (methods x names); the best value of each column in bold."""
    names, index, value, interval = _frame_parts(table)
    columns, grid = _grid(names, index, value, interval)
    return _table([labels.get(k, k) for k in index], columns, grid, css_class)


def _figures(ev: Evaluation, labels: Mapping[str, str], rel_data, log_x: bool, features):
    from . import figures                      # plotly: the [app] extra
    from .figures import diagrams as fdiagrams

    rel = fdiagrams.plot(rel_data, names=labels, height=_FIG_HEIGHT)
    raw = ev.predictions[UNCALIBRATED].to_numpy()
    feats = None if features is None or ev.weights is not None else features
    curves = figures.map_curves(ev.models, raw, feats, sample_weight=ev.weights)
    cmap = figures.calibration_map(curves, raw, labels=labels, log_x=log_x, sample_weight=ev.weights,
                                   height=_FIG_HEIGHT)
    return [("reliability", rel), ("calibration-map", cmap)]


def _figure_html(figs, include_plotlyjs) -> list[str]:
    """Each figure's ``<div>``; plotly.js (inline or its CDN tag) goes with the first one only."""
    import plotly.io as pio

    config = {"responsive": True, "displaylogo": False,
              "toImageButtonOptions": {"format": "png", "scale": 2}}
    return [pio.to_html(fig, include_plotlyjs=include_plotlyjs if i == 0 else False, full_html=False,
                        div_id=f"fig-{key}", config=config, default_height=f"{_FIG_HEIGHT}px")
            for i, (key, fig) in enumerate(figs)]


def _methods_section(ev: Evaluation, labels: Mapping[str, str]) -> str:
    rows = []
    for key, model in ev.models.items():
        try:
            params = ", ".join(f"{k}={v!r}" for k, v in sorted(model.get_params().items()))
        except AttributeError:
            params = ""
        seconds = ev.fit_seconds.get(key)
        rows.append(f"<tr><th scope=\"row\">{_e(labels.get(key, key))}</th><td><code>{_e(key)}</code></td>"
                    f"<td class=\"params\">{_e(params or '–')}</td>"
                    f"<td class=\"time\">{_seconds(seconds)}</td>"
                    f"<td class=\"paper\">{_e(getattr(model, 'paper', '') or '–')}</td></tr>")
    if not rows:
        return "<p>No calibrator was fitted: the table shows the raw scores only.</p>"
    return ('<div class="scroll"><table class="methods"><thead><tr><th scope="col">Method</th>'
            '<th scope="col">Key</th><th scope="col">Hyperparameters</th>'
            '<th scope="col" title="seconds spent fitting and predicting, all folds">Time</th>'
            f'<th scope="col">Paper</th></tr></thead><tbody>{"".join(rows)}</tbody></table></div>')


def _seconds(s: float | None) -> str:
    if s is None:
        return "–"
    if s < 5e-4:
        return "< 1 ms"
    return f"{1000 * s:.0f} ms" if s < 1 else f"{s:.1f} s"


def _judged(ev: Evaluation) -> str:
    w = np.ones(ev.labels.size) if ev.weights is None else ev.weights
    pos = float(np.sum(w * ev.labels))
    n = ev.n_judged
    return f"{n:,} held-out rows, {int(round(pos)):,} positives ({100 * pos / max(float(w.sum()), 1e-300):.1f}%)"


def _intervals(boot: BootstrapResult, ev: Evaluation) -> str:
    level = int(round(100 * boot.level))
    if ev.weights is None:
        text = f"{level}% paired bootstrap percentile intervals, {boot.n_boot} resamples of the held-out rows"
    else:
        text = (f"{level}% paired bootstrap percentile intervals, {boot.n_boot} Poisson resamples of the "
                f"{ev.n_judged:,} held-out rows, drawn per score cell")
    return text + (f". {boot.note}" if boot.note else "")


CSS = """
:root { --ink: #1f2933; --muted: #5f6b7a; --line: #d9dee5; --soft: #f5f7fa; --accent: #1f5f99;
        --best: #E8F4EA; }
* { box-sizing: border-box; }
html { -webkit-text-size-adjust: 100%; }
body { margin: 0; color: var(--ink); background: #fff; line-height: 1.5;
       font: 15px/1.5 system-ui, -apple-system, "Segoe UI", Roboto, "Helvetica Neue", Arial, sans-serif; }
main { max-width: 1240px; margin: 0 auto; padding: 28px 28px 40px; }
header { border-bottom: 2px solid var(--ink); padding-bottom: 10px; margin-bottom: 18px; }
h1 { font-size: 26px; line-height: 1.25; margin: 0 0 4px; overflow-wrap: anywhere; }
h2 { font-size: 18px; margin: 30px 0 8px; padding-bottom: 4px; border-bottom: 1px solid var(--line); }
.meta, .caption, figcaption { color: var(--muted); font-size: 13px; }
.caption { margin: 6px 0 0; }
.verdict { margin: 0; padding: 12px 16px; border-left: 4px solid var(--accent); background: #eef4fa;
           font-size: 16px; }
.verdict strong { display: block; font-size: 12px; letter-spacing: .06em; text-transform: uppercase;
                  color: var(--accent); margin-bottom: 2px; }
dl.data { display: grid; grid-template-columns: max-content 1fr; gap: 4px 18px; margin: 0; }
dl.data dt { font-weight: 600; }
dl.data dd { margin: 0; overflow-wrap: anywhere; }
.scroll { overflow-x: auto; }
table { border-collapse: collapse; font-size: 13px; font-variant-numeric: tabular-nums; width: 100%; }
th, td { padding: 6px 9px; border-bottom: 1px solid var(--line); text-align: right; vertical-align: top; }
thead th { background: var(--soft); border-bottom: 2px solid var(--line); white-space: nowrap;
           cursor: help; }
tbody th, thead th:first-child { text-align: left; white-space: nowrap; cursor: auto; }
.dir { display: block; font-weight: 400; color: var(--muted); font-size: 11px; }
td.best { background: var(--best); font-weight: 700; }
table.measures { font-size: 12.5px; }
table.measures th, table.measures td { padding: 5px 6px; }
.ci { display: block; color: var(--muted); font-size: 11.5px; white-space: nowrap; }
td.best .ci { color: #3b5441; font-weight: 600; }
table.methods td, table.methods th { text-align: left; }
table.methods td.params { font-family: ui-monospace, "SFMono-Regular", Menlo, Consolas, monospace;
                          font-size: 12px; overflow-wrap: anywhere; }
table.methods td.paper { min-width: 260px; }
table.methods td.time { white-space: nowrap; }
.figures { display: grid; grid-template-columns: repeat(auto-fit, minmax(420px, 1fr)); gap: 18px; }
figure { margin: 0; max-width: 660px; width: 100%; min-width: 0; border: 1px solid var(--line);
         border-radius: 6px; padding: 6px; }
figcaption { padding: 4px 6px 2px; }
ul.notes { margin: 0; padding-left: 20px; }
ul.notes li { overflow-wrap: anywhere; }
footer { margin-top: 32px; padding-top: 10px; border-top: 1px solid var(--line); color: var(--muted);
         font-size: 12.5px; }
@media (max-width: 640px) { main { padding: 16px; } .figures { grid-template-columns: 1fr; } }
@page { size: A4; margin: 12mm; }
@media print {
  body { font-size: 10.5pt; }
  main { max-width: none; padding: 0; }
  h2 { break-after: avoid; }
  table, figure, .verdict, dl.data { break-inside: avoid; }
  .scroll { overflow: visible; }
  table, table.measures { font-size: 7.5pt; }
  th, td, table.measures th, table.measures td { padding: 2px 3px; }
  tbody th { white-space: normal; }
  .ci { font-size: 6.5pt; }
  table.measures { font-size: 6.8pt; }
  table.measures th, table.measures td { padding: 2px 2px; }
  thead th { white-space: normal; }
  .figures { display: block; }
  figure { margin: 0 auto 10px; border: none; }
  .modebar-container, .plotly-notifier { display: none !important; }
  * { -webkit-print-color-adjust: exact; print-color-adjust: exact; }
}
"""


def build_report(evaluation: Evaluation, boot: BootstrapResult, *, title: str, source_description: str,
                 scheme_description: str, labels: Mapping[str, str] | None = None,
                 measures_table: pd.DataFrame | BootstrapResult | None = None, notes: Sequence[str] = (),
                 include_plotlyjs=True, n_bins: int = metrics.DEFAULT_N_BINS,
                 strategy: str = metrics.DEFAULT_STRATEGY, log_x: bool = False, features: pd.DataFrame | None = None,
                 calibration_metric: str = "ECE", generated: datetime | None = None, diagram: str = "binned") -> str:
    """One self-contained HTML document reporting ``evaluation`` and its intervals ``boot``.

    Parameters
    ----------
    evaluation : Evaluation
        Its predictions draw the figures and give the judged rows; its models
        the calibration map and the methods' papers.
    boot : BootstrapResult
        The metrics table with intervals (:func:`calibdash.bootstrap.bootstrap_evaluation`, or
        what the Compare page computed); the verdict is drawn from it.
    title : str
        The page's heading and ``<title>``.
    source_description : str
        Where the rows came from (:func:`describe_source` of a ScoreSet).
    scheme_description : str
        How the rows were split and judged (:meth:`Scheme.describe`, with
        ``on_cells`` on score cells).
    labels : mapping key -> display name, optional
        Default :func:`default_labels`.
    measures_table : DataFrame or BootstrapResult, optional
        Methods x measures (:func:`measure_table`), or the result of
        :func:`calibdash.bootstrap.bootstrap_measures` to show intervals too.
        Default: :func:`measure_table` of ``evaluation``; an empty DataFrame
        leaves the section out.
    notes : sequence of str
        Shown as a list (the data's validation messages, for example).
    include_plotlyjs : True or "cdn"
        True (default): plotly.js is written inline once, so the file opens
        offline (about 4.8 MB). ``"cdn"``: a ``<script src>`` to plotly's CDN
        instead (a small file whose charts need the network).
    n_bins, strategy
        Bins of the binned reliability diagram (default: the metrics table's); ``n_bins`` may be ``"auto"``
        (:func:`calibdash.diagrams.auto_bin_count`'s cube-root rule).
    log_x : bool
        Log-scaled score axis of the calibration map.
    features : DataFrame, optional
        The judged rows' feature columns, for a feature-aware model's map (row
        path only; score cells carry no features).
    calibration_metric : str, default "ECE"
        The metric the verdict ranks by.
    generated : datetime, optional
        The date printed (default: now, UTC).
    diagram : {"binned", "smooth", "corp"}
        The reliability diagram's type (:data:`calibdash.diagrams.KINDS`, any letter case): binned (default),
        SmoothECE's smoothed curve, or the CORP (PAV) curve with the MCB/DSC/UNC decomposition in its legend.

    Returns
    -------
    str
        The HTML document.

    Raises
    ------
    SettingsError
        ``include_plotlyjs`` is not one of :data:`PLOTLYJS_MODES`, or ``diagram`` not a diagram type.
    """
    if not (include_plotlyjs is True or include_plotlyjs == "cdn"):
        raise SettingsError(f"include_plotlyjs must be True (inline, opens offline) or 'cdn', "
                            f"got {include_plotlyjs!r}.")
    diagrams.check_kind(diagram)
    ev = evaluation
    keys = list(dict.fromkeys([*boot.table.index, *ev.predictions.columns]))
    labels = {**default_labels(keys, ev.models), **dict(labels or {})}
    notes = list(notes)
    if measures_table is None:
        measures_table, failed = measure_table(ev)
        notes += failed
    generated = generated or datetime.now(timezone.utc)
    when = generated.strftime("%Y-%m-%d %H:%M %Z").strip()

    verdict = cboot.verdict(boot, calibration_metric, labels)
    cells_text = (f"yes: {ev.note}; each metric, figure and interval weighs a cell by the rows it holds"
                  if ev.weights is not None else "no: every held-out row was used")
    data = [("Source", source_description), ("Judged", _judged(ev)), ("Split and judged by", scheme_description),
            ("Score cells", cells_text), ("ECE and MCE", ev.binning), ("Intervals", _intervals(boot, ev))]
    data_html = "".join(f"<dt>{_e(k)}</dt><dd>{_e(v)}</dd>" for k, v in data)

    rel_data = diagrams.prepare(diagram, ev.predictions, ev.labels, ev.weights, n_bins=n_bins, strategy=strategy)
    figs = _figure_html(_figures(ev, labels, rel_data, log_x, features), include_plotlyjs)
    if rel_data.kind == diagrams.BINNED:
        rel_caption = (f"The reliability diagram: observed frequency of positives against mean prediction in "
                       f"{_e(metrics.binning_label(rel_data.n_bins, strategy))}, each with its 95% interval, and "
                       "the rows per bin underneath.")
    else:
        rel_caption = _e(rel_data.caption(labels))
    fig_caption = (
        f"{rel_caption} The calibration map: each calibrator's output against the raw score, with the "
        "scores' histogram underneath. Hover for values; click a legend entry to hide or show a method; "
        "drag to zoom, double-click to reset.")
    measures_html = ""
    has_measures = isinstance(measures_table, BootstrapResult) or len(measures_table.columns) > 0
    if has_measures:
        boxed = isinstance(measures_table, BootstrapResult)
        how = f"value [{int(round(100 * measures_table.level))}% paired bootstrap interval]" if boxed else "value"
        measures_html = (
            "<section><h2>More calibration measures</h2>"
            + _interval_table(measures_table, labels, "measures")
            + f'<p class="caption">Each cell: {how}, on the same held-out rows'
            + (" (weighted by the rows each score cell holds)" if ev.weights is not None else "")
            + "; the best value of each measure in bold (closest to the ideal for CITL, Slope and "
              "Spiegelhalter's z; UNC is the same for every method); a dash marks a measure that cannot be "
              "computed on a method's predictions. Hover a heading for what it measures and its source."
            + (f" {_e(measures_table.note)}" if boxed and measures_table.note else "") + "</p></section>")
    notes_html = ("<section><h2>Notes</h2><ul class=\"notes\">"
                  + "".join(f"<li>{_e(n)}</li>" for n in notes) + "</ul></section>") if notes else ""
    level = int(round(100 * boot.level))
    return f"""<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<meta name="generator" content="calibdash {_e(__version__)}">
<title>{_e(title)}</title>
<style>{CSS}</style>
</head>
<body>
<main>
<header>
<h1>{_e(title)}</h1>
<div class="meta">calibdash {_e(__version__)} · generated {_e(when)}</div>
</header>
<p class="verdict" id="verdict"><strong>Verdict</strong>{_e(verdict)}</p>
<section><h2>Data</h2><dl class="data">{data_html}</dl></section>
<section><h2>Metrics on the held-out rows</h2>
{_interval_table(boot, labels, "metrics")}
<p class="caption">Each cell: value [{level}% paired bootstrap interval]; the best value of each metric in bold.
Lower is better except AUC and ACC. ECE and MCE use {_e(ev.binning)}. Hover a heading for what it measures.</p>
</section>
<section><h2>Reliability and calibration map</h2>
<div class="figures">
<figure>{figs[0]}</figure>
<figure>{figs[1]}</figure>
</div>
<p class="caption">{fig_caption}</p>
</section>
{measures_html}
<section><h2>Methods</h2>
{_methods_section(ev, labels)}
</section>
{notes_html}
<footer>Made with calibdash {_e(__version__)} on {_e(when)}: calibration of binary classifiers, each method
fitted and judged as the Data section says.</footer>
</main>
</body>
</html>
"""
