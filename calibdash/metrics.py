"""The papers' metrics under their old name: :mod:`calibdash.measures.calibration` and its binning.

``from calibdash import metrics; metrics.summary(...)`` keeps working; the
code lives in :mod:`calibdash.measures.calibration` (ECE, MCE, MVCE, RMSE,
Brier, log-loss, AUC, accuracy, PUD, the summary) and
:mod:`calibdash.measures.binning` (the bins, bin indices and reliability
tables that every binned measure and the bootstrap share).
"""
from __future__ import annotations

from .measures.calibration import *  # noqa: F401,F403
from .measures.calibration import __all__ as _calibration_all

__all__ = list(_calibration_all)
