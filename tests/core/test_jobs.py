"""Tests of calibdash.core.jobs: owners, cancellation, the cap and queue, the time limit, leases, and stopping DuckDB.

Nothing here waits a fixed time: each test waits on a condition (an Event, a job's ``done``, a state polled
until it holds) with a generous deadline, or moves a fake clock and sweeps the registry by hand.
"""
from __future__ import annotations

import threading
import time

import pytest

from calibdash import EnvironmentProblem
from calibdash.core.jobs import (CANCELLED, DONE, FAILED, QUEUED, RUNNING, Busy, Cancelled, JobRegistry, Limits,
                            TimedOut, cancelled_note, hold, limits_from_env, stopped_note)

DEADLINE = 60.0


def _until(condition, what: str, deadline: float = DEADLINE) -> None:
    end = time.monotonic() + deadline
    while not condition():
        if time.monotonic() > end:
            raise AssertionError(f"timed out waiting for {what}")
        time.sleep(0.005)


class Gate:
    """Work that runs until released or interrupted: ``entered`` is set once it runs."""

    def __init__(self, result="finished"):
        self.entered, self.opened, self.result = threading.Event(), threading.Event(), result
        self.interrupts = 0

    def interrupt(self):
        self.interrupts += 1
        self.opened.set()

    def __call__(self, job):
        with job.interrupt_with(self.interrupt):
            job.set_stage("waiting at the gate")
            self.entered.set()
            assert self.opened.wait(DEADLINE)
        job.check()
        return self.result


class FakeClock:
    def __init__(self):
        self.now = 1000.0

    def __call__(self):
        return self.now


# ---------------------------------------------------------------------------
# owners
# ---------------------------------------------------------------------------
def test_a_second_owner_joins_the_running_job_instead_of_starting_another():
    reg, gate = JobRegistry(max_jobs=2, lease_s=None), Gate()
    job = reg.submit("k", gate, owner="A", what="the work")
    assert gate.entered.wait(DEADLINE)
    again = reg.submit("k", lambda j: pytest.fail("the work ran twice"), owner="B")
    assert again is job and job.owners == {"A", "B"} and reg.counts() == (1, 0)
    gate.opened.set()
    assert job.done.wait(DEADLINE) and job.state == DONE and job.result == "finished"


def test_cancel_by_one_of_two_owners_does_not_stop_the_job():
    reg, gate = JobRegistry(max_jobs=1, lease_s=None), Gate()
    job = reg.submit("k", gate, owner="A")
    reg.submit("k", gate, owner="B")
    assert gate.entered.wait(DEADLINE)
    reg.release("k", "A")                       # A's Cancel
    assert not job.cancelled and job.state == RUNNING and job.owners == {"B"} and gate.interrupts == 0
    assert reg.heartbeat("k", "B") and not reg.heartbeat("k", "A")
    gate.opened.set()
    assert job.done.wait(DEADLINE) and job.state == DONE and job.result == "finished"
    assert reg.get("k") is job                  # B has not read the outcome yet
    reg.release("k", "B")
    assert reg.get("k") is None


def test_the_last_owner_leaving_stops_the_job():
    reg, gate = JobRegistry(max_jobs=1, lease_s=None), Gate()
    job = reg.submit("k", gate, owner="A", what="the work")
    reg.submit("k", gate, owner="B")
    assert gate.entered.wait(DEADLINE)
    reg.release("k", "B")
    reg.release("k", "A")
    assert job.done.wait(DEADLINE)
    assert job.state == CANCELLED and isinstance(job.error, Cancelled) and job.result is None
    assert gate.interrupts >= 1 and reg.counts() == (0, 0) and reg.get("k") is None


def test_a_cancelled_job_is_not_joined_and_a_failed_one_is_run_again():
    reg, gate = JobRegistry(max_jobs=1, lease_s=None), Gate()
    first = reg.submit("k", gate, owner="A")
    assert gate.entered.wait(DEADLINE)
    reg.release("k", "A")
    assert first.done.wait(DEADLINE) and first.state == CANCELLED
    second = reg.submit("k", lambda j: "again", owner="C")       # someone asks again: a new run
    assert second is not first and second.done.wait(DEADLINE) and second.result == "again"

    def boom(job):
        raise ValueError("no")

    failed = reg.submit("f", boom, owner="A")
    assert failed.done.wait(DEADLINE) and failed.state == FAILED and isinstance(failed.error, ValueError)
    assert reg.submit("f", boom, owner="A") is failed             # A still holds it: it reads how it ended
    reg.release("f", "A")
    retry = reg.submit("f", lambda j: "fixed", owner="A")
    assert retry is not failed and retry.done.wait(DEADLINE) and retry.result == "fixed"


