"""What data and the address bar can make the pages do: nothing but show themselves.

* A command a page shows (Groups & time: "the same numbers on the command line") is a code block whose text,
  run by a real POSIX shell, gives exactly the page's arguments, whatever quotes, backticks, ``$()``, line
  breaks or spaces the file and column names hold; a name spelling ``touch`` creates no file.
* File, column, class and group names from the data reach Markdown bodies (captions, alerts, metrics,
  markdown) escaped (:func:`pages.parts.text.md`): no image, link or HTML from the data, and figures hold no
  ``<img``/``<a`` tag (:func:`calibdash.figures.text.plain_figure`).
* Every field of the address bar is checked as its widget would check it (range, type, choices, each list
  entry once): out-of-range, wrong-type and repeated values give the sidebar's warning and the defaults,
  never "Something went wrong".
"""
from __future__ import annotations

import hashlib
import json
import re
import shlex
import string
import subprocess

import numpy as np
import pandas as pd
import pytest
from streamlit.testing.v1 import AppTest

from calibdash.figures.text import plain_figure, plain_markup
from pages.parts import scheme, segments_command as command, url_state
from pages.parts.text import LINE_BREAK, md
from tests.pages.test_app import APP, _run_entry_point_every_time  # noqa: F401
from tests.pages.test_app_segments import DRIVER as SEGMENTS_DRIVER
from tests.conftest import APPTEST_TIMEOUT

IMAGE = "![b](http://127.0.0.1:9/x.png)"
HTML = "<img src=x onerror=alert(1)>"
BOLD = "**bold**"
LINK = '<a href="http://127.0.0.1:9/">l</a>'
HOSTILE = (IMAGE, HTML, BOLD)


def unescape(text: str) -> str:
    """The text a Markdown body shows: each backslash escape read as the character it escapes."""
    return re.sub(r"\\(.)", r"\1", text)


# -- the escaping itself ---------------------------------------------------------------------------------------
@pytest.mark.parametrize("text", [*HOSTILE, LINK, "a_b*c", "$x$ :red[y] :material/home: `z`", "back\\slash",
                                  "www.example.com", "# head", "1. item", "| a | b |", "&amp; &lt;"])
def test_md_escapes_every_punctuation_character_and_reads_back(text):
    out = md(text)
    assert unescape(out) == text
    bare = re.sub(r"\\.", "", out, flags=re.S)           # what is left once every escape pair is taken out
    assert not set(bare) & set(string.punctuation), out


def test_md_shows_a_line_break_as_a_symbol_so_a_name_cannot_start_a_block():
    assert md("a\n# b\r\nc\rd") == f"a{LINE_BREAK}\\# b{LINE_BREAK}c{LINE_BREAK}d"


@pytest.mark.parametrize("text, shown", [
    (HTML, "&lt;img src=x onerror=alert(1)&gt;"),
    (LINK, '&lt;a href="http://127.0.0.1:9/"&gt;l&lt;/a&gt;'),
    ("<b>kept</b><br>a & b", "<b>kept</b><br>a &amp; b"),
    ("<b onclick=x>", "&lt;b onclick=x&gt;"),
    ("already &lt; &amp; &#60;", "already &lt; &amp; &#60;"),
])
def test_plain_markup_escapes_tags_but_the_figures_own(text, shown):
    assert plain_markup(text) == shown
    assert plain_markup(shown) == shown                    # idempotent


def test_plain_figure_reaches_names_data_titles_annotations_and_ticks():
    import plotly.graph_objects as go
    from plotly.subplots import make_subplots

    fig = make_subplots(rows=1, cols=2, subplot_titles=[HTML, LINK])
    fig.add_trace(go.Bar(x=np.array([HTML, "ok"], dtype=object), y=[1, 2], name=LINK,
                         customdata=[[HTML], [LINK]], hovertemplate="<b>%{x}</b> %{customdata[0]}<extra></extra>"),
                  row=1, col=1)
    fig.update_layout(title=HTML, legend_title_text=LINK, xaxis=dict(title=dict(text=HTML), ticktext=[LINK],
                                                                     tickvals=[0]))
    strings = _figure_strings(json.loads(plain_figure(fig).to_json()))
    assert not [s for s in strings if "<img" in s or "<a " in s]
    assert "<b>%{x}</b> %{customdata[0]}<extra></extra>" in strings


