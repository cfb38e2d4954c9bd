"""The job registry that :mod:`calibdash.core.jobs` describes: work off the caller's thread."""
from __future__ import annotations

import contextlib
import itertools
import math
import os
import threading
import time
from collections import Counter, deque
from dataclasses import dataclass
from typing import Any, Callable, Hashable, Iterable, Mapping, Sequence, TypeVar

from ..errors import CalibdashError, EnvironmentProblem
from .status import CANCELLED, DONE, FAILED, QUEUED, RUNNING, Status

__all__ = []

ENV_MAX_JOBS = "CALIBDASH_MAX_JOBS"             #: jobs running at once, server-wide
ENV_JOB_TIMEOUT = "CALIBDASH_JOB_TIMEOUT_S"     #: longest a job may run, in seconds
ENV_JOB_LEASE = "CALIBDASH_JOB_LEASE_S"         #: how long an owner's interest lasts without a heartbeat
ENV_MAX_QUEUED = "CALIBDASH_MAX_QUEUED"         #: jobs that may wait for a free slot
#: Seconds between repeated interrupts of a cancelled job that has not stopped yet.
REINTERRUPT_S = 0.2
#: Longest :meth:`JobRegistry.run` waits for the work of a job it cancelled (Ctrl-C) to return.
STOP_WAIT_S = 30.0


J = TypeVar("J")


class Cancelled(CalibdashError):
    """The job was cancelled: every owner cancelled it or left (raised inside the work, and the job's error)."""


def stop_if(should_stop: Callable[[], bool] | None, what: str = "the work") -> None:
    """Raise :class:`Cancelled` when ``should_stop()`` says so (None: never): the cooperative stop of loops in a
    job's thread, which Python cannot interrupt from outside."""
    if should_stop is not None and should_stop():
        raise Cancelled(f"{what} was stopped.")


class TimedOut(EnvironmentProblem):
    """The job ran longer than the server allows (``CALIBDASH_JOB_TIMEOUT_S``)."""


class Busy(EnvironmentProblem):
    """The server's queue of jobs is full; nothing was started."""


@dataclass(frozen=True)
class Limits:
    """The operator's bounds on jobs: running at once, seconds each, an owner's lease, and the queue's length."""

    max_jobs: int = 2
    timeout_s: float = 900.0
    lease_s: float | None = 30.0
    max_queued: int = 16

    def __post_init__(self):
        for name, minimum in (("max_jobs", 1), ("max_queued", 0)):
            v = getattr(self, name)
            if isinstance(v, bool) or not isinstance(v, int) or v < minimum:
                raise EnvironmentProblem(f"{name} must be a whole number >= {minimum}, got {v!r}.")
        for name in ("timeout_s", "lease_s") if self.lease_s is not None else ("timeout_s",):    # no lease: None
            v = getattr(self, name)
            if isinstance(v, bool) or not isinstance(v, (int, float)) or not v > 0:
                raise EnvironmentProblem(f"{name} must be a number of seconds > 0, got {v!r}.")


def limits_from_env(environ: Mapping | None = None, given: Mapping | None = None) -> Limits:
    """The :class:`Limits` the operator set: ``given`` (Streamlit's secrets, keyed by the variables' names in lower
    case), else the environment, else the defaults; an :class:`EnvironmentProblem` names a value out of range."""
    env = os.environ if environ is None else environ
    given = given or {}
    out = {}
    for field, var, kind in (("max_jobs", ENV_MAX_JOBS, int), ("timeout_s", ENV_JOB_TIMEOUT, float),
                             ("lease_s", ENV_JOB_LEASE, float), ("max_queued", ENV_MAX_QUEUED, int)):
        raw = next((r for r in (given.get(var.lower()), env.get(var)) if r is not None and str(r).strip()), None)
        if raw is None:
            continue
        try:
            out[field] = kind(str(raw).strip())
        except ValueError:
            raise EnvironmentProblem(f"{var} is {str(raw)[:40]!r}; set it to a {'whole ' if kind is int else ''}"
                                     "number.") from None
    try:
        return Limits(**out)
    except EnvironmentProblem as exc:
        raise EnvironmentProblem(f"a job setting of this server is out of range: {exc}") from None


