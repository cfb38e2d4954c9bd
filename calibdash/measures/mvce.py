"""MVCE, the multi-view calibration error (MBCT paper, Eq. 10).

MVCE averages, over ``n_views`` random partitions of the rows, the l_p mean over bins of the partition calibration
error ``PCE_b = |mean prediction - mean outcome|`` (Eq. 4). Each partition (a "view") is a seeded random shuffle of
the rows cut into equal-count bins of ``bin_size`` rows (the paper's random-shuffle uniform-mass scheme): unlike
ECE's bins, a view does not sort by the prediction, so it also sees miscalibration that is not a function of the
score. Three ways to the definition: :func:`row_views` shuffles the rows (the metric, :func:`mvce`);
:func:`partition_views` draws a view's bin sums from their exact moments when the rows are too many to make (and
:func:`mvce_of_moments` from the residuals' mean and variance alone, as the bootstrap of score cells does);
:func:`grouped_mvce` measures many groups and candidate predictions at once on shared views (the MBCT calibrator's
node-local loss), with bins of equal weight under sample weights (:func:`weighted_mvce`).
"""
from __future__ import annotations

import numpy as np

from ..core.errors import DataError, SettingsError
from .binning import check_inputs, is_whole

__all__ = ["random_views", "grouped_mvce", "weighted_mvce"]

#: Above this total weight, :func:`mvce` draws each view's bin sums from their moments (:func:`partition_views`).
MVCE_MAX_ROWS = 1_000_000