def _figure_strings(obj) -> list[str]:
    if isinstance(obj, str):
        return [obj]
    if isinstance(obj, dict):
        return [s for k, v in obj.items() if k != "template" for s in _figure_strings(v)]
    if isinstance(obj, list):
        return [s for v in obj for s in _figure_strings(v)]
    return []


# -- commands are code -----------------------------------------------------------------------------------------
NAMES = ["'; touch pwned_q; #", "`touch pwned_b`", "$(touch pwned_d)", "two\nlines; touch pwned_n", "a b  c"]


def _shell_split(text: str, cwd) -> list[str]:
    """``text`` as a POSIX shell splits it (``sh``, the words of ``set --``); runs nothing else unless the text
    escapes its quoting."""
    out = subprocess.run(["sh", "-c", "set -- " + text + "\nprintf '%s\\0' \"$@\""], cwd=cwd, capture_output=True,
                         check=True).stdout
    return out.decode().split("\0")[:-1]


def _segments_session(frame: pd.DataFrame, name: str) -> AppTest:
    at = AppTest.from_string(SEGMENTS_DRIVER, default_timeout=APPTEST_TIMEOUT)
    data = frame.to_csv(index=False).encode()
    at.session_state["upload"] = {"name": name, "data": data, "sha": hashlib.sha256(data).hexdigest()}
    at.session_state["source"] = "Upload"
    return at.run()


def _grouped_frame(columns: dict, n: int = 400, seed: int = 3) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    p = rng.uniform(0.05, 0.95, n)
    out = {"score": p, "label": (rng.uniform(size=n) < p).astype(int)}
    out.update({c: np.asarray(v)[np.arange(n) % len(v)] for c, v in columns.items()})
    return pd.DataFrame(out)


def test_a_copied_command_gives_the_pages_arguments_whatever_the_names(tmp_path):
    """Before, the command was Markdown inside backticks: a column named ``'; touch x; #`` came out as
    ``--by ''; touch x; #'`` and a copy ran ``touch``. Now the code block's text, run by ``sh``, gives the
    page's own arguments back, for hostile file and column names, and creates no file."""
    file_name = "scores $(touch pwned_f) 'x'.csv"
    frame = _grouped_frame({c: ["a", "b"] for c in NAMES})
    at = _segments_session(frame, file_name)
    assert not at.exception, [e.value for e in at.exception]
    for column in NAMES:
        at.selectbox(key=next(k for k in _keys(at) if k.startswith("segments.group."))).set_value(column).run()
        assert not at.exception, [e.value for e in at.exception]
        (shown,) = [c.value for c in at.code][:1]
        want = command.groups_argv([file_name, "--score", "score", "--label", "label"], column, 10,
                                   _boot(at), 0)
        assert shlex.split(shown) == want
        assert _shell_split(shown, tmp_path) == want
        assert command.COMMAND_CAPTION in [c.value for c in at.caption]
    assert not list(tmp_path.iterdir())                  # nothing spelled in a name ran


def _keys(at: AppTest) -> list[str]:
    return [s.key for s in at.selectbox if s.key]


def _boot(at: AppTest) -> int:
    argv = shlex.split(at.code[0].value)
    return int(argv[argv.index("--boot") + 1])


# -- names from the data are text ------------------------------------------------------------------------------
def _bodies(at: AppTest) -> list[str]:
    """Every Markdown body on the page: markdown, captions, headings, alerts, metrics, expander labels."""
    out = [m.value for m in at.markdown] + [c.value for c in at.caption] + [s.value for s in at.subheader]
    for kind in (at.info, at.warning, at.error, at.success):
        out += [a.value for a in kind]
    out += [m.label for m in at.metric] + [m.value for m in at.metric] + [e.label for e in at.expander]
    return out


