"""Weighted l1 linear trend filtering on unevenly spaced points (ELiTE's solver).

The problem (ELiTE paper, Eq. 3.2, with the weights of footnote 6): for sorted distinct scores ``x_1 < ... < x_n``,
targets ``z_i`` (the mean label of the rows tied at ``x_i``; with sample weights the weighted mean) and weights ``w_i``
(their count, or weight sum),

    p_hat = argmin_p  1/2 sum_i w_i (p_i - z_i)^2  +  lam * ||Delta p||_1

where ``(Delta p)_i = (p_{i+2} - p_{i+1}) / (x_{i+2} - x_{i+1}) - (p_{i+1} - p_i) / (x_{i+1} - x_i)`` is the change of
slope at ``x_{i+1}`` (``Delta = D_{n-1} A``, ``A`` of Eq. 3.3). The solution is continuous and piecewise linear in the
score, its kinks ("knots") on data points.

Optimality (KKT): ``p`` is optimal iff the dual ``nu`` (one entry per interior point) with ``Delta^T nu = W (z - p)``
has ``|nu_i| <= lam`` everywhere and ``nu_i = lam * sign((Delta p)_i)`` at every kink. ``Delta^T nu = r`` is solvable
iff ``r`` is orthogonal to ``1`` and ``x``, and then ``nu_i = sum_{j <= i+1} r_j (x_{i+1} - x_j)`` (two ``cumsum``
passes, no ill-conditioned solve). At ``lam >= lam_max = max |nu(affine fit)|`` the solution is the weighted
least-squares line (Kim et al. 2009; paper, Section 3).

Algorithm: an exact active-set method on the primal, not the paper's ADMM (:mod:`calibdash.calibrators.elite` says why):

* For a knot set ``K`` with kink signs ``s``, the minimiser of the smooth surrogate ``1/2 ||p - z||_W^2 + lam * s^T
  (Delta p)_K`` over continuous piecewise-linear ``p`` with knots in ``K`` (a "face solution") solves a tridiagonal
  system ``G theta = b - lam * Delta_K^T s`` in the hat-function basis on the nodes ``{x_1} u x_K u {x_n}``, ``G = B^T
  W B`` (``scipy.linalg.solveh_banded``). Segment statistics are cached; a new segment costs O(sqrt n) from moments of
  fixed blocks of points (shifted without cancellation), so a face solve costs O(#knots + sqrt n) and only the KKT
  check touches all n points.
* Outer loop: compute ``nu``; if ``|nu| <= lam (1 + tol)`` the face solution is optimal. Else each maximal run of
  violating points proposes its most violating point: a run touching a knot of the same sign moves that knot there,
  another run adds a knot. The proposal is accepted if its sign-consistent face solution lowers the objective; else a
  feature-sign step (Lee et al. 2007; Osborne et al. 2000) adds the points and walks from the current iterate towards
  the new face solution, dropping knots whose kink changes sign (an exact line search on the piecewise quadratic
  objective). Every accepted step lowers the objective, so the method cannot cycle.
* Along a decreasing grid of ``lam`` each problem is warm-started from the previous solution.

On exit the KKT conditions hold to the relative ``tol`` (``max_i |nu_i| <= lam (1 + tol)``, every knot's kink of its
``nu``'s sign; the tests also check the duality gap). Knots are the final face solution's active set, not a thresholded
output of an iterative method; kinks changing the fitted values by less than ``KINK_TOL`` are not counted. If for
``STALL`` iterations no step lowers the objective by more than 1e-13 of it (its float rounding), the solver stops; the
fit counts as converged when its violation is below ``FLOOR_TOL`` (``at_rounding_floor``).
"""
from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
from scipy.linalg import solveh_banded

from ..core.step_maps import collapse_ties, interp

__all__ = ["FLOOR_TOL", "evaluate_linear"]

#: A kink changes the fitted values by less than this (probability units): not a knot.
KINK_TOL = 1e-9
#: Segments whose sufficient statistics are kept (a sorted array, emptied when full).
CACHE_SIZE = 200_000
#: Iterations without a decrease of the objective before the solver stops.
STALL = 4
#: Largest KKT violation (relative to lambda) accepted when stopped at the rounding floor.
FLOOR_TOL = 1e-6


