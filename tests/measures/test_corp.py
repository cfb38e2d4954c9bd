"""CORP reliability diagrams and score decomposition (Dimitriadis, Gneiting & Jordan, PNAS 2021).

Published example: the README of the authors' R package ``reliabilitydiag``
(github aijordan/reliabilitydiag, commit a3d3572) prints, for
``reliabilitydiag(EMOS = precip_Niamey_2016$EMOS, y = precip_Niamey_2016$obs)``,
the Brier score decomposition

    forecast mean_score miscalibration discrimination uncertainty
    EMOS          0.232         0.0183         0.0305       0.244

The data below are the package's ``data/precip_Niamey_2016.rda`` (92 days, July
to September 2016; read from the R serialisation with a small XDR reader): the
EMOS column as stored (doubles, printed with repr), the ENS column (a 52-member
ensemble, so each value is k/52; stored here as k) and the 0/1 observations.
"""
import numpy as np
import pandas as pd
import pytest

from calibdash.measures import corp
from calibdash.core.errors import DataError, SettingsError

EMOS = np.array([
    0.47092759875666323, 0.44723689197030014, 0.42876949341234705, 0.506429179281555, 0.48926677704568855,
    0.5076850235090957, 0.4286829669339314, 0.4513181843764893, 0.4440806687269456, 0.460118847173258,
    0.5768767166134721, 0.7334080107263453, 0.4969022988840027, 0.4847499297944201, 0.4409858565694442,
    0.32774936151842005, 0.4859765544342669, 0.7120372768302644, 0.6158416901866537, 0.8801658551514506,
    0.5422190300697367, 0.44718525686389, 0.5249268887861954, 0.6032467347584738, 0.6319141237298183,
    0.4664540285133727, 0.42692599957987487, 0.5075474792196337, 0.5928643621359673, 0.42830482812808257,
    0.5739976399529778, 0.5345825587402253, 0.463515246245762, 0.6543859963797385, 0.5918816835122027,
    0.458116425835298, 0.47873386849734256, 0.5176353828420895, 0.656439253426861, 0.7760437572936031,
    0.7428166111541736, 0.5883764038599089, 0.4814426896050985, 0.45715334679027364, 0.4306417696896263,
    0.5672781484360263, 0.7346434062796023, 0.6829655769559365, 0.5566748400136712, 0.6253454682403605,
    0.4456139430406474, 0.4582955628033064, 0.3282480818322513, 0.47375880764868483, 0.7841543956147433,
    0.6263838950803589, 0.5180195166608033, 0.5774902538716569, 0.9226433815938501, 0.5108303296390679,
    0.46720814616419304, 0.45818084882034316, 0.22937614870246648, 0.45055800952029124, 0.46119767154223335,
    0.512286808559866, 0.5697100877969832, 0.477653093280377, 0.48437767165763557, 0.4990891877814039,
    0.5621338438470924, 0.4811960805223847, 0.5820626181630532, 0.44520312139049056, 0.452815978310248,
    0.5668985231568371, 0.5583453110608533, 0.44414282459107657, 0.45822296229195447, 0.45569693772518494,
    0.4902990534722206, 0.48359937114458396, 0.49380391363321663, 0.4852374097085659, 0.4799192633060473,
    0.3155233220838167, 0.46186986182631595, 0.47851760229989304, 0.48598261568432755, 0.4480501579635411,
    0.3150837041167006, 0.1962337148222003])
ENS_K = np.array([
    44, 38, 21, 42, 49, 50, 20, 41, 33, 42, 52, 52, 48, 40, 31, 25, 46, 52, 52, 52, 52, 40, 51, 52, 52, 49, 23,
    49, 51, 24, 50, 48, 39, 52, 52, 36, 46, 48, 52, 52, 51, 52, 48, 38, 41, 52, 52, 52, 52, 49, 10, 35, 17, 46,
    52, 52, 47, 52, 52, 52, 42, 42, 9, 27, 31, 49, 51, 36, 36, 47, 50, 49, 52, 19, 33, 52, 51, 11, 31, 20, 46,
    44, 36, 43, 47, 8, 34, 47, 48, 7, 6, 10])
ENS = ENS_K / 52
OBS = np.array([int(c) for c in
                "01101100101010011111101101010110010010111011111111000110111101111011010110100000010110110000"])


