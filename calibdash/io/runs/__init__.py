"""Saved runs: a workspace folder of run files and a catalog (SQLite by default, PostgreSQL for a team server),
with owners, sharing and a per-user quota. Pages save and open runs by id (``?run=<id>``); the command line saves
with ``--save NAME`` and manages them with ``python -m calibdash runs``."""
from .catalog import RUN_ERRORS, NotTheOwner, QuotaReached, RunNotFound, RunNotShared, RunRecord
from .history import history_frame, history_measures, measures_side_by_side, results_table, runs_table
from .store import KINDS, VISIBILITIES, Run, Workspace, check_run_id, default_folder, headline_of, may_see

__all__ = ["Workspace", "Run", "RunRecord", "RunNotFound", "RunNotShared", "NotTheOwner", "QuotaReached",
           "RUN_ERRORS", "KINDS", "VISIBILITIES", "check_run_id", "default_folder", "headline_of", "may_see",
           "runs_table", "history_frame", "history_measures", "measures_side_by_side", "results_table"]