def test_a_finished_job_serves_its_result_to_a_new_owner():
    reg = JobRegistry(max_jobs=1, lease_s=None)
    job = reg.submit("k", lambda j: 42, owner="A")
    assert job.done.wait(DEADLINE)
    assert reg.submit("k", lambda j: pytest.fail("ran again"), owner="B") is job and job.result == 42


# ---------------------------------------------------------------------------
# the cap and the queue
# ---------------------------------------------------------------------------
def test_at_most_max_jobs_run_and_the_others_wait_in_order_with_their_place():
    reg = JobRegistry(max_jobs=2, lease_s=None, max_queued=2)
    gates = [Gate(i) for i in range(4)]
    running = [reg.submit(f"r{i}", gates[i], owner=f"A{i}") for i in range(2)]       # two sessions, one slot each
    assert all(g.entered.wait(DEADLINE) for g in gates[:2])
    queued = [reg.submit(f"q{i}", gates[2 + i], owner="B") for i in range(2)]
    assert [j.state for j in queued] == [QUEUED, QUEUED] and [j.place for j in queued] == [1, 2]
    assert reg.counts() == (2, 2) and all(j.place is None for j in running)
    assert queued[0].elapsed == 0.0 and not gates[2].entered.is_set()
    with pytest.raises(Busy, match="busy"):
        reg.submit("one too many", Gate(), owner="C")
    gates[0].opened.set()                                       # a slot frees: the first in line starts
    assert gates[2].entered.wait(DEADLINE)
    assert queued[0].state == RUNNING and queued[1].place == 1 and reg.counts() == (2, 1)
    for g in gates[1:]:
        g.opened.set()
    for j in running + queued:
        assert j.done.wait(DEADLINE) and j.state == DONE
    assert [j.result for j in running + queued] == [0, 1, 2, 3]


def test_one_session_cannot_hold_every_slot():
    """Two long queries of one session leave the second slot to the next session, not to its own second."""
    reg = JobRegistry(max_jobs=2, lease_s=None)
    a1, a2, b1 = Gate("a1"), Gate("a2"), Gate("b1")
    j1, j2 = reg.submit("a1", a1, owner="A"), reg.submit("a2", a2, owner="A")
    assert a1.entered.wait(DEADLINE)
    assert j2.state == QUEUED and j2.place == 1 and reg.counts() == (1, 1)      # a slot is free, but kept
    k1 = reg.submit("b1", b1, owner="B")
    assert k1.state == RUNNING and b1.entered.wait(DEADLINE)                    # B gets it at once
    assert j2.state == QUEUED and reg.counts() == (2, 1)
    a1.opened.set()                                                             # A's first ends: its second runs
    assert a2.entered.wait(DEADLINE) and j1.done.is_set() and reg.counts() == (2, 0)
    for g in (a2, b1):
        g.opened.set()
    assert all(j.done.wait(DEADLINE) and j.state == DONE for j in (j1, j2, k1))


def test_a_sessions_second_job_queues_behind_other_sessions_first_jobs():
    reg = JobRegistry(max_jobs=2, lease_s=None)
    x, y = Gate("x"), Gate("y")
    jx, jy = reg.submit("x", x, owner="X"), reg.submit("y", y, owner="Y")        # both slots busy
    assert x.entered.wait(DEADLINE) and y.entered.wait(DEADLINE)
    gates = {k: Gate(k) for k in ("a1", "a2", "b1")}
    jobs = {k: reg.submit(k, gates[k], owner=k[0].upper()) for k in ("a1", "a2", "b1")}
    assert {k: j.place for k, j in jobs.items()} == {"a1": 1, "b1": 2, "a2": 3}  # round-robin, not first-come
    x.opened.set()
    assert gates["a1"].entered.wait(DEADLINE)
    assert jobs["b1"].place == 1 and jobs["a2"].place == 2
    y.opened.set()
    assert gates["b1"].entered.wait(DEADLINE)                                   # B's first, before A's second
    assert jobs["a2"].state == QUEUED and reg.counts() == (2, 1)
    gates["b1"].opened.set()
    assert jobs["b1"].done.wait(DEADLINE)
    assert jobs["a2"].state == QUEUED          # A still runs a1: its second would take the last slot
    gates["a1"].opened.set()
    assert gates["a2"].entered.wait(DEADLINE)
    gates["a2"].opened.set()
    assert all(j.done.wait(DEADLINE) and j.state == DONE for j in [jx, jy, *jobs.values()])


