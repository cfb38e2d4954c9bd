"""The one-page HTML report of a K-class comparison: :func:`report_for_class_set` and :func:`build_class_report`.

The multi-class counterpart of :func:`calibdash.report.build.build_report`, on the same page
(:func:`calibdash.report.markup.page`, its CSS, tables and figure embedding), in this order:

1. the verdict (:func:`calibdash.multiclass.bootstrap.verdict`: the lowest confidence ECE among the
   methods whose accuracy the paired interval does not show below the raw probabilities');
2. the data: file, class columns, label, rows, how they were split and judged, the bins, the intervals;
3. the measures of :data:`calibdash.multiclass.metrics.MEASURES` on the held-out rows, each cell
   ``value [low, high]`` (:func:`calibdash.multiclass.bootstrap.bootstrap_multiclass`), the best in bold;
4. the confidence reliability diagram and the class-wise small multiples of the worst classes (largest
   per-class ECE of the raw probabilities first), from :mod:`calibdash.diagrams` (data and figure);
5. the per-class table (:func:`calibdash.diagrams.class_table`: rows, frequency, and per
   method the mean probability and ECE of each class);
6. the methods (hyperparameters, fitting time, paper), the notes, the version and the date.

:func:`report_for_class_set` runs the pipeline from a :class:`calibdash.data.ClassSet`:
:func:`calibdash.multiclass.evaluation.evaluate_classes` (its large-data policy and notes included),
the bootstrap, then :func:`build_class_report`.
"""
from __future__ import annotations

from datetime import datetime, timezone
from typing import Mapping, Sequence

import numpy as np
import pandas as pd

from .. import __version__
from ..bootstrap import BootstrapResult
from .. import diagrams as mdiagrams
from ..multiclass import bootstrap as mboot, metrics as mmetrics
from ..multiclass.evaluation import MAX_FIT_ROWS, default_methods, ClassEvaluation, evaluate_classes
from ..scheme import Scheme
from .build import check_plotlyjs, figure_html
from .markup import escape, interval_table, methods_section, number, page
from .text import default_labels

__all__ = ["report_for_class_set", "build_class_report", "class_heading", "describe_class_source",
           "class_table_html", "N_BOOT", "PANELS"]

#: Paired resamples of the report's intervals unless told otherwise.
N_BOOT = 200
#: Class-wise panels drawn (the worst classes), two rows of four.
PANELS = 8


def class_heading(name: str):
    """A multi-class measure's column for :func:`calibdash.report.markup.interval_table`: (arrow, tooltip,
    orient), from :data:`calibdash.multiclass.metrics.MEASURES`."""
    m = mmetrics.MEASURES[name]
    arrow = {True: "↓", False: "↑", None: "→ 0"}[m.lower_is_better]
    best = {True: "lower is better", False: "higher is better", None: "0 is ideal"}[m.lower_is_better]
    return arrow, f"{m.label} ({best}): {m.description}", m.oriented


def describe_class_source(cs) -> str:
    """One line saying what a :class:`calibdash.data.ClassSet` holds: file, class columns, label, rows."""
    what = "logits" if cs.logits else "probabilities"
    read = cs.report.n_read
    rows = f"{cs.n_rows:,} usable rows" + (f" of {read:,} read" if read != cs.n_rows else "")
    cols = cs.columns if len(cs.columns) <= 6 else [*cs.columns[:3], "...", cs.columns[-1]]
    parts = [cs.name, f"{cs.k} classes, {what} in {', '.join(map(str, cols))}", f"label column {cs.label_column!r}",
             rows]
    if cs.split_column:
        parts.append(f"split column {cs.split_column!r}")
    return " · ".join(parts)


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


def _figures(ev: ClassEvaluation, labels: Mapping[str, str], names: list[str], panels: int):
    conf = mdiagrams.prepare_confidence(ev.predictions, ev.labels)
    cw = mdiagrams.prepare_classwise(ev.predictions, ev.labels, class_names=names, max_panels=panels)
    return ([("confidence", mdiagrams.plot_confidence(conf, names=labels)),
             ("classwise", mdiagrams.plot_classwise(cw, names=labels))],
            [conf.caption(labels), cw.caption(labels)])


