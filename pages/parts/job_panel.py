"""A job of :mod:`calibdash.core.jobs` as this session sees it: its progress with Cancel, or why it stopped.

:func:`run` submits (or joins) the job behind a key, owned by this session,
and returns its result once it finished. Until then it shows the job's
:class:`calibdash.core.jobs.Status` in a box that a fragment redraws every
second (renewing this session's lease) with a Cancel button that withdraws
only this session; once it failed or was cancelled for this session, why,
with a Try again button. The session keeps only the keys of the jobs it
waits for and why one stopped.
"""
from __future__ import annotations

import logging
import uuid

import streamlit as st

from calibdash.core import jobs
from calibdash.core.errors import CalibdashError
from pages.parts.server_settings import registry
from pages.parts.text import md

__all__ = ["Pending", "run", "stop_page", "raise_pending", "show_stopped", "forget_stopped", "STOPPED", "HELD"]

log = logging.getLogger("calibdash.app")

STOPPED = "large.stopped"          # session key: {job key: {"message", "level"}} of this session's stopped jobs
HELD = "large.held"                # session key: {slot: job key} of the jobs this session waits for


class Pending(Exception):
    """The job is still running, or stopped (what the page shows says which): nothing to use yet."""


def stop_page() -> None:
    st.stop()


def raise_pending() -> None:
    raise Pending


def owner() -> str:
    """This session as a job's owner: its session id (so the registry can ask whether it is connected) and a token
    kept in the session (AppTest gives every session the same id)."""
    token = st.session_state.setdefault("large.owner", uuid.uuid4().hex[:12])
    try:
        from streamlit.runtime.scriptrunner import get_script_run_ctx

        ctx = get_script_run_ctx()
        return f"{ctx.session_id}/{token}" if ctx is not None else token
    except Exception:  # noqa: BLE001 - no script context: the token alone
        return token


def _hold(slot: str, key: str | None) -> None:
    st.session_state[HELD] = jobs.hold(registry(), st.session_state.get(HELD), slot, key, owner())


def _note(key: str, message: str, level: str) -> None:
    notes = {k: v for k, v in (st.session_state.get(STOPPED) or {}).items() if k != key}
    st.session_state[STOPPED] = dict(list(notes.items())[-15:]) | {key: {"message": message, "level": level}}


def run(slot: str, key: str, what: str, work, keep, fail: str, note: str = "", halt=stop_page,
        synchronous: bool = False, rows_note: str = "No row is sent to the dashboard."):
    """The result of the job behind ``key`` (running ``work(job)`` unless it runs already), once it finished: its
    result is passed to ``keep`` and returned. Until then the page shows its progress, and ``halt()`` (default:
    stop the page); when it failed or was cancelled for this session, why, with a button to try again, and
    ``halt()``. ``synchronous``: wait in the script (AppTest cannot run the polling fragment). ``rows_note``: what
    the progress box says of the rows (a large source's stay on the server; "" for work on rows in memory)."""
    if show_stopped(key):
        halt()
    reg, me = registry(), owner()
    try:
        job = reg.submit(key, work, owner=me, what=what)
    except CalibdashError as exc:           # the queue is full
        st.warning(f"**{fail}:** {md(exc)}")
        halt()
    _hold(slot, key)
    if synchronous:
        reg.wait(key, me)
    if job.finished:
        _hold(slot, None)
        reg.release(key, me)
        if job.state == jobs.DONE:
            keep(job.result)
            return job.result
        why, level = jobs.stopped_note(job, log)
        _note(key, f"**{fail}:** {md(why)}", level)
        show_stopped(key)
    else:
        _progress(key, what, " ".join(t for t in (note, rows_note) if t))
    halt()


@st.fragment(run_every=1.0)
def _progress(key: str, what: str, note: str) -> None:
    """The job's stage, progress, elapsed time or place in the queue, and Cancel; renews this session's lease."""
    now = registry().renew(key, owner())
    if now is None:
        st.rerun()
    status = st.status(f"{md(what)}…", state="running", expanded=True)
    title, text = now.headline()
    status.markdown(f"**{title}:** {text}")
    if now.progress is not None:
        status.progress(now.progress, text=now.progress_text())
    status.caption(" ".join(t for t in (note, now.others_text() if now.others > 0 else "") if t))
    st.button("Cancel", key=f"large.cancel.{key[:12]}", icon=":material/cancel:", on_click=_cancel,
              args=(key, what))
    if now.cancelling:
        st.caption("Cancelling…")


def _cancel(key: str, what: str) -> None:
    """This session no longer waits for the job (which stops when no other session does)."""
    job = registry().release(key, owner())
    st.session_state[HELD] = {k: v for k, v in (st.session_state.get(HELD) or {}).items() if v != key}
    _note(key, md(jobs.cancelled_note(job, what)), "warning")


def show_stopped(key: str) -> bool:
    """Whether the job behind ``key`` stopped for this session; if so, why, with a button to try again."""
    stopped = (st.session_state.get(STOPPED) or {}).get(key)
    if not stopped:
        return False
    getattr(st, stopped["level"])(stopped["message"])
    st.button("Try again", key=f"large.again.{key[:12]}", icon=":material/refresh:", on_click=forget_stopped,
              args=(key,))
    return True


def forget_stopped(key: str | None = None) -> None:
    """Forget why the job behind ``key`` stopped (None: every job), so that it may run again."""
    if key is None:
        st.session_state.pop(STOPPED, None)
    else:
        st.session_state[STOPPED] = {k: v for k, v in (st.session_state.get(STOPPED) or {}).items() if k != key}