def test_with_more_slots_a_session_runs_more_but_always_leaves_one():
    reg = JobRegistry(max_jobs=3, lease_s=None)
    gates = {k: Gate(k) for k in ("a1", "a2", "a3", "b1", "c1")}
    jobs = {k: reg.submit(k, gates[k], owner=k[0]) for k in ("a1", "a2", "a3")}
    assert gates["a1"].entered.wait(DEADLINE) and gates["a2"].entered.wait(DEADLINE)
    assert jobs["a3"].state == QUEUED and reg.counts() == (2, 1)
    jobs["b1"] = reg.submit("b1", gates["b1"], owner="b")
    assert jobs["b1"].state == RUNNING and gates["b1"].entered.wait(DEADLINE)
    jobs["c1"] = reg.submit("c1", gates["c1"], owner="c")
    assert jobs["c1"].place == 1 and jobs["a3"].place == 2                      # c's first before a's third
    gates["b1"].opened.set()
    assert gates["c1"].entered.wait(DEADLINE) and jobs["a3"].state == QUEUED
    for k in ("a1", "a2", "c1"):
        gates[k].opened.set()
    assert gates["a3"].entered.wait(DEADLINE)
    gates["a3"].opened.set()
    assert all(j.done.wait(DEADLINE) and j.state == DONE for j in jobs.values())


def test_a_shared_job_ranks_as_its_least_busy_owner():
    reg = JobRegistry(max_jobs=2, lease_s=None)
    a1, shared, c1 = Gate("a1"), Gate("shared"), Gate("c1")
    reg.submit("a1", a1, owner="A")
    assert a1.entered.wait(DEADLINE)
    j = reg.submit("s", shared, owner="A")
    assert j.state == QUEUED
    reg.submit("s", shared, owner="B")                      # B, who runs nothing, wants it too: it starts
    assert shared.entered.wait(DEADLINE) and j.state == RUNNING
    late = reg.submit("c1", c1, owner="C")
    assert late.state == QUEUED and late.place == 1
    for g in (a1, shared, c1):
        g.opened.set()
    assert late.done.wait(DEADLINE) and late.state == DONE


def test_a_queued_job_whose_owner_leaves_never_runs():
    reg, blocker, never = JobRegistry(max_jobs=1, lease_s=None), Gate(), Gate()
    reg.submit("b", blocker, owner="A")
    assert blocker.entered.wait(DEADLINE)
    queued = reg.submit("q", never, owner="B")
    reg.release("q", "B")
    assert queued.done.is_set() and queued.state == CANCELLED and reg.counts() == (1, 0)
    blocker.opened.set()
    assert reg.get("b").done.wait(DEADLINE)
    assert not never.entered.is_set()


# ---------------------------------------------------------------------------
# the time limit and leases
# ---------------------------------------------------------------------------
def test_a_job_over_the_time_limit_is_interrupted_and_fails_with_timed_out():
    reg, gate = JobRegistry(max_jobs=1, timeout_s=0.2, lease_s=None), Gate()
    job = reg.submit("k", gate, owner="A", what="the slow work")
    assert job.done.wait(DEADLINE)
    assert job.state == FAILED and isinstance(job.error, TimedOut) and isinstance(job.error, EnvironmentProblem)
    assert "CALIBDASH_JOB_TIMEOUT_S" in str(job.error) and gate.interrupts >= 1


def test_an_owner_whose_lease_expires_drops_out_unless_it_renews_it_or_is_alive():
    clock, alive = FakeClock(), {"B": True}
    reg = JobRegistry(max_jobs=2, lease_s=10, clock=clock, alive=lambda o: alive.get(o))
    gate = Gate()
    job = reg.submit("k", gate, owner="A")
    reg.submit("k", gate, owner="B")
    assert gate.entered.wait(DEADLINE)
    clock.now += 8
    assert reg.heartbeat("k", "A")              # A renews its lease, B does not
    clock.now += 8
    reg.sweep()                                  # B's lease expired, but B is alive: renewed
    assert job.owners == {"A", "B"} and not job.cancelled
    alive["B"] = False
    clock.now += 11
    reg.sweep()                                  # A stopped renewing, B is gone: no owner is left
    assert job.cancelled
    assert job.done.wait(DEADLINE) and job.state == CANCELLED


