"""Streamlit wiring shared by the pages: state, caches, widgets.

Everything computed here is computed by ``calibdash``; this module only keys
caches, reads widget state and turns errors into messages.

State lives in widgets with stable keys and ``persist_state="session"`` (so
a choice made on one page holds on the others); the one thing kept by hand
in ``st.session_state`` is the uploaded file (name, bytes, SHA-256), because
the uploader widget lives on the Data page only.
"""
from __future__ import annotations

import contextvars
import hashlib
import logging

import numpy as np
import pandas as pd
import streamlit as st

from calibdash import bootstrap as cboot, calibrators, data as cdata, evaluation, export, metrics, samples
from calibdash.figures import images
from calibdash.errors import DataError
from calibdash.evaluation import Evaluation, Scheme

log = logging.getLogger("calibdash.app")

UPLOAD = "upload"          # session_state key of the uploaded file
SOURCE = "source"          # "Sample" or "Upload"
SAMPLE = "sample"          # sample name
SOURCES = ("Sample", "Upload")
DEEP_LINK = "_deep_link"   # page asked for before the router had run (see route_guard)

#: True while app.py's router is running a page.
ROUTED: contextvars.ContextVar[bool] = contextvars.ContextVar("calibdash_routed", default=False)


def route_guard(page_path: str) -> None:
    """Send a page that was opened without app.py's router back through it.

    Because the product's layout has a ``pages/`` folder, Streamlit's first
    request for a deep link (``/explore`` on a fresh server) runs the page file
    alone, in the old folder-based mode, without app.py's set-up and
    navigation. The page then remembers where the user wanted to go and
    switches to app.py, which routes there.
    """
    if not ROUTED.get():
        st.session_state[DEEP_LINK] = page_path
        st.switch_page("app.py")
NONE = "(none)"            # choice meaning "no such column"


# -- data ----------------------------------------------------------------------
@st.cache_data(show_spinner="Reading the file…", max_entries=8)
def _read_bytes(sha: str, name: str, _data: bytes):
    """Parse uploaded bytes; keyed on our own SHA-256 of them (st hashes big inputs by sampling)."""
    return cdata.read_table(_data, filename=name)


@st.cache_data(show_spinner="Reading the sample…", max_entries=8)
def _read_sample(name: str):
    path = samples.sample_path(name)
    return cdata.read_table(path.read_bytes(), filename=path.name)


@st.cache_data(show_spinner=False, max_entries=32)
def _score_set(sha: str, roles: tuple, _df: pd.DataFrame, _info) -> cdata.ScoreSet:
    kw = dict(roles)
    return cdata.build_score_set(_df, info=_info, name=_info.name, **kw)


def remember_upload(uploaded) -> None:
    """Keep an uploaded file in the session (its bytes and our hash of them)."""
    raw = uploaded.getvalue()
    sha = hashlib.sha256(raw).hexdigest()
    current = st.session_state.get(UPLOAD)
    if not current or current["sha"] != sha:
        st.session_state[UPLOAD] = {"name": uploaded.name, "data": raw, "sha": sha}


def using_upload() -> bool:
    """Whether the active source is an uploaded file (else a sample)."""
    return st.session_state.get(SOURCE, "Sample") == "Upload" and bool(st.session_state.get(UPLOAD))


def source_table():
    """(DataFrame, FileInfo) of the active source: the chosen sample or the uploaded file.

    Raises DataError for an unreadable file.
    """
    if using_upload():
        up = st.session_state[UPLOAD]
        return _read_bytes(up["sha"], up["name"], up["data"])
    return _read_sample(st.session_state.get(SAMPLE, samples.DEFAULT_SAMPLE))


def role_key(sha: str, role: str) -> str:
    """Widget key of a column-role choice; roles are remembered per file."""
    return f"role.{role}.{sha[:12]}"


def chosen_roles(sha: str) -> dict:
    """The user's column roles for file ``sha`` (missing ones are guessed by calibdash)."""
    roles = {}
    for role in ("label", "score", "positive", "split"):
        v = st.session_state.get(role_key(sha, role))
        if v == NONE and role == "split":
            roles["split"] = ""          # calibdash: "" means no split column
        elif v not in (None, "", NONE):
            roles[role] = v
    feats = st.session_state.get(role_key(sha, "features"))
    if feats is not None:
        roles["features"] = list(feats)
    return roles


def _freeze(roles: dict) -> tuple:
    return tuple(sorted((k, tuple(v) if isinstance(v, list) else v) for k, v in roles.items()))


