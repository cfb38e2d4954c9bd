"""The same rows in another order are the same data: a held-out evaluation on rows does not depend on the order.

The random split and the folds are dealt over the rows' content order (calibdash.evaluation.holdout.content_order:
label and score), so a shuffled table holds out the same rows, every score-only calibrator is fitted on the
same multiset of rows, and every measure but MVCE comes out the same (to the rounding of sums taken in another
order). MVCE is a random measure by its definition (MBCT paper, Eq. 10: random views, seeded): its seeded views
shuffle the rows from their positions, and MBCT's node losses rely on that (a grouped or weighted MVCE equals the
metric bit for bit), so its value moves within its view noise when the rows move.
"""
from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from calibdash.evaluation.holdout import content_order, evaluate, split_plan
from calibdash.evaluation.scheme import Scheme


def _rows(n: int = 1200, seed: int = 0):
    rng = np.random.default_rng(seed)
    s = np.round(rng.beta(2, 3, n), 2)                                 # ties: 101 distinct scores
    device = rng.choice(["mobile", "desktop", "tablet"], n)
    lift = np.where(device == "mobile", 1.4, 0.9)
    y = (rng.uniform(size=n) < np.clip(lift * s, 0, 1)).astype(int)
    s[:40], y[:40], device[:40] = s[40:80], y[40:80], device[40:80]    # 40 rows repeated exactly
    return s, y, pd.DataFrame({"device": device, "age": rng.integers(18, 70, n)})


@pytest.mark.parametrize("scheme", [Scheme(seed=3), Scheme(kind="kfold", n_folds=4, seed=1)])
def test_a_shuffled_table_gives_the_same_evaluation(scheme):
    s, y, feats = _rows()
    perm = np.random.default_rng(9).permutation(s.size)               # row i of the shuffle is row perm[i]
    methods = ["platt", "histogram", "isotonic", "bbq"]
    a = evaluate(s, y, methods, scheme)
    b = evaluate(s[perm], y[perm], methods, scheme)
    # the same rows held out, as multisets of (score, label)
    held_a = sorted(zip(s[a.rows], y[a.rows]))
    held_b = sorted(zip(s[perm][b.rows], y[perm][b.rows]))
    assert held_a == held_b
    same = [c for c in a.metrics.columns if c != "MVCE"]
    pd.testing.assert_frame_equal(a.metrics[same], b.metrics[same], rtol=1e-9, atol=1e-12)


def test_the_content_order_is_a_permutation_that_follows_the_rows():
    s, y, feats = _rows()
    order = content_order(s, y)
    assert sorted(order.tolist()) == list(range(s.size))
    perm = np.random.default_rng(2).permutation(s.size)
    again = content_order(s[perm], y[perm])
    key = list(zip(y, s))
    assert [key[i] for i in order] == [key[perm[i]] for i in again]     # the same rows in the same order


def test_positions_still_decide_without_an_order_and_the_order_changes_the_parts():
    s, y, _ = _rows()
    plain, _ = split_plan(y, Scheme(seed=3))
    ordered, _ = split_plan(y, Scheme(seed=3), order=content_order(s, y))
    assert plain[0][1].size == ordered[0][1].size                     # the same stratified sizes
    assert not np.array_equal(plain[0][1], ordered[0][1])
    for kind in ("insample",):                                        # no draw: the order changes nothing
        assert np.array_equal(split_plan(y, Scheme(kind=kind))[0][0][0],
                              split_plan(y, Scheme(kind=kind), order=content_order(s, y))[0][0][0])

