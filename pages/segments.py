"""Groups & time: calibration per segment (and the calibrator that fixes the groups), calibration over time
(and when a calibrator goes stale), on uploads, samples and large sources alike.

The page's data is summarised once into keyed score cells (:mod:`pages.parts.segments_data`: the rows' cells for
an upload, a DuckDB job for a large source) and every number comes from them through
:mod:`calibdash.monitoring.keyed.per_key`, every chart from calibdash.figures.charts.groups and calibdash.figures.charts.drift, so the
numbers are those of ``python -m calibdash groups`` / ``drift`` (the command is shown under each table).

The page reads the problem through one binary reduction (:mod:`pages.parts.segments_problem`): a binary table's
score, a K-class table's top label (the confidence as the score, "the top class is right" as the outcome); what
the problem adds (a K-class table's class-wise ECE per group, its class columns) is shown where it offers it."""
from __future__ import annotations

import numpy as np
import streamlit as st

from calibdash.evaluation import bootstrap as cboot
from calibdash import calibrators
from calibdash.monitoring import drift as cdrift, groups as cgroups
from calibdash.measures import calibration as metrics
from calibdash.core.errors import DataError, SettingsError
from calibdash.evaluation.holdout import CELLS_MIN_ROWS, UNCALIBRATED
from calibdash.figures.charts import drift as fdrift, groups as fgroups
from calibdash.cli.monitor import drift_document, groups_document
from calibdash.monitoring.keyed import PERIODS, Key
from pages.parts import diagrams, runs, segments_command as command, segments_data as sdata
from pages.parts.fitting import is_large
from pages.parts.labels import method_label, method_labels, method_menu_label
from pages.parts.problems import show_problem
from pages.parts.routing import route_guard
from pages.parts.scheme import current_scheme
from pages.parts.segments_columns import offered
from pages.parts.segments_problem import problem_or_stop
from pages.parts.widgets import initial
from pages.parts.text import chart, md

route_guard("pages/segments.py")

VIEWS = ("By group", "Over time")
#: Widget keys.
VIEW, GROUP_COL, DATE_COL, FREQ, METHOD, N_BINS, FIT = ("segments.view", "segments.group", "segments.date",
                                                        "segments.freq", "segments.method", "segments.n_bins",
                                                        "segments.fit")
FREQ_CHOICES = ("auto",) + PERIODS

st.title("Groups & time")
problem = problem_or_stop()
ss = problem.ss               # the reduction measured: the score, or a K-class table's top label
scheme = current_scheme(ss)
problem.intro()
# a K-class table's predicted and true class columns are offered, but a segment or a date is guessed first
candidates, group_guess, date_guess = offered(ss, problem.last_columns)
if not candidates:
    st.info("This data has no column besides the score and the label, so there is nothing to group by. "
            "Upload a file with a segment or a date column on the Data page.", icon=":material/info:")
    st.stop()
source_args = command.source_args(problem)


def _score_only_methods() -> list[str]:
    return [m for m in calibrators.available() if not calibrators.get_class(m).uses_features]


def _method_box(box) -> str:
    methods = _score_only_methods()
    return box.selectbox("Calibrator", methods, key=METHOD, format_func=method_menu_label, persist_state="session",
                         help="A calibrator of the score alone (MBCT, which reads the group, is fitted beside it).",
                         **initial(METHOD, index=methods.index("isotonic") if "isotonic" in methods else 0))


def _bins_box(box) -> int:
    return box.select_slider("Bins", [5, 10, 15, 20], key=N_BINS, persist_state="session",
                             **initial(N_BINS, value=metrics.DEFAULT_N_BINS))


def _notes(notes) -> None:
    for note in notes:
        st.caption(f":material/info: {md(note)}")


def _fit_scheme():
    """The scheme the calibrator that fixes the groups is judged by, and why it cannot be (None when it can)."""
    if is_large(ss):
        from pages.parts.large_source import scheme_problem

        why = scheme_problem(scheme)
        if why:
            return None, f"This evaluation scheme does not work on this source: {why}"
    return scheme, None


view = st.segmented_control("View", VIEWS, key=VIEW, persist_state="session", **initial(VIEW, default=VIEWS[0])
                            ) or VIEWS[0]
key = ss.content_key()
ENGINE = "duckdb" if is_large(ss) else "memory"      # what aggregated the keyed cells, as the command says it
#: Resamples per group or period: 200 up to 200,000 rows, fewer (at least 50) on larger data.
N_BOOT = cboot.resamples_for(ss.n_rows, 1, budget=4e7)
SEED = scheme.seed            # the bootstrap's seed, as the command's --seed (which also seeds the scheme)