def merge_ties(s: np.ndarray, y: np.ndarray,
               sample_weight: np.ndarray | None = None) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Sorted distinct scores, the mean label of each and its number of rows (paper, footnote 6): with
    ``sample_weight`` the weighted mean label and the weight sum (a score held only by rows of weight 0 is no point),
    exactly the count and mean of the repeated rows for integer weights."""
    x, counts, positives = collapse_ties(np.asarray(s, dtype=float), np.asarray(y, dtype=float), sample_weight)
    w = counts.astype(float)
    return x, positives / w, w


@dataclass
class TrendFit:
    """One solved trend filter, a continuous piecewise-linear map: its penalty ``lam`` (Eq. 3.2), ``knots`` (indices
    into the merged points, ascending), nodes ``nodes_x`` (first point, knots, last point) and values there
    ``nodes_p``, the ``objective`` (Eq. 3.2, weighted), ``kkt`` (``max_i |nu_i| / lam - 1``: <= tol when converged, 0
    for a fit made without the solver), ``converged`` (``kkt <= tol``, or stopped at the rounding floor),
    ``at_rounding_floor`` (no step lowered the objective by more than its rounding error any more while ``tol < kkt <=
    FLOOR_TOL``, seen at 10^6 points and the smallest ``lam``), and the ``iterations`` (KKT checks, each an O(n) pass)
    and ``face_solves`` spent on this ``lam``."""

    lam: float
    knots: np.ndarray
    nodes_x: np.ndarray
    nodes_p: np.ndarray
    objective: float = float("nan")
    kkt: float = float("nan")
    converged: bool = True
    at_rounding_floor: bool = False
    iterations: int = 0
    face_solves: int = 0
    _heights: np.ndarray = field(default=None, repr=False)

    @property
    def heights(self) -> np.ndarray:
        """Kinks at the interior nodes as heights, signed like the change of slope: how far the map at a node lies
        from the chord between its neighbours (the largest change of the fitted values if the knot were removed)."""
        if self._heights is None:
            H = np.diff(self.nodes_x)
            self._heights = np.diff(np.diff(self.nodes_p) / H) * H[:-1] * H[1:] / (H[:-1] + H[1:])
        return self._heights

    @property
    def n_knots(self) -> int:
        """Knots whose kink changes the fitted values by more than ``KINK_TOL``."""
        return int(np.count_nonzero(np.abs(self.heights) > KINK_TOL))

    @property
    def knot_x(self) -> np.ndarray:
        """Scores of the counted knots."""
        return self.nodes_x[1:-1][np.abs(self.heights) > KINK_TOL]

    @property
    def df(self) -> int:
        """Degrees of freedom: knots + 2 (the unbiased estimate, Tibshirani 2014)."""
        return self.n_knots + 2


def evaluate_linear(xn: np.ndarray, pn: np.ndarray, s: np.ndarray) -> np.ndarray:
    """Continuous piecewise-linear function through ``(xn, pn)``, extrapolated linearly: between the nodes
    :func:`~calibdash.core.step_maps.interp` (no overflow between nodes closer than 1e-308); beyond them ``((s - x) *
    dy) / dx`` in that order, so a steep end line gives +-inf (clipped by the caller), never NaN."""
    s = np.asarray(s, dtype=float)
    if xn.size == 1:
        return np.full(s.shape, float(pn[0]))
    out = interp(s, xn, pn)
    lo, hi = s < xn[0], s > xn[-1]
    out[lo] = pn[0] + (s[lo] - xn[0]) * (pn[1] - pn[0]) / (xn[1] - xn[0])
    out[hi] = pn[-1] + (s[hi] - xn[-1]) * (pn[-1] - pn[-2]) / (xn[-1] - xn[-2])
    return out


class TrendFilter:
    """Solver for Eq. 3.2 on fixed merged points ``x, z, w`` (distinct sorted scores, at least 3; targets; positive
    weights), reusable along a lambda path: ``tol`` is the relative tolerance of the KKT conditions, ``max_iter`` the
    cap on KKT checks per ``lam`` (past it the fit has ``converged=False``)."""

    def __init__(self, x, z, w, tol: float = 1e-9, max_iter: int = 200):
        self.x, self.z, self.w = (np.ascontiguousarray(v, dtype=float) for v in (x, z, w))
        n = self.x.size
        if n < 3:
            raise ValueError("trend filtering needs at least 3 distinct scores")
        if np.any(np.diff(self.x) <= 0):
            raise ValueError("x must be strictly increasing")
        self.n = n
        self.h = np.diff(self.x)
        self.tol = float(tol)
        self.max_iter = int(max_iter)
        self.wz = self.w * self.z
        self.zz = float(np.dot(self.wz, self.z))
        self._cache_keys = np.zeros(0, dtype=np.int64)
        self._cache_vals = np.zeros((0, 5))
        self.face_solves = 0
        self._build_blocks()
        self._nu = np.empty(n - 2)
        # weighted least-squares line and lambda_max
        W = self.w.sum()
        xm = np.dot(self.w, self.x) / W
        zm = np.dot(self.w, self.z) / W
        dx = self.x - xm
        slope = np.dot(self.w * dx, self.z - zm) / np.dot(self.w * dx, dx)
        self.affine_ = (zm - slope * xm, slope)
        p_aff = zm + slope * dx
        s0 = np.cumsum(self.w * (self.z - p_aff))        # nu of the affine fit, by two cumsums
        self.lambda_max = float(np.max(np.abs(np.cumsum(s0[:-2] * self.h[:-1]))))

    def _build_blocks(self) -> None:
        """Moments of fixed blocks of points ``[kB, (k+1)B)``, so a long segment costs O(sqrt n): with ``l = x -
        x_first``, ``r = x_last - x`` (both >= 0 in the block) the sums of w, w l, w l^2, w r, w r^2, w l r, w z, w z
        l, w z r. Shifting them to a segment's ends only adds non-negative terms: no cancellation."""
        n = self.n
        B = max(256, int(np.sqrt(n)))
        starts = np.arange(0, n, B)
        ends = np.minimum(starts + B, n) - 1
        owner = np.repeat(np.arange(starts.size), np.diff(np.append(starts, n)))
        lft = self.x - self.x[starts][owner]
        rgt = self.x[ends][owner] - self.x
        w, wz = self.w, self.wz
        cols = (w, w * lft, w * lft * lft, w * rgt, w * rgt * rgt, w * lft * rgt, wz, wz * lft, wz * rgt)
        self._block = B
        self._block_first = self.x[starts]
        self._block_last = self.x[ends]
        self._block_mom = np.column_stack([np.add.reduceat(c, starts) for c in cols])

    @staticmethod
    def _ranges(first: np.ndarray, count: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Concatenated ``arange(first[j], first[j] + count[j])`` and the owner j of each entry."""
        count = np.maximum(count, 0)
        owner = np.repeat(np.arange(first.size), count)
        offs = np.concatenate(([0], np.cumsum(count)[:-1]))
        idx = np.arange(int(count.sum())) - np.repeat(offs - first, count)
        return idx, owner

    def _new_segment_stats(self, a: np.ndarray, b: np.ndarray) -> np.ndarray:
        """The five sums of :meth:`_segment_stats` for segments [a_j, b_j), computed."""
        k = a.size
        B = self._block
        xa, xb = self.x[a], self.x[b]
        kb0 = -(-a // B)                      # first block starting at or after a
        kb1 = b // B                          # blocks [kb0, kb1) lie inside [a, b)
        full = kb1 > kb0
        head_end = np.where(full, kb0 * B, b)
        tail_start = np.where(full, kb1 * B, b)
        i1, o1 = self._ranges(a, head_end - a)
        i2, o2 = self._ranges(tail_start, b - tail_start)
        idx = np.concatenate((i1, i2))
        own = np.concatenate((o1, o2))
        xi = self.x[idx]
        H = xb - xa
        # t and 1 - t directly: (x - x_a)^2 / H^2 underflows to 0 / 0 when H is below 1e-154
        # (scores 0, 5e-272 and 1: a softmax of logits of size 1e4)
        lft = (xi - xa[own]) / H[own]
        rgt = (xb[own] - xi) / H[own]
        wi, wzi = self.w[idx], self.wz[idx]
        acc = np.column_stack([np.bincount(own, v, k) for v in      # (int64 when no point lies inside)
                               (wi * rgt * rgt, wi * lft * rgt, wi * lft * lft, wzi * rgt, wzi * lft)]).astype(float)
        if full.any():
            bi, bo = self._ranges(kb0, kb1 - kb0)
            M = self._block_mom[bi]
            d = self._block_first[bi] - xa[bo]        # >= 0
            e = xb[bo] - self._block_last[bi]         # >= 0
            blk = np.column_stack([np.bincount(bo, v, k) for v in (
                M[:, 4] + 2 * e * M[:, 3] + e * e * M[:, 0], M[:, 5] + e * M[:, 1] + d * M[:, 3] + d * e * M[:, 0],
                M[:, 2] + 2 * d * M[:, 1] + d * d * M[:, 0], M[:, 8] + e * M[:, 6], M[:, 7] + d * M[:, 6])])
            blk[:, :3] /= H[:, None]
            blk[:, :] /= H[:, None]
            acc += blk
        return acc

    def _segment_stats(self, nodes: np.ndarray) -> np.ndarray:
        """Per segment [nodes[j], nodes[j+1]) the sums ``A = sum w (1-t)^2, B = sum w t (1-t), C = sum w t^2, E = sum
        w z (1-t), F = sum w z t`` with ``t = (x - x_a) / (x_b - x_a)``, cached in a sorted array of keys ``a * n +
        b``."""
        a = nodes[:-1]
        b = nodes[1:]
        keys = a * self.n + b
        ck, cv = self._cache_keys, self._cache_vals
        pos = np.searchsorted(ck, keys)
        out = np.empty((a.size, 5))
        hit = np.zeros(keys.size, dtype=bool)
        if ck.size:
            pos_c = np.minimum(pos, ck.size - 1)
            hit = ck[pos_c] == keys
            out[hit] = cv[pos_c[hit]]
        miss = ~hit
        if miss.any():
            sums = self._new_segment_stats(a[miss], b[miss])
            out[miss] = sums
            if ck.size + sums.shape[0] > CACHE_SIZE:
                ck, cv, pos = ck[:0], cv[:0], np.zeros(keys.size, dtype=np.int64)
            self._cache_keys = np.insert(ck, pos[miss], keys[miss])
            self._cache_vals = np.insert(cv, pos[miss], sums, axis=0)
        return out

    def _system(self, nodes: np.ndarray):
        """Gram matrix (upper banded form) and ``B^T W z`` on the hat basis of ``nodes``."""
        st = self._segment_stats(nodes)
        m1 = nodes.size
        diag = np.zeros(m1)
        diag[:-1] += st[:, 0]
        diag[1:] += st[:, 2]
        diag[-1] += self.w[-1]          # the last point closes the last segment (t = 1)
        rhs = np.zeros(m1)
        rhs[:-1] += st[:, 3]
        rhs[1:] += st[:, 4]
        rhs[-1] += self.wz[-1]
        ab = np.empty((2, m1))
        ab[0, 0] = 0.0
        ab[0, 1:] = st[:, 1]
        ab[1] = diag
        return ab, rhs

    @staticmethod
    def _gram_dot(ab: np.ndarray, v: np.ndarray) -> np.ndarray:
        out = ab[1] * v
        out[:-1] += ab[0, 1:] * v[1:]
        out[1:] += ab[0, 1:] * v[:-1]
        return out

    def _face(self, nodes, signs, lam):
        """Face solution on ``nodes`` with kink signs ``signs``: (theta, kinks, ab, rhs)."""
        self.face_solves += 1
        ab, rhs = self._system(nodes)
        xn = self.x[nodes]
        b = rhs
        if signs.size:
            invH = 1.0 / np.diff(xn)
            g = np.zeros(nodes.size)
            g[:-2] += signs * invH[:-1]
            g[1:-1] -= signs * (invH[:-1] + invH[1:])
            g[2:] += signs * invH[1:]
            b = rhs - lam * g
        theta = solveh_banded(ab, b, check_finite=False)
        return theta, self._kinks(xn, theta), ab, rhs

    @staticmethod
    def _kinks(xn, theta):
        return np.diff(np.diff(theta) / np.diff(xn))

    def _objective(self, ab, rhs, theta, v, lam) -> float:
        quad = 0.5 * (np.dot(theta, self._gram_dot(ab, theta)) - 2.0 * np.dot(theta, rhs) + self.zz)
        return float(quad + lam * np.abs(v).sum())

    def _nodes(self, knots):
        return np.concatenate(([0], knots, [self.n - 1])).astype(np.int64)

    def _consistent_face(self, knots, signs, lam):
        """Face solution, dropping knots whose kink disagrees with its sign until none does."""
        while True:
            nodes = self._nodes(knots)
            theta, v, ab, rhs = self._face(nodes, signs, lam)
            bad = signs * v <= 0
            if not bad.any():
                return knots, theta, v, self._objective(ab, rhs, theta, v, lam)
            knots, signs = knots[~bad], signs[~bad]

    def _feature_sign(self, knots, theta, add, add_signs, lam):
        """Feature-sign walk from a sign-consistent iterate, adding ``add`` knots: a sign-consistent face solution
        with an objective no larger than the start's."""
        nodes = self._nodes(knots)
        v = self._kinks(self.x[nodes], theta)
        signs = np.sign(v)
        fresh = ~np.isin(add, knots)
        add, add_signs = add[fresh], add_signs[fresh]
        if add.size:
            new = np.concatenate((knots, add))
            order = np.argsort(new, kind="stable")
            new_theta_nodes = self._nodes(new[order])
            theta = np.interp(self.x[new_theta_nodes], self.x[nodes], theta)
            knots = new[order]
            signs = np.concatenate((signs, add_signs))[order]
            v = np.concatenate((v, np.zeros(add.size)))[order]
            nodes = new_theta_nodes
        for _ in range(10 * (knots.size + 10)):
            while True:
                th_n, v_n, ab, rhs = self._face(nodes, signs, lam)
                bad_new = (signs * v_n <= 0) & (v == 0)
                if not bad_new.any():
                    break
                keep = ~bad_new
                keep_nodes = np.concatenate(([True], keep, [True]))
                knots, signs, v = knots[keep], signs[keep], v[keep]
                theta, nodes = theta[keep_nodes], nodes[keep_nodes]
            theta, v, at_face = self._line_search(ab, rhs, theta, v, th_n, v_n, lam)
            keep = v != 0
            if not keep.all():
                keep_nodes = np.concatenate(([True], keep, [True]))
                knots, v = knots[keep], v[keep]
                theta, nodes = theta[keep_nodes], nodes[keep_nodes]
            if at_face:
                break
            signs = np.sign(v)
        return knots, theta, v, self._objective(*self._system(nodes), theta, v, lam)

    def _line_search(self, ab, rhs, theta, v, th_n, v_n, lam):
        """Exact minimiser of the objective (a convex piecewise quadratic in the step, with breakpoints where a kink
        changes sign) on the segment from ``theta`` to ``th_n``: the new (theta, kinks), kinks that reached zero set
        to 0, and whether the full step was taken without any sign change."""
        d_th = th_n - theta
        d_v = v_n - v
        a2 = float(np.dot(d_th, self._gram_dot(ab, d_th)))
        c1 = float(np.dot(d_th, self._gram_dot(ab, theta) - rhs))
        sg0 = np.where(v != 0, np.sign(v), np.sign(d_v))
        g0 = lam * float(np.dot(d_v, sg0))
        with np.errstate(divide="ignore", invalid="ignore"):
            brk = np.where((v != 0) & (np.sign(d_v) == -np.sign(v)), -v / d_v, np.inf)
        cand = np.flatnonzero(brk < 1.0)
        if a2 <= 0.0 or cand.size == 0:
            return th_n, v_n, True
        if c1 + g0 >= 0.0:
            # no descent left along this direction: the iterate is the face minimiser up to rounding
            return theta, v, True
        order = cand[np.argsort(brk[cand])]
        bk = brk[order]
        gk = g0 + np.concatenate(([0.0], np.cumsum(2.0 * lam * np.abs(d_v[order]))))
        edges = np.concatenate(([0.0], bk, [1.0]))
        alpha = 1.0
        for k in range(edges.size - 1):
            hi = edges[k + 1]
            if c1 + a2 * hi + gk[k] >= 0.0:
                alpha = min(max(-(c1 + gk[k]) / a2, edges[k]), hi)
                break
            if k < bk.size and c1 + a2 * hi + gk[k + 1] >= 0.0:
                alpha = hi
                break
        v_new = v + alpha * d_v
        v_new[order[bk == alpha]] = 0.0
        flipped = (v != 0) & (np.sign(v_new) != np.sign(v)) & (v_new != 0)
        at_face = alpha == 1.0 and not flipped.any() and not (v_new == 0).any()
        return theta + alpha * d_th, v_new, at_face

    def _kkt(self, knots, theta, lam):
        """Check the KKT conditions of the face solution (one O(n) pass), leaving ``nu`` in ``self._nu``: None when
        ``|nu| <= lam (1 + tol)`` everywhere, else per run of violating points its argmax, first, last (point indices)
        and sign."""
        x = self.x
        nodes = self._nodes(knots)
        buf = np.interp(x, x[nodes], theta)
        np.multiply(self.w, buf, out=buf)
        np.subtract(self.wz, buf, out=buf)              # r = W (z - p)
        np.cumsum(buf, out=buf)
        nu = self._nu
        np.multiply(buf[:-2], self.h[:-1], out=nu)
        np.cumsum(nu, out=nu)
        bound = lam * (1.0 + self.tol)
        if nu.max() <= bound and nu.min() >= -bound:
            return None
        idx = np.flatnonzero((nu > bound) | (nu < -bound))
        sg = np.sign(nu[idx])
        brk = np.flatnonzero((np.diff(idx) > 1) | (np.diff(sg) != 0)) + 1
        starts = np.concatenate(([0], brk))
        ends = np.concatenate((brk, [idx.size])) - 1
        a = np.abs(nu[idx])
        mx = np.maximum.reduceat(a, starts)
        run_id = np.repeat(np.arange(starts.size), ends - starts + 1)
        is_max = a == mx[run_id]
        _, first = np.unique(run_id[is_max], return_index=True)
        arg = idx[is_max][first] + 1
        return arg, idx[starts] + 1, idx[ends] + 1, sg[starts]

    def _propose(self, knots, v, runs):
        """Move knots touched by a same-sign run to the run's argmax; other runs add a knot."""
        arg, first, last, sg = runs
        pos = {int(k): i for i, k in enumerate(knots)}
        ksign = np.sign(v)
        moved = knots.copy()
        adds, add_sg = [], []
        for a_, f_, l_, g_ in zip(arg.tolist(), first.tolist(), last.tolist(), sg.tolist()):
            j = pos.get(f_ - 1)
            if j is None or ksign[j] != g_:
                j = pos.get(l_ + 1)
                if j is not None and ksign[j] != g_:
                    j = None
            if j is not None and moved[j] == knots[j]:
                moved[j] = a_
            else:
                adds.append(a_)
                add_sg.append(g_)
        prop = np.concatenate((moved, np.asarray(adds, dtype=np.int64)))
        psg = np.concatenate((ksign, np.asarray(add_sg, dtype=float)))
        order = np.argsort(prop, kind="stable")
        prop, psg = prop[order], psg[order]
        keep = np.concatenate(([True], np.diff(prop) > 0))
        return prop[keep], psg[keep]

    def solve(self, lam: float, start: TrendFit | None = None) -> TrendFit:
        """Solve Eq. 3.2 at ``lam``, warm-started from ``start`` (default: the affine fit)."""
        lam = float(lam)
        if not lam > 0:
            raise ValueError(f"lam must be positive, got {lam}")
        x = self.x
        solves0 = self.face_solves
        if start is None or start.knots.size == 0:
            knots = np.zeros(0, dtype=np.int64)
            theta = self.affine_[0] + self.affine_[1] * x[[0, -1]]
        else:
            knots = start.knots.astype(np.int64)
            theta = start.nodes_p.copy()
        # from the previous solution to a sign-consistent face solution at this lam
        knots, theta, v, obj = self._feature_sign(knots, theta, np.zeros(0, np.int64), np.zeros(0), lam)
        converged = False
        it = stalled = 0
        for it in range(1, self.max_iter + 1):
            runs = self._kkt(knots, theta, lam)
            if runs is None:
                converged = True
                break
            prop, psg = self._propose(knots, v, runs)
            k2, th2, v2, obj2 = self._consistent_face(prop, psg, lam)
            if obj2 < obj - 1e-13 * abs(obj):
                knots, theta, v, obj = k2, th2, v2, obj2
                stalled = 0
                continue
            knots, theta, v, obj4 = self._feature_sign(knots, theta, runs[0], runs[3], lam)
            stalled = stalled + 1 if obj4 >= obj - 1e-13 * abs(obj) else 0
            obj = obj4
            if stalled >= STALL:
                break
        if not converged:
            # the last check saw the iterate before the last step: check the one returned
            converged = self._kkt(knots, theta, lam) is None
        nodes = self._nodes(knots)
        kkt = float(np.max(np.abs(self._nu))) / lam - 1.0
        # stalled: no step lowers the objective by more than its rounding error
        # (1e-13 relative), so the remaining violations are at rounding level
        rounding = not converged and stalled >= STALL and kkt <= FLOOR_TOL
        return TrendFit(lam=lam, knots=knots, nodes_x=x[nodes].copy(), nodes_p=theta.copy(),
                        objective=obj, kkt=kkt, converged=converged or rounding,
                        at_rounding_floor=rounding, iterations=it,
                        face_solves=self.face_solves - solves0)

    def path(self, lams) -> list[TrendFit]:
        """Solutions along ``lams`` (any order; solved in decreasing order with warm starts)."""
        lams = np.asarray(lams, dtype=float)
        order = np.argsort(-lams, kind="stable")
        fits: list[TrendFit | None] = [None] * lams.size
        prev = None
        for i in order:
            prev = self.solve(lams[i], prev)
            fits[i] = prev
        return fits