class Job:
    """One piece of work, its owners and its state (made by :meth:`JobRegistry.submit`): ``key``, ``what`` (one line
    for people), ``state``, ``stage`` (what it does now), ``result`` and ``error`` once :attr:`finished`, and
    ``done`` (a ``threading.Event``)."""

    def __init__(self, registry: "JobRegistry", key, fn: Callable[["Job"], Any], what: str):
        self.key, self.what = key, what
        self._fn, self._registry = fn, registry
        self.state = QUEUED
        self.stage = "waiting for a free slot"
        self._stages: list[tuple[str, float]] = []  # (stage, seconds running when it began), once started
        self._progress: float | None = None
        self._probe: Callable[[], float | None] | None = None
        self.submitted = registry._clock()
        self.started: float | None = None
        self.ended: float | None = None
        self.result, self.error = None, None
        self.cancel_reason: str | None = None      # "cancelled" or "timeout" once stopping
        self.done = threading.Event()
        self._owners: dict[Any, float] = {}        # owner -> lease deadline (inf: no lease)
        self._interrupts: list = []
        self._last_interrupt = 0.0

    @property
    def finished(self) -> bool:
        return self.done.is_set()

    @property
    def cancelled(self) -> bool:
        """Whether the job was told to stop (cancelled, or over its time limit)."""
        return self.cancel_reason is not None

    @property
    def owners(self) -> frozenset:
        with self._registry._lock:
            return frozenset(self._owners)

    @property
    def elapsed(self) -> float:
        """Seconds the work has run (0 while queued)."""
        if self.started is None:
            return 0.0
        return (self.ended if self.ended is not None else self._registry._clock()) - self.started

    @property
    def waited(self) -> float:
        """Seconds spent in the queue."""
        return (self.started if self.started is not None else self._registry._clock()) - self.submitted

    @property
    def place(self) -> int | None:
        """1 for the next job to start, 2 for the one after, ...; None once running or finished."""
        return self._registry._place(self)

    @property
    def progress(self) -> float | None:
        """The current stage's progress in [0, 1], when the work can tell (e.g. DuckDB's query progress)."""
        probe = self._probe
        if probe is not None and self.state == RUNNING:
            try:
                p = probe()
            except Exception:  # noqa: BLE001 - a probe of a closing connection: no progress known
                p = None
            if p is not None and p >= 0:
                return min(float(p), 1.0)
        return self._progress

    def check(self) -> None:
        """Raise :class:`Cancelled` (or :class:`TimedOut`) if the job was told to stop."""
        if self.cancel_reason is not None:
            raise self._stop_error()

    def set_stage(self, stage: str, progress: float | None = None) -> None:
        """Say what the work does now (and how far it is, 0..1); stops here if the job was cancelled."""
        self.check()
        self._enter(str(stage))
        self._progress = progress

    def progress_from(self, probe: Callable[[], float | None] | None) -> None:
        """Read :attr:`progress` from ``probe`` (a fraction, or None/negative when unknown) while running."""
        self._probe = probe

    def interrupt_with(self, interrupt: Callable[[], Any]) -> contextlib.ExitStack:
        """Call ``interrupt`` when the job is cancelled (now, if it already is), and again every
        :data:`REINTERRUPT_S` until the work returns; a context manager that unregisters it on exit."""
        with self._registry._lock:
            self._interrupts.append(interrupt)
            stopping = self.cancelled
        if stopping:
            _call(interrupt)
        reg = contextlib.ExitStack()
        reg.callback(self._unregister, interrupt)
        return reg

    def _unregister(self, interrupt) -> None:
        with self._registry._lock, contextlib.suppress(ValueError):
            self._interrupts.remove(interrupt)

    @property
    def stages(self) -> tuple:
        """The stages since it started, each with the seconds it had run when the stage began."""
        return tuple(self._stages)

    def _enter(self, stage: str) -> None:
        self.stage = stage
        if self.started is not None:
            self._stages.append((stage, self.elapsed))

    def _stop_error(self) -> CalibdashError:
        if self.cancel_reason != "timeout":
            return Cancelled(f"{self.what} was cancelled.")
        return TimedOut(f"{self.what} was stopped after {self._registry.limits.timeout_s:g} s, the longest a job may "
                        f"run on this server ({ENV_JOB_TIMEOUT}); narrow the source or ask the operator to raise the "
                        "limit.")

    def __repr__(self) -> str:
        return f"Job({self.key!r}, state={self.state!r}, stage={self.stage!r})"


def _call(fn) -> None:
    with contextlib.suppress(Exception):   # an interrupt of a connection that is closing: the job ends anyway
        fn()