# -- by group ------------------------------------------------------------------------------------------------------
def by_group_view() -> None:
    c1, c2, c3 = st.columns([2, 2, 1])
    index = candidates.index(group_guess) if group_guess in candidates else 0
    column = c1.selectbox("Group column", candidates, key=f"{GROUP_COL}.{key[:8]}", persist_state="session",
                          help="Any column but the score and the label. A numeric column with many values is cut "
                               f"into {cgroups.N_QUANTILES} quantile groups; groups under {cgroups.MIN_ROWS} rows "
                               "are pooled into 'other'.",
                          **initial(f"{GROUP_COL}.{key[:8]}", index=index))
    method = _method_box(c2)
    n_bins = _bins_box(c3)
    fit_scheme, why_not = _fit_scheme()
    try:
        cells = sdata.keyed(ss, Key(column, "group"), fit_scheme)
        report = sdata.by_key(cells, n_bins, N_BOOT, SEED)
    except (DataError, SettingsError) as exc:
        show_problem(exc)
        return
    _notes(report.notes)
    runs.save_panel("segments", "groups", lambda: groups_document(ss.name, ss.score, ss.label_column, column, ENGINE,
                                                                  cells.kc, report), keyed=cells.id)
    problem.true_class_warning(column)
    worst = report.worst()
    if worst is not None and len(report.table) > 1:
        row = report.table.loc[worst]
        st.info(f"The least calibrated group is **{md(worst)}**: ECE {row['ECE']:.3f} "
                f"[{row['ECE_low']:.3f}, {row['ECE_high']:.3f}] against {report.overall['ECE']:.3f} on all rows.",
                icon=":material/lightbulb:")
    n_groups = len(report.table)
    left, right = st.columns([2, 3])
    chart(left, fgroups.ece_forest(report, title=f"ECE by {column}"), key="segments.forest")
    d1, d2 = right.columns([3, 1], vertical_alignment="bottom")
    kind = d1.segmented_control(
        "Diagram", list(diagrams.KINDS), key="segments.diagram", persist_state="session", required=True,
        help="Binned: each group's bins beside all rows'. Smooth: SmoothECE's kernel curve. CORP: the PAV fit of "
             "the labels, no binning choice.", **initial("segments.diagram", default=diagrams.BINNED)) \
        or diagrams.BINNED
    band = d2.toggle("Band", key="segments.band", persist_state="session", disabled=kind == diagrams.BINNED,
                     help="Smooth: a 95% bootstrap band. CORP: the 90% consistency band.",
                     **initial("segments.band", value=False))
    if kind == diagrams.BINNED:
        chart(right, fgroups.group_reliability_grid(
            report, cols=2 if n_groups <= 4 else 3 if n_groups <= 9 else 4, title=f"Reliability of each {column} group",
            panel_height=250 if n_groups <= 4 else 200), key="segments.grid")
    else:                                        # one chart per group, on that group's cells as weighted rows
        grid = right.columns(2)
        for i, name in enumerate(report.table.index):
            frame, labels, weights = sdata.group_diagram_rows(cells, name)
            fig = diagrams.draw(frame, labels, weights, kind=kind, band=band, names={str(name): str(name)},
                                title=f"{column} = {name}", height=340)
            chart(grid[i % 2], fig, key=f"segments.group.{i}")
    problem.table(cells, report, "group", "All usable rows, raw scores")
    if source_args:
        command.caption(st, command.groups_argv(source_args, column, n_bins, N_BOOT, SEED))

    st.subheader("The calibrator that fixes the groups")
    st.caption(f"{method_label(method)} (the score alone) and MBCT with **{md(column)}** as its feature, fitted on the "
               f"fitting rows and judged per group on the held-out rows · {md(scheme.describe(on_cells=True))}."
               + problem.calibrator_note)
    if why_not:
        st.info(md(why_not), icon=":material/info:")
        return
    big = ss.n_rows > CELLS_MIN_ROWS
    if not st.toggle("Fit them", key=FIT, value=not big, persist_state="session",
                     help="Both are fitted on the fitting cells as weighted rows; on large data MBCT takes a while."):
        st.info("Switch on to fit the calibrators.", icon=":material/info:")
        return
    try:
        fix = sdata.fix_keys(cells, method, fit_scheme, n_bins, N_BOOT, SEED)
    except (DataError, SettingsError) as exc:
        show_problem(exc)
        return
    labels = method_labels(fix.reports)
    labels[UNCALIBRATED] = "uncalibrated"
    labels["mbct"] = f"MBCT on {column}"
    left, right = st.columns([1, 1])
    chart(left, fgroups.ece_forest(fix.reports, labels=labels, title="Held-out ECE by group, before and after"),
                      key="segments.fix")
    shown = fix.table.rename(columns={**labels, "mbct": "MBCT"})
    right.dataframe(shown.style.format("{:.4f}", na_rep="n/a").highlight_min(axis=1, color="#E8F4EA"))
    right.caption(f"Held-out ECE ({fix.reports[UNCALIBRATED].binning}); the lowest of each row is highlighted. "
                  f"MBCT's least rows per leaf: {fix.mbct_params['bin_size']}. Intervals: hover the chart.")
    if source_args and fit_scheme.kind in command.FIX_SCHEMES:
        command.caption(right, command.groups_argv(source_args, column, n_bins, N_BOOT, SEED, fix=method,
                                                   scheme=fit_scheme))


