"""Friedman / Iman-Davenport and Holm, checked against Demšar (2006)'s worked example and by hand."""
import math

import numpy as np
import pandas as pd
import pytest
from scipy import stats as sps

from calibdash.benchmark import rank_tests
from calibdash.core.errors import DataError, SettingsError

# Demšar (2006), JMLR 7:1-30, Table 6: AUC of C4.5 (m = 0, cf = 0.25) and C4.5 with m and/or cf tuned,
# on 14 UCI data sets, with the ranks the paper prints in parentheses.
METHODS = ["C4.5", "C4.5+m", "C4.5+cf", "C4.5+m+cf"]
TABLE6 = {  # data set: (AUCs, printed ranks)
    "adult (sample)": ((0.763, 0.768, 0.771, 0.798), (4, 3, 2, 1)),
    "breast cancer": ((0.599, 0.591, 0.590, 0.569), (1, 2, 3, 4)),
    "breast cancer wisconsin": ((0.954, 0.971, 0.968, 0.967), (4, 1, 2, 3)),
    "cmc": ((0.628, 0.661, 0.654, 0.657), (4, 1, 3, 2)),
    "ionosphere": ((0.882, 0.888, 0.886, 0.898), (4, 2, 3, 1)),
    "iris": ((0.936, 0.931, 0.916, 0.931), (1, 2.5, 4, 2.5)),
    "liver disorders": ((0.661, 0.668, 0.609, 0.685), (3, 2, 4, 1)),
    "lung cancer": ((0.583, 0.583, 0.563, 0.625), (2.5, 2.5, 4, 1)),
    "lymphography": ((0.775, 0.838, 0.866, 0.875), (4, 3, 2, 1)),
    "mushroom": ((1.000, 1.000, 1.000, 1.000), (2.5, 2.5, 2.5, 2.5)),
    "primary tumor": ((0.940, 0.962, 0.965, 0.962), (4, 2.5, 1, 2.5)),
    "rheum": ((0.619, 0.666, 0.614, 0.669), (3, 2, 4, 1)),
    "voting": ((0.972, 0.981, 0.975, 0.975), (4, 1, 2, 3)),
    "wine": ((0.957, 0.978, 0.946, 0.970), (3, 1, 4, 2)),
}
AUC = pd.DataFrame({d: v[0] for d, v in TABLE6.items()}, index=METHODS).T
PRINTED_RANKS = pd.DataFrame({d: v[1] for d, v in TABLE6.items()}, index=METHODS).T.astype(float)
PUBLISHED_AVG = {"C4.5": 3.143, "C4.5+m": 2.000, "C4.5+cf": 2.893, "C4.5+m+cf": 1.964}


def test_ranks_of_table6_match_the_printed_ranks():
    """Higher AUC is better, ties get mid-ranks (iris, lung cancer, mushroom, primary tumor). The one row
    that differs is voting: the paper ranks 0.975 and 0.975 as 2 and 3 (its unrounded AUCs differ), while
    the printed three-decimal values tie at 2.5."""
    ranks = rank_tests.rank_table(AUC, lower_is_better=False)
    others = ranks.index != "voting"
    pd.testing.assert_frame_equal(ranks[others], PRINTED_RANKS[others])
    assert ranks.loc["voting"].tolist() == [4, 1, 2.5, 2.5]
    np.testing.assert_allclose(ranks.sum(axis=1), 4 * 5 / 2)


def test_average_ranks_of_table6():
    avg = rank_tests.average_ranks(PRINTED_RANKS)           # ranks are their own ranks
    assert avg.round(3).to_dict() == PUBLISHED_AVG
    assert avg["C4.5"] == pytest.approx(44 / 14) and avg["C4.5+m+cf"] == pytest.approx(27.5 / 14)
    # from the rounded AUCs only voting moves half a rank between C4.5+cf and C4.5+m+cf
    from_auc = rank_tests.average_ranks(AUC, lower_is_better=False)
    assert from_auc["C4.5+cf"] == pytest.approx(41 / 14) and from_auc["C4.5+m+cf"] == pytest.approx(27 / 14)


def test_friedman_and_iman_davenport_reproduce_demsar():
    """chi2_F = 9.28, F_F = 3.69 with (3, 39) degrees of freedom; F(3, 39) at alpha .05 is 2.85: reject."""
    f = rank_tests.friedman(PRINTED_RANKS)
    assert (f.k, f.n) == (4, 14)
    assert round(f.chi2, 2) == 9.28
    assert round(f.ff, 2) == 3.69
    assert (f.chi2_df, f.ff_df1, f.ff_df2) == (3, 3, 39)
    assert round(f.critical, 2) == 2.85
    assert f.reject and f.ff_p < 0.05
    # exact value from the exact average ranks, and the p values from the stated distributions
    assert f.chi2 == pytest.approx(12 * 14 / 20 * ((44 ** 2 + 28 ** 2 + 40.5 ** 2 + 27.5 ** 2) / 196 - 25))
    assert f.ff == pytest.approx(13 * f.chi2 / (14 * 3 - f.chi2))
    assert f.chi2_p == pytest.approx(sps.chi2.sf(f.chi2, 3))
    assert f.ff_p == pytest.approx(sps.f.sf(f.ff, 3, 39))
    # the paper's own arithmetic starts from the three-decimal average ranks
    g = rank_tests.friedman_from_ranks(list(PUBLISHED_AVG.values()), 14)
    assert (round(g.chi2, 2), round(g.ff, 2)) == (9.28, 3.69)