def _naive_pav(x, y, w=None):
    """Independent PAV, as the R package runs it: rows sorted by forecast and, among ties, by decreasing label,
    then pool adjacent violators on the rows one by one (no pooling of ties beforehand). Returns the fitted
    value of each row, in the input order."""
    w = np.ones(len(x)) if w is None else np.asarray(w, float)
    order = np.lexsort((-y, x))
    blocks = []                                  # [sum w*y, sum w, rows]
    for i in order:
        blocks.append([w[i] * y[i], w[i], [i]])
        while len(blocks) > 1 and blocks[-2][0] * blocks[-1][1] > blocks[-1][0] * blocks[-2][1]:
            s, t, rows = blocks.pop()
            blocks[-1][0] += s
            blocks[-1][1] += t
            blocks[-1][2] += rows
    fit = np.empty(len(x))
    for s, t, rows in blocks:
        fit[rows] = s / t
    return fit


def test_reproduces_published_emos_decomposition():
    d = corp.corp_decomposition(EMOS, OBS)
    assert d["score"] == pytest.approx(0.232, abs=5e-4)
    assert d["MCB"] == pytest.approx(0.0183, abs=5e-5)
    assert d["DSC"] == pytest.approx(0.0305, abs=5e-5)
    assert d["UNC"] == pytest.approx(0.244, abs=5e-4)
    assert d["score"] == pytest.approx(d["MCB"] - d["DSC"] + d["UNC"], abs=1e-15)
    # UNC is the Brier score of climatology: ybar (1 - ybar) with 53 rainy days of 92 here
    assert OBS.sum() == 53 and d["UNC"] == pytest.approx(53 / 92 * 39 / 92, abs=1e-15)


@pytest.mark.parametrize("x", [EMOS, ENS], ids=["EMOS", "ENS (tied)"])
def test_recalibration_equals_row_by_row_pav_with_ties_ordered_by_label(x):
    """ENS has 33 distinct values among 92 days: pooling ties first equals the package's ordering trick."""
    fit = _naive_pav(x, OBS)
    d = corp.corp_decomposition(x, OBS)
    assert d["MCB"] == pytest.approx(np.mean((x - OBS) ** 2) - np.mean((fit - OBS) ** 2), abs=1e-14)
    c = corp.corp_curve(x, OBS)
    for _, block in c.groupby("block"):
        lo, hi = block["score"].min(), block["score"].max()
        inside = (x >= lo) & (x <= hi)
        np.testing.assert_allclose(fit[inside], block["calibrated"].iloc[0], rtol=0, atol=1e-14)
        assert block["weight"].iloc[0] == inside.sum()
    # every row of a tied forecast gets one value
    for v in np.unique(x):
        assert np.ptp(fit[x == v]) == 0


def test_hand_worked_brier_and_log():
    """x = 0.2, 0.4, 0.6, 0.8 with y = 0, 1, 0, 1: PAV pools the middle two, giving 0, 1/2, 1/2, 1.

    Brier: S = (0.04 + 0.36 + 0.36 + 0.04) / 4 = 0.2; S(PAV) = (0 + 0.25 + 0.25 + 0) / 4 = 0.125; UNC = 0.25;
    so MCB = 0.075 and DSC = 0.125. Log: S = -(log 0.8 + log 0.4) / 2, S(PAV) = log(2) / 2, UNC = log 2."""
    x = np.array([0.2, 0.4, 0.6, 0.8])
    y = np.array([0, 1, 0, 1])
    b = corp.corp_decomposition(x, y)
    assert b == pytest.approx({"score": 0.2, "MCB": 0.075, "DSC": 0.125, "UNC": 0.25}, abs=1e-15)
    lg = corp.corp_decomposition(x, y, score="log")
    s = -(np.log(0.8) + np.log(0.4)) / 2
    assert lg == pytest.approx({"score": s, "MCB": s - np.log(2) / 2, "DSC": np.log(2) / 2, "UNC": np.log(2)},
                               abs=1e-15)
    c = corp.corp_curve(x, y)
    assert c["score"].tolist() == [0.2, 0.4, 0.6, 0.8]
    assert c["calibrated"].tolist() == [0.0, 0.5, 0.5, 1.0]
    assert c["block"].tolist() == [0, 1, 1, 2]
    assert c["weight"].tolist() == [1.0, 2.0, 2.0, 1.0]