class JobRegistry:
    """Jobs by key: a bounded pool of worker threads, a fair queue, owners with leases, and a time limit.

    Parameters
    ----------
    max_jobs, timeout_s, lease_s, max_queued
        As :class:`Limits` (``lease_s=None``: owners never expire, e.g. the command line); or give ``limits``.
    alive : callable, optional
        ``alive(owner)``, asked when an owner's lease has expired: True renews it (a connected browser tab whose
        timers are throttled), anything else drops it.
    """

    def __init__(self, *, limits: Limits | None = None, alive=None, clock=time.monotonic, **settings):
        self.limits = limits or Limits(**settings)
        self.alive = alive
        self._clock = clock
        self._lock = threading.RLock()
        self._wake = threading.Condition(self._lock)
        self._jobs: dict[Any, Job] = {}
        self._queue: deque[Job] = deque()
        self._running: set[Job] = set()
        self._watchdog: threading.Thread | None = None
        self._ids = itertools.count(1)

    def configure(self, limits: Limits) -> None:
        """Change the limits (taking effect for the next decisions: starts, leases, time limits)."""
        with self._lock:
            self.limits = limits
            self._start_queued()
            self._wake.notify_all()

    def submit(self, key, fn: Callable[[Job], Any], *, owner, what: str = "") -> Job:
        """The job behind ``key`` with ``owner`` among its owners: the one queued or running, else a new one.

        A finished job is returned while ``owner`` still holds it (to read how it ended), or when it succeeded (its
        result is reused); a failed or cancelled one is replaced by a new run. :class:`Busy` when the queue is full.
        """
        with self._lock:
            job = self._jobs.get(key)
            if job is not None and ((not job.finished and not job.cancelled)    # queued or running: join it
                                    or job.state == DONE                         # its result serves
                                    or (job.finished and owner in job._owners)):  # how it ended, not read yet
                self._hold(job, owner)
                self._start_queued()                    # a queued job may now be a waiting session's first
                return job
            if len(self._running) >= self.limits.max_jobs and len(self._queue) >= self.limits.max_queued:
                raise Busy(f"the server is busy: {len(self._running)} jobs run and {len(self._queue)} wait, the "
                           f"most it allows ({ENV_MAX_JOBS}, {ENV_MAX_QUEUED}); try again in a while.")
            job = Job(self, key, fn, what or str(key))
            self._jobs[key] = job
            self._hold(job, owner)
            self._queue.append(job)
            self._start_queued()
            if self._watchdog is None or not self._watchdog.is_alive():
                self._watchdog = threading.Thread(target=self._watch, daemon=True, name="calibdash-job-watchdog")
                self._watchdog.start()
            return job

    def get(self, key) -> Job | None:
        """The job behind ``key`` (queued, running, or finished and still held by an owner), or None."""
        with self._lock:
            return self._jobs.get(key)

    def heartbeat(self, key, owner) -> bool:
        """Renew ``owner``'s lease on the job behind ``key``; False when it holds no such job (any more)."""
        with self._lock:
            job = self._jobs.get(key)
            if job is None or owner not in job._owners:
                return False
            self._hold(job, owner)
            return True

    def release(self, key, owner) -> Job | None:
        """``owner`` no longer wants the job behind ``key``: cancelled when no owner remains, forgotten if finished.
        Returns the job (None when there is none)."""
        with self._lock:
            job = self._jobs.get(key)
            if job is None:
                return None
            job._owners.pop(owner, None)
            if not job._owners:
                if job.finished:
                    self._forget(job)
                else:
                    self._stop(job, "cancelled")
            return job

    def wait(self, key, owner, timeout: float | None = None) -> Job | None:
        """Wait until the job behind ``key`` has finished, renewing ``owner``'s lease; the job (None if gone)."""
        deadline = math.inf if timeout is None else self._clock() + timeout
        while True:
            job = self.get(key)
            if job is None:
                return None
            step = min((self.limits.lease_s or 10.0) / 3, max(0.0, deadline - self._clock()))
            if job.done.wait(step) or self._clock() >= deadline:
                return job
            self.heartbeat(key, owner)

    def status(self, key, owner=None) -> Status | None:
        """The job behind ``key`` as ``owner`` sees it now (:class:`Status`), or None when there is none."""
        with self._lock:
            job = self._jobs.get(key)
            if job is None:
                return None
            now = dict(key=key, what=job.what, state=job.state, stage=job.stage, elapsed=job.elapsed,
                       waited=job.waited, place=self._place(job), running=len(self._running),
                       max_jobs=self.limits.max_jobs, timeout_s=self.limits.timeout_s, cancelling=job.cancelled,
                       others=len(job._owners) - (owner in job._owners), stages=job.stages)
        return Status(progress=job.progress, **now)     # the probe asks the engine: outside the lock

    def renew(self, key, owner) -> Status | None:
        """A watcher's tick: renew ``owner``'s lease and return the unfinished job's :class:`Status`; None when
        the job finished, is gone, or ``owner`` no longer holds it (the watcher then reads how it ended)."""
        job = self.get(key)
        if job is None or job.finished or not self.heartbeat(key, owner):
            return None
        return self.status(key, owner)

    def run(self, key, fn: Callable[[Job], Any], *, owner="caller", what: str = "",
            on_status: Callable[[Status], Any] | None = None, every: float = 0.5):
        """Submit, wait and return the result (raise the job's error), for callers that block (the command line);
        Ctrl-C releases the job. ``on_status`` gets the :class:`Status` at least every ``every`` seconds and once
        at the end."""
        job = self.submit(key, fn, owner=owner, what=what)
        try:
            while on_status is not None:
                now = self.renew(key, owner)          # None once the job has ended
                if now is None:
                    break
                on_status(now)
                if job.done.wait(every):
                    break
            self.wait(key, owner)
            now = self.status(key, owner) if on_status is not None else None
            if now is not None:
                on_status(now)
        except BaseException:
            self.release(key, owner)
            if job.cancelled:            # let interrupted work return before the caller (maybe the process) ends
                job.done.wait(STOP_WAIT_S)
            raise
        self.release(key, owner)
        if job.error is not None:
            raise job.error
        return job.result

    def jobs(self) -> list[Job]:
        """Every job the registry holds: running, queued (in order), then finished ones still held."""
        with self._lock:
            running = sorted(self._running, key=lambda j: j.started or 0.0)
            rest = [j for j in self._jobs.values() if j.finished]
            return running + list(self._queue) + rest

    def counts(self) -> tuple[int, int]:
        """(running, queued) right now."""
        with self._lock:
            return len(self._running), len(self._queue)

    # -- internals (under the lock)
    def _hold(self, job: Job, owner) -> None:
        lease = self.limits.lease_s
        job._owners[owner] = float("inf") if lease is None else self._clock() + lease

    def _place(self, job: Job) -> int | None:
        with self._lock:
            if job.state != QUEUED:
                return None
            return next((i for i, (_, queued) in enumerate(self._order(), 1) if queued is job), None)

    def _order(self) -> list[tuple[int, Job]]:
        return fair_order(self._running, self._queue, lambda job: job._owners)

    def _forget(self, job: Job) -> None:
        if self._jobs.get(job.key) is job:
            del self._jobs[job.key]

    def _stop(self, job: Job, reason: str) -> None:
        """Tell ``job`` to stop: a queued one ends now, a running one is interrupted (and again until it ends)."""
        if job.finished or job.cancel_reason is not None:
            return
        job.cancel_reason = reason
        if job.state == QUEUED:
            with contextlib.suppress(ValueError):
                self._queue.remove(job)
            self._end(job, None, None)
            return
        job._enter("stopping" if reason != "timeout" else "stopping: over the time limit")
        job._last_interrupt = self._clock()
        for fn in list(job._interrupts):
            _call(fn)
        self._wake.notify_all()

    def _start_queued(self) -> None:
        """Start queued jobs while slots are free, in :meth:`_order`; a job of rank above 0 only if a slot stays
        free after it."""
        while self._queue and len(self._running) < self.limits.max_jobs:
            rank, job = self._order()[0]
            if rank > 0 and len(self._running) + 1 >= self.limits.max_jobs:
                return
            self._queue.remove(job)
            job.state, job.started = RUNNING, self._clock()
            job._enter("starting")
            self._running.add(job)
            threading.Thread(target=self._work, args=(job,), daemon=True,
                             name=f"calibdash-job-{next(self._ids)}").start()

    def _work(self, job: Job) -> None:
        result, error = None, None
        try:
            job.check()
            result = job._fn(job)
        except BaseException as exc:  # noqa: BLE001 - kept as the job's error, for its owners to read
            error = exc
        with self._lock:
            self._running.discard(job)
            job._interrupts.clear()
            job._probe = None
            self._end(job, result, error)
            self._start_queued()

    def _end(self, job: Job, result, error) -> None:
        job.ended = self._clock()
        if job.cancel_reason is not None:
            job.state = FAILED if job.cancel_reason == "timeout" else CANCELLED
            job.error, job.result = job._stop_error(), None
        elif error is not None:
            job.state, job.error = FAILED, error
        else:
            job.state, job.result = DONE, result
        job._enter(job.state)
        if not job._owners:
            self._forget(job)
        job.done.set()
        self._wake.notify_all()

    def _watch(self) -> None:
        """The watchdog: :meth:`sweep` again and again, at most a second apart; ends when no job is left."""
        while True:
            wait = self.sweep()
            with self._lock:
                if wait is None and not self._jobs and not self._running:   # checked again under the lock
                    self._watchdog = None
                    return
                self._wake.wait(max(0.01, 1.0 if wait is None else wait))

    def sweep(self) -> float | None:
        """Expire owners' leases, stop jobs no owner wants or over the time limit, repeat the interrupts of jobs
        told to stop (the watchdog calls it). Returns the seconds until something may be due, None when no job."""
        interrupts = []
        with self._lock:
            if not self._jobs and not self._running:
                return None
            now = self._clock()
            wait = 1.0
            for job in list(self._jobs.values()):
                for owner in [o for o, deadline in job._owners.items() if deadline <= now]:
                    if self._owner_alive(owner):
                        self._hold(job, owner)
                    else:
                        del job._owners[owner]
                if job._owners:
                    wait = min(wait, max(0.05, min(job._owners.values()) - now))
                elif job.finished:
                    self._forget(job)
                else:
                    self._stop(job, "cancelled")
            for job in list(self._running):
                if job.cancel_reason is None and job.started is not None:
                    over = now - job.started - self.limits.timeout_s
                    if over >= 0:
                        self._stop(job, "timeout")
                    else:
                        wait = min(wait, -over)
                if job.cancel_reason is not None:
                    if now - job._last_interrupt >= REINTERRUPT_S:
                        job._last_interrupt = now
                        interrupts += list(job._interrupts)
                    wait = min(wait, REINTERRUPT_S)
        for fn in interrupts:               # outside the lock: an interrupt never waits on the registry
            _call(fn)
        return wait

    def _owner_alive(self, owner) -> bool:
        try:
            return self.alive is not None and self.alive(owner) is True
        except Exception:  # noqa: BLE001 - a probe that fails says nothing: the lease expires
            return False


