"""Background jobs with owners, a server-wide cap and queue, a time limit and cancellation.

A :class:`JobRegistry` runs long work (a DuckDB query over a large source) off the caller's thread:

- **owners**: :meth:`JobRegistry.submit` with a key already queued or running adds the caller as one more owner
  instead of starting the work twice; :meth:`JobRegistry.release` removes one owner, and the job is cancelled
  when none remains. An owner's interest is a **lease** of ``lease_s`` seconds, renewed by
  :meth:`JobRegistry.heartbeat`; an owner that stops renewing it (a closed tab) drops out when it expires,
  unless ``alive(owner)`` says it is still there;
- **a cap and a fair queue**: at most ``max_jobs`` run at once; the others wait (at most ``max_queued``, beyond
  that :class:`Busy`) in a queue taken round-robin over sessions (:func:`~.runner.fair_order`). A session that
  already runs a job starts another only if a slot stays free after it, so one session cannot hold every slot;
- **a time limit**: a job running longer than ``timeout_s`` is stopped and fails with :class:`TimedOut`;
- **cancellation**: the interrupts the work registered (:meth:`Job.interrupt_with`, e.g. DuckDB's
  ``connection.interrupt()``) are called, again every ``REINTERRUPT_S`` until the work returns, and the work
  stops at its next :meth:`Job.set_stage` or :meth:`Job.check` with :class:`Cancelled` (Python cannot stop a
  thread from outside: work that does neither keeps its slot until it returns).

Watchers read a job as a :class:`Status` (:mod:`.status`). The operator's settings (:func:`limits_from_env`, the
environment or Streamlit's secrets): ``CALIBDASH_MAX_JOBS`` (default 2), ``CALIBDASH_JOB_TIMEOUT_S`` (900),
``CALIBDASH_JOB_LEASE_S`` (30), ``CALIBDASH_MAX_QUEUED`` (16).
"""
from .runner import (ENV_JOB_LEASE, ENV_JOB_TIMEOUT, ENV_MAX_JOBS, ENV_MAX_QUEUED, Busy, Cancelled, JobRegistry, Limits,
                     TimedOut, limits_from_env, shared_registry, stop_if)
from .status import CANCELLED, DONE, FAILED, QUEUED, RUNNING, cancelled_note, hold, stopped_note

__all__ = [
    "JobRegistry", "limits_from_env", "shared_registry", "stop_if", "hold", "stopped_note", "cancelled_note",
    "ENV_MAX_JOBS", "ENV_JOB_TIMEOUT", "ENV_JOB_LEASE", "ENV_MAX_QUEUED", "DONE", "Cancelled", "Busy", "Limits",
    "TimedOut", "CANCELLED", "FAILED", "QUEUED", "RUNNING"
]
