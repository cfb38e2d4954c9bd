"""The report's HTML pieces: escaped text, numbers, the metrics and measures tables (the best value of each
column in bold, as the dashboard shows it), the methods table, the page and its CSS."""
from __future__ import annotations

import html
from typing import Mapping

import numpy as np

from .. import measures
from ..core import __version__
from ..evaluation.bootstrap import BootstrapResult
from ..evaluation.holdout import Evaluation
from ..measures.registry import BINARY, view

__all__ = []

#: The papers' metrics (:data:`calibdash.metrics.METRIC_NAMES`), whose labels are the header tooltips.
_METRICS = view(BINARY, metric=True)


def number(v, digits: int = 4) -> str:
    v = float(v)
    if np.isnan(v):
        return "–"
    if np.isinf(v):
        return "∞" if v > 0 else "−∞"
    return f"{v:.{digits}f}"


def escape(text) -> str:
    """``text`` as HTML text (:func:`html.escape`, quotes too)."""
    return html.escape(str(text), quote=True)


def _best(values: np.ndarray) -> np.ndarray:
    """True where a value is (to ``np.isclose``) the least finite one: the cells to bold."""
    out = np.zeros(values.shape, dtype=bool)
    finite = np.isfinite(values)
    if finite.any():
        out[finite] = np.isclose(values[finite], values[finite].min())
    return out


def binary_heading(name: str):
    """A binary metric's or measure's column: (arrow, tooltip, ``orient``), ``orient(values)`` turning its
    values so that lower is better (None when the column ranks nothing); :func:`interval_table`'s default."""
    words = measures.best_phrase(name)
    m = measures.MEASURES.get(name)
    arrow = f"→ {m.target:g}" if m is not None and m.best == "target" else {
        "lower is better": "↓", "higher is better": "↑"}.get(words, "")
    tip = measures.describe(name) if m is not None else f"{getattr(_METRICS.get(name), 'label', name)} ({words})"
    return arrow, tip, lambda values: measures.oriented(name, values) if measures.rankable(name) else None


def _cell(value, low=None, high=None, digits: int = 4) -> str:
    """A table cell's HTML: the value, and its interval (on a second line on screen) when given."""
    if low is None:
        return escape(number(value, digits))
    return (f'<span class="v">{escape(number(value, digits))}</span> '
            f'<span class="ci">[{escape(number(low, 3))}, {escape(number(high, 3))}]</span>')


def interval_table(table, labels: Mapping[str, str], css_class: str, heading=binary_heading) -> str:
    """The metrics (or measures) table: a BootstrapResult (each cell "value [low, high]") or a DataFrame of
    values (methods x names); the best value of each column in bold. ``heading(name)`` gives a column's
    (arrow, tooltip, orient) as :func:`binary_heading` does for the binary names (its default)."""
    if isinstance(table, BootstrapResult):
        t = table.table
        names = list(dict.fromkeys(t.columns.get_level_values(0)))
        value = {n: t[(n, "value")].to_numpy(dtype=float) for n in names}
        interval = {n: (t[(n, "low")].to_numpy(dtype=float), t[(n, "high")].to_numpy(dtype=float)) for n in names}
        index = list(t.index)
    else:
        names, index, interval = [str(c) for c in table.columns], list(table.index), {}
        value = {n: table[c].to_numpy(dtype=float) for n, c in zip(names, table.columns)}
    head, grid = [], [[] for _ in index]
    for name in names:
        arrow, tip, orient = heading(name)
        head.append(f'<th scope="col" title="{escape(tip)}">{escape(name)}'
                    + (f'<span class="dir">{escape(arrow)}</span>' if arrow else "") + "</th>")
        bad = orient(value[name])
        bold = np.zeros(len(index), bool) if bad is None else _best(bad)
        for i, v in enumerate(value[name]):
            text = _cell(v, interval[name][0][i], interval[name][1][i]) if name in interval else _cell(v)
            grid[i].append(f'<td class="best">{text}</td>' if bold[i] else f"<td>{text}</td>")
    body = "".join(f'<tr><th scope="row">{escape(labels.get(k, k))}</th>{"".join(line)}</tr>'
                   for k, line in zip(index, grid))
    return (f'<div class="scroll"><table class="{css_class}"><thead><tr><th scope="col">Method</th>{"".join(head)}'
            f'</tr></thead><tbody>{body}</tbody></table></div>')


def methods_section(ev: Evaluation, labels: Mapping[str, str]) -> str:
    rows = []
    for key, model in ev.models.items():
        try:
            params = ", ".join(f"{k}={v!r}" for k, v in sorted(model.get_params().items()))
        except AttributeError:
            params = ""
        seconds = ev.fit_seconds.get(key)
        rows.append(f"<tr><th scope=\"row\">{escape(labels.get(key, key))}</th><td><code>{escape(key)}</code></td>"
                    f"<td class=\"params\">{escape(params or '–')}</td>"
                    f"<td class=\"time\">{_seconds(seconds)}</td>"
                    f"<td class=\"paper\">{escape(getattr(model, 'paper', '') or '–')}</td></tr>")
    if not rows:
        return "<p>No calibrator was fitted: the table shows the raw scores only.</p>"
    return ('<div class="scroll"><table class="methods"><thead><tr><th scope="col">Method</th>'
            '<th scope="col">Key</th><th scope="col">Hyperparameters</th>'
            '<th scope="col" title="seconds spent fitting and predicting, all folds">Time</th>'
            f'<th scope="col">Paper</th></tr></thead><tbody>{"".join(rows)}</tbody></table></div>')


def page(title: str, generated: str, body: str, footer: str) -> str:
    """The whole HTML document: head (title, the calibdash version, :data:`CSS`), the heading with the date
    ``generated``, ``body`` (the sections, already HTML) and the footer ``footer`` (already HTML)."""
    return f"""<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<meta name="generator" content="calibdash {escape(__version__)}">
<title>{escape(title)}</title>
<style>{CSS}</style>
</head>
<body>
<main>
<header>
<h1>{escape(title)}</h1>
<div class="meta">calibdash {escape(__version__)} · generated {escape(generated)}</div>
</header>
{body}
<footer>{footer}</footer>
</main>
</body>
</html>
"""


def _seconds(s: float | None) -> str:
    if s is None:
        return "–"
    if s < 5e-4:
        return "< 1 ms"
    return f"{1000 * s:.0f} ms" if s < 1 else f"{s:.1f} s"


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