def build_class_report(evaluation: ClassEvaluation, boot: BootstrapResult, *, title: str, source_description: str,
                       scheme_description: str, labels: Mapping[str, str] | None = None, notes: Sequence[str] = (),
                       include_plotlyjs=True, generated: datetime | None = None, panels: int = PANELS) -> str:
    """One self-contained HTML document reporting a K-class ``evaluation`` and its intervals ``boot``.

    Parameters
    ----------
    evaluation : ClassEvaluation
        Its held-out predictions draw the figures and the per-class table; its models give the methods'
        hyperparameters and papers.
    boot : BootstrapResult
        :func:`calibdash.multiclass.bootstrap.bootstrap_multiclass` of the same predictions: the measures
        table and the verdict.
    title, source_description, scheme_description : str
        The heading; where the rows came from (:func:`describe_class_source`); how they were split and
        judged (:meth:`calibdash.scheme.Scheme.describe`).
    labels : mapping key -> display name, optional
        Default :func:`calibdash.report.default_labels`.
    notes : sequence of str
        Shown as a list after the methods (the file's validation messages; the evaluation's notes are added).
    include_plotlyjs : True or "cdn"
        As :func:`calibdash.report.build_report`: True writes plotly.js inline (opens offline).
    generated : datetime, optional
        The date printed (default: now, UTC).
    panels : int
        Class-wise panels drawn, the worst classes first.

    Raises
    ------
    SettingsError
        ``include_plotlyjs`` is not True or "cdn".
    """
    check_plotlyjs(include_plotlyjs)
    ev = evaluation
    keys = list(ev.predictions)
    labels = {**default_labels(keys, ev.models), **dict(labels or {})}
    names = mdiagrams.class_labels(len(ev.classes), [str(c) for c in ev.classes])
    when = (generated or datetime.now(timezone.utc)).strftime("%Y-%m-%d %H:%M %Z").strip()
    level = int(round(100 * boot.level))
    judged = f"{ev.rows.size:,} held-out rows of {len(names)} classes"
    data = [("Source", source_description), ("Judged", judged), ("Split and judged by", scheme_description),
            ("Bins", f"ECE, MCE and class-wise ECE: {mmetrics.N_BINS} equal-width bins; dCE: {mmetrics.N_BINS} "
                     "equal-mass bins"),
            ("Intervals", f"{level}% paired bootstrap percentile intervals, {boot.n_boot} resamples of the "
                          f"held-out rows. {boot.note}")]
    data_html = "".join(f"<dt>{escape(k)}</dt><dd>{escape(v)}</dd>" for k, v in data)
    figs, captions = _figures(ev, labels, names, panels)
    divs = figure_html(figs, include_plotlyjs)
    table = mdiagrams.class_table(ev.predictions, ev.labels, class_names=names)
    all_notes = [*notes, *ev.notes]
    notes_html = ("<section><h2>Notes</h2><ul class=\"notes\">"
                  + "".join(f"<li>{escape(n)}</li>" for n in all_notes) + "</ul></section>") if all_notes else ""
    body = f"""<p class="verdict" id="verdict"><strong>Verdict</strong>{escape(mboot.verdict(boot, labels=labels))}</p>
<section><h2>Data</h2><dl class="data">{data_html}</dl></section>
<section id="measures"><h2>Measures on the held-out rows</h2>
{interval_table(boot, labels, "metrics", heading=class_heading)}
<p class="caption">Each cell: value [{level}% paired bootstrap interval]; the best value of each measure in bold
(closest to 0 for Overconfidence). Hover a heading for what it measures and its source.</p>
</section>
<section id="reliability"><h2>Confidence reliability</h2>
<div class="figures"><figure>{divs[0]}</figure></div>
<p class="caption">{escape(captions[0])}</p>
</section>
<section id="classwise"><h2>Class-wise reliability</h2>
<figure style="max-width:100%">{divs[1]}</figure>
<p class="caption">{escape(captions[1])}</p>
</section>
<section id="classes"><h2>Per class</h2>
{class_table_html(table, keys, labels)}
<p class="caption">Per class: its rows among the held-out ones and their share, then for each method the mean
probability it gives the class over all rows (calibrated in the large when it equals the frequency) and the
class's ECE (one-vs-rest, {mmetrics.N_BINS} equal-width bins), the lowest of each row in bold.</p>
</section>
<section id="methods"><h2>Methods</h2>
{methods_section(ev, labels)}
</section>
{notes_html}"""
    footer = (f"Made with calibdash {escape(__version__)} on {escape(when)}: calibration of a K-class "
              "classifier's probabilities, each method fitted and judged as the Data section says.")
    return page(title, when, body, footer)


def report_for_class_set(cs, methods=None, scheme: Scheme | None = None, *, params: Mapping[str, Mapping] | None = None,
                         n_boot: int = N_BOOT, title: str | None = None, include_plotlyjs=True,
                         generated: datetime | None = None, max_fit_rows: int | None = MAX_FIT_ROWS) -> str:
    """The report of a :class:`calibdash.data.ClassSet`: fit and judge ``methods``
    (:func:`calibdash.multiclass.evaluation.evaluate_classes`), bootstrap, write (:func:`build_class_report`).

    Parameters
    ----------
    cs : ClassSet
    methods : method spec, default :func:`calibdash.multiclass.evaluation.default_methods` for its K
    scheme : Scheme, default ``Scheme()``
    params : mapping method -> {hyperparameter: value}, optional
    n_boot : int, default :data:`N_BOOT`
    title : str, optional
        Default ``"Calibration report: <file name>"``.
    include_plotlyjs, generated
        As for :func:`build_class_report`.
    max_fit_rows : int or None
        As for :func:`~calibdash.multiclass.evaluation.evaluate_classes`.
    """
    check_plotlyjs(include_plotlyjs)              # before the fits, not after
    scheme = scheme or Scheme()
    ev = evaluate_classes(cs.scores(), cs.labels, default_methods(cs.k) if methods is None else methods, scheme,
                          split=cs.split, classes=cs.classes, params=params, max_fit_rows=max_fit_rows)
    boot = mboot.bootstrap_multiclass(ev.predictions, ev.labels, n_boot=n_boot, seed=scheme.seed)
    return build_class_report(ev, boot, title=title or f"Calibration report: {cs.name}",
                              source_description=describe_class_source(cs), scheme_description=scheme.describe(),
                              notes=cs.report.messages, include_plotlyjs=include_plotlyjs, generated=generated)