def fair_order(running: Iterable[J], queue: Sequence[J], owners: Callable[[J], Iterable[Hashable]]
               ) -> list[tuple[int, J]]:
    """The ``queue``d jobs (first come first) in the order they start, each with its rank: how many jobs its
    least busy owner (``owners(job)``: the sessions that want it) already has ``running`` or ahead of it in the
    queue. Sorted by rank, then place: every session's first waiting job in the order they came, then every
    session's second, and so on. A job without owners (being cancelled) ranks as a session of its own.

    >>> fair_order([], ["a1", "a2", "b1"], lambda job: [job[0]])
    [(0, 'a1'), (0, 'b1'), (1, 'a2')]
    """
    ahead = Counter(owner for job in running for owner in owners(job))
    ranked = []
    for i, job in enumerate(queue):
        who = list(owners(job)) or [("job", id(job))]
        ranked.append((min(ahead[o] for o in who), i, job))
        ahead.update(who)
    return [(rank, job) for rank, _, job in sorted(ranked, key=lambda r: r[:2])]


_SHARED: JobRegistry | None = None
_SHARED_LOCK = threading.Lock()


def shared_registry(limits: Limits | None = None, *, alive=None) -> JobRegistry:
    """The process-wide registry (made on first use, with ``limits`` or :func:`limits_from_env`); later
    ``limits`` and ``alive`` replace the current ones, so the operator's settings are read as they change."""
    global _SHARED
    with _SHARED_LOCK:
        if _SHARED is None:
            _SHARED = JobRegistry(limits=limits or limits_from_env(), alive=alive)
            return _SHARED
    if limits is not None and limits != _SHARED.limits:
        _SHARED.configure(limits)
    if alive is not None:
        _SHARED.alive = alive
    return _SHARED