def active_score_set() -> cdata.ScoreSet:
    """The ScoreSet every page works on. Raises DataError with a message for the user."""
    df, info = source_table()
    roles = chosen_roles(info.sha256)
    if not using_upload():
        sample = samples.SAMPLES.get(st.session_state.get(SAMPLE, samples.DEFAULT_SAMPLE))
        if sample is not None:
            roles.setdefault("score", sample.score)
            roles.setdefault("label", sample.label)
    frozen = _freeze(roles)
    try:
        return _score_set(info.sha256, frozen, df, info)
    except DataError:
        if not roles:
            raise
        # A remembered role no longer fits (e.g. a column choice from before): fall back to guesses.
        return _score_set(info.sha256, (), df, info)


def score_set_or_stop() -> cdata.ScoreSet:
    """The active ScoreSet, or an error box and a stop (never a traceback)."""
    try:
        return active_score_set()
    except DataError as exc:
        st.error(f"**This data cannot be used:** {exc}")
        st.page_link("pages/data.py", label="Go to the Data page to choose another file or sample", icon=":material/folder_open:")
        st.stop()


# -- evaluation scheme -----------------------------------------------------------
SCHEME_KINDS = {"split": "Random split", "column": "File's split column", "kfold": "K-fold cross-fitting",
                "insample": "In-sample (optimistic)"}


def scheme_line(ss: cdata.ScoreSet) -> str:
    """The scheme in words, naming the split column and its parts when the file's own split is used."""
    scheme = current_scheme(ss)
    text = scheme.describe()
    if scheme.kind == "column" and ss.split_column:
        parts = pd.Series(ss.split).value_counts()
        text = (f"The file's split column `{ss.split_column}`: "
                + ", ".join(f"{k} ({v:,} rows)" for k, v in parts.items()))
    return text


def current_scheme(ss: cdata.ScoreSet | None = None) -> Scheme:
    """The evaluation scheme chosen on the Data page (default: the file's split if it has one)."""
    default_kind = "column" if ss is not None and ss.split_column else "split"
    kind = st.session_state.get("scheme.kind") or default_kind
    if kind == "column" and (ss is None or not ss.split_column):
        kind = "split"
    return Scheme(kind=kind,
                  test_size=float(st.session_state.get("scheme.test_size", 0.3)),
                  seed=int(st.session_state.get("scheme.seed", 0)),
                  n_folds=int(st.session_state.get("scheme.n_folds", 5)),
                  train_value=st.session_state.get("scheme.train_value") or None)


# -- fitting -------------------------------------------------------------------------
@st.cache_data(show_spinner=False, max_entries=512)
def _evaluate_one(data_key: str, scheme: Scheme, method: str, params: tuple, _ss: cdata.ScoreSet) -> Evaluation:
    cal = calibrators.get(method, **dict(params))
    feats = _ss.features if cal.uses_features else None
    return evaluation.evaluate(_ss.scores, _ss.labels, {method: cal}, scheme, features=feats, split=_ss.split)


def evaluate_methods(ss: cdata.ScoreSet, scheme: Scheme, chosen: dict[str, dict]) -> Evaluation:
    """Held-out evaluation of ``chosen`` (method -> params), each fit cached on data + scheme + params."""
    parts = []
    slow = len(chosen) > 0
    with st.spinner("Fitting calibrators…", show_time=True) if slow else _null():
        for method, params in chosen.items():
            parts.append(_evaluate_one(ss.content_key(), scheme, method, tuple(sorted(params.items())), ss))
    if not parts:
        return evaluation.evaluate(ss.scores, ss.labels, {}, scheme, split=ss.split)
    return evaluation.combine(parts)


class _null:
    def __enter__(self):
        return self

    def __exit__(self, *a):
        return False


# -- hyperparameter widgets ---------------------------------------------------------------
def _fmt(v) -> str:
    if isinstance(v, float):
        return f"{v:g}"
    return str(v)


def initial(key: str, **default) -> dict:
    """The default argument of a widget unless session state (a shared link) already holds its value.

    Passing both makes Streamlit warn on the page, so the default is left out
    when the state was set before the widget was drawn.
    """
    return {} if key in st.session_state else default


