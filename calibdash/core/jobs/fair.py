"""The order in which queued jobs start: round-robin over the sessions (owners) that wait.

:class:`calibdash.core.jobs.JobRegistry` starts the first job of :func:`fair_order`, and a job of rank above 0
(its session already runs one) only if a slot stays free after it, so that one session cannot hold every
slot with long queries while others wait.
"""
from __future__ import annotations

from typing import Callable, Hashable, Iterable, Sequence, TypeVar

__all__ = []

J = TypeVar("J")


def fair_order(running: Iterable[J], queue: Sequence[J], owners: Callable[[J], Iterable[Hashable]]
               ) -> list[tuple[int, J]]:
    """The queued jobs in the order they start, each with its rank.

    A job's rank is how many jobs its least busy owner already has running or ahead of it in the queue
    (0: a session's first). Jobs are sorted by rank, then by their place in the queue: every session's
    first waiting job in the order they came, then every session's second, and so on. A job that
    several sessions share ranks as its least busy owner's; a job without owners (being cancelled) as
    a session of its own.

    Parameters
    ----------
    running : iterable of jobs
        The jobs that hold a slot.
    queue : sequence of jobs
        The waiting jobs, first come first.
    owners : callable
        ``owners(job)``: the sessions that want ``job``.

    >>> fair_order([], ["a1", "a2", "b1"], lambda job: [job[0]])
    [(0, 'a1'), (0, 'b1'), (1, 'a2')]
    """
    ahead: dict = {}
    for job in running:
        for owner in owners(job):
            ahead[owner] = ahead.get(owner, 0) + 1
    ranked = []
    for i, job in enumerate(queue):
        who = list(owners(job)) or [("job", id(job))]
        ranked.append((min(ahead.get(o, 0) for o in who), i, job))
        for o in who:
            ahead[o] = ahead.get(o, 0) + 1
    return [(rank, job) for rank, _, job in sorted(ranked, key=lambda r: r[:2])]