def test_limits_from_the_environment_or_given_values_with_defaults():
    assert limits_from_env(environ={}) == Limits(max_jobs=2, timeout_s=900.0, lease_s=30.0, max_queued=16)
    env = {"CALIBDASH_MAX_JOBS": "3", "CALIBDASH_JOB_TIMEOUT_S": "60", "CALIBDASH_JOB_LEASE_S": "5",
           "CALIBDASH_MAX_QUEUED": "0"}
    assert limits_from_env(environ=env) == Limits(max_jobs=3, timeout_s=60.0, lease_s=5.0, max_queued=0)
    got = limits_from_env(environ=env, given={"calibdash_max_jobs": 1, "calibdash_job_timeout_s": ""})
    assert (got.max_jobs, got.timeout_s) == (1, 60.0)          # a given value wins; an empty one does not
    for bad in ({"CALIBDASH_MAX_JOBS": "many"}, {"CALIBDASH_MAX_JOBS": "0"}, {"CALIBDASH_JOB_TIMEOUT_S": "-1"}):
        with pytest.raises(EnvironmentProblem, match="CALIBDASH_MAX_JOBS|max_jobs|timeout_s"):
            limits_from_env(environ=bad)


def test_run_waits_returns_the_result_and_raises_the_error():
    reg = JobRegistry(max_jobs=1)
    assert reg.run("ok", lambda job: "yes") == "yes"
    with pytest.raises(ZeroDivisionError):
        reg.run("bad", lambda job: 1 / 0)
    assert reg.get("ok") is None and reg.get("bad") is None     # read, so forgotten


# ---------------------------------------------------------------------------
# what a watcher reads: status as data, holding, notes, run's progress, Ctrl-C
# ---------------------------------------------------------------------------

def test_a_status_says_the_place_in_line_then_the_stage_and_the_others():
    reg, gate, other = JobRegistry(max_jobs=1, lease_s=None, timeout_s=300), Gate(), Gate()
    reg.submit("a", gate, owner="A", what="first")
    reg.submit("b", other, owner="B", what="second")
    reg.submit("b", other, owner="C")
    assert gate.entered.wait(DEADLINE)
    queued = reg.status("b", "B")
    assert queued.queued and queued.place == 1 and queued.others == 1 and queued.progress is None
    title, text = queued.headline()
    assert title == "Waiting for a free slot" and text.startswith("number 1 in line · 1 of at most 1 jobs run")
    assert queued.others_text() == "1 other session wait for it too: Cancel stops it for you only."
    assert "waiting for a free slot (number 1 in line" in queued.line()
    running = reg.renew("a", "A")                        # a watcher's tick: lease renewed, status read
    title, text = running.headline()
    assert title == "Now" and text.startswith("waiting at the gate · ") and text.endswith("(at most 300 s)")
    assert [s for s, _ in running.stages] == ["starting", "waiting at the gate"] and running.others == 0
    assert reg.renew("a", "nobody") is None and reg.status("nope") is None
    gate.opened.set()
    assert reg.get("a").done.wait(DEADLINE)
    assert reg.renew("a", "A") is None                   # finished: the watcher reads how it ended instead
    assert reg.status("a", "A").finished and reg.status("a", "A").stages[-1][0] == DONE
    reg.release("a", "A")
    assert other.entered.wait(DEADLINE) and reg.status("b", "B").state == RUNNING    # the slot went to b
    other.opened.set()


def test_hold_releases_what_the_slot_held_before_and_notes_say_why_a_job_stopped():
    reg, first, second = JobRegistry(max_jobs=2, lease_s=None), Gate(), Gate()
    a = reg.submit("a", first, owner="me", what="Reading a")
    held = hold(reg, None, "read", "a", "me")
    b = reg.submit("b", second, owner="me")
    assert first.entered.wait(DEADLINE)
    held2 = hold(reg, held, "read", "b", "me")           # the slot now waits for b: a loses its only owner
    assert held == {"read": "a"} and held2 == {"read": "b"}
    assert a.done.wait(DEADLINE) and a.state == CANCELLED
    assert stopped_note(a) == ("Reading a was cancelled.", "warning")
    assert hold(reg, held2, "read", None, "me") == {}              # waits for nothing: b is let go too
    assert b.done.wait(DEADLINE) and b.state == CANCELLED
    crash = reg.submit("c", lambda job: 1 / 0, owner="me", what="crash")
    assert crash.done.wait(DEADLINE)
    assert stopped_note(crash) == ("something went wrong (ZeroDivisionError); the details are in the server log.",
                                   "error")
    gate = Gate()
    for owner in ("A", "B", "C"):                        # one job, three owners
        reg.submit("d", gate, owner=owner, what="Aggregating")
    assert cancelled_note(reg.release("d", "A"), "Aggregating") == (
        "Aggregating: cancelled. It goes on for the 2 other sessions waiting for it.")
    reg.release("d", "B")
    assert cancelled_note(reg.release("d", "C"), "Aggregating") == "Aggregating: cancelled."


