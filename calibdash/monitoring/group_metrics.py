"""Per-group metrics with bootstrap intervals and per-group reliability (:func:`group_stats`, :func:`by_group`).

Intervals: a Poisson bootstrap within each group (a row of weight ``w`` drawn Poisson(``w``) times for whole ``w``,
else ``w`` Poisson(1)), ECE, Brier, log-loss and AUC through ``bootstrap_cells`` for whole weights, each group from its
own seed. The binned ECE is biased upward, so for a small ECE the interval can lie wholly above the value; it still
covers a clearly miscalibrated group's population ECE at about its level (``tests/monitoring/test_groups.py``).
A group of more than :data:`BOOT_CELLS` distinct (score, label) pairs is resampled on ``BOOT_CELLS / 2`` runs of
about equal weight (:func:`coarse_cells`), its interval moved by the point value's difference between all cells and
the runs (the coarsening's bias to first order): ``n_boot x BOOT_CELLS`` draws however many rows (50 segments of
10^8 rows in seconds). A one-class group's calibration metrics are NaN with a note (no AUC, and a value without an
interval would look more certain than it is).
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np
import pandas as pd

from ..evaluation import bootstrap as cboot
from ..measures import calibration as metrics
from ..core.errors import DataError
from .grouping import MAX_GROUPS, MIN_ROWS, N_QUANTILES, make_groups
from ..core.validation import check_labels, check_scores

__all__ = ["STATS"]

#: The calibration and discrimination metrics of each group (names of :data:`calibdash.metrics.METRIC_NAMES`).
METRICS = ("ECE", "Brier", "LogLoss", "AUC")
#: Every statistic with an interval, in table order.
STATS = ("positive_rate", "mean_score") + METRICS
#: Most (score, label) cells a group's bootstrap resamples; a group with more is resampled on runs (module docstring).
BOOT_CELLS = 2048


def row_weights(sample_weight, n: int) -> np.ndarray:
    """Validated row weights (ones when None): finite, non-negative, a positive total."""
    if sample_weight is None:
        return np.ones(n)
    w = np.asarray(sample_weight, dtype=float).reshape(-1)
    if w.size != n:
        raise DataError(f"sample_weight has {w.size} values but there are {n} rows.")
    if not np.all(np.isfinite(w)) or np.any(w < 0) or w.sum() <= 0:
        raise DataError("sample_weight must hold finite, non-negative weights with a positive sum.")
    return w


def cell_rows(sample_weight):
    """The real rows that score cells' weighted rows of total ``weight`` stand for (whole counts, as int64)."""
    return np.rint(np.asarray(sample_weight, dtype=float)).astype(np.int64)


def _poisson_counts(rng: np.random.Generator, w: np.ndarray, rows: int) -> np.ndarray:
    """``rows`` Poisson-bootstrap weights of every row: Poisson(w) for whole ``w``, else w * Poisson(1)."""
    if np.all(w == 1):
        return rng.poisson(1.0, size=(rows, w.size)).astype(float)
    if np.all(w == np.floor(w)):
        return rng.poisson(w, size=(rows, w.size)).astype(float)
    return rng.poisson(1.0, size=(rows, w.size)) * w


def _metrics(s, y, n_bins, strategy, sample_weight) -> dict:
    return {"ECE": metrics.ece(s, y, n_bins, strategy, sample_weight=sample_weight),
            "Brier": metrics.brier(s, y, sample_weight=sample_weight),
            "LogLoss": metrics.log_loss(s, y, sample_weight=sample_weight),
            "AUC": metrics.auc(s, y, sample_weight=sample_weight)}


def _cells(s: np.ndarray, y: np.ndarray, w: np.ndarray):
    """Rows with the same (score, label) merged, sorted, weight-0 rows dropped: the draws depend on the rows' content
    only (not their order, nor whether they come as rows or as score cells' weighted rows)."""
    keep = w > 0
    s, y, w = s[keep], y[keep], w[keep]
    frame = pd.DataFrame({"s": s, "y": y, "w": w}).groupby(["s", "y"], sort=True, as_index=False)["w"].sum()
    return frame["s"].to_numpy(), frame["y"].to_numpy(dtype=np.int8), frame["w"].to_numpy()


