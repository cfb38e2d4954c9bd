"""The generator of the "drift" sample: a score whose calibration drifts over a year, and one bad segment.

>>> from calibdash.samples.drifting_score import make_drift
>>> df = make_drift()                     # 20,000 rows: date, segment, score, label

What it shows (the "Groups & time" page): **over time**, in January the score is the true probability (for the
three sound segments); month by month the true log-odds fall behind the score's by :data:`DRIFT_PER_MONTH`, so by
December the score over-estimates by ``11 * 0.12 = 1.32`` logits: a calibrator fitted on January goes stale, one
refitted every month stays close. **By group**, the ``"partner"`` segment (:data:`MISCALIBRATED`) is
over-estimated by :data:`PARTNER_SHIFT` logits at every date: only a calibrator that reads the segment (MBCT) can
fix it. Deterministic: the same ``(n, seed)`` gives the same table (scores rounded to :data:`DECIMALS` places).
"""
from __future__ import annotations

import numpy as np
import pandas as pd

__all__ = []

DRIFT_SEED = 0
DRIFT_ROWS = 20_000
#: First day of the twelve months covered (calendar year 2025).
DRIFT_START = "2025-01-01"
SEGMENTS = ("web", "app", "store", "partner")
SEGMENT_P = (0.4, 0.3, 0.2, 0.1)
#: The segment whose score is miscalibrated at every date.
MISCALIBRATED = "partner"
#: True log-odds minus the score's log-odds in the miscalibrated segment (negative: over-estimated).
PARTNER_SHIFT = -0.9
#: How far the true log-odds fall behind the score's each month (logits per month).
DRIFT_PER_MONTH = 0.12
DECIMALS = 6


def sigmoid(z):
    return 1.0 / (1.0 + np.exp(-z))


def true_logit_shift(month, segment) -> np.ndarray:
    """True log-odds minus the score's of rows in ``month`` (0 = January) and ``segment``: ``-DRIFT_PER_MONTH *
    month`` plus :data:`PARTNER_SHIFT` in the miscalibrated segment."""
    month = np.asarray(month, dtype=float)
    seg = np.asarray(segment)
    return -DRIFT_PER_MONTH * month + np.where(seg == MISCALIBRATED, PARTNER_SHIFT, 0.0)


def make_drift(n: int = DRIFT_ROWS, seed: int = DRIFT_SEED) -> pd.DataFrame:
    """``n`` rows over the twelve months of 2025, sorted by date: ``date`` (``YYYY-MM-DD`` text, uniform over the
    365 days), ``segment`` (one of :data:`SEGMENTS`), ``score`` = ``sigmoid(z)`` with ``z ~ N(-1, 1.2²)`` (rounded
    to 6 places) and ``label`` drawn with probability ``sigmoid(z + true_logit_shift(month, segment))``."""
    rng = np.random.default_rng(seed)
    day = np.sort(rng.integers(0, 365, size=n))
    dates = pd.Timestamp(DRIFT_START) + pd.to_timedelta(day, unit="D")
    month = dates.month.to_numpy() - 1
    segment = rng.choice(SEGMENTS, size=n, p=SEGMENT_P)
    z = rng.normal(-1.0, 1.2, size=n)
    score = np.round(sigmoid(z), DECIMALS)
    truth = sigmoid(z + true_logit_shift(month, segment))
    label = (rng.random(n) < truth).astype(int)
    return pd.DataFrame({"date": dates.strftime("%Y-%m-%d"), "segment": segment, "score": score, "label": label})
