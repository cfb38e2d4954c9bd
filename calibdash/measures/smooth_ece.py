"""Smooth ECE and the smoothed reliability diagram (Blasiok & Nakkiran, ICLR 2024).

Blasiok & Nakkiran, "Smooth ECE: Principled Reliability Diagrams via Kernel Smoothing" (arXiv:2309.12236, 2023;
ICLR 2024), and their Python package ``relplot`` (github apple/ml-calibration, ``src/relplot``), whose numbers this
module reproduces (``tests/measures/test_smooth_ece.py``).

With a kernel ``K_sigma`` on [0, 1] (the Gaussian ``N(0, sigma^2)`` reflected at 0 and 1) and rows ``(f_i, y_i)`` of
weight ``w_i``: the smoothed residual ``r(t) = sum_i w_i K(t, f_i) (y_i - f_i) / sum_i w_i K(t, f_i)``, the smoothed
density ``delta(t) = sum_i w_i K(t, f_i) / sum_i w_i``, and ``smECE_sigma = integral_0^1 |r(t)| delta(t) dt``. The
smoothed reliability diagram draws ``t -> t + r(t)``, so the area between it and the diagonal, weighted by ``delta``,
is ``smECE_sigma``. SmoothECE is ``smECE_{sigma*}`` at the fixed point ``smECE_sigma = sigma`` (unique:
``smECE_sigma`` decreases in ``sigma``).

As ``relplot`` does, the rows are spread linearly onto a grid of ``E = max(2000, round(20 / sigma)) // 2 + 1``
points, the grid is mirrored at each end and convolved with the sampled Gaussian, and the integral is a sum over
``max(200, round(10 / sigma))`` points. The fixed point is ``relplot``'s ``search_param``: ten halvings of [0, 1], a
bandwidth too small when ``sigma < 0.001`` or ``sigma < smECE_sigma``, the upper end returned (``sigma*`` within
``2**-10`` above the fixed point, at least ``2**-9``).

Where this module and ``relplot`` differ, and why
-------------------------------------------------
* ``relplot`` adds ``1e-4`` to the smoothed density before dividing; it is left out here. It guards against
  dividing by zero, and its effect depends on the scale of the weights (negligible for counts, not for weights
  summing to 1). The values agree with ``relplot``'s to about ``1e-4 / rows``.
* ``relplot`` samples the Gaussian only on ``[-1/2, 1/2]`` and reflects once at each end; the paper's reflected
  kernel folds infinitely often. This module follows ``relplot`` (to reproduce its numbers): the two agree closely
  while ``sigma`` is well below 1/2, which covers the fixed point of any predictor with a SmoothECE below about 0.2.
* ``relplot``'s ``prepare_rel_diagram`` draws the bootstrap mean of a kernel regression of ``y`` itself;
  :func:`smoothed_curve` draws the paper's ``t + r(t)`` on the full data and :func:`smoothed_curve_band` adds the
  bootstrap band around it.
* The band resamples rows by Poisson weights (:func:`poisson_weights`) rather than ``relplot``'s bagging of the
  rows, so that weighted score cells resample as their rows would; the bandwidth is held at the full data's.

Where no prediction lies within about 38 bandwidths of ``t``, the density there is exactly 0 and the curve NaN.
"""
from __future__ import annotations

import math
from typing import NamedTuple

import numpy as np
import pandas as pd

from ..core.errors import SettingsError
from .binning import check_inputs, check_level, is_whole

__all__ = ["smooth_ece", "smooth_ece_at", "smooth_ece_bandwidth", "smoothed_curve", "smoothed_curve_band", "check_boot"]

#: Points at which :func:`smoothed_curve` evaluates the curve (every 0.005 on [0, 1]).
DEFAULT_GRID = 201
#: Level of the bootstrap band of :func:`smoothed_curve_band` (``relplot`` draws 95% bands).
DEFAULT_LEVEL = 0.95
#: ``relplot``'s bisection: halvings of [0, 1] and the smallest bandwidth it tests.
_HALVINGS = 10
_MIN_BANDWIDTH = 0.001


# the grid and the reflected Gaussian (relplot's ReflectedGaussianKernel)
def _grid_size(sigma: float) -> int:
    """Points ``E`` of the grid the rows are spread onto (``relplot``: ``max(2000, round(20/sigma)) // 2 + 1``)."""
    return max(2000, round(20 / sigma)) // 2 + 1


def _integration_points(sigma: float) -> int:
    """Points of the sum that stands for the integral (``relplot``: ``max(round(10/sigma), 200)``)."""
    return max(round(10 / sigma), 200)