def test_run_shows_every_stage_even_those_between_two_looks():
    reg, seen = JobRegistry(max_jobs=1, lease_s=None), []

    def work(job):
        for stage in ("one", "two", "three"):
            job.set_stage(stage)
        return 42

    assert reg.run("k", work, what="staged", on_status=seen.append, every=60.0) == 42
    assert seen[-1].finished and seen[-1].state == DONE
    assert [s for s, _ in seen[-1].stages] == ["starting", "one", "two", "three", DONE]
    assert all(at >= 0 for _, at in seen[-1].stages)


def test_ctrl_c_while_run_waits_cancels_the_job_and_waits_for_it_to_stop():
    """KeyboardInterrupt in the waiting thread (Ctrl-C) releases the job: its work is interrupted, and run returns
    (re-raising) only once the work has stopped."""
    reg, gate = JobRegistry(max_jobs=1, lease_s=None), Gate()

    def on_status(status):
        if status.stage == "waiting at the gate":
            raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        reg.run("k", gate, what="interrupted", on_status=on_status, every=0.01)
    assert gate.interrupts >= 1
    assert reg.counts() == (0, 0) and reg.get("k") is None


# ---------------------------------------------------------------------------
# stopping DuckDB
# ---------------------------------------------------------------------------
duckdb_sql = "SELECT count(*), sum(i) FROM range(12000000000) t(i) WHERE i % 7 = 3"


def _duckdb_work(started: threading.Event, go: threading.Event | None = None):
    duckdb = pytest.importorskip("duckdb")

    def work(job):
        con = duckdb.connect(":memory:")
        con.execute("SET threads = 1")
        con.execute("SET enable_progress_bar = true")
        con.execute("SET enable_progress_bar_print = false")
        try:
            with job.interrupt_with(con.interrupt):
                job.progress_from(lambda: max(con.query_progress(), -1) / 100)
                job.set_stage("querying")
                started.set()
                if go is not None:               # hold here until the test has cancelled: before the query starts
                    assert go.wait(DEADLINE)
                return con.sql(duckdb_sql).fetchall()
        finally:
            job.progress_from(None)
            con.close()
    return work


def test_cancel_interrupts_a_running_duckdb_query_over_twelve_billion_rows():
    reg, started = JobRegistry(max_jobs=1, lease_s=None), threading.Event()
    job = reg.submit("q", _duckdb_work(started), owner="A", what="a long query")
    assert started.wait(DEADLINE)
    _until(lambda: (job.progress or 0) > 0, "the query to make progress")
    assert not job.finished
    reg.release("q", "A")
    assert job.done.wait(DEADLINE)
    assert job.state == CANCELLED and job.result is None and reg.counts() == (0, 0)


def test_an_interrupt_sent_before_the_query_starts_is_repeated_until_it_stops():
    """DuckDB forgets an interrupt() sent while no query runs: the registry sends it again until the work ends."""
    reg, started, go = JobRegistry(max_jobs=1, lease_s=None), threading.Event(), threading.Event()
    job = reg.submit("q", _duckdb_work(started, go), owner="A")
    assert started.wait(DEADLINE)
    reg.release("q", "A")                      # interrupt() now finds no query running
    go.set()                                   # the query starts after the cancel
    assert job.done.wait(DEADLINE)
    assert job.state == CANCELLED


def test_a_duckdb_query_over_the_time_limit_is_stopped():
    reg, started = JobRegistry(max_jobs=1, timeout_s=0.5, lease_s=None), threading.Event()
    job = reg.submit("q", _duckdb_work(started), owner="A")
    assert job.done.wait(DEADLINE)
    assert job.state == FAILED and isinstance(job.error, TimedOut)


def test_reading_a_query_s_columns_is_a_job_that_cancel_stops(tmp_path):
    """The role-guessing sample of ``count(*)`` over 12e9 rows runs DuckDB for a minute: as a job on the guarded
    connection its stage shows, and the last owner's Cancel interrupts it."""
    pytest.importorskip("duckdb")
    from calibdash.data.guard import DataRoot
    from calibdash.engines.plan import read_schema, resolve_plan

    root = DataRoot(tmp_path, threads=1)
    plan = resolve_plan(root, {"kind": "query", "query": "SELECT count(*) AS n FROM range(12000000000)"})
    reg = JobRegistry(max_jobs=1, lease_s=None)
    job = reg.submit("schema", lambda j: read_schema(j, root, plan), owner="A", what="reading the columns")
    _until(lambda: job.stage.startswith("reading 2,000 rows") and (job.progress or 0) > 0, "the sample to run")
    reg.release("schema", "A")
    assert job.done.wait(DEADLINE)
    assert job.state == CANCELLED and job.result is None