def hyperparam_widgets(method: str, container=None) -> dict:
    """One widget per declared hyperparameter of ``method``; returns name -> value.

    Keys are ``hp.<method>.<name>`` and persist for the session, so Explore and
    Compare share one setting per method.
    """
    cls = calibrators.get_class(method)
    box = container or st
    values = {}
    for hp in cls.hyperparams:
        key = f"hp.{method}.{hp.name}"
        label = f"{hp.symbol} — {hp.name}" if hp.symbol and hp.symbol != hp.name else hp.name
        if hp.kind == "bool":
            values[hp.name] = box.toggle(label, key=key, help=hp.help, persist_state="session",
                                         **initial(key, value=bool(hp.default)))
        elif hp.kind == "choice":
            opts = list(hp.choices)
            values[hp.name] = box.selectbox(label, opts, key=key, help=hp.help, persist_state="session",
                                            **initial(key, index=opts.index(hp.default)))
        else:
            grid = hp.grid()
            if key in st.session_state and st.session_state[key] not in grid:
                del st.session_state[key]          # a value from a link that is not on the slider
            values[hp.name] = box.select_slider(label, options=grid, key=key,
                                                help=hp.help + (" (log scale)" if hp.log else ""),
                                                format_func=_fmt, persist_state="session",
                                                **initial(key, value=hp.default))
    return values


def hyperparam_panel(methods, title: str = "Hyperparameters") -> dict:
    """A collapsed panel with each method's hyperparameter widgets in up to three columns; method -> values."""
    params = {}
    with st.expander(title, expanded=False):
        cols = st.columns(max(1, min(3, len(methods))))
        for i, m in enumerate(methods):
            box = cols[i % len(cols)]
            box.markdown(f"**{method_label(m)}**")
            params[m] = hyperparam_widgets(m, box)
    return params


def method_label(method: str) -> str:
    return calibrators.get_class(method).label or method


def method_menu_label(method: str) -> str:
    """Label and summary, for menus: "BBQ — Bayesian binning into quantiles"."""
    cls = calibrators.get_class(method)
    return f"{cls.label} — {cls.summary}" if cls.summary and cls.summary not in cls.label else (cls.label or method)


def method_labels(keys) -> dict:
    out = {}
    for k in keys:
        if k == evaluation.UNCALIBRATED:
            out[k] = "Uncalibrated"
        else:
            try:
                out[k] = method_label(k)
            except DataError:
                out[k] = k
    return out


# -- display ----------------------------------------------------------------------
def metrics_frame(table: pd.DataFrame) -> "pd.io.formats.style.Styler":
    """The metrics table with display names and the best value of each column in bold."""
    t = table.copy()
    t.index = [method_labels([k])[k] for k in t.index]

    def best(col: pd.Series):
        vals = col.to_numpy(dtype=float)
        if np.all(np.isnan(vals)):
            return [""] * len(col)
        target = np.nanmin(vals) if col.name in metrics.LOWER_IS_BETTER else np.nanmax(vals)
        return ["font-weight: 700; background-color: #E8F4EA" if np.isclose(v, target) else "" for v in vals]

    return t.style.apply(best, axis=0).format("{:.4f}")


def sidebar_summary() -> None:
    """The active data set and evaluation scheme, shown on every page."""
    with st.sidebar:
        st.markdown("**Active data**")
        try:
            ss = active_score_set()
        except DataError as exc:
            st.error(str(exc))
            return
        st.caption(f"{ss.name} · {ss.n_rows:,} rows\n\n"
                   f"score **{ss.score}** · label **{ss.label_column}** (positive = {ss.positive_label!r})")
        if ss.report.mapped.get(ss.score):
            st.caption("Scores outside [0, 1] were mapped by the logistic function.")
        st.markdown("**Evaluation**")
        st.caption(scheme_line(ss))


def show_notes(diag: dict) -> None:
    for note in diag.get("notes", []) or []:
        st.info(note, icon=":material/info:")


# -- page state in the URL ------------------------------------------------------------
_URL_WRITTEN = "_url_written"


def _hp_codec(hp):
    """(parse, format) between a hyperparameter's value and its URL text."""
    if hp.kind == "bool":
        return (lambda t: t.lower() in ("1", "true", "yes")), (lambda v: "true" if v else "false")
    if hp.kind == "int":
        return int, str
    if hp.kind == "float":
        return float, repr
    return str, str


def url_spec(methods) -> dict:
    """URL parameter -> (session key, parse, format) for the shareable state of Compare."""
    spec = {
        "sample": (SAMPLE, str, str),
        "methods": ("compare.methods", lambda t: [m for m in t.split(",") if m in calibrators.available()],
                    lambda v: ",".join(v)),
        "scheme": ("scheme.kind", str, str),
        "test_size": ("scheme.test_size", float, repr),
        "seed": ("scheme.seed", int, str),
        "folds": ("scheme.n_folds", int, str),
    }
    for m in methods:
        if m not in calibrators.available():
            continue
        for hp in calibrators.get_class(m).hyperparams:
            parse, fmt = _hp_codec(hp)
            spec[f"{m}.{hp.name}"] = (f"hp.{m}.{hp.name}", parse, fmt)
    return spec