def _interpolate(t: np.ndarray, values: np.ndarray) -> np.ndarray:
    """Linear interpolation of ``values`` given at ``i / (E - 1)`` (along the last axis), at points ``t``."""
    e = values.shape[-1]
    i = np.clip((t * (e - 1)).astype(np.int64), 0, e - 2)
    frac = t * (e - 1) - i
    return values[..., i] * (1 - frac) + values[..., i + 1] * frac


class _Spread(NamedTuple):
    """Where each row lands on a grid of ``E`` points: its left point and its share of the right one."""
    left: np.ndarray
    frac: np.ndarray
    size: int

    def values(self, v: np.ndarray) -> np.ndarray:
        """Grid values of the row values ``v`` spread linearly onto the two neighbouring points."""
        return (np.bincount(self.left, weights=(1 - self.frac) * v, minlength=self.size)
                + np.bincount(self.left + 1, weights=self.frac * v, minlength=self.size))


def _spread(f: np.ndarray, size: int) -> _Spread:
    x = f * (size - 1)
    left = np.clip(x.astype(np.int64), 0, size - 2)
    return _Spread(left, x - left, size)


def _reflected_smooth(values: np.ndarray, sigma: float) -> np.ndarray:
    """Convolve grid values with the Gaussian, reflected at both ends (``relplot``'s ``convolve``).

    The grid ``values`` (``E`` points) is extended by its mirror images about its first and last point, and
    convolved with the Gaussian density of standard deviation ``sigma`` sampled at ``linspace(0, 1, E) - 1/2``; the
    ``E`` central values are kept. Kernel samples that underflow to 0 are dropped first (which changes nothing).
    """
    e = values.size
    t = np.linspace(0, 1, e)
    ker = np.exp(-(t - 0.5) * (t - 0.5) / (2 * sigma * sigma)) / (math.sqrt(2 * math.pi) * sigma)
    ext = np.concatenate([values[::-1][:-1], values, values[::-1][1:]])
    nz = np.flatnonzero(ker)
    # np.convolve(ext, ker, "valid")[j] = sum_m ext[j + m] ker[e - 1 - m]; relplot keeps j = e//2 ... e//2 + e - 1.
    a, b = e - 1 - nz[-1], e - 1 - nz[0]           # m where ker[e - 1 - m] is not zero
    start = e // 2
    return np.convolve(ext[start + a:start + b + e], ker[nz[0]:nz[-1] + 1], "valid")


class _Rows:
    """Checked rows ``(f, y - f, w)`` and their spread onto the grids used so far."""

    def __init__(self, p: np.ndarray, y: np.ndarray, w):
        self.f = p
        self.w = np.ones(p.size) if w is None else w
        self.wr = self.w * (y - p)
        self._grids: dict[int, tuple[np.ndarray, np.ndarray]] = {}          # grid size -> (residuals, weights)

    def smoothed(self, sigma: float):
        """The smoothed residual sum and weight on the grid for ``sigma``: ``(sum w K (y - f), sum w K)``."""
        size = _grid_size(sigma)
        if size not in self._grids:
            sp = _spread(self.f, size)
            self._grids[size] = (sp.values(self.wr), sp.values(self.w))
        r, w = self._grids[size]
        return _reflected_smooth(r, sigma), _reflected_smooth(w, sigma)

    def smece(self, sigma: float) -> float:
        num, den = self.smoothed(sigma)
        t = np.linspace(0, 1, _integration_points(sigma))
        return float(np.sum(np.abs(_interpolate(t, num))) / np.sum(_interpolate(t, den)))

    def fixed_point(self) -> float:
        """``relplot``'s ``search_param``: the upper end of ten halvings of [0, 1] (module docstring)."""
        def too_small(sigma):
            return sigma < _MIN_BANDWIDTH or sigma < self.smece(sigma)
        if too_small(1.0):
            return 1.0
        high, low = 1.0, 0.0
        for _ in range(_HALVINGS):
            mid = (high + low) / 2
            if too_small(mid):
                low = mid
            else:
                high = mid
        return high


def _bandwidth(rows: _Rows, bandwidth) -> float:
    if bandwidth is None:
        return rows.fixed_point()
    try:
        sigma = float(bandwidth)
    except (TypeError, ValueError):
        raise SettingsError(f"bandwidth must be a number in (0, 1] or None, got {bandwidth!r}.") from None
    if not (0.0 < sigma <= 1.0):
        raise SettingsError(f"bandwidth must lie in (0, 1] (or be None for the fixed point), got {bandwidth!r}.")
    return sigma


