"""What a user is told when a run cannot be opened, changed or saved."""
from __future__ import annotations

from ...core.errors import CalibdashError, DataError, EnvironmentProblem

__all__ = ["RunNotFound", "RunNotShared", "NotTheOwner", "QuotaReached", "RUN_ERRORS"]


class RunNotFound(CalibdashError, LookupError):
    """No run has this id: it was never saved, it was deleted, or the link was mistyped."""

    def __init__(self, run_id: str):
        shown = run_id if len(run_id) <= 40 and run_id.isprintable() else repr(run_id[:40]) + "..."
        super().__init__(f"No saved run has the id {shown}: it was deleted, or the link is not complete.")


class RunNotShared(CalibdashError, PermissionError):
    """The run exists but its owner has not shared it with this user (nothing of it is shown)."""

    def __init__(self, run_id: str):
        super().__init__(f"Run {run_id} is not shared with you. Ask its owner to share it.")


class NotTheOwner(CalibdashError, PermissionError):
    """Only a run's owner deletes it or changes who sees it."""

    def __init__(self, run_id: str, owner: str, action: str):
        super().__init__(f"Only the owner of run {run_id} ({owner}) can {action} it.")


class QuotaReached(EnvironmentProblem):
    """Saving would take the user's runs over their storage quota (``CALIBDASH_QUOTA_MB``)."""

    def __init__(self, used: int, adding: int, quota: int):
        mb = 1 << 20
        super().__init__(f"Your saved runs hold {used / mb:,.1f} MB and this run needs {adding / mb:,.1f} MB more, "
                         f"over your quota of {quota / mb:,.0f} MB. Delete runs you no longer need on the Runs page "
                         "(or `python -m calibdash runs delete ID`), or ask the operator to raise CALIBDASH_QUOTA_MB.")


#: Errors of a bad run request a person should see as one message (the pages and the CLI catch these).
RUN_ERRORS = (RunNotFound, RunNotShared, NotTheOwner, QuotaReached, DataError)
