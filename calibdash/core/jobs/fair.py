"""The order in which queued jobs start: round-robin over the sessions (owners) that wait."""
from __future__ import annotations

from typing import Callable, Hashable, Iterable, Sequence, TypeVar

__all__ = []

J = TypeVar("J")


def fair_order(running: Iterable[J], queue: Sequence[J], owners: Callable[[J], Iterable[Hashable]]
               ) -> list[tuple[int, J]]:
    """The ``queue``d jobs (first come first) in the order they start, each with its rank: how many jobs its
    least busy owner (``owners(job)``: the sessions that want it) already has ``running`` or ahead of it in the
    queue. Sorted by rank, then place: every session's first waiting job in the order they came, then every
    session's second, and so on. A job without owners (being cancelled) ranks as a session of its own.

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
