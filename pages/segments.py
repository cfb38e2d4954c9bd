"""Groups & time: calibration per segment (and the calibrator that fixes the groups), calibration over time
(and when a calibrator goes stale). Every number comes from calibdash.groups and calibdash.drift, every chart
from calibdash.figures.groups and calibdash.figures.drift.

A K-class table is read through its top-label reduction (:meth:`calibdash.data.ClassSet.top_label`): the
confidence as the score and "the top class is right" as the 0/1 outcome; its groups also get their class-wise
ECE (:func:`calibdash.multiclass.groups.classwise_ece_by_group`)."""
from __future__ import annotations

import numpy as np
import pandas as pd
import streamlit as st

from calibdash import bootstrap as cboot, calibrators, drift as cdrift, groups as cgroups, metrics
from calibdash.errors import DataError, SettingsError
from calibdash.evaluation import CELLS_MIN_ROWS, UNCALIBRATED
from calibdash.figures import drift as fdrift, groups as fgroups
from pages.parts import diagrams, segments_classes as kclass
from pages.parts.tables import group_table
from pages.parts.classes import top_label_or_stop, using_classes
from pages.parts.labels import method_label, method_labels, method_menu_label
from pages.parts.problems import show_problem
from pages.parts.routing import route_guard
from pages.parts.scheme import current_scheme
from pages.parts.source import score_set_or_stop, using_large
from pages.parts.widgets import initial
from pages.parts import bounded_cache

route_guard("pages/segments.py")

VIEWS = ("By group", "Over time")
#: Widget keys.
VIEW, GROUP_COL, DATE_COL, FREQ, METHOD, N_BINS, FIT = ("segments.view", "segments.group", "segments.date",
                                                        "segments.freq", "segments.method", "segments.n_bins",
                                                        "segments.fit")
FREQ_CHOICES = ("auto",) + cdrift.FREQS
STAT_NAMES = {"positive_rate": "positive rate", "mean_score": "mean score", "ECE": "ECE", "Brier": "Brier",
              "LogLoss": "log-loss", "AUC": "AUC"}
_DATE_HINTS = ("date", "time", "day", "week", "month", "quarter", "year", "period", "dt", "timestamp", "ts")

st.title("Groups & time")
if using_large():
    from pages.parts.large_source import stop_if_large

    stop_if_large("Groups & time")
cs = None                     # the K-class table, when the data is one (its top-label reduction is `ss`)
if using_classes():
    cs, ss = top_label_or_stop()
else:
    ss = score_set_or_stop()
scheme = current_scheme(ss)
candidates = [c for c in ss.raw.columns if c not in (ss.score, ss.label_column)]
stat_names = kclass.stat_names(cs, STAT_NAMES)
kclass.intro(cs, ss)
if not candidates:
    st.info("This data has no column besides the score and the label, so there is nothing to group by. "
            "Upload a file with a segment or a date column on the Data page.", icon=":material/info:")
    st.stop()


# -- cached computations (keyed on the data's content key; the ScoreSet itself is not hashed) ---------------------
@bounded_cache.cache_data(show_spinner="Measuring every group…", max_entries=32, max_size="128MB")
def _by_group(data_key: str, column: str, n_bins: int, n_boot: int, _ss) -> cgroups.GroupReport:
    values = cgroups.column_for_rows(_ss, column)
    return cgroups.by_group(_ss.scores, _ss.labels, values, n_bins=n_bins, n_boot=n_boot, column=column)


@bounded_cache.cache_data(show_spinner="Fitting the calibrators on the fitting rows…", max_entries=32, max_size="256MB")
def _fix(data_key: str, column: str, method: str, scheme, n_bins: int, n_boot: int, _ss) -> cgroups.GroupFix:
    values = cgroups.column_for_rows(_ss, column)
    return cgroups.fix_groups(_ss.scores, _ss.labels, values, scheme, method, split=_ss.split, n_bins=n_bins,
                              n_boot=n_boot, column=column)


@bounded_cache.cache_data(show_spinner="Measuring every period…", max_entries=32, max_size="128MB")
def _over_time(data_key: str, column: str, freq: str, n_bins: int, n_boot: int, _ss) -> cdrift.DriftReport:
    periods = cdrift.to_periods(cgroups.column_for_rows(_ss, column), freq, name=column)
    return cdrift.over_time(_ss.scores, _ss.labels, periods, n_bins=n_bins, n_boot=n_boot, column=column)


@bounded_cache.cache_data(show_spinner="Fitting a calibrator on every period…", max_entries=32, max_size="64MB")
def _staleness(data_key: str, column: str, freq: str, method: str, n_bins: int, _ss) -> cdrift.Staleness:
    periods = cdrift.to_periods(cgroups.column_for_rows(_ss, column), freq, name=column)
    return cdrift.staleness(_ss.scores, _ss.labels, periods, method, n_bins=n_bins, column=column)


