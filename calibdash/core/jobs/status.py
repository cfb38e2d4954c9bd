"""A job as its watchers read it (the dashboard's progress box, the command line's stderr line): its state and
stages as data, and the texts that show them."""
from __future__ import annotations

import logging
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Mapping

from ..errors import CalibdashError

if TYPE_CHECKING:
    from .runner import Job, JobRegistry

__all__ = []

log = logging.getLogger("calibdash.core.jobs")

QUEUED, RUNNING, DONE, FAILED, CANCELLED = "queued", "running", "done", "failed", "cancelled"


@dataclass(frozen=True)
class Status:
    """A job as a watcher sees it at one moment (:meth:`JobRegistry.status`), with the texts that show it.

    ``others`` counts the owners besides the watcher; ``running`` and ``max_jobs`` are the registry's at that
    moment; ``stages`` (:attr:`Job.stages`) let a watcher that looks now and then show every stage.
    """

    key: Any
    what: str
    state: str
    stage: str
    elapsed: float
    waited: float
    place: int | None
    progress: float | None
    running: int
    max_jobs: int
    timeout_s: float
    others: int
    cancelling: bool
    stages: tuple = ()

    @property
    def queued(self) -> bool:
        return self.state == QUEUED

    @property
    def finished(self) -> bool:
        return self.state in (DONE, FAILED, CANCELLED)

    def headline(self) -> tuple[str, str]:
        """``(title, text)``: the place in the queue, or the stage with the elapsed time and the limit."""
        if self.queued:
            return ("Waiting for a free slot", f"number {self.place or 1} in line · {self.running} of at most "
                                               f"{self.max_jobs} jobs run on this server · {self.waited:.0f} s waited")
        return "Now", f"{self.stage} · {self.elapsed:.0f} s elapsed (at most {self.timeout_s:.0f} s)"

    def progress_text(self) -> str | None:
        """The current stage's progress as text (``this step: 40%``), or None when unknown."""
        return None if self.progress is None else f"this step: {self.progress:.0%}"

    def others_text(self) -> str:
        """How many other owners wait for it too ('' when none)."""
        return "" if self.others <= 0 else (f"{self.others} other session{'s' if self.others > 1 else ''} wait for "
                                            "it too: Cancel stops it for you only.")

    def line(self) -> str:
        """One line for a terminal: the stage (or the place in the queue), the elapsed seconds, the progress."""
        if self.queued:
            return f"{self.what}: waiting for a free slot (number {self.place or 1} in line, {self.waited:.0f} s)"
        pct = "" if self.progress is None else f", this step {self.progress:.0%}"
        return f"{self.what}: {self.stage} ({self.elapsed:.0f} s{pct})"


def hold(registry: "JobRegistry", held: Mapping | None, slot, key, owner) -> dict:
    """The new ``{slot: key}`` of the jobs ``owner`` waits for, now ``key`` in ``slot`` (None: none); the job it
    held there before is released (``held`` is not changed; the dashboard keeps it in the session)."""
    held = dict(held or {})
    old = held.get(slot)
    if old and old != key:
        registry.release(old, owner)
    if key is None:
        held.pop(slot, None)
    else:
        held[slot] = key
    return held


def stopped_note(job: "Job", logger: logging.Logger | None = None) -> tuple[str, str]:
    """``(why, level)`` of a job that did not succeed: its error's message (a warning when cancelled); an error not
    calibdash's is logged (on ``logger``) with its traceback and named by its type only."""
    if isinstance(job.error, CalibdashError):
        return str(job.error), "warning" if job.state == CANCELLED else "error"
    (logger or log).error("job %r failed", job.what, exc_info=job.error)
    return (f"something went wrong ({type(job.error).__name__}); the details are in the server log.", "error")


def cancelled_note(job: "Job | None", what: str) -> str:
    """What an owner's Cancel did: cancelled for it, and whether the job goes on for the others."""
    others = len(job.owners) if job is not None and not job.finished else 0
    return f"{what}: cancelled." + (f" It goes on for the {others} other session{'s' if others > 1 else ''} "
                                    "waiting for it." if others else "")