def coarse_cells(s: np.ndarray, y: np.ndarray, sample_weight: np.ndarray, runs: int):
    """``(scores, labels, weights)``: cells sorted by score cut into ``runs`` runs of about equal weight (by the
    weight before each cell, so a cell is never split), each run's positives and negatives merged into two cells at
    the run's weighted mean score (empty ones dropped)."""
    before = np.cumsum(sample_weight) - sample_weight
    run = np.minimum((before / sample_weight.sum() * runs).astype(np.int64), runs - 1)
    index = run * 2 + y.astype(np.int64)
    cw = np.bincount(index, weights=sample_weight, minlength=2 * runs)
    total = np.bincount(run, weights=sample_weight, minlength=runs)
    mean = np.bincount(run, weights=sample_weight * s, minlength=runs) / np.where(total > 0, total, 1.0)
    keep = np.flatnonzero(cw > 0)
    return mean[keep // 2], (keep % 2).astype(np.int8), cw[keep]


def group_stats(scores, labels, sample_weight=None, *, n_bins: int = metrics.DEFAULT_N_BINS,
                strategy: str = metrics.DEFAULT_STRATEGY, n_boot: int = 200, level: float = 0.95,
                seed: int = 0) -> dict:
    """Rows, weight, positive rate, mean score, ECE, Brier, log-loss and AUC of one group, with intervals (parameters
    as :func:`by_group`'s; ``n_boot`` 0 draws none): a dict of ``rows``, ``weight``, ``positives`` (weight of the
    positive rows), every name of :data:`STATS` with ``<name>_low`` and ``<name>_high``, and ``note`` ("" when none).
    Metrics of a one-class group are NaN.
    """
    s = check_scores(scores)
    y = check_labels(labels, s.size, require_both=False)
    w = row_weights(sample_weight, s.size)
    total = float(w.sum())
    pos = float(w[y == 1].sum())
    out = {"rows": int(s.size), "weight": total, "positives": pos,
           "positive_rate": pos / total, "mean_score": float(np.dot(w, s) / total)}
    one_class = pos <= 0 or pos >= total
    if one_class:
        out.update({m: math.nan for m in METRICS})
        which = "positive" if pos > 0 else "negative"
        out["note"] = f"one class only (every row {which}): ECE, Brier, log-loss and AUC are not computed"
    else:
        out.update(_metrics(s, y, n_bins, strategy, None if sample_weight is None else w), note="")
    for name in STATS:
        out[f"{name}_low"] = out[f"{name}_high"] = math.nan
    if n_boot <= 0:
        return out
    alpha = (1 - level) / 2
    cs, cy, cw = _cells(s, y, w)
    shift = dict.fromkeys(METRICS, 0.0)
    if cs.size > BOOT_CELLS and not one_class:
        cs, cy, cw = coarse_cells(cs, cy, cw, BOOT_CELLS // 2)
        coarse = _metrics(cs, cy, n_bins, strategy, cw)
        shift = {name: out[name] - coarse[name] for name in METRICS}
    rng = np.random.default_rng(seed)
    # positive rate and mean score: weighted sums of the resampled counts, in chunks of bounded memory
    chunk = max(1, (1 << 22) // max(1, cs.size))
    rates, means = [], []
    for start in range(0, int(n_boot), chunk):
        c = _poisson_counts(rng, cw, min(chunk, int(n_boot) - start))
        tot = c.sum(axis=1)
        with np.errstate(invalid="ignore", divide="ignore"):
            rates.append(c @ cy / tot)
            means.append(c @ cs / tot)
    for name, draws in (("positive_rate", np.concatenate(rates)), ("mean_score", np.concatenate(means))):
        out[f"{name}_low"], out[f"{name}_high"] = (float(v) for v in np.nanquantile(draws, [alpha, 1 - alpha]))
    if one_class:
        return out
    if np.all(cw == np.floor(cw)):
        boot = cboot.bootstrap_cells(pd.DataFrame({"p": cs}), cw, cw * cy, n_boot=int(n_boot), level=level,
                                     seed=seed, n_bins=n_bins, strategy=strategy, names=METRICS, mvce_views=1,
                                     workers=1)
        for name in METRICS:
            out[f"{name}_low"], out[f"{name}_high"] = (v + shift[name] for v in boot.interval("p", name))
        return out
    # fractional weights: each row counted w * Poisson(1) times, metrics measured with those weights
    draws = {name: np.full(int(n_boot), np.nan) for name in METRICS}
    for b in range(int(n_boot)):
        wb = _poisson_counts(rng, cw, 1)[0]
        pb = float(wb[cy == 1].sum())
        if pb <= 0 or pb >= wb.sum():
            continue
        for name, v in _metrics(cs, cy, n_bins, strategy, wb).items():
            draws[name][b] = v
    for name in METRICS:
        out[f"{name}_low"], out[f"{name}_high"] = (float(v) + shift[name]
                                                   for v in np.nanquantile(draws[name], [alpha, 1 - alpha]))
    return out


class BinnedReport:
    """What the monitoring reports share: :attr:`binning`, how their ECE was binned (``n_bins``, ``strategy``)."""

    @property
    def binning(self) -> str:
        return metrics.binning_label(self.n_bins, self.strategy)


@dataclass
class GroupReport(BinnedReport):
    """Per-group calibration of one score (see :func:`by_group`).

    Attributes
    ----------
    table, overall : DataFrame, dict
        One row per group (index: its name, in display order) of :func:`group_stats`' values; the same on all rows.
    reliability, overall_reliability
        Group -> its reliability table (:func:`calibdash.metrics.reliability_table`); that of all rows together.
    groups : ndarray
        Each row's group (after cutting and pooling), aligned with the input rows.
    pooled, notes : list of str
        The groups pooled into :data:`OTHER`; how the groups were made and what to know about them.
    column, n_bins, strategy, n_boot, level
        The group column's name, how ECE was binned and the intervals drawn.
    """

    column: str
    table: pd.DataFrame
    overall: dict
    reliability: dict
    groups: np.ndarray
    pooled: list = field(default_factory=list)
    notes: list = field(default_factory=list)
    n_bins: int = metrics.DEFAULT_N_BINS
    strategy: str = metrics.DEFAULT_STRATEGY
    n_boot: int = 200
    level: float = 0.95
    overall_reliability: pd.DataFrame | None = None

    def worst(self, metric: str = "ECE") -> str | None:
        """The group with the highest ``metric`` (None when every value is NaN)."""
        v = self.table[metric].astype(float)
        return None if v.isna().all() else str(v.idxmax())


def stats_table(s, y, groups, order, sample_weight, n_bins, strategy, n_boot, level, seed):
    """Per group of rows (in ``order``): :func:`group_stats` (each group from its own seed) and the reliability
    table."""
    seeds = np.random.SeedSequence(seed).generate_state(len(order))
    rows, tables = {}, {}
    # each group's rows in their order, from one pass over the labels (not one comparison of every row per group)
    codes = pd.Categorical(groups, categories=list(order)).codes
    sorter = np.argsort(codes, kind="stable")
    bounds = np.searchsorted(codes[sorter], np.arange(len(order) + 1))
    for i, (g, sd) in enumerate(zip(order, seeds)):
        m = sorter[bounds[i]:bounds[i + 1]]
        if m.size == 0:
            continue
        sw = None if sample_weight is None else sample_weight[m]
        rows[g] = group_stats(s[m], y[m], sw, n_bins=n_bins, strategy=strategy, n_boot=n_boot, level=level,
                              seed=int(sd))
        tables[g] = metrics.reliability_table(s[m], y[m], n_bins, strategy, sample_weight=sw)
    table = pd.DataFrame.from_dict(rows, orient="index")
    table.index.name = "group"
    return table, tables


def checked_groups(scores, labels, groups, sample_weight, column, default: str, require_both: bool, **how):
    """``(s, y, w, column, make_groups(...))`` of checked rows; ``column`` by default ``groups.name`` or ``default``."""
    s = check_scores(scores)
    y = check_labels(labels, s.size, require_both=require_both)
    w = row_weights(sample_weight, s.size)
    if len(groups) != s.size:
        raise DataError(f"the group column has {len(groups)} values but there are {s.size} rows.")
    named = isinstance(groups, pd.Series) and groups.name is not None
    column = column or (str(groups.name) if named else default)
    return s, y, w, column, make_groups(groups, sample_weight, name=column, **how)


def by_group(scores, labels, groups, sample_weight=None, n_bins: int = metrics.DEFAULT_N_BINS,
             strategy: str = metrics.DEFAULT_STRATEGY, n_boot: int = 200, seed: int = 0,
             min_rows: float = MIN_ROWS, *, max_groups: int = MAX_GROUPS, n_quantiles: int = N_QUANTILES,
             level: float = 0.95, column: str | None = None) -> GroupReport:
    """Calibration of ``scores`` (in [0, 1], 0/1 ``labels``) in every group of ``groups``, one value per row.

    ``groups`` become groups by :func:`make_groups` (with ``max_groups``, ``n_quantiles``, ``min_rows``; ``column``
    their name for notes, default ``groups.name`` or "the group column"); a row of ``sample_weight`` ``w`` counts as
    ``w`` rows everywhere; ``n_bins``, ``strategy`` bin ECE and the reliability tables (default 10 equal-count bins);
    ``n_boot`` Poisson-bootstrap resamples per group (0: no intervals), each group from its own seed drawn from
    ``seed``, give percentile intervals at ``level``.

    Raises
    ------
    SettingsError
        Too many groups (see :func:`make_groups`).
    DataError
        Bad scores, labels, weights, or a group column of another length.
    """
    s, y, w, col, (labels_, order, notes, pooled) = checked_groups(
        scores, labels, groups, sample_weight, column, "the group column", False, max_groups=max_groups,
        n_quantiles=n_quantiles, min_rows=min_rows)
    return group_report(s, y, w, sample_weight is not None, labels_, order, notes, pooled, col, n_bins, strategy,
                        n_boot, level, seed)


def group_report(s, y, sample_weight, weighted, labels_, order, notes, pooled, col, n_bins, strategy, n_boot, level,
                 seed, *, cells: bool = False) -> GroupReport:
    """The :class:`GroupReport` of groups already made (each row's ``labels_``, their display ``order``) on checked
    scores, labels and row weights (ones unless ``weighted``); the rest as :class:`GroupReport` holds it. ``cells``:
    the rows are score cells' weighted rows, so the table's ``rows`` counts the real rows (the weights' sum)."""
    seen = set(labels_)
    order = [g for g in order if g in seen]
    table, tables = stats_table(s, y, labels_, order, sample_weight if weighted else None, n_bins, strategy, n_boot,
                                level, seed)
    overall = group_stats(s, y, sample_weight if weighted else None, n_bins=n_bins, strategy=strategy, n_boot=0)
    if cells:
        table["rows"] = cell_rows(table["weight"])
        overall["rows"] = int(cell_rows(overall["weight"]))
    notes = list(notes)
    one = [g for g in order if table.loc[g, "note"]]
    if one:
        notes.append(f"{', '.join(map(repr, one))} hold{'s' if len(one) == 1 else ''} one class only: "
                     f"{'its' if len(one) == 1 else 'their'} metrics are not computed (NaN).")
    return GroupReport(column=col, table=table, overall=overall, reliability=tables, groups=labels_,
                       pooled=list(pooled), notes=notes, n_bins=n_bins, strategy=strategy, n_boot=int(n_boot),
                       level=level, overall_reliability=metrics.reliability_table(
                           s, y, n_bins, strategy, sample_weight=sample_weight if weighted else None))