def row_views(probs, y, bin_size: int, n_views: int, p: float, seed) -> np.ndarray:
    """The per-view values of MVCE on rows (the definition; see :func:`mvce`)."""
    n = probs.size
    n_bins = max(1, n // bin_size)
    ids = np.minimum(np.arange(n) // bin_size, n_bins - 1)
    counts = np.bincount(ids, minlength=n_bins).astype(float)
    d = probs - y
    out = np.empty(n_views)
    for v, perm in enumerate(iter_views(n, n_views, seed)):
        pce = np.abs(np.bincount(ids, weights=d[perm], minlength=n_bins)) / counts
        out[v] = np.mean(pce ** p) ** (1.0 / p)
    return out


def partition_views(d: np.ndarray, counts: np.ndarray, bin_size: int, n_views: int, p: float, seed) -> np.ndarray:
    """Per-view MVCE of the rows ``np.repeat(d, counts)`` (residuals ``f - y``) without making the rows.

    A view cuts a uniform random permutation of the N rows into bins of ``bin_size`` rows (the remainder joining the
    last bin), so bin ``b``'s residual sum ``S_b`` is the sum of a draw without replacement of ``M_b`` rows, with
    exact moments ``E S_b = M_b rbar``, ``Var S_b = sigma^2 M_b (N - M_b) / (N - 1)``, ``Cov(S_b, S_c) = -sigma^2 M_b
    M_c / (N - 1)`` (``rbar``, ``sigma^2``: the mean and population variance of the residuals). Each view draws the
    ``S_b`` from the normal distribution with exactly these moments, ``S_b = M_b rbar + a (sqrt(M_b) z_b - (M_b / N)
    sum_c sqrt(M_c) z_c)`` with ``z`` standard normal and ``a^2 = sigma^2 N / (N - 1)``: close to the row-level
    views, a bin sum of at least ``bin_size`` rows being close to normal (``tests/measures/test_metrics.py`` checks
    it).
    """
    w = counts.astype(float)
    n = float(w.sum())
    mean = float(np.dot(w, d) / n)
    var = float(np.dot(w, (d - mean) ** 2) / n)
    n_bins = max(1, int(n) // int(bin_size))
    sizes = np.full(n_bins, float(bin_size))
    sizes[-1] += n - sizes.sum()
    root = np.sqrt(sizes)
    a = np.sqrt(var * n / (n - 1.0)) if n > 1 else 0.0
    z = np.random.default_rng([int(seed), 2]).standard_normal((int(n_views), n_bins))
    dev = a * (z * root - np.outer(z @ root, sizes / n))
    pce = np.abs(mean * sizes + dev) / sizes
    return np.mean(pce ** p, axis=1) ** (1.0 / p)


def mvce_of_moments(mean: float, var: float, n: float, n_views: int, bin_size: int | None = None,
                    p: float = 1.0, seed=0) -> float:
    """MVCE (:func:`partition_views`) of ``n`` rows known only by the mean and variance of their residuals.

    The partition views depend on the rows only through these two moments and their number, so two values carrying
    them (half the rows each) give the value of the rows themselves. ``bin_size`` defaults to ``max(1, n // 10)``.
    """
    a = n // 2
    gap = n * np.sqrt(max(var, 0.0) / (a * (n - a)))
    d = np.array([mean + (n - a) * gap / n, mean - a * gap / n])
    counts = np.array([a, n - a], dtype=np.int64)
    m = max(1, int(n) // 10) if bin_size is None else int(bin_size)
    return float(np.mean(partition_views(d, counts, m, n_views, p, seed)))


def mvce_checked(probs, y, sample_weight, bin_size, n_views, p, seed, max_rows) -> float:
    """:func:`mvce` of inputs already checked (``sample_weight`` None for unit weights)."""
    if bin_size is not None and int(bin_size) < 1:
        raise SettingsError(f"bin_size must be at least 1, got {bin_size}.")
    if int(n_views) < 1:
        raise SettingsError(f"n_views must be at least 1, got {n_views}.")
    if int(max_rows) < 1:
        raise SettingsError(f"max_rows must be at least 1, got {max_rows}.")
    counts = None
    if (w := sample_weight) is not None:            # MVCE shuffles rows, so fractional weights are refused
        if not (whole := is_whole(w)) or w.max() >= 2.0 ** 53:
            bad = int(np.argmax(w != np.floor(w))) if not whole else int(np.argmax(w))
            raise DataError(f"MVCE shuffles rows, so sample_weight must be whole row counts; row {bad} weighs "
                            f"{w[bad]!r}. Round the weights to counts, or leave MVCE out.")
        counts = w.astype(np.int64)
    n = probs.size if counts is None else int(counts.sum())
    m = max(1, n // 10) if bin_size is None else int(bin_size)
    if counts is None:
        return float(np.mean(row_views(probs, y, m, int(n_views), p, seed)))
    if n > int(max_rows):
        return float(np.mean(partition_views(probs - y, counts, m, int(n_views), p, seed)))
    return float(np.mean(row_views(np.repeat(probs, counts), np.repeat(y, counts), m, int(n_views), p, seed)))


def mvce(probs, labels, bin_size: int | None = None, n_views: int = 100,
         p: float = 1.0, seed: int = 0, sample_weight=None, max_rows: int = MVCE_MAX_ROWS, *,
         pos_label=None) -> float:
    """Multi-view calibration error (MBCT paper, Eq. 10): ``1/r sum_{views} ( 1/B sum_b |mean f_b - mean y_b|^p
    )^(1/p)``.

    Parameters
    ----------
    probs, labels : array-like
    bin_size : int, optional
        Rows per bin (the paper's M). Default ``max(1, N // 10)``: ten bins per view, comparable with a 10-bin ECE.
        The last ``N mod bin_size`` rows of each shuffle join the last bin.
    n_views, p, seed :
        Number of random views r (the paper uses 100), the l_p norm over bins (the paper's main results use 1, its
        alternative 2), and the seed of the views, so the metric is reproducible.
    sample_weight : array-like of whole numbers, optional
        Row counts, turned into rows since MVCE shuffles rows: with a total ``N <= max_rows`` each row is repeated ``w``
        times in place, so the value equals MVCE of the repeated rows exactly (same seed); score cells give a value
        distributed as that of their rows, not the same value. Fractional weights are refused (:class:`DataError`).
    max_rows : int, default 1,000,000
        Above this total weight each view draws its bins' residual sums from the normal distribution with the exact
        mean and covariance of a random partition of all N rows (:func:`partition_views`), at a cost of
        O(cells + views x bins) whatever N; the value is distributed as the row-level one up to that approximation.
    """
    probs_, y, w = check_inputs(probs, labels, sample_weight, pos_label)
    return mvce_checked(probs_, y, w, bin_size, n_views, p, seed, max_rows)


# many groups at once: the MBCT calibrator's node-local loss
def iter_views(n: int, n_views: int, seed):
    """Yield ``n_views`` random permutations of ``range(n)``, drawn as :func:`mvce` draws them."""
    rng = np.random.default_rng(seed)
    for _ in range(int(n_views)):
        yield rng.permutation(n)


def random_views(n: int, n_views: int, seed) -> np.ndarray:
    """The permutations of :func:`iter_views` as one array (int32), to be reused."""
    out = np.empty((int(n_views), n), dtype=np.int32 if n < 2 ** 31 else np.int64)
    for v, perm in enumerate(iter_views(n, n_views, seed)):
        out[v] = perm
    return out


def _spill(rows, g, end, b0, b1, last, bin_start, m):
    """How rows whose weight reaches past their first bin correct the sums that put all of it there: (row, bin,
    weight) triples, per such row minus its weight beyond its first bin, taken from that bin, and the weight it puts
    in each later bin it reaches (the group's last bin has no upper end). Bins are global numbers."""
    extra = b1 - b0
    owner = np.repeat(np.arange(rows.size), extra)
    step = np.arange(int(extra.sum())) - np.repeat(np.cumsum(extra) - extra, extra) + 1
    j = b0[owner] + step
    upper = np.where(j < last[owner], (j + 1) * m, np.inf)
    amount = np.maximum(np.minimum(end[owner], upper) - j * m, 0.0)
    beyond = end - (b0 + 1) * m
    bins = np.concatenate([b0, j]) + bin_start[np.concatenate([g, g[owner]])]
    return np.concatenate([rows, rows[owner]]), bins, np.concatenate([-beyond, amount])


def grouped_mvce(residuals: np.ndarray, group: np.ndarray, n_groups: int, views,
                 bin_size: float, p: float = 1.0, sample_weight: np.ndarray | None = None) -> np.ndarray:
    """MVCE (MBCT Eq. 10) of each group of rows, for each column of residuals (the MBCT calibrator's node-local loss).

    The definition is :func:`mvce`'s (a group with fewer than ``bin_size`` rows is one bin). A group's view is the
    view of all rows restricted to the group (a uniformly random order of its rows, as a fresh shuffle would be), and
    all columns share the views, so candidate predictions of one node are compared on the same partitions. With one
    group and ``views = random_views(n, r, seed)`` the result equals ``mvce(pred, labels, bin_size, r, p, seed)``.

    With ``sample_weight`` the bins hold equal shares of weight: the group's rows, in the view's order, lay their
    weights end to end; bin ``b`` is the stretch ``[b M, (b + 1) M)`` of that line (the last bin runs to the group's
    total weight ``W``: ``max(1, floor(W / M))`` bins) and a row whose weight straddles a boundary puts each part in
    its bin. A bin's error is ``|sum(part * residual)| / (its weight)``. Integer weights thus act as the row
    repeated, its copies kept next to each other in the view (a fresh shuffle would scatter them: the two agree on
    average, not exactly). Unit weights give the unweighted result bit for bit.

    Parameters
    ----------
    residuals : ndarray, shape (C, n)
        Prediction minus label of every row, one row per candidate prediction.
    group : ndarray of int, shape (n,)
        Group of each row, 0 .. n_groups - 1, or -1 for a row that takes no part.
    views : ndarray of shape (r, n), or an iterable of permutations of ``range(n)``
    bin_size, p :
        The MVCE's bin size M (rows, or weight with ``sample_weight``) and norm p.
    sample_weight : ndarray of shape (n,), optional
        Non-negative weight of each row; every group needs a positive total weight.

    Returns
    -------
    ndarray, shape (n_groups, C)
    """
    d = np.ascontiguousarray(residuals, dtype=float)
    if d.ndim == 1:
        d = d[None, :]
    n_cols, n = d.shape
    group = np.asarray(group)
    rows_in = np.bincount(group[group >= 0], minlength=n_groups)
    if sample_weight is None:
        m, sizes, wd = int(bin_size), rows_in, d
        if m < 1:
            raise DataError(f"the MVCE bin size must be at least 1, got {bin_size}.")
    else:
        w = np.asarray(sample_weight, dtype=float)
        m = float(bin_size)
        if not m > 0:
            raise DataError(f"the MVCE bin size must be positive, got {bin_size}.")
        sizes = np.bincount(group[group >= 0], weights=w[group >= 0], minlength=n_groups)
        wd = w * d                                         # every row's whole weight in its first bin
    if np.any(sizes <= 0):
        raise ValueError("every group needs at least one row (of positive weight)")
    n_active = int(rows_in.sum())
    starts = np.concatenate([[0], np.cumsum(rows_in)[:-1]])
    n_bins = np.maximum(1, sizes // m).astype(np.int64)
    bin_start = np.concatenate([[0], np.cumsum(n_bins)])
    total = int(bin_start[-1])
    # every view has the same bin sizes: m rows (weight), the remainder in each group's last bin
    counts = np.full(total, float(m))
    counts[bin_start[1:] - 1] += sizes - n_bins * m
    label = np.where(group >= 0, group, n_groups).astype(np.int16 if n_groups < 32767 else np.int32)
    rank = np.arange(n_active)
    bin_of_row = np.full(n, total, dtype=np.intp)          # rows outside every group: a spare bin
    acc = np.zeros((n_groups, n_cols))
    n_views = 0
    one_group = n_groups == 1 and n_active == n
    for perm in views:
        n_views += 1
        if one_group:                                      # every row in group 0: the view as it is
            rows, g = perm, np.zeros(n, dtype=np.intp)
        else:
            lab = label[perm]
            order = np.argsort(lab, kind="stable")[:n_active]  # by group, random order within
            g = lab[order].astype(np.intp)
            rows = perm[order]
        if sample_weight is None:
            bin_of_row[rows] = np.minimum((rank - starts[g]) // m, n_bins[g] - 1) + bin_start[g]
        else:
            wo = w[rows]
            before = np.concatenate([[0.0], np.cumsum(wo)])
            start = before[:-1] - before[starts[g]]        # weight laid down before the row, in its group
            end = before[1:] - before[starts[g]]
            last = n_bins[g] - 1
            b0 = np.minimum(np.floor_divide(start, m).astype(np.intp), last)
            b1 = np.maximum(np.minimum(np.ceil(end / m).astype(np.intp) - 1, last), b0)
            bin_of_row[rows] = b0 + bin_start[g]
        pce = np.stack([np.bincount(bin_of_row, weights=wd[c], minlength=total + 1)[:total] for c in range(n_cols)])
        if sample_weight is not None:
            cross = np.flatnonzero(b1 > b0)                # rows whose weight reaches past their first bin
            if cross.size:
                r, b, amount = _spill(rows[cross], g[cross], end[cross], b0[cross], b1[cross], last[cross],
                                      bin_start, m)
                for c in range(n_cols):
                    pce[c] += np.bincount(b, weights=amount * d[c, r], minlength=total)[:total]
        pce = np.abs(pce) / counts
        if p == 1:
            per_group = np.add.reduceat(pce, bin_start[:-1], axis=1) / n_bins
        else:
            per_group = (np.add.reduceat(pce ** p, bin_start[:-1], axis=1) / n_bins) ** (1.0 / p)
        acc += per_group.T
    return acc / max(1, n_views)


def weighted_mvce(probs: np.ndarray, labels: np.ndarray, sample_weight: np.ndarray, bin_size: float,
                  n_views: int = 100, p: float = 1.0, seed: int = 0) -> float:
    """:func:`mvce` with sample weights: the same random views, each cut into stretches of equal weight
    ``bin_size`` as :func:`grouped_mvce` describes. With unit weights it equals :func:`mvce` up to the order of
    summation (1e-12 relative)."""
    d = np.asarray(probs, dtype=float) - np.asarray(labels, dtype=float)
    one = np.zeros(d.size, dtype=np.int64)
    return float(grouped_mvce(d[None], one, 1, iter_views(d.size, n_views, seed), bin_size, p, sample_weight)[0, 0])
