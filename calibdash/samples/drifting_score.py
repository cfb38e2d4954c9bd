"""The generator of the "drift" sample: a score whose calibration drifts over a year, and one bad segment.

>>> from calibdash.samples.drifting_score import make_drift
>>> df = make_drift()                     # 20,000 rows: date, segment, score, label

What it shows (the "Groups & time" page):

* **over time** the score's calibration drifts: in January the score is the
  true probability (for the three sound segments); month by month the true
  log-odds fall behind the score's by :data:`DRIFT_PER_MONTH`, so by December
  the score over-estimates by ``11 * 0.12 = 1.32`` logits. A calibrator
  fitted on January's rows goes stale; one refitted every month stays close;
* **by group** one segment, ``"partner"`` (:data:`MISCALIBRATED`), is
  over-estimated by :data:`PARTNER_SHIFT` logits at every date: a calibrator
  of the score alone cannot fix it, one that reads the segment (MBCT with the
  segment as a feature) can.

The generator is deterministic: the same ``(n, seed)`` gives the same table
(fixed seed, numpy's PCG64; scores rounded to :data:`DECIMALS` places, as the
other samples).
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


def _sigmoid(z):
    return 1.0 / (1.0 + np.exp(-z))


def true_logit_shift(month, segment) -> np.ndarray:
    """True log-odds minus the score's log-odds of rows in ``month`` (0 = January) and ``segment``.

    ``-DRIFT_PER_MONTH * month`` plus :data:`PARTNER_SHIFT` in the miscalibrated segment: what a
    perfect calibrator of (score, month, segment) would add to the score's logit.
    """
    month = np.asarray(month, dtype=float)
    seg = np.asarray(segment)
    return -DRIFT_PER_MONTH * month + np.where(seg == MISCALIBRATED, PARTNER_SHIFT, 0.0)


def make_drift(n: int = DRIFT_ROWS, seed: int = DRIFT_SEED) -> pd.DataFrame:
    """``n`` rows over the twelve months of 2025, sorted by date: ``date, segment, score, label``.

    The score's log-odds ``z`` are normal (mean -1, sd 1.2), the score is
    ``sigmoid(z)``, and the label is drawn with probability
    ``sigmoid(z + true_logit_shift(month, segment))``. Dates are uniform over
    the 365 days; ``date`` is written ``YYYY-MM-DD``.

    Parameters
    ----------
    n : int, default 20,000
    seed : int, default 0

    Returns
    -------
    DataFrame
        Columns ``date`` (text), ``segment`` (one of :data:`SEGMENTS`),
        ``score`` (in (0, 1), rounded to 6 places) and ``label`` (0/1).
    """
    rng = np.random.default_rng(seed)
    day = np.sort(rng.integers(0, 365, size=n))
    dates = pd.Timestamp(DRIFT_START) + pd.to_timedelta(day, unit="D")
    month = dates.month.to_numpy() - 1
    segment = rng.choice(SEGMENTS, size=n, p=SEGMENT_P)
    z = rng.normal(-1.0, 1.2, size=n)
    score = np.round(_sigmoid(z), DECIMALS)
    truth = _sigmoid(z + true_logit_shift(month, segment))
    label = (rng.random(n) < truth).astype(int)
    return pd.DataFrame({"date": dates.strftime("%Y-%m-%d"), "segment": segment, "score": score, "label": label})
