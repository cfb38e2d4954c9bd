"""The one-page HTML report (calibdash.report): what it says, that it opens offline, and that it escapes.

The document is read back with the standard library's ``html.parser`` into
its elements (nesting checked), tables (cell text, bold cells) and scripts;
every number is compared with an independent formatting of the bootstrap
table or a direct computation, never with the report's own helpers.
"""
from __future__ import annotations

import base64
import contextlib
import io
import json
from datetime import datetime, timezone
from html import escape as html_escape
from html.parser import HTMLParser

import numpy as np
import pandas as pd
import pytest

from calibdash import __version__, calibrators, cli, measures, report
from calibdash.measures import corp
from calibdash.measures import calibration as metrics
from calibdash.measures import smooth_ece
from calibdash.evaluation import bootstrap as cboot
from calibdash.core.errors import DataError, SettingsError
from calibdash.data import load_scores
from calibdash.evaluation.holdout import Scheme, cell_parts, evaluate
from calibdash.samples import sample_path

VOID = {"area", "base", "br", "col", "embed", "hr", "img", "input", "link", "meta", "source", "track", "wbr"}
WHEN = datetime(2026, 1, 2, 3, 4, tzinfo=timezone.utc)
LABELS = ["Uncalibrated", "Platt scaling", "Histogram binning", "Isotonic regression"]
BUNDLE_MARK = "* plotly.js v"                       # the first lines of plotly.js: "/**\n* plotly.js v4.1.1"


class Doc(HTMLParser):
    """Elements (nesting checked), tables, scripts and the text of elements with an id."""

    def __init__(self, text: str):
        super().__init__(convert_charrefs=True)
        self.stack: list[str] = []
        self.errors: list[str] = []
        self.tags: list[tuple[str, dict]] = []
        self.scripts: list[dict] = []                 # {"attrs": ..., "text": ...}
        self.tables: list[dict] = []                  # {"class": ..., "rows": [[(text, classes, tag)]]}
        self.ids: dict[str, str] = {}
        self._open_ids: list[tuple[str, int]] = []    # (id, depth)
        self._texts: dict[str, list[str]] = {}
        self._cell: list | None = None
        self.feed(text)
        self.close()
        if self.stack:
            self.errors.append(f"unclosed: {self.stack}")

    def handle_starttag(self, tag, attrs):
        a = dict(attrs)
        self.tags.append((tag, a))
        if tag == "script":
            self.scripts.append({"attrs": a, "text": ""})
        if tag == "table":
            self.tables.append({"class": a.get("class", ""), "rows": []})
        if tag == "tr" and self.tables:
            self.tables[-1]["rows"].append([])
        if tag in ("td", "th") and self.tables:
            self._cell = [tag, a.get("class", ""), []]
        if tag in VOID:
            return
        self.stack.append(tag)
        if "id" in a:
            self._open_ids.append((a["id"], len(self.stack)))
            self._texts[a["id"]] = []

    def handle_startendtag(self, tag, attrs):
        self.tags.append((tag, dict(attrs)))

    def handle_endtag(self, tag):
        if tag in VOID:
            return
        if not self.stack or self.stack[-1] != tag:
            self.errors.append(f"</{tag}> closes {self.stack[-1:] or 'nothing'}")
            return
        if tag in ("td", "th") and self._cell is not None and self.tables:
            kind, cls, text = self._cell
            self.tables[-1]["rows"][-1].append(("".join(text).strip(), cls, kind))
            self._cell = None
        while self._open_ids and self._open_ids[-1][1] == len(self.stack):
            key, _ = self._open_ids.pop()
            self.ids[key] = "".join(self._texts.pop(key)).strip()
        self.stack.pop()

    def handle_data(self, data):
        if self.stack and self.stack[-1] == "script" and self.scripts:
            self.scripts[-1]["text"] += data
        if self._cell is not None:
            self._cell[2].append(data)
        for key, _ in self._open_ids:
            self._texts[key].append(data)

    def table(self, css_class: str) -> dict:
        found = [t for t in self.tables if t["class"] == css_class]
        assert len(found) == 1, [t["class"] for t in self.tables]
        return found[0]