def apply_url_state() -> None:
    """Load the state a shared link carries into the widgets, before they are drawn.

    Only when the address differs from what this session last wrote: so a
    link opened in a new tab restores its view, and later widget changes are
    not overwritten by the old address.
    """
    qp = st.query_params.to_dict()
    if not qp or qp == st.session_state.get(_URL_WRITTEN):
        return
    methods = qp.get("methods", "")
    spec = url_spec(methods.split(","))
    for param, text in qp.items():
        if param not in spec:
            continue
        key, parse, _ = spec[param]
        try:
            st.session_state[key] = parse(text)
        except (TypeError, ValueError):
            log.warning("ignoring URL parameter %s=%r", param, text)
    if "sample" in qp and qp["sample"] in samples.SAMPLES:
        st.session_state[SOURCE] = "Sample"


def write_url_state(methods) -> None:
    """Put the shareable state (sample, methods, their hyperparameters, scheme) in the address bar."""
    spec = url_spec(methods)
    out = {}
    for param, (key, _, fmt) in spec.items():
        if param == "sample" and using_upload():
            continue                       # an uploaded file cannot travel in a link
        value = st.session_state.get(key)
        if value is not None and value != "":
            out[param] = fmt(value)
    if out != st.query_params.to_dict():
        st.query_params.from_dict(out)
    st.session_state[_URL_WRITTEN] = out


# -- Compare: intervals, verdict, models, images ------------------------------------------
@st.cache_data(show_spinner="Bootstrapping intervals…", max_entries=64)
def _bootstrap(data_key: str, scheme: Scheme, chosen: tuple, _ev: Evaluation) -> cboot.BootstrapResult:
    n_boot = cboot.resamples_for(len(_ev.rows), _ev.predictions.shape[1])
    return cboot.bootstrap_metrics(_ev.predictions, _ev.labels, n_boot=n_boot)


def bootstrap(ev: Evaluation, ss: cdata.ScoreSet, scheme: Scheme, params: dict) -> cboot.BootstrapResult:
    """Paired bootstrap intervals of the metrics table, cached on data + scheme + methods + parameters."""
    chosen = tuple((m, tuple(sorted(p.items()))) for m, p in params.items())
    return _bootstrap(ss.content_key(), scheme, chosen, ev)


def interval_frame(boot: cboot.BootstrapResult):
    """'value [low, high]' per cell, display names, best value per column highlighted."""
    t = boot.table
    names = list(dict.fromkeys(t.columns.get_level_values(0)))
    text = pd.DataFrame({n: [f"{v:.4f} [{lo:.3f}, {hi:.3f}]" for v, lo, hi in
                             zip(t[(n, "value")], t[(n, "low")], t[(n, "high")])] for n in names},
                        index=[method_labels([k])[k] for k in t.index])
    values = pd.DataFrame({n: t[(n, "value")].to_numpy() for n in names}, index=text.index)

    def best(col: pd.Series):
        vals = values[col.name].to_numpy(dtype=float)
        if np.all(np.isnan(vals)):
            return [""] * len(col)
        target = np.nanmin(vals) if col.name in metrics.LOWER_IS_BETTER else np.nanmax(vals)
        return ["font-weight: 700; background-color: #E8F4EA" if np.isclose(v, target) else "" for v in vals]

    return text.style.apply(best, axis=0)


def verdict_sentence(boot: cboot.BootstrapResult, labels: dict) -> str:
    return cboot.verdict(boot, "ECE", labels)


def models_table(ss: cdata.ScoreSet, scheme: Scheme, params: dict, models: list, n_bins: int, strategy: str):
    """Metrics of every (model, method) and each model's raw reliability table, on held-out rows."""
    rows, tables = [], {}
    for col in models:
        ss_m = ss if col == ss.score else ss.with_score(col)
        ev = evaluate_methods(ss_m, scheme, params)
        t = ev.metrics.copy()
        t.index = pd.MultiIndex.from_product([[col], [method_labels([k])[k] for k in t.index]],
                                             names=["model", "method"])
        rows.append(t)
        tables[col] = metrics.reliability_table(ev.predictions[evaluation.UNCALIBRATED].to_numpy(), ev.labels,
                                                n_bins, strategy)
    return pd.concat(rows), tables


def image_maker(fig, fmt: str):
    """A download callable rendering ``fig`` on click (never on every rerun)."""
    return lambda: images.figure_bytes(fig, fmt)


def model_json(model, ss: cdata.ScoreSet):
    """A download callable writing the fitted calibrator as calibdash JSON (on click only)."""
    return lambda: export.dumps(model, fitted_on=export.provenance(ss, model)).encode()