def _unsafe(body: str) -> list[str]:
    """What of the hostile names' Markdown or HTML a body holds unescaped: the body with every backslash escape
    pair taken out still holding an image, a link, a tag, bold from the data or the beacon's address."""
    bare = re.sub(r"\\.", "", body, flags=re.S)
    return [t for t in ("![", "](", "<img", "<a ", "127.0.0.1") if t in bare] + [BOLD] * (BOLD in body)


def _charts(at: AppTest) -> list[str]:
    return [s for el in at.get("plotly_chart") for s in _figure_strings(json.loads(el.proto.spec))]


def _assert_shown_as_text(at: AppTest, names) -> None:
    assert not at.exception, [e.value for e in at.exception]
    bodies = _bodies(at)
    for body in bodies:
        assert not _unsafe(body), body
    shown = "\n".join(bodies)
    for name in names:
        assert md(name) in shown, name
    assert not [s for s in _charts(at) if "<img" in s or "<a " in s]


def _hostile_binary() -> pd.DataFrame:
    """A score column named IMAGE, a label named HTML, and a group column named BOLD whose IMAGE group is the
    least calibrated (its labels are the opposite of its scores)."""
    rng = np.random.default_rng(5)
    n = 900
    p = rng.uniform(0.05, 0.95, n)
    y = (rng.uniform(size=n) < p).astype(int)
    group = np.array([IMAGE, HTML, BOLD])[np.arange(n) % 3]
    y[group == IMAGE] = (p[group == IMAGE] < 0.5).astype(int)
    return pd.DataFrame({IMAGE: p, HTML: y, BOLD: group})


@pytest.fixture
def hostile_upload():
    frame = _hostile_binary()
    data = frame.to_csv(index=False).encode()
    return {"name": f"{LINK}.csv", "data": data, "sha": hashlib.sha256(data).hexdigest()}


def test_file_column_and_group_names_show_literally_on_groups_and_time(hostile_upload):
    """The least calibrated group's name (IMAGE) in the lightbulb, the file, score and label names in the
    caption: escaped, so no image is fetched; the figures hold the names as text."""
    at = AppTest.from_string(SEGMENTS_DRIVER, default_timeout=APPTEST_TIMEOUT)
    at.session_state["upload"] = hostile_upload
    at.session_state["source"] = "Upload"
    at.run()
    _assert_shown_as_text(at, [IMAGE, HTML, BOLD, hostile_upload["name"]])
    assert any(f"least calibrated group is **{md(IMAGE)}**" in i.value for i in at.info)


@pytest.mark.parametrize("page", ["pages/data.py", "pages/compare.py", "pages/explore.py"])
def test_file_and_column_names_show_literally_on_the_binary_pages(hostile_upload, page):
    at = AppTest.from_file(str(APP), default_timeout=APPTEST_TIMEOUT)
    at.session_state["upload"] = hostile_upload
    at.session_state["source"] = "Upload"
    at.run()
    at.switch_page(page).run()
    _assert_shown_as_text(at, [IMAGE, hostile_upload["name"]])
    assert not at.error, [e.value for e in at.error]


def _hostile_classes() -> pd.DataFrame:
    """Three classes named IMAGE, HTML and BOLD: a label column of them and a p_<class> column each."""
    rng = np.random.default_rng(8)
    n = 300
    P = rng.dirichlet(np.ones(3), n)
    y = np.array([rng.choice(3, p=row) for row in P])
    classes = [IMAGE, HTML, BOLD]
    frame = pd.DataFrame({f"p_{c}": P[:, j] for j, c in enumerate(classes)})
    frame[LINK] = np.array(classes)[y]
    return frame


@pytest.mark.parametrize("page", ["pages/data.py", "pages/compare.py"])
def test_class_names_show_literally_on_the_k_class_pages(page):
    data = _hostile_classes().to_csv(index=False).encode()
    at = AppTest.from_file(str(APP), default_timeout=APPTEST_TIMEOUT)
    at.session_state["upload"] = {"name": "classes.csv", "data": data, "sha": hashlib.sha256(data).hexdigest()}
    at.session_state["source"] = "Upload"
    at.run()
    at.switch_page(page).run()
    assert not at.error, [e.value for e in at.error]
    _assert_shown_as_text(at, [LINK] + ([IMAGE, HTML, BOLD] if page == "pages/data.py" else []))