def body_of(table: dict) -> tuple[list[str], dict[str, list[tuple[str, bool]]]]:
    """(column names, row label -> [(cell text, bold)]) of a parsed table (header: first row)."""
    head = [text for text, _, _ in table["rows"][0][1:]]
    rows = {}
    for row in table["rows"][1:]:
        rows[row[0][0]] = [(text, "best" in cls.split()) for text, cls, _ in row[1:]]
    return head, rows


def strip_arrow(heading: str) -> str:
    """A heading's name without its direction line ("ECE↓" -> "ECE", "Slope→ 1" -> "Slope")."""
    for mark in ("↓", "↑", "→"):
        heading = heading.split(mark)[0]
    return heading.strip()


def expected_best(values: np.ndarray, best: str, target: float = 0.0) -> np.ndarray:
    """Independent: the cells a reader expects in bold."""
    if best == "none":
        return np.zeros(values.size, bool)
    key = {"lower": values, "higher": -values, "target": np.abs(values - target)}[best]
    ok = np.isfinite(key)
    out = np.zeros(values.size, bool)
    out[ok] = np.isclose(key[ok], key[ok].min())
    return out


# ---------------------------------------------------------------------------------------------
@pytest.fixture(scope="module")
def case():
    """A miscalibrated model on 1,500 rows, three calibrators judged on 450 held-out rows."""
    rng = np.random.default_rng(7)
    n = 1500
    truth = rng.beta(2, 5, n)
    y = (rng.random(n) < truth).astype(int)
    s = np.clip(truth ** 0.6, 0, 1)                  # over-confident in the positive direction
    ev = evaluate(s, y, "platt,histogram,isotonic", Scheme(test_size=0.3, seed=1))
    boot = cboot.bootstrap_metrics(ev.predictions, ev.labels, n_boot=40, seed=3)
    table, failed = report.measure_table(ev)
    return ev, boot, table, failed


@pytest.fixture(scope="module")
def inline(case):
    ev, boot, table, failed = case
    text = report.build_report(ev, boot, title="Model A <v2> & friends", source_description="synthetic rows",
                               scheme_description=ev.scheme.describe(), measures_table=table,
                               notes=["first note", "a <b>bold</b> claim & more"], generated=WHEN)
    return text, Doc(text)


@pytest.fixture(scope="module")
def cdn(case):
    ev, boot, table, _ = case
    text = report.build_report(ev, boot, title="cdn", source_description="s", scheme_description="x",
                               measures_table=table, include_plotlyjs="cdn", generated=WHEN)
    return text, Doc(text)


# -- structure -----------------------------------------------------------------------------------
def test_document_parses_with_every_element_closed_in_order(inline):
    text, doc = inline
    assert doc.errors == []
    assert text.startswith("<!DOCTYPE html>")
    names = [t for t, _ in doc.tags]
    assert names.count("html") == names.count("head") == names.count("body") == names.count("title") == 1
    assert {"meta", "style"} <= set(names)
    assert not any(t == "link" for t in names)          # no external stylesheet or font
    style = text.split("<style>")[1].split("</style>")[0]
    assert "@import" not in style and "url(" not in style and "@font-face" not in style


def test_verdict_is_the_bootstrap_verdict(inline, case):
    _, boot, _, _ = case
    _, doc = inline
    labels = dict(zip(boot.table.index, LABELS))
    assert doc.ids["verdict"] == "Verdict" + cboot.verdict(boot, "ECE", labels)


def test_metrics_table_prints_every_value_with_its_interval_and_bolds_the_best(inline, case):
    _, boot, _, _ = case
    head, rows = body_of(inline[1].table("metrics"))
    assert [strip_arrow(h) for h in head] == list(metrics.METRIC_NAMES)
    assert list(rows) == LABELS                         # every method's label, uncalibrated first
    t = boot.table
    for j, name in enumerate(metrics.METRIC_NAMES):
        value = t[(name, "value")].to_numpy()
        want_bold = expected_best(value, "lower" if name in metrics.LOWER_IS_BETTER else "higher")
        for i, label in enumerate(LABELS):
            text, bold = rows[label][j]
            v, lo, hi = value[i], t[(name, "low")].iloc[i], t[(name, "high")].iloc[i]
            assert text == f"{v:.4f} [{lo:.3f}, {hi:.3f}]", (name, label)
            assert bold == want_bold[i], (name, label)
    assert sum(b for row in rows.values() for _, b in row) >= len(metrics.METRIC_NAMES)


