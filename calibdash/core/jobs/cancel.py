"""A job's cancellation: the error a cancelled job raises, and the cooperative stop of loops in its thread."""
from __future__ import annotations

from typing import Callable

from ..errors import CalibdashError

__all__ = []


class Cancelled(CalibdashError):
    """The job was cancelled: every owner cancelled it or left (raised inside the work, and the job's error)."""


def stop_if(should_stop: Callable[[], bool] | None, what: str = "the work") -> None:
    """Raise :class:`Cancelled` when ``should_stop()`` says so (None: never): the cooperative stop of loops in a
    job's thread, which Python cannot interrupt from outside."""
    if should_stop is not None and should_stop():
        raise Cancelled(f"{what} was stopped.")