def test_holm_reproduces_demsars_comparison_with_c45():
    """Demšar's table: SE = 0.488; z = 2.416, 2.342, 0.512; p = 0.016, 0.019, 0.607; alpha/(k-i) = 0.017,
    0.025, 0.050; Holm rejects the first two and retains C4.5+cf."""
    h = rank_tests.holm(PUBLISHED_AVG, 14, "C4.5")
    assert round(rank_tests.rank_standard_error(4, 14), 3) == 0.488
    assert list(h.index) == ["C4.5+m+cf", "C4.5+m", "C4.5+cf"]
    assert h["step"].tolist() == [1, 2, 3]
    # the paper's z is (R_C4.5 - R_i) / SE, ours (R_i - R_ref) / SE: same size, opposite sign
    np.testing.assert_allclose(-h["z"], [2.416, 2.342, 0.512], atol=1e-3)
    np.testing.assert_allclose(h["p"][:2], [0.016, 0.019], atol=5e-4)
    # the paper prints 0.607; the two-sided normal p of z = 0.512 is 0.6087
    assert h["p"].iloc[2] == pytest.approx(0.607, abs=2e-3)
    np.testing.assert_allclose(h["threshold"], [0.05 / 3, 0.05 / 2, 0.05])
    assert h["reject"].tolist() == [True, True, False]
    assert (h["diff"] < 0).all()                       # all three rank better than C4.5


def test_holm_stops_at_the_first_non_rejection():
    """p = (0.020, 0.022, 0.30) against thresholds (0.0167, 0.025, 0.05): the second p is below its own
    threshold, but Holm stopped at the first, so nothing is rejected; Bonferroni-like per-step tests would
    have rejected the second."""
    k, n = 4, 20
    se = rank_tests.rank_standard_error(k, n)
    z = sps.norm.isf(np.array([0.020, 0.022, 0.30]) / 2)
    ranks = {"ref": 1.5, "a": 1.5 + z[0] * se, "b": 1.5 + z[1] * se, "c": 1.5 + z[2] * se}
    h = rank_tests.holm(ranks, n, "ref")
    np.testing.assert_allclose(h["p"], [0.020, 0.022, 0.30])
    assert (h["p"].iloc[1] < h["threshold"].iloc[1]) and not h["reject"].any()
    # lower the first p below 0.05/3 and the first two are rejected, the third retained
    ranks["a"] = 1.5 + sps.norm.isf(0.010 / 2) * se
    assert rank_tests.holm(ranks, n, "ref")["reject"].tolist() == [True, True, False]


def test_chi2_equals_scipy_when_there_are_no_ties():
    """Without ties scipy's tie correction is 1, so the statistics agree; with ties they must not."""
    rng = np.random.default_rng(3)
    table = rng.normal(size=(9, 5))
    f = rank_tests.friedman(table)
    ref = sps.friedmanchisquare(*table.T)
    assert f.chi2 == pytest.approx(ref.statistic) and f.chi2_p == pytest.approx(ref.pvalue)
    tied = sps.friedmanchisquare(*PRINTED_RANKS.to_numpy().T)
    assert rank_tests.friedman(PRINTED_RANKS).chi2 < tied.statistic


def test_extremes_same_order_everywhere_and_no_difference():
    same = np.tile([0.1, 0.2, 0.3], (5, 1))           # every data set ranks the methods alike
    f = rank_tests.friedman(same)
    assert f.chi2 == pytest.approx(5 * 2) and math.isinf(f.ff) and f.ff_p == 0 and f.reject
    tied = np.full((6, 3), 0.5)                        # every method equal everywhere
    g = rank_tests.friedman(tied)
    assert g.chi2 == 0 and g.ff == 0 and g.ff_p == pytest.approx(1) and not g.reject
    assert not rank_tests.holm(rank_tests.average_ranks(tied), 6, 0)["reject"].any()


def test_direction_and_floating_point_ties():
    t = pd.DataFrame({"a": [0.10, 0.5], "b": [0.20, 0.5 + 1e-15], "c": [0.30, 0.4]})
    low = rank_tests.rank_table(t, lower_is_better=True)
    assert low.iloc[0].tolist() == [1, 2, 3] and low.iloc[1].tolist() == [2.5, 2.5, 1]
    high = rank_tests.rank_table(t, lower_is_better=False)
    assert high.iloc[0].tolist() == [3, 2, 1]
    assert rank_tests.rank_table(t, decimals=None).iloc[1].tolist() == [2, 3, 1]


def test_refusals_are_messages():
    with pytest.raises(DataError, match="missing"):
        rank_tests.friedman(pd.DataFrame({"a": [0.1, np.nan], "b": [0.2, 0.3]}))
    with pytest.raises(DataError, match="two data sets"):
        rank_tests.friedman([[0.1, 0.2, 0.3]])
    with pytest.raises(SettingsError, match="reference"):
        rank_tests.holm(PUBLISHED_AVG, 14, "C5.0")
    with pytest.raises(SettingsError, match="alpha"):
        rank_tests.friedman(PRINTED_RANKS, alpha=1.5)
    with pytest.raises(DataError, match=r"\[1, 4\]"):
        rank_tests.friedman_from_ranks([0.5, 2, 3, 4.5], 10)