def _curve(num: np.ndarray, den: np.ndarray, t: np.ndarray):
    """``(t + r(t), delta(t))`` from smoothed grid values: the curve and the density (integrating to 1)."""
    n_t = _interpolate(t, num)
    d_t = _interpolate(t, den)
    with np.errstate(invalid="ignore", divide="ignore"):
        calibrated = np.where(d_t > 0, t + n_t / d_t, np.nan)
    return calibrated, d_t / np.trapezoid(den, np.linspace(0, 1, den.size))


def smooth_ece_at(probs, labels, bandwidth: float, sample_weight=None) -> float:
    """``smECE_sigma``: the smooth ECE at a fixed bandwidth (``relplot.smECE_sigma``; module docstring). Decreases
    as the bandwidth grows (up to the grid's discretisation, about 1e-4); 0 when every smoothed residual vanishes."""
    return smooth_ece(probs, labels, sample_weight, bandwidth)


def smooth_ece_bandwidth(probs, labels, sample_weight=None) -> float:
    """The bandwidth ``sigma*`` of SmoothECE: the fixed point ``smECE_sigma = sigma`` (the paper's choice), found as
    ``relplot`` finds it (ten halvings of [0, 1], the upper end: within ``2**-10`` above the fixed point)."""
    return _Rows(*check_inputs(probs, labels, sample_weight)).fixed_point()


def smooth_ece(probs, labels, sample_weight=None, bandwidth: float | None = None) -> float:
    """SmoothECE (Blasiok & Nakkiran): the smooth ECE at its own bandwidth ``sigma*``, in [0, 1].

    ``sample_weight``: a row of weight ``w`` counts as ``w`` rows. ``bandwidth``: ``None`` (default) is the fixed
    point ``sigma*`` (:func:`smooth_ece_bandwidth`), which makes the measure free of settings and, as the paper
    proves, a consistent calibration measure; a number in (0, 1] gives ``smECE_sigma`` at that bandwidth.
    ``relplot.smECE(f, y)`` gives the same value on unweighted rows (to about ``1e-4 / rows``).
    """
    rows = _Rows(*check_inputs(probs, labels, sample_weight))
    return rows.smece(_bandwidth(rows, bandwidth))


def smoothed_curve(probs, labels, sample_weight=None, bandwidth: float | None = None,
                   grid=DEFAULT_GRID) -> pd.DataFrame:
    """The smoothed reliability diagram: ``t -> t + r(t)`` with the smoothed density (module docstring).

    ``bandwidth`` defaults to SmoothECE's own ``sigma*``, so the curve encodes SmoothECE; ``grid`` is a number of
    equally spaced points on [0, 1] or the points themselves. Returns a DataFrame of ``score`` (the point t),
    ``calibrated`` (``t + r(t)``, the smoothed observed frequency; NaN where the density underflows to 0; it may
    leave [0, 1] slightly near the ends) and ``density`` (``delta(t)``, integrating to 1 over [0, 1]); ``attrs``
    holds ``"bandwidth"`` and ``"smooth_ece"`` (at that bandwidth), for captions.
    """
    return _smoothed(probs, labels, sample_weight, bandwidth, grid)[0]


def _smoothed(probs, labels, sample_weight, bandwidth, grid):
    """:func:`smoothed_curve`'s frame, the checked ``(p, y, w)`` and the grid ``t``."""
    p, y, w = check_inputs(probs, labels, sample_weight)
    rows = _Rows(p, y, w)
    sigma = _bandwidth(rows, bandwidth)
    if np.isscalar(grid):
        if int(grid) != grid or grid < 2:
            raise SettingsError(f"grid must be a whole number of points of at least 2, got {grid!r}.")
        t = np.linspace(0.0, 1.0, int(grid))
    else:
        t = np.asarray(grid, dtype=float).reshape(-1)
        if t.size == 0 or not np.all(np.isfinite(t)) or t.min() < 0 or t.max() > 1:
            raise SettingsError("grid must be a number of points or points in [0, 1].")
    calibrated, density = _curve(*rows.smoothed(sigma), t)
    out = pd.DataFrame({"score": t, "calibrated": calibrated, "density": density})
    out.attrs.update(bandwidth=sigma, smooth_ece=rows.smece(sigma))
    return out, (p, y, w), t