def test_an_error_quoting_a_name_shows_it_literally():
    """A file whose only column is named IMAGE cannot be used: the error box quotes the name, escaped."""
    data = pd.DataFrame({IMAGE: [0.1, 0.2] * 20}).to_csv(index=False).encode()
    at = AppTest.from_file(str(APP), default_timeout=APPTEST_TIMEOUT)
    at.session_state["upload"] = {"name": f"{HTML}.csv", "data": data, "sha": hashlib.sha256(data).hexdigest()}
    at.session_state["source"] = "Upload"
    at.run()
    at.switch_page("pages/data.py").run()
    assert at.error
    for body in _bodies(at):
        assert not _unsafe(body), body


# -- the address bar -------------------------------------------------------------------------------------------
def _open(query: dict) -> AppTest:
    at = AppTest.from_file(str(APP), default_timeout=APPTEST_TIMEOUT)
    for k, v in query.items():
        at.query_params[k] = v
    return at.run()


def _warning(at: AppTest) -> str:
    return unescape(" ".join(w.value for w in at.warning))


OUT_OF_RANGE = {"sample": ("nope", "not one of"), "scheme": ("nope", "not one of"),
                "test_size": ("0.9", "outside 0.1 to 0.5"), "seed": ("-5", "outside 0 to 10000"),
                "folds": ("11", "outside 2 to 10"), "histogram.n_bins": ("1000", "outside 2 to 100"),
                "histogram.by": ("nope", "not one of bins, size")}
WRONG_TYPE = {"test_size": ("abc", "could not convert"), "seed": ("1.5", "invalid literal"),
              "folds": ("x", "invalid literal"), "histogram.n_bins": ("nan", "invalid literal"),
              "platt.smooth_targets": ("maybe", "not true or false"), "mc_methods": ("x" * 3000, "longer than")}
NOT_FINITE = {"test_size": ("nan", "not a finite number"), "seed": (IMAGE, "invalid literal")}


@pytest.mark.parametrize("fields", [OUT_OF_RANGE, WRONG_TYPE, NOT_FINITE], ids=["range", "type", "finite"])
def test_a_link_with_bad_fields_runs_on_the_defaults_and_says_which(fields):
    """Each bad field is named in the warning with why; the scheme stays the default; the methods, given with
    repeats, are drawn once each; the Data page (which draws the scheme's widgets) runs too."""
    query = {k: v for k, (v, _) in fields.items()} | {"methods": "platt,histogram,platt,isotonic,histogram"}
    at = _open(query)
    assert not at.exception, [e.value for e in at.exception]
    assert not at.main.error, [e.value for e in at.main.error]
    warning = _warning(at)
    for field, (value, why) in fields.items():
        assert f"{field}={value[:80]}" in warning and why in warning, (field, warning)
    for body in _bodies(at):
        assert not _unsafe(body), body
    assert at.multiselect(key=url_state.METHODS).value == ["platt", "histogram", "isotonic"]
    for key in (scheme.SEED, scheme.TEST_SIZE, scheme.N_FOLDS):
        assert key not in at.session_state
    at.switch_page("pages/data.py").run()
    assert not at.exception, [e.value for e in at.exception]
    assert not at.main.error, [e.value for e in at.main.error]


def test_a_link_with_repeated_k_class_methods_draws_each_once():
    at = _open({"sample": "logits_4class", "mc_methods": "temperature,temperature,top_label:histogram,temperature",
                "top_label:histogram.min_rows": "0"})
    assert not at.exception, [e.value for e in at.exception]
    assert not at.main.error, [e.value for e in at.main.error]
    assert at.multiselect(key=url_state.CLASS_METHODS).value == ["temperature", "top_label:histogram"]
    assert "top_label:histogram.min_rows=0 (outside 1 to 1000)" in _warning(at)


@pytest.mark.parametrize("value, shown", [("platt,platt", ["platt"]), ("nope,,platt", ["platt"]), (",", [])])
def test_method_lists_are_known_names_each_once(value, shown):
    parse = url_state.url_spec([])["methods"][1]
    assert parse(value) == shown