def test_measures_table_equals_direct_computation_with_the_best_in_bold(inline, case):
    ev, _, _, failed = case
    assert failed == []                                  # no measure fails on these untied predictions
    head, rows = body_of(inline[1].table("measures"))
    assert [strip_arrow(h) for h in head] == list(measures.MEASURE_NAMES)
    direct = {k: measures.compute(ev.predictions[k].to_numpy(), ev.labels) for k in ev.predictions.columns}
    for j, name in enumerate(measures.MEASURE_NAMES):
        values = np.array([direct[k][name] for k in ev.predictions.columns])
        m = measures.MEASURES[name]
        want_bold = expected_best(values, m.best, m.target)
        for i, label in enumerate(LABELS):
            text, bold = rows[label][j]
            assert text == f"{values[i]:.4f}", (name, label)
            assert bold == want_bold[i], (name, label)
    unc = head.index(next(h for h in head if strip_arrow(h) == "UNC"))
    assert not any(rows[label][unc][1] for label in LABELS)   # the same for every method: never "best"


def test_measures_with_intervals_print_value_and_interval(case):
    ev, boot, _, _ = case
    mboot = cboot.bootstrap_measures(ev.predictions, np.ones(ev.labels.size), ev.labels,
                                     names=["smECE", "Slope", "UNC"], n_boot=20, seed=5)
    text = report.build_report(ev, boot, title="t", source_description="s", scheme_description="x",
                               measures_table=mboot, generated=WHEN)
    head, rows = body_of(Doc(text).table("measures"))
    assert [strip_arrow(h) for h in head] == ["smECE", "Slope", "UNC"]
    t = mboot.table
    for j, name in enumerate(["smECE", "Slope", "UNC"]):
        value = t[(name, "value")].to_numpy()
        m = measures.MEASURES[name]
        want_bold = expected_best(value, m.best, m.target)
        for i, label in enumerate(LABELS):
            lo, hi = t[(name, "low")].iloc[i], t[(name, "high")].iloc[i]
            assert rows[label][j] == (f"{value[i]:.4f} [{lo:.3f}, {hi:.3f}]", bool(want_bold[i])), (name, label)
    assert "Each cell: value [95% paired bootstrap interval]" in text and html_escape(mboot.note) in text


def test_methods_table_names_each_calibrators_paper(inline, case):
    ev, _, _, _ = case
    _, rows = body_of(inline[1].table("methods"))
    assert list(rows) == LABELS[1:]
    for label, key in zip(LABELS[1:], ["platt", "histogram", "isotonic"]):
        paper = calibrators.get_class(key).paper
        assert paper and rows[label][-1][0] == paper
        assert rows[label][0][0] == key
    assert "Zadrozny &amp; Elkan" in inline[0]            # the papers' text is escaped too


def test_data_section_counts_the_judged_rows_and_positives(inline, case):
    ev, boot, _, _ = case
    text, _ = inline
    n, pos = ev.labels.size, int(ev.labels.sum())
    assert n == 450
    assert f"<dd>{n:,} held-out rows, {pos:,} positives ({100 * pos / n:.1f}%)</dd>" in text
    assert "<dd>no: every held-out row was used</dd>" in text
    assert f"<dd>{ev.scheme.describe()}</dd>" in text
    assert f"{boot.n_boot} resamples of the held-out rows" in text


def test_version_and_date_are_printed(inline):
    text, doc = inline
    assert f"calibdash {__version__} · generated 2026-01-02 03:04 UTC" in text
    assert f'content="calibdash {__version__}"' in text


