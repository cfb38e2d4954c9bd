"""Runs: the saved runs this user may see (filtered by data set, tag, owner and date), each opened by its link;
two evaluations side by side; a saved series' calibration history; sharing and deleting one's own runs."""
import shlex
from datetime import datetime, time, timezone

import streamlit as st

from calibdash.figures.charts.history import history_chart, reliability_pair
from calibdash.io.runs import (RUN_ERRORS, history_frame, history_measures, measures_side_by_side, results_table,
                               runs_table)
from pages.parts import runs
from pages.parts.routing import route_guard
from pages.parts.text import chart, md

route_guard("pages/runs.py")

st.title("Saved runs")
ws, me = runs.workspace(), runs.user()
shown_run = runs.run_to_show()
if shown_run is not None:                 # a link to a run saved by the command line: its numbers as saved
    r = shown_run.record
    st.subheader(md(r.name))
    st.caption(f"{r.kind} · {md(r.dataset)} · saved by {md(r.owner or 'the server')} on "
               f"{datetime.fromtimestamp(r.saved_at, timezone.utc):%Y-%m-%d %H:%M} UTC"
               + (" · " + md(", ".join(f"{k}={v}" for k, v in r.tags.items())) if r.tags else ""))
    if shown_run.view.get("argv"):              # the command that saved it, to copy: split back into its arguments
        st.code("python -m calibdash " + shlex.join(map(str, shown_run.view["argv"])), language="bash")
    if shown_run.diagrams:
        chart(st, reliability_pair(shown_run.diagrams, None, names=(r.name, "")), key="runs.shown.reliability")
    st.dataframe(results_table(r.kind, shown_run.results), width="stretch", key="runs.shown.table")
    alerts = shown_run.results.get("alerts") or []
    if alerts:
        st.warning(f"{len(alerts)} alert(s) when it was saved: " + md("; ".join(
            f"{a.get('key')} {a.get('measure')} {a.get('value')}" for a in alerts)), icon=":material/warning:")
    st.divider()
everything = ws.list(me)
if not everything:
    st.info("No saved runs yet. Save one with **Save run** on Compare, Explore or Groups & time, or from the "
            "command line: `python -m calibdash evaluate FILE --save NAME`.", icon=":material/bookmark:")
    st.stop()

f1, f2, f3, f4 = st.columns(4)
dataset = f1.selectbox("Data set", ["(all)", *sorted({r.dataset for r in everything})], key="runs.dataset")
owner = f2.selectbox("Owner", ["(all)", *sorted({r.owner or "(server)" for r in everything})], key="runs.owner")
tags = sorted({f"{k}={v}" for r in everything for k, v in r.tags.items()})
tag = f3.selectbox("Tag", ["(all)", *tags], key="runs.tag")
oldest = datetime.fromtimestamp(min(r.saved_at for r in everything), timezone.utc).date()
newest = datetime.fromtimestamp(max(r.saved_at for r in everything), timezone.utc).date()
days = f4.date_input("Saved between", (oldest, newest), key="runs.days")
since = until = None
if isinstance(days, (tuple, list)) and len(days) == 2:
    since = datetime.combine(days[0], time.min, timezone.utc).timestamp()
    until = datetime.combine(days[1], time.max, timezone.utc).timestamp()
shown = ws.list(me, dataset=None if dataset == "(all)" else dataset,
                owner=None if owner == "(all)" else ("" if owner == "(server)" else owner),
                tag=tuple(tag.split("=", 1)) if tag != "(all)" else None, since=since, until=until)
table = runs_table(shown)
table.insert(0, "open", [f"?{runs.RUN}={i}" for i in table["id"]])
st.dataframe(table, hide_index=True, width="stretch",
             column_config={"open": st.column_config.LinkColumn("open", display_text="open"),
                            "saved": st.column_config.DatetimeColumn("saved", format="YYYY-MM-DD HH:mm")})
st.caption(f"{len(shown)} of {len(everything)} run(s) · a run opens in the view it was saved in, with the same "
           "numbers; its link works for whoever it is shared with")

label = {r.id: f"{r.name} · {r.kind} · {datetime.fromtimestamp(r.saved_at, timezone.utc):%Y-%m-%d %H:%M} · {r.id}"
         for r in shown}
tab_compare, tab_history, tab_manage = st.tabs(["Compare two", "History", "Share or delete"])

with tab_compare:
    evaluations = [r.id for r in shown if r.kind == "evaluate"]
    if len(evaluations) < 2:
        st.caption("Two saved evaluations (Compare or `evaluate --save`) are compared here.")
    else:
        c1, c2 = st.columns(2)
        a = c1.selectbox("Run A", evaluations, format_func=label.get, key="runs.a", index=1)
        b = c2.selectbox("Run B", evaluations, format_func=label.get, key="runs.b", index=0)
        run_a, run_b = ws.open(a, me), ws.open(b, me)
        if run_a.diagrams and run_b.diagrams:
            chart(st, reliability_pair(run_a.diagrams, run_b.diagrams, names=(run_a.record.name, run_b.record.name)),
                  key="runs.pair")
        diff = measures_side_by_side(run_a.results, run_b.results)
        if diff.empty:
            st.caption("These two runs have no method in common.")
        else:
            st.dataframe(diff, hide_index=True, width="stretch",
                         column_config={c: st.column_config.NumberColumn(format="%.4f")
                                        for c in ("A", "B", "B - A")})

with tab_history:
    names = sorted({r.name for r in shown if r.kind in ("groups", "drift")})
    if not names:
        st.caption("A series is the runs saved under one name, e.g. a nightly "
                   "`python -m calibdash groups FILE --by segment --fail-above ECE=0.05 --save nightly`.")
    else:
        series = st.selectbox("Series", names, key="runs.series")
        members = sorted((r for r in shown if r.name == series), key=lambda r: r.saved_at)
        measure = st.selectbox("Measure", history_measures(members), key="runs.measure")
        newest_run = ws.open(members[-1].id, me)
        threshold = newest_run.view.get("thresholds", {}).get(measure)
        chart(st, history_chart(history_frame(members, measure), measure, threshold), key="runs.history")

with tab_manage:
    mine = [r for r in shown if me is None or r.owner == me]
    if not mine:
        st.caption("Only a run's owner shares or deletes it; none of the runs listed is yours.")
    else:
        pick = st.selectbox("Run", [r.id for r in mine], format_func=label.get, key="runs.pick")
        rec = next(r for r in mine if r.id == pick)
        if runs.sign_in_on():
            who = st.radio("Visible to", ["private", "all"], index=["private", "all"].index(rec.visibility),
                           key="runs.visibility", horizontal=True,
                           format_func={"private": "me and those I name", "all": "everyone signed in"}.get)
            users = st.text_input("Shared with", ", ".join(rec.shared_with), key="runs.shared")
            if st.button("Save sharing", key="runs.share"):
                try:
                    ws.share(pick, me, who, users.split(","))
                    st.success("Sharing saved.")
                except RUN_ERRORS as exc:
                    st.error(md(exc))
        if st.button("Delete this run", key="runs.delete", type="secondary", icon=":material/delete:"):
            try:
                ws.delete(pick, me)
                st.success(f"Deleted {md(rec.name)}.")
                st.rerun()
            except RUN_ERRORS as exc:
                st.error(md(exc))
