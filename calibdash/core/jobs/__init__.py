"""Background jobs with owners, a server-wide cap and queue, a time limit and cancellation.

A :class:`JobRegistry` runs work that may take long (a DuckDB query over a
large source) off the caller's thread, so that whoever waits can watch it
and stop it:

- **owners**: a job is run for the owners that asked for it (a dashboard
  session, the command line). :meth:`JobRegistry.submit` with a key that is
  already queued or running adds the caller as one more owner instead of
  starting the work twice. :meth:`JobRegistry.release` (a session's Cancel,
  or a session that leaves) removes one owner only; the job is cancelled
  when no owner remains. An owner's interest is a **lease**: it lasts
  ``lease_s`` seconds and is renewed by :meth:`JobRegistry.heartbeat`
  (the dashboard's progress display does so every second); an owner that
  stops renewing it (a closed tab) drops out when the lease expires, unless
  ``alive(owner)`` says it is still there;
- **a cap and a fair queue**: at most ``max_jobs`` jobs run at once, the
  others wait in a queue taken round-robin over sessions (owners): every
  session's first waiting job in the order they came, then every session's
  second, and so on (:attr:`Job.place` is a queued job's place in it; at
  most ``max_queued`` wait, beyond that :class:`Busy` is raised). A session
  that already runs a job starts another only if a slot stays free after it
  for whoever comes next, so one session cannot hold every slot (with two
  slots: one job per session at a time);
- **a time limit**: a job running longer than ``timeout_s`` is stopped and
  fails with :class:`TimedOut`;
- **cancellation**: cancelling marks the job and calls the interrupts its
  work registered (:meth:`Job.interrupt_with`, e.g. DuckDB's
  ``connection.interrupt()``), again every :data:`REINTERRUPT_S` until the
  work returns (an interrupt sent between two queries would otherwise be
  lost); the work also stops at its next :meth:`Job.set_stage` or
  :meth:`Job.check`. A cancelled job ends with :class:`Cancelled`.

A job's work is a callable ``fn(job)`` that returns the result; it reports
its stage with :meth:`Job.set_stage` and may give a progress probe
(:meth:`Job.progress_from`). Python cannot stop a thread from outside: work
that neither returns to a check nor answers its interrupts keeps its slot
until it returns (it is shown as cancelling).

Whoever watches a job reads it as data, whatever draws it: a
:class:`Status` (:meth:`JobRegistry.status`, or :meth:`JobRegistry.renew`,
which also renews the watcher's lease) with its stage, progress, elapsed
time or place in the queue and the texts the dashboard and the command line
show; :func:`stopped_note` and :func:`cancelled_note` say why a job ended
for its owner; :func:`hold` keeps which job an owner waits for in each of
its slots. :meth:`JobRegistry.run` waits in the caller's thread and passes a
:class:`Status` to ``on_status`` as the job goes (the command line's progress
line on stderr).

The operator's settings (:func:`limits_from_env`) are read from the
environment, or given explicitly (the dashboard reads Streamlit's secrets):
``CALIBDASH_MAX_JOBS`` (default 2), ``CALIBDASH_JOB_TIMEOUT_S`` (900),
``CALIBDASH_JOB_LEASE_S`` (30) and ``CALIBDASH_MAX_QUEUED`` (16).

>>> reg = JobRegistry(max_jobs=1)
>>> reg.run("sum", lambda job: sum(range(10)), what="a small sum")
45
"""
from .cancel import Cancelled, stop_if
from .runner import (ENV_JOB_LEASE, ENV_JOB_TIMEOUT, ENV_MAX_JOBS, ENV_MAX_QUEUED, Busy, JobRegistry, Limits,
                     TimedOut, limits_from_env, shared_registry)
from .status import CANCELLED, DONE, FAILED, QUEUED, RUNNING, cancelled_note, hold, stopped_note

__all__ = [
    "JobRegistry", "limits_from_env", "shared_registry", "stop_if", "hold", "stopped_note", "cancelled_note",
    "ENV_MAX_JOBS", "ENV_JOB_TIMEOUT", "ENV_JOB_LEASE", "ENV_MAX_QUEUED", "DONE", "Cancelled", "Busy", "Limits",
    "TimedOut", "CANCELLED", "FAILED", "QUEUED", "RUNNING"
]
