"""The solution path of nearly-isotonic regression (modified PAV), for ENIR.

Nearly-isotonic regression (Tibshirani, Hoefling & Tibshirani 2011, Technometrics 53(1), Eq. 2) fits, for a penalty
``lambda >= 0``, the points ``y_1 .. y_n`` (sorted by score) with weights ``w_i``::

    beta(lambda) = argmin_b  1/2 sum_i w_i (y_i - b_i)^2 + lambda sum_i (b_i - b_(i+1))_+

``lambda = 0`` gives the data, a large ``lambda`` the isotonic fit. Their modified pool-adjacent-violators algorithm
(Section 3) follows the whole path: adjacent coordinates that are equal stay fused for every larger ``lambda`` (Lemma
1), so the path is a sequence of merges of adjacent groups. Between merges a group ``g`` (weight ``W_g``, sum ``S_g =
sum w_i y_i``) moves linearly, ``beta_g(lambda) = (S_g + lambda c_g) / W_g`` with ``c_g = l_g - r_g``, where ``l_g =
1`` when its left neighbour lies above it (a violation, fixed at ``lambda = 0``) and ``r_g = 1`` when it lies above
its right neighbour. Two neighbours whose values approach merge at the ``lambda`` that equalises them, and the new
group's ``c`` is the sum of theirs; each merge is an event in a heap: ``O(n log n)`` for the whole path.

This is the algorithm of the ``neariso`` R package that the ENIR authors call (``neariso2``,
github.com/pakdaman/calibration, ``ENIR/``), with two numerical differences that do not change the path: the meeting
``lambda`` is computed from the groups' sums (``(S_b W_a - S_a W_b) / (c_a W_b - c_b W_a)``, exact rationals for
whole-number weights) rather than from values carried along the path, and ``c`` is an integer (the package divides by
the group size and rounds). As in the package, neighbours whose values are equal to a relative ``1e-8`` merge at once
(at ``lambda = 0`` this fuses equal adjacent points).
"""
from __future__ import annotations

import heapq
from dataclasses import dataclass

import numpy as np

__all__ = []

#: Relative difference below which neighbouring values count as equal (the neariso package's ``tolerance``).
TOL = 1e-8
#: Merge penalties closer than this (relative) are one breakpoint.
BREAK_TOL = 1e-9


@dataclass
class NearIsoPath:
    """The solved path over ``n`` sorted points: per point ``s`` (``w_i y_i``) and weight ``w``; per boundary ``i``
    (between points ``i`` and ``i + 1``) ``viol``, whether it starts as a violation (``y_i > y_(i+1)``), and
    ``death``, the ``lambda`` at which the groups either side merge (``inf`` where the isotonic fit keeps it)."""

    s: np.ndarray
    w: np.ndarray
    viol: np.ndarray
    death: np.ndarray

    @property
    def n(self) -> int:
        return int(self.w.size)