# -- plotly.js: inline once, or the CDN ----------------------------------------------------------
def test_inline_report_holds_plotlyjs_exactly_once_and_loads_nothing(inline):
    text, doc = inline
    bundles = [s for s in doc.scripts if BUNDLE_MARK in s["text"]]
    assert len(bundles) == 1 and len(bundles[0]["text"]) > 3_000_000
    assert text.count(BUNDLE_MARK) == 1
    assert [s for s in doc.scripts if "src" in s["attrs"]] == []        # opens offline: no <script src>
    assert not any(t in ("link", "iframe", "img") for t, _ in doc.tags)
    assert 4_000_000 < len(text.encode()) < 6_500_000                     # plotly.js is most of it
    # one plotly div per figure, each drawn by its own Plotly.newPlot
    divs = [a["id"] for t, a in doc.tags if t == "div" and "plotly-graph-div" in a.get("class", "")]
    assert divs == ["fig-reliability", "fig-calibration-map"]
    assert text.count("Plotly.newPlot(") == 2


def test_cdn_report_references_plotly_once_without_the_bundle(cdn):
    from plotly.io._utils import plotly_cdn_url

    text, doc = cdn
    assert BUNDLE_MARK not in text
    srcs = [s["attrs"]["src"] for s in doc.scripts if "src" in s["attrs"]]
    assert srcs == [plotly_cdn_url()] and srcs[0].startswith("https://cdn.plot.ly/plotly-")
    assert len(text.encode()) < 400_000


@pytest.mark.parametrize("mode", [False, "directory", "inline", 1, None])
def test_other_plotlyjs_modes_are_refused(case, mode):
    ev, boot, table, _ = case
    with pytest.raises(SettingsError, match="include_plotlyjs"):
        report.build_report(ev, boot, title="t", source_description="s", scheme_description="x",
                            measures_table=table, include_plotlyjs=mode)


# -- escaping --------------------------------------------------------------------------------------
def test_title_and_notes_are_escaped(inline):
    text, doc = inline
    assert "Model A <v2>" not in text and "<b>bold</b>" not in text
    assert "<title>Model A &lt;v2&gt; &amp; friends</title>" in text
    assert "<li>a &lt;b&gt;bold&lt;/b&gt; claim &amp; more</li>" in text
    assert not any(t in ("v2", "b") for t, _ in doc.tags)


@pytest.fixture(scope="module")
def hostile(tmp_path_factory):
    """A CSV whose file name and score column hold markup."""
    rng = np.random.default_rng(11)
    n = 600
    s = rng.uniform(0.02, 0.98, n)
    y = (rng.random(n) < s ** 2).astype(int)
    path = tmp_path_factory.mktemp("hostile") / "a&b<i>.csv"
    pd.DataFrame({"<script>alert(1)</script>": s, "y": y}).to_csv(path, index=False)
    text = report.report_for_file(path, methods="platt,isotonic", score="<script>alert(1)</script>", label="y",
                                  n_boot=30, generated=WHEN)
    return text, Doc(text)


def test_column_and_file_names_are_escaped(hostile):
    text, doc = hostile
    assert doc.errors == []
    assert "<script>alert(1)</script>" not in text and "<i>" not in text
    assert "score column &#x27;&lt;script&gt;alert(1)&lt;/script&gt;&#x27;" in text
    assert "<title>Calibration report: a&amp;b&lt;i&gt;.csv</title>" in text
    # the only scripts: plotly's config, the bundle and one per figure; none carries the column's markup
    assert len(doc.scripts) == 4
    assert not any("alert(1)" in s["text"] for s in doc.scripts)
    assert not any(t == "i" for t, _ in doc.tags)


# -- the command line's path -------------------------------------------------------------------------
def _cli_metrics(*args) -> dict:
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        assert cli.main(["evaluate", *map(str, args), "--json"]) == 0
    return json.loads(out.getvalue())