@bounded_cache.cache_data(show_spinner=False, max_entries=16, max_size="1MB")
def _guesses(data_key: str, last: tuple, _ss) -> tuple[str | None, str | None]:
    """A first group column (few distinct text values) and a first date column, for the widgets' defaults;
    the columns of ``last`` (a K-class table's predicted and true class), in that order, only after the others."""
    raw = _ss.raw
    cols = [c for c in raw.columns if c not in (_ss.score, _ss.label_column)]
    cols = [c for c in cols if c not in last] + [c for c in last if c in cols]
    group = next((c for c in cols if not pd.api.types.is_numeric_dtype(raw[c])
                  and 1 < raw[c].nunique() <= cgroups.MAX_GROUPS), None)
    if group is None:
        group = next((c for c in cols if 1 < raw[c].nunique() <= cgroups.MAX_GROUPS), None)
    named = sorted(cols, key=lambda c: not any(h in str(c).lower() for h in _DATE_HINTS))
    date = None
    for c in named:
        try:
            per = cdrift.to_periods(raw[c].head(2000), name=str(c))
        except (DataError, SettingsError):
            continue
        if per.freq != "given":            # whole-number codes (an hour, a position) are not guessed as time
            date = c
            break
    return group, date


def _score_only_methods() -> list[str]:
    return [m for m in calibrators.available() if not calibrators.get_class(m).uses_features]


def _method_box(box) -> str:
    methods = _score_only_methods()
    return box.selectbox("Calibrator", methods, key=METHOD, format_func=method_menu_label, persist_state="session",
                         help="A calibrator of the score alone (MBCT, which reads the group, is fitted beside it).",
                         **initial(METHOD, index=methods.index("isotonic") if "isotonic" in methods else 0))


def _notes(notes) -> None:
    for note in notes:
        st.caption(f":material/info: {note}")


# a K-class table's predicted and true class columns are offered, but a segment or a date is guessed first
group_guess, date_guess = _guesses(ss.content_key(), kclass.last_columns(cs, ss), ss)
view = st.segmented_control("View", VIEWS, key=VIEW, persist_state="session", **initial(VIEW, default=VIEWS[0])
                            ) or VIEWS[0]
key = ss.content_key()
#: Resamples per group or period: 200 up to 200,000 rows, fewer (at least 50) on larger data.
N_BOOT = cboot.resamples_for(ss.n_rows, 1, budget=4e7)


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
    n_bins = c3.select_slider("Bins", [5, 10, 15, 20], key=N_BINS, persist_state="session",
                              **initial(N_BINS, value=metrics.DEFAULT_N_BINS))
    try:
        report = _by_group(key, column, n_bins, N_BOOT, ss)
    except (DataError, SettingsError) as exc:
        show_problem(exc)
        return
    _notes(report.notes)
    kclass.true_class_warning(cs, ss, column)
    worst = report.worst()
    if worst is not None and len(report.table) > 1:
        row = report.table.loc[worst]
        st.info(f"The least calibrated group is **{worst}**: ECE {row['ECE']:.3f} "
                f"[{row['ECE_low']:.3f}, {row['ECE_high']:.3f}] against {report.overall['ECE']:.3f} on all rows.",
                icon=":material/lightbulb:")
    n_groups = len(report.table)
    left, right = st.columns([2, 3])
    left.plotly_chart(fgroups.ece_forest(report, title=f"ECE by {column}"), key="segments.forest")
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
        right.plotly_chart(fgroups.group_reliability_grid(
            report, cols=2 if n_groups <= 4 else 3 if n_groups <= 9 else 4, title=f"Reliability of each {column} group",
            panel_height=250 if n_groups <= 4 else 200), key="segments.grid")
    else:                                        # one chart per group, on that group's rows
        grid = right.columns(2)
        for i, name in enumerate(report.table.index):
            rows = report.groups == name
            fig = diagrams.draw(pd.DataFrame({str(name): ss.scores[rows]}), ss.labels[rows], None, kind=kind,
                                band=band, names={str(name): str(name)}, title=f"{column} = {name}", height=340)
            grid[i % 2].plotly_chart(fig, key=f"segments.group.{i}")
    classwise = kclass.classwise(cs, key, "group", column, "", report, report.groups, list(report.table.index))
    st.dataframe(group_table(report.table, cgroups.STATS, stat_names, classwise=classwise))
    st.caption(f"Each cell: value [{int(report.level * 100)}% interval, {report.n_boot} Poisson-bootstrap "
               f"resamples of the group's rows]. ECE uses {report.binning}. All usable rows, raw scores."
               + kclass.classwise_note(cs, report))

    st.subheader("The calibrator that fixes the groups")
    st.caption(f"{method_label(method)} (the score alone) and MBCT with **{column}** as its feature, fitted on the "
               f"fitting rows and judged per group on the held-out rows · {scheme.describe()}."
               + kclass.on_confidence_note(cs))
    big = ss.n_rows > CELLS_MIN_ROWS
    if not st.toggle("Fit them", key=FIT, value=not big, persist_state="session",
                     help="MBCT is fitted on rows; on large data this takes a while."):
        st.info("Switch on to fit the calibrators.", icon=":material/info:")
        return
    try:
        fix = _fix(key, column, method, scheme, n_bins, N_BOOT, ss)
    except (DataError, SettingsError) as exc:
        show_problem(exc)
        return
    labels = method_labels(fix.reports)
    labels[UNCALIBRATED] = "uncalibrated"
    labels["mbct"] = f"MBCT on {column}"
    left, right = st.columns([1, 1])
    left.plotly_chart(fgroups.ece_forest(fix.reports, labels=labels, title="Held-out ECE by group, before and after"),
                      key="segments.fix")
    shown = fix.table.rename(columns={**labels, "mbct": "MBCT"})
    right.dataframe(shown.style.format("{:.4f}", na_rep="n/a").highlight_min(axis=1, color="#E8F4EA"))
    right.caption(f"Held-out ECE ({fix.reports[UNCALIBRATED].binning}); the lowest of each row is highlighted. "
                  f"MBCT's least rows per leaf: {fix.mbct_params['bin_size']}. Intervals: hover the chart.")