def poisson_weights(sample_weight, n: int, n_boot: int, seed):
    """Yield Poisson-bootstrap weights of ``n`` rows (float, shape (n,)), one array per resample.

    Whole-number weights (or none) count rows: a row of weight ``w`` stands for ``w`` rows, each drawn Poisson(1)
    times, so it is drawn ``Poisson(w)`` times in all: the Poisson bootstrap of the rows themselves (asymptotically
    the ordinary bootstrap), whatever cells they were gathered into. With fractional weights each row is drawn
    Poisson(1) times and keeps its weight.
    """
    rng = np.random.default_rng(seed)
    whole = is_whole(sample_weight)
    for _ in range(n_boot):
        if sample_weight is None:
            yield rng.poisson(1.0, size=n).astype(float)
        elif whole:
            yield rng.poisson(sample_weight).astype(float)
        else:
            yield rng.poisson(1.0, size=n) * sample_weight


def _distinct_rows(p: np.ndarray, y: np.ndarray, w):
    """Rows of equal (prediction, label) merged, their weights summed, when the weights count rows: a Poisson(1)
    draw for each of ``c`` identical rows sums to one Poisson(c) draw, so merging changes no resample's distribution
    and makes the resamples of score cells and of their rows the same draws."""
    if not is_whole(w):
        return p, y, w
    order = np.lexsort((y, p))
    ps, ys = p[order], y[order]
    start = np.flatnonzero(np.r_[True, (ps[1:] != ps[:-1]) | (ys[1:] != ys[:-1])])
    counts = np.add.reduceat(np.ones(p.size) if w is None else w[order], start)
    return ps[start], ys[start], counts


def band_quantiles(curves: np.ndarray, level: float):
    """Pointwise ``(1 -+ level) / 2`` quantiles of resampled curves (one per row), ignoring NaN: numpy's default
    (R's type 7) over the resamples that reach each point, NaN where none does. Equal to
    ``np.nanquantile(curves, q, axis=0)`` but a sort per point instead of numpy's loop."""
    srt = np.sort(np.ascontiguousarray(np.asarray(curves, dtype=float).T), axis=1)   # NaN sort last
    k = np.sum(np.isfinite(srt), axis=1)
    out = []
    for q in ((1 - level) / 2, (1 + level) / 2):
        h = np.maximum(k - 1, 0) * q
        lo = np.floor(h).astype(np.int64)
        hi = np.minimum(lo + 1, np.maximum(k - 1, 0))
        a = np.take_along_axis(srt, lo[:, None], axis=1)[:, 0]
        b = np.take_along_axis(srt, hi[:, None], axis=1)[:, 0]
        val = a + (h - lo) * (b - a)
        out.append(np.where(k > 0, val, np.nan))
    return out[0], out[1]


def check_boot(n_boot, level) -> tuple[int, float]:
    if int(n_boot) != n_boot or n_boot < 2:
        raise SettingsError(f"n_boot must be a whole number of at least 2, got {n_boot!r}.")
    return int(n_boot), check_level(level)


def smoothed_curve_band(probs, labels, sample_weight=None, bandwidth: float | None = None,
                        grid=DEFAULT_GRID, n_boot: int = 100, level: float = DEFAULT_LEVEL,
                        seed: int = 0) -> pd.DataFrame:
    """:func:`smoothed_curve` with a pointwise bootstrap band (``lower``, ``upper``): each of ``n_boot`` resamples
    reweights the rows by Poisson draws (:func:`poisson_weights`; rows of equal prediction and label merged first,
    so score cells and their rows give the same band for the same seed) and smooths them again at the full data's
    bandwidth, as ``relplot`` does; the band is the pointwise ``(1 -+ level) / 2`` quantiles of the resampled curves
    (NaN where every resample leaves the density 0)."""
    n_boot, level = check_boot(n_boot, level)
    out, (p, y, w), t = _smoothed(probs, labels, sample_weight, bandwidth, grid)
    sigma = out.attrs["bandwidth"]
    pb, yb, wb0 = _distinct_rows(p, y, w)
    sp = _spread(pb, _grid_size(sigma))
    resid = yb - pb
    curves = np.empty((n_boot, t.size))
    for b, wb in enumerate(poisson_weights(wb0, pb.size, n_boot, seed)):
        nb = _reflected_smooth(sp.values(wb * resid), sigma)
        db = _reflected_smooth(sp.values(wb), sigma)
        curves[b], _ = _curve(nb, db, t)
    out["lower"], out["upper"] = band_quantiles(curves, level)
    out.attrs.update(level=level, n_boot=n_boot)
    return out