@pytest.mark.parametrize("cells", ["never", "always"])
def test_report_for_a_sample_file_shows_what_evaluate_prints(cells):
    path = sample_path("circles_svm")
    text = report.report_for_file(path, methods="platt,histogram,isotonic", cells=cells, n_boot=30,
                                  generated=WHEN)
    doc = Doc(text)
    assert doc.errors == []
    printed = _cli_metrics(path, "--methods", "platt,histogram,isotonic", "--cells", cells)
    _, rows = body_of(doc.table("metrics"))
    assert list(rows) == LABELS
    for key, label in zip(printed["metrics"], LABELS):
        for j, name in enumerate(metrics.METRIC_NAMES):
            shown = rows[label][j][0].split(" [")[0]
            assert shown == f"{printed['metrics'][key][name]:.4f}", (cells, key, name)
    ss = load_scores(path)
    if cells == "always":                   # the rows a hash of their position holds out (not stratified)
        held = cell_parts(ss.n_rows, Scheme(), ss.split) == 1
        n, pos = int(held.sum()), int(ss.labels[held].sum())
    else:                                   # a stratified 30% of 1,000 positives and 1,000 negatives
        n, pos = 600, 300
    assert printed["rows_judged"] == n
    assert f"<dd>{n:,} held-out rows, {pos:,} positives ({100 * pos / n:.1f}%)</dd>" in text
    assert printed["scheme"] in text
    assert "circles_svm.csv · score column &#x27;linear_svm&#x27; · label column &#x27;label&#x27;" in text
    assert doc.ids["verdict"].startswith("Verdict") and len(doc.ids["verdict"]) > 40
    if cells == "always":
        assert f"<dd>yes: {printed['cells']}" in text and "Poisson resamples" in text
    else:
        assert printed["cells"] is None and "no: every held-out row was used" in text


def test_report_for_file_refuses_a_column_scheme_without_a_split_column(hostile, tmp_path):
    path = tmp_path / "nosplit.csv"
    pd.DataFrame({"score": np.linspace(0.05, 0.95, 100), "label": np.arange(100) % 2}).to_csv(path, index=False)
    with pytest.raises(DataError, match="split column"):
        report.report_for_file(path, methods="platt", scheme=Scheme(kind="column"))
    with pytest.raises(SettingsError, match="cells"):
        report.report_for_file(path, methods="platt", cells="sometimes")


# -- measures that fail on some method -----------------------------------------------------------------
def test_a_measure_that_fails_is_nan_for_that_method_only_and_noted(case, monkeypatch):
    ev = case[0]
    real = measures.compute
    victim = ev.predictions["isotonic"].to_numpy()

    def compute(p, y, w=None, names=None, **kw):
        asked = measures.check_names(names)
        if "ICI" in asked and np.array_equal(p, victim):
            raise DataError("the loess neighbourhood has zero width")
        return real(p, y, w, names, **kw)

    monkeypatch.setattr(measures, "compute", compute)
    table, notes = report.measure_table(ev)
    assert np.isnan(table.loc["isotonic", "ICI"])
    others = [n for n in measures.MEASURE_NAMES if n != "ICI"]
    np.testing.assert_allclose(table.loc["isotonic", others].to_numpy(dtype=float),
                               [real(victim, ev.labels, None, [n])[n] for n in others])
    assert np.isfinite(table.loc[["uncalibrated", "platt", "histogram"], "ICI"]).all()
    assert notes == ["ICI of Isotonic regression could not be computed: the loess neighbourhood has zero width"]


def _has_report_command() -> bool:
    return "report" in cli.build_parser()._subparsers._group_actions[0].choices


@pytest.mark.skipif(not _has_report_command(), reason="the `report` command is proposed for cli.py, not merged yet")
def test_report_command_writes_the_file_and_cdn_to_stdout(tmp_path, capsys):
    path = sample_path("circles_svm")
    out = tmp_path / "r.html"
    assert cli.main(["report", str(path), "--methods", "platt,isotonic", "--out", str(out)]) == 0
    text = out.read_text(encoding="utf-8")
    doc = Doc(text)
    assert doc.errors == [] and text.count(BUNDLE_MARK) == 1
    assert list(body_of(doc.table("metrics"))[1]) == ["Uncalibrated", "Platt scaling", "Isotonic regression"]
    assert "opens offline" in capsys.readouterr().err
    assert cli.main(["report", str(path), "--methods", "platt", "--plotlyjs", "cdn", "--out", "-",
                     "--title", "<T>"]) == 0
    streamed = capsys.readouterr().out
    assert streamed.startswith("<!DOCTYPE html>") and BUNDLE_MARK not in streamed
    assert "<title>&lt;T&gt;</title>" in streamed