def test_calibrated_isotonic_forecasts_have_no_miscalibration():
    """Forecasts 1/4, 1/2, 3/4 on 4 rows each with 1, 2, 3 positives: PAV returns the forecasts, MCB = 0."""
    x = np.repeat([0.25, 0.5, 0.75], 4)
    y = np.array([1, 0, 0, 0, 1, 1, 0, 0, 1, 1, 1, 0])
    for score in corp.SCORES:
        d = corp.corp_decomposition(x, y, score=score)
        assert d["MCB"] == pytest.approx(0.0, abs=1e-15)
        assert d["DSC"] == pytest.approx(d["UNC"] - d["score"], abs=1e-15)


def test_terms_are_nonnegative_and_add_up_for_every_score():
    rng = np.random.default_rng(1)
    for seed in range(5):
        rng = np.random.default_rng(seed)
        x = np.round(rng.uniform(0.01, 0.99, 300), 2)
        y = (rng.uniform(size=300) < x ** (0.5 + seed / 2)).astype(int)
        for score in corp.SCORES:
            d = corp.corp_decomposition(x, y, score=score)
            assert d["MCB"] >= -1e-15 and d["DSC"] >= -1e-15
            assert d["score"] == pytest.approx(d["MCB"] - d["DSC"] + d["UNC"], abs=1e-13)


def test_log_score_of_an_impossible_outcome_is_infinite():
    d = corp.corp_decomposition([0.0, 0.5, 0.9], [1, 0, 1], score="log")
    assert d["score"] == np.inf and d["MCB"] == np.inf
    assert np.isfinite(d["DSC"]) and d["UNC"] == pytest.approx(-(2 / 3 * np.log(2 / 3) + 1 / 3 * np.log(1 / 3)))


def test_weights_equal_repeated_rows_and_fractional_weights_are_scale_free():
    rng = np.random.default_rng(4)
    x = np.round(rng.uniform(size=200), 2)
    y = (rng.uniform(size=200) < x).astype(int)
    w = rng.integers(0, 4, size=200)
    xr, yr = np.repeat(x, w), np.repeat(y, w)
    for score in corp.SCORES:
        assert corp.corp_decomposition(x, y, w, score) == pytest.approx(corp.corp_decomposition(xr, yr, score=score),
                                                                       rel=1e-12)
        assert corp.corp_decomposition(x, y, w / 3.7, score) == pytest.approx(corp.corp_decomposition(x, y, w, score),
                                                                             rel=1e-12)
    pd.testing.assert_frame_equal(corp.corp_curve(x, y, w), corp.corp_curve(xr, yr), rtol=1e-12)
    for kind in corp.BAND_KINDS:
        a = corp.corp_band(x, y, w, kind=kind, n_boot=30, seed=3)
        b = corp.corp_band(xr, yr, kind=kind, n_boot=30, seed=3)
        perm = rng.permutation(xr.size)
        c = corp.corp_band(xr[perm], yr[perm], kind=kind, n_boot=30, seed=3)
        pd.testing.assert_frame_equal(a, b, rtol=1e-12)
        pd.testing.assert_frame_equal(b, c, rtol=1e-12)


def _pav_at(x, y, points):
    c = corp.corp_curve(x, y)
    return np.interp(points, c["score"], c["calibrated"])


def test_consistency_band_holds_calibrated_curves_and_rejects_miscalibration():
    rng = np.random.default_rng(8)
    n = 3000
    x = rng.uniform(size=n)
    y = (rng.uniform(size=n) < x).astype(int)
    band = corp.corp_band(x, y, kind="consistency", n_boot=60, seed=1)
    s = band["score"].to_numpy()
    assert np.all(band["lower"] <= band["upper"] + 1e-15)
    inner = (s > 0.1) & (s < 0.9)
    assert np.mean((band["lower"] <= s) & (s <= band["upper"])) > 0.97      # a band around the diagonal
    cal = _pav_at(x, y, s)
    assert np.mean(((band["lower"] <= cal) & (cal <= band["upper"]))[inner]) >= 0.6     # 0.73 to 0.96 over seeds
    y_bad = (rng.uniform(size=n) < x ** 2).astype(int)                       # over-confident forecasts
    band_bad = corp.corp_band(x, y_bad, kind="consistency", n_boot=60, seed=1)
    bad = _pav_at(x, y_bad, s)
    mid = (s > 0.3) & (s < 0.7)
    assert np.mean((bad < band_bad["lower"])[mid]) > 0.8
    # narrower with more data (PAV's n^(-1/3) rate: 10x the rows, about half the width)
    small = corp.corp_band(x[:300], y[:300], kind="consistency", n_boot=60, seed=1)
    ws = np.interp(0.5, small["score"], small["upper"] - small["lower"])
    wl = np.interp(0.5, s, band["upper"] - band["lower"])
    assert ws > 1.5 * wl


