"""sample_weight for every registered calibrator: a row of weight w counts as w rows.

This is what fitting on score cells rests on: a table of (score, count,
positives) is fitted as rows (score, 1) of weight ``positives`` and (score, 0)
of weight ``count - positives``. Method-specific cases (hand-worked weighted
fits, explainers, documented exceptions) are in each method's own test file.
"""
import numpy as np
import pandas as pd
import pytest

from calibdash import calibrators
from calibdash.core.errors import DataError

#: Methods that cannot equal their fit on repeated rows. None now: MBCT merges identical rows and
#: draws its views, holdout and growth sample from the rows' content, a row of whole weight k as k rows.
ROW_SHUFFLING: set[str] = set()


def _data(n=4000, seed=11):
    rng = np.random.default_rng(seed)
    s = np.round(rng.beta(2, 3, n), 3)                     # ties, as real scores have
    y = (rng.random(n) < s ** 1.4).astype(int)
    return s, y


def _cells(s, y):
    """Rows -> (score, label, count) cells."""
    frame = pd.DataFrame({"s": s, "y": y}).value_counts().reset_index()
    return frame["s"].to_numpy(), frame["y"].to_numpy(), frame["count"].to_numpy()


GRID = np.linspace(0.0, 1.0, 1001)

# Tolerance of the two equalities below, from the methods' stopping rules. The binning, PAV, trend
# filter, near-isotonic, Bayesian-binning and Venn-ABERS fits are closed-form functions of per-score
# sums: counts and positives are whole numbers (exact in floats, in any order), sums of scores differ
# by a few ulps; their maps agree to about 1e-15. Platt scaling, beta calibration and temperature
# scaling are Newton iterations that stop at the floating-point limit (platt.fit_logistic: no
# gradient tolerance; temperature: the last step, taken, is below 1e-12 of 1/T, so the error after
# it is quadratically small), where the coefficients are off the exact optimum by the rounding of
# the gradient's pairwise sums carried through the inverse Hessian:
#     |d beta| <= |H^-1| (log2(N) eps sum_i w_i |x_i| |q_i - y_i|),
# and the relative error of the map sigmoid(x . beta) is at most |x . d beta|. On these data that is
# 1.2e-11 for beta (features ln s and -ln(1 - s) up to 27.6 in size, at the clip 1e-12), 1.9e-13 for
# Platt and 1.4e-13 for temperature, per fit; two fits differ by at most twice that, 2.4e-11, so
# rtol = 1e-9 holds with a margin of 40 (seen: 5e-14). The old gradient rule (stop at a gradient
# below 1e-10 N) allowed |H^-1| 1e-10 N: 1.5e-6 for beta, and 1.5e-8 was seen on one CPU.
# atol = 1e-12 only matters where a map is 0 or within 1e-3 of it.


@pytest.mark.parametrize("name", sorted(set(calibrators.available()) - ROW_SHUFFLING))
def test_integer_weights_equal_repeated_rows(name):
    s, y = _data()
    k = np.random.default_rng(3).integers(0, 4, s.size)
    k[np.flatnonzero(y == 1)[:1]] = 1                        # keep both classes
    weighted = calibrators.get(name).fit(s, y, sample_weight=k)
    repeated = calibrators.get(name).fit(np.repeat(s, k), np.repeat(y, k))
    np.testing.assert_allclose(weighted.predict(GRID), repeated.predict(GRID), rtol=1e-9, atol=1e-12)  # see above


@pytest.mark.parametrize("name", sorted(set(calibrators.available()) - ROW_SHUFFLING))
def test_cells_fit_equals_the_row_fit(name):
    s, y = _data(seed=5)
    cs, cy, cn = _cells(s, y)
    assert cs.size < s.size / 3                               # the cells really compress
    by_rows = calibrators.get(name).fit(s, y)
    by_cells = calibrators.get(name).fit(cs, cy, sample_weight=cn)
    np.testing.assert_allclose(by_cells.predict(GRID), by_rows.predict(GRID), rtol=1e-9, atol=1e-12)  # see above


@pytest.mark.parametrize("name", calibrators.available())
def test_unit_weights_change_nothing(name):
    s, y = _data(n=3000, seed=2)
    feats = pd.DataFrame({"g": np.where(s > 0.5, "a", "b")})
    cal = calibrators.get(name)
    f = feats if cal.uses_features else None
    plain = calibrators.get(name).fit(s, y, f)
    unit = calibrators.get(name).fit(s, y, f, sample_weight=np.ones(s.size))
    np.testing.assert_array_equal(unit.predict(GRID), plain.predict(GRID))


@pytest.mark.parametrize("bad, words", [
    (-np.ones(50), "negative"),
    (np.full(50, np.nan), "missing or infinite"),
    (np.ones(49), "49 values"),
    (np.zeros(50), "sums to zero"),
])
def test_bad_weights_are_refused(bad, words):
    s = np.linspace(0.01, 0.99, 50)
    y = np.tile([0, 1], 25)
    with pytest.raises(DataError, match=words):
        calibrators.get("platt").fit(s, y, sample_weight=bad)


def test_a_class_without_weight_is_refused():
    s = np.linspace(0.01, 0.99, 50)
    y = np.tile([0, 1], 25)
    with pytest.raises(DataError, match="class 1 all have weight 0"):
        calibrators.get("platt").fit(s, y, sample_weight=np.where(y == 1, 0.0, 1.0))


def test_weights_passed_where_features_go_are_refused_not_ignored():
    """fit(scores, labels, w) would put the weights in ``features``, which most methods ignore: refused."""
    from calibdash.core.errors import ProgrammingError

    s = np.linspace(0.01, 0.99, 50)
    y = np.tile([0, 1], 25)
    with pytest.raises(ProgrammingError, match="sample_weight="):
        calibrators.get("platt").fit(s, y, np.ones(50))
