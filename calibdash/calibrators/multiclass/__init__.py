"""Multi-class calibration: calibrators of K-class probabilities or logits, one module per method in
:mod:`calibdash.calibrators.multiclass.methods`, registered as the ``"classes"`` family of
:mod:`calibdash.calibrators` (``calibrators.get("temperature", family="classes")``)."""
from __future__ import annotations

from .base import MulticlassCalibrator, Scores

__all__ = ["MulticlassCalibrator", "Scores"]