def test_confidence_band_covers_the_true_curve_around_the_estimate():
    rng = np.random.default_rng(9)
    n = 3000
    x = rng.uniform(size=n)
    y = (rng.uniform(size=n) < x ** 2).astype(int)
    band = corp.corp_band(x, y, kind="confidence", n_boot=60, seed=2)
    s = band["score"].to_numpy()
    inner = (s > 0.15) & (s < 0.85)
    assert np.mean(((band["lower"] <= s ** 2) & (s ** 2 <= band["upper"]))[inner]) > 0.8
    est = _pav_at(x, y, s)
    assert np.mean(((band["lower"] <= est) & (est <= band["upper"]))[inner]) > 0.95
    mid = (s > 0.3) & (s < 0.7)
    assert np.mean((band["upper"] < s)[mid]) > 0.8                       # not a band around the diagonal


def test_confidence_bounds_at_inner_zero_or_one_blocks_are_interpolated():
    """The package's bound_correction: inner forecasts whose recalibrated value is 0 take bounds interpolated
    from their neighbours."""
    x = np.linspace(0.05, 0.95, 40)
    y = np.r_[np.zeros(10, int), (np.arange(30) % 2)]
    band = corp.corp_band(x, y, kind="confidence", n_boot=40, seed=0)
    s = band["score"].to_numpy()
    for col in ("lower", "upper"):
        b = band[col].to_numpy()
        np.testing.assert_allclose(b[1:10], np.interp(s[1:10], [s[0], s[10]], [b[0], b[10]]), atol=1e-12)


def test_fractional_weights_band_runs_on_cells():
    rng = np.random.default_rng(5)
    x = np.round(rng.uniform(size=400), 2)
    y = (rng.uniform(size=400) < x).astype(int)
    w = rng.uniform(0.5, 2.0, size=400)
    band = corp.corp_band(x, y, w, n_boot=40, seed=0)
    assert np.array_equal(band["score"], np.unique(x))
    s = band["score"].to_numpy()
    assert np.mean((band["lower"] <= s) & (s <= band["upper"])) > 0.9


def test_bad_settings():
    with pytest.raises(SettingsError):
        corp.corp_decomposition(EMOS, OBS, score="spherical")
    with pytest.raises(SettingsError):
        corp.corp_band(EMOS, OBS, kind="prediction")
    with pytest.raises(SettingsError):
        corp.corp_band(EMOS, OBS, n_boot=0)
    with pytest.raises(SettingsError):
        corp.corp_band(EMOS, OBS, level=0)
    with pytest.raises(DataError):
        corp.corp_curve(EMOS, OBS[:-1])


def test_corp_diagram_draws_curves_bands_and_decomposition():
    from calibdash.diagrams.corp import corp_diagram
    curves = {"EMOS": corp.corp_curve(EMOS, OBS), "ENS": corp.corp_curve(ENS, OBS)}
    bands = {"EMOS": corp.corp_band(EMOS, OBS, n_boot=20)}
    dec = {k: corp.corp_decomposition(x, OBS) for k, x in (("EMOS", EMOS), ("ENS", ENS))}
    fig = corp_diagram(curves, bands, dec, visible={"ENS": False})
    named = {t.name: t for t in fig.data if t.showlegend is not False and t.name}
    emos = named["EMOS · MCB 0.018 · DSC 0.030 · UNC 0.244"]
    np.testing.assert_array_equal(emos.x, curves["EMOS"]["score"])
    np.testing.assert_array_equal(emos.y, curves["EMOS"]["calibrated"])
    ens = f"ENS · MCB {dec['ENS']['MCB']:.3f} · DSC {dec['ENS']['DSC']:.3f} · UNC 0.244"
    assert named[ens].visible == "legendonly"
    filled = [t for t in fig.data if t.fill == "tonexty"]
    assert len(filled) == 1 and np.array_equal(filled[0].y, bands["EMOS"]["lower"])
    # the thick flat pieces: one per PAV block, from its first to its last forecast, gaps between blocks
    seg = [t for t in fig.data if t.legendgroup == "EMOS" and t.mode == "lines+markers"][0]
    n_blocks = curves["EMOS"]["block"].nunique()
    assert len(seg.x) == 3 * n_blocks and np.isnan(np.asarray(seg.x, float)[2::3]).all()
    assert fig.data[0].name == "perfect calibration"