# -- over time -----------------------------------------------------------------------------------------------------
def over_time_view() -> None:
    c1, c2, c3, c4 = st.columns([2, 1, 2, 1])
    index = candidates.index(date_guess) if date_guess in candidates else None
    column = c1.selectbox("Date column", candidates, key=f"{DATE_COL}.{key[:8]}", persist_state="session",
                          placeholder="Choose the column of dates",
                          help="Dates or date-times (or YYYYMMDD numbers, or period codes in time order).",
                          **initial(f"{DATE_COL}.{key[:8]}", index=index))
    freq = c2.selectbox("Period", FREQ_CHOICES, key=FREQ, persist_state="session",
                        format_func=lambda f: "automatic" if f == "auto" else cdrift.FREQ_NAMES[f],
                        help=f"Automatic: the finest of day, week, month, quarter giving at most "
                             f"{cdrift.MAX_AUTO_PERIODS} periods.", **initial(FREQ, index=0))
    method = _method_box(c3)
    n_bins = c4.select_slider("Bins", [5, 10, 15, 20], key=N_BINS, persist_state="session",
                              **initial(N_BINS, value=metrics.DEFAULT_N_BINS))
    if column is None:
        st.info("No column of this data reads as dates: choose the one that holds the rows' dates (or period "
                "codes, such as a month number).", icon=":material/info:")
        return
    try:
        report = _over_time(key, column, freq, n_bins, N_BOOT, ss)
    except (DataError, SettingsError) as exc:
        show_problem(exc)
        return
    _notes(report.notes)
    st.plotly_chart(fdrift.drift_chart(report, title=f"Calibration of {ss.score} over time"), key="segments.drift")
    with st.expander("Per-period table", expanded=False):
        per = report.periods
        classwise = kclass.classwise(cs, key, "time", column, freq, report, per.codes, range(len(per.labels)),
                                     index=per.labels)
        st.dataframe(group_table(report.table, cgroups.STATS, stat_names, classwise=classwise))
        st.caption(f"Each cell: value [{int(report.level * 100)}% interval, {report.n_boot} Poisson-bootstrap "
                   f"resamples of the period's rows]. ECE uses {report.binning}." + kclass.classwise_note(cs, report))

    st.subheader("When does a calibrator go stale?")
    st.caption(f"{method_label(method)} fitted on one period's rows and judged on every later period (rows it never "
               "saw), against refitting it on the period just before." + kclass.on_confidence_note(cs))
    try:
        stale = _staleness(key, column, freq, method, n_bins, ss)
    except (DataError, SettingsError) as exc:
        show_problem(exc)
        return
    _notes([n for n in stale.notes if n not in report.notes])
    labels = {method: method_label(method)}
    t = stale.table
    last = t.iloc[-1]
    if np.isfinite(last[cdrift.STALE_COL]) and np.isfinite(last[cdrift.FRESH_COL]):
        st.info(f"On the last period ({t.index[-1]}) the calibrator fitted on {stale.matrix.index[0]} has a held-out "
                f"ECE of {last[cdrift.STALE_COL]:.3f}; refitted on the period before, {last[cdrift.FRESH_COL]:.3f} "
                f"(raw scores: {last[cdrift.RAW_COL]:.3f}).", icon=":material/lightbulb:")
    left, right = st.columns([1, 1])
    left.plotly_chart(fdrift.staleness_chart(stale, labels=labels), key="segments.stale")
    right.plotly_chart(fdrift.staleness_heatmap(stale), key="segments.stale_matrix")
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