# -- over time -----------------------------------------------------------------------------------------------------
def over_time_view() -> None:
    c1, c2, c3, c4 = st.columns([2, 1, 2, 1])
    index = candidates.index(date_guess) if date_guess in candidates else None
    column = c1.selectbox("Date column", candidates, key=f"{DATE_COL}.{key[:8]}", persist_state="session",
                          placeholder="Choose the column of dates",
                          help="Dates or date-times (ISO 8601 text on a large source), or whole numbers YYYYMMDD.",
                          **initial(f"{DATE_COL}.{key[:8]}", index=index))
    freq = c2.selectbox("Period", FREQ_CHOICES, key=FREQ, persist_state="session",
                        format_func=lambda f: "automatic" if f == "auto" else cdrift.FREQ_NAMES[f],
                        help=f"Automatic: the finest of day, week, month, quarter giving at most "
                             f"{cdrift.MAX_AUTO_PERIODS} periods.", **initial(FREQ, index=0))
    method = _method_box(c3)
    n_bins = _bins_box(c4)
    if column is None:
        st.info("No column of this data reads as dates: choose the one that holds the rows' dates.",
                icon=":material/info:")
        return
    try:
        cells = sdata.keyed(ss, Key(column, "period", freq))
        report = sdata.over_periods(cells, n_bins, N_BOOT, SEED)
    except (DataError, SettingsError) as exc:
        show_problem(exc)
        return
    _notes(report.notes)
    chart(st, fdrift.drift_chart(report, title=f"Calibration of {ss.score} over time"), key="segments.drift")
    with st.expander("Per-period table", expanded=False):
        problem.table(cells, report, "period")
        if source_args:
            command.caption(st, command.drift_argv(source_args, column, freq, n_bins, N_BOOT, SEED, method))

    st.subheader("When does a calibrator go stale?")
    st.caption(f"{method_label(method)} fitted on one period's rows and judged on every later period (rows it never "
               "saw), against refitting it on the period just before." + problem.calibrator_note)
    try:
        stale = sdata.staleness_of(cells, method, n_bins)
    except (DataError, SettingsError) as exc:
        show_problem(exc)
        return
    _notes([n for n in stale.notes if n not in report.notes])
    runs.save_panel("segments", "drift", lambda: drift_document(ss.name, ss.score, ss.label_column, column, ENGINE,
                                                                cells.kc, report, stale), keyed=cells.id)
    labels = {method: method_label(method)}
    t = stale.table
    last = t.iloc[-1]
    if np.isfinite(last[cdrift.STALE_COL]) and np.isfinite(last[cdrift.FRESH_COL]):
        st.info(f"On the last period ({md(t.index[-1])}) the calibrator fitted on {md(stale.matrix.index[0])} "
                "has a held-out "
                f"ECE of {last[cdrift.STALE_COL]:.3f}; refitted on the period before, {last[cdrift.FRESH_COL]:.3f} "
                f"(raw scores: {last[cdrift.RAW_COL]:.3f}).", icon=":material/lightbulb:")
    left, right = st.columns([1, 1])
    chart(left, fdrift.staleness_chart(stale, labels=labels), key="segments.stale")
    chart(right, fdrift.staleness_heatmap(stale), key="segments.stale_matrix")
    shown = t.rename(columns={cdrift.RAW_COL: "uncalibrated",
                              cdrift.STALE_COL: f"fitted on {stale.matrix.index[0]}",
                              cdrift.FRESH_COL: "refitted on the period before"})
    left, right = st.columns([3, 2])
    left.dataframe(shown.style.format({c: "{:.4f}" for c in shown.columns if c not in ("age", "rows")} |
                                      {"rows": "{:,.0f}"}, na_rep="n/a"))
    left.caption(f"Held-out ECE ({stale.binning}) of each judged period; age: periods since the first.")
    by_age = stale.by_age.rename(columns={"ECE": "held-out ECE", "raw": "raw ECE", "pairs": "pairs averaged"})
    right.dataframe(by_age.style.format({"held-out ECE": "{:.4f}", "raw ECE": "{:.4f}"}))
    right.caption("Mean held-out ECE of every calibrator judged that many periods after the one it was fitted on.")


if view == VIEWS[0]:
    by_group_view()
else:
    over_time_view()