# -- the reliability diagram's type ----------------------------------------------------------------------
def _reliability_traces(text: str) -> list[dict]:
    """The traces of the report's reliability figure, read from its Plotly.newPlot call."""
    at = text.index('"fig-reliability",', text.index("Plotly.newPlot("))
    start = text.index("[", at)
    return json.JSONDecoder().raw_decode(text[start:])[0]


@pytest.mark.parametrize("diagram", ["smooth", "corp"])
def test_report_draws_the_smooth_and_corp_diagrams(case, diagram):
    ev, boot, table, _ = case
    text = report.build_report(ev, boot, title="t", source_description="s", scheme_description="x",
                               measures_table=table, include_plotlyjs="cdn", generated=WHEN, diagram=diagram)
    doc = Doc(text)
    assert doc.errors == []
    names = {t.get("name") for t in _reliability_traces(text) if t.get("showlegend") is not False}
    for key, label in zip(ev.predictions.columns, LABELS):
        p = ev.predictions[key].to_numpy()
        if diagram == "corp":
            d = corp.corp_decomposition(p, ev.labels)
            assert f"{label} · MCB {d['MCB']:.3f} · DSC {d['DSC']:.3f} · UNC {d['UNC']:.3f}" in names
        else:
            assert any(n and n.startswith(f"{label} · smECE {smooth_ece.smooth_ece(p, ev.labels):.3f}")
                       for n in names), names
    caption = {"smooth": "Smoothed reliability diagram (SmoothECE", "corp": "CORP reliability diagram (Dimitriadis"}
    assert caption[diagram] in text and "observed frequency of positives against mean prediction" not in text
    with pytest.raises(SettingsError, match="kind must be one of"):
        report.build_report(ev, boot, title="t", source_description="s", scheme_description="x",
                            measures_table=table, diagram="pie")


def test_report_command_draws_the_chosen_diagram(tmp_path, capsys):
    path = sample_path("circles_svm")
    out = tmp_path / "corp.html"
    assert cli.main(["report", str(path), "--methods", "platt", "--plotlyjs", "cdn", "--diagram", "corp",
                     "--out", str(out)]) == 0
    text = out.read_text(encoding="utf-8")
    assert "CORP reliability diagram (Dimitriadis" in text
    assert any(" · MCB " in (t.get("name") or "") for t in _reliability_traces(text))
    assert cli.main(["report", str(path), "--methods", "platt", "--plotlyjs", "cdn", "--out", "-"]) == 0
    default = capsys.readouterr().out
    assert "observed frequency of positives against mean prediction" in default       # binned by default
    with pytest.raises(SystemExit) as exc:
        cli.main(["report", str(path), "--diagram", "pie", "--out", str(out)])
    assert exc.value.code == 2 and "invalid choice: 'pie'" in capsys.readouterr().err


def test_report_auto_bins_follow_the_stated_rule(case):
    from calibdash import diagrams

    ev, boot, table, _ = case
    text = report.build_report(ev, boot, title="t", source_description="s", scheme_description="x",
                               measures_table=table, include_plotlyjs="cdn", generated=WHEN, n_bins="auto")
    n = diagrams.auto_bin_count(len(ev.labels))                 # 450 held-out rows: 8 bins
    assert n == 8 and f"mean prediction in {n} equal-count bins" in text
    line = next(t for t in _reliability_traces(text) if t.get("name") == "Platt scaling")
    x = line["x"]                                               # plotly writes arrays as typed base64
    x = np.frombuffer(base64.b64decode(x["bdata"]), dtype=x["dtype"]) if isinstance(x, dict) else np.asarray(x)
    assert x.size == n                                          # one point per bin