def near_isotonic_path(s, w) -> NearIsoPath:
    """Solve the nearly-isotonic path of the points with sums ``s`` (``w_i y_i``) and weights ``w > 0`` (see the
    module docstring)."""
    s = np.asarray(s, dtype=float)
    w = np.asarray(w, dtype=float)
    n = w.size
    y = s / w
    viol = y[:-1] > y[1:]
    death = np.full(max(n - 1, 0), np.inf)
    if n < 2:
        return NearIsoPath(s=s, w=w, viol=viol, death=death)
    # equal neighbours (to TOL) fuse at lambda = 0: the starting groups ("units")
    scale = np.maximum(np.abs(y[:-1]), np.abs(y[1:]))
    gap = np.abs(y[:-1] - y[1:])
    same = (gap == 0.0) | (gap < TOL * scale)
    death[same] = 0.0
    starts = np.r_[0, np.flatnonzero(~same) + 1]
    ends = np.r_[starts[1:] - 1, n - 1]                       # last point of each unit
    us = np.add.reduceat(s, starts)
    uw = np.add.reduceat(w, starts)
    m = starts.size
    if m < 2:
        return NearIsoPath(s=s, w=w, viol=viol, death=death)
    bv = viol[ends[:-1]]                                       # violation status of the units' boundaries
    c = np.zeros(m, dtype=np.int64)
    c[1:] += bv
    c[:-1] -= bv
    # first events, vectorised: the lambda at which each pair of neighbouring units meets
    va, vb = us[:-1] / uw[:-1], us[1:] / uw[1:]
    ca, cb = c[:-1].astype(float), c[1:].astype(float)
    den = ca * uw[1:] - cb * uw[:-1]                          # sign of d(va - vb)/dlambda
    with np.errstate(divide="ignore", invalid="ignore"):
        t0 = (us[1:] * uw[:-1] - us[:-1] * uw[1:]) / den
    meet = (den != 0) & ((va - vb) * den < 0)
    ok = np.flatnonzero(meet)
    heap = list(zip(np.maximum(t0[ok], 0.0).tolist(), ok.tolist(), (ok + 1).tolist()))
    heapq.heapify(heap)
    # group state in Python lists (the event loop is sequential); new groups are appended
    S = us.tolist()
    W = uw.tolist()
    C = c.tolist()
    END = ends.tolist()
    LEFT = list(range(-1, m - 1))
    RIGHT = list(range(1, m + 1))
    RIGHT[-1] = -1
    ALIVE = [True] * m
    death_list = death.tolist()
    pop, push = heapq.heappop, heapq.heappush
    while heap:
        lam, a, b = pop(heap)
        if not (ALIVE[a] and ALIVE[b]):
            continue
        death_list[END[a]] = lam
        ALIVE[a] = ALIVE[b] = False
        g = len(S)
        sg, wg, cg = S[a] + S[b], W[a] + W[b], C[a] + C[b]
        S.append(sg)
        W.append(wg)
        C.append(cg)
        END.append(END[b])
        left, right = LEFT[a], RIGHT[b]
        LEFT.append(left)
        RIGHT.append(right)
        ALIVE.append(True)
        vg = (sg + lam * cg) / wg
        # the new group against each neighbour: when do they meet (as for the first events)?
        for p, q in ((left, g), (g, right)):
            if p < 0 or q < 0:
                continue
            if p == left:
                RIGHT[left] = g
                sp, wp, cp = S[p], W[p], C[p]
                vp = (sp + lam * cp) / wp
                sq, wq, cq, vq = sg, wg, cg, vg
            else:
                LEFT[right] = g
                sq, wq, cq = S[q], W[q], C[q]
                vq = (sq + lam * cq) / wq
                sp, wp, cp, vp = sg, wg, cg, vg
            d = vp - vq
            top = max(abs(vp), abs(vq))
            if d == 0.0 or abs(d) < TOL * top:           # equal: fuse now (the package's RelDif test)
                push(heap, (lam, p, q))
                continue
            den = cp * wq - cq * wp
            if den == 0 or d * den > 0:                   # parallel or moving apart
                continue
            t = (sq * wp - sp * wq) / den
            push(heap, (t if t > lam else lam, p, q))
    return NearIsoPath(s=s, w=w, viol=viol, death=np.asarray(death_list, dtype=float))


def breakpoints(path: NearIsoPath) -> np.ndarray:
    """0 and every distinct ``lambda`` where groups merge, ascending (the neariso package's ``nearisoGetBreakpoints``
    before thinning). Merge penalties within a relative ``BREAK_TOL`` are one breakpoint, at the largest of them: the
    package carries values along the path, so one breakpoint can come out as two that differ in the last bits and the
    same model is counted twice; here penalties come from the groups' sums (bit-identical for whole-number weights)
    and the tolerance covers fractional weights."""
    d = np.union1d([0.0], path.death[np.isfinite(path.death)])
    if d.size < 2:
        return d
    new = d[1:] > d[:-1] * (1.0 + BREAK_TOL)           # starts a new cluster
    last = np.r_[new, True]                              # last member of each cluster
    return d[last]


def group_slopes(path: NearIsoPath, starts: np.ndarray) -> np.ndarray:
    """``c_g = l_g - r_g`` of the groups starting at ``starts``."""
    bv = path.viol[starts[1:] - 1].astype(np.int64)
    c = np.zeros(starts.size, dtype=np.int64)
    c[1:] += bv
    c[:-1] -= bv
    return c
