"""Smooth ECE (Blasiok & Nakkiran, ICLR 2024) and the smoothed reliability diagram.

Reference values: the authors' package ``relplot`` (github apple/ml-calibration,
commit 18ff21a, ``src/relplot/metrics.py`` and ``kernels.py``) run as published
(numpy 2.4) on the arrays built by :func:`_case` below: ``relplot.smECE(f, y,
return_width=True)`` and ``relplot.smECE_sigma(f, y, sigma)``. Its code adds
1e-4 to the smoothed density, which calibdash leaves out (module docstring), so
the values agree to about 1e-4 / rows relatively (the bandwidths exactly);
``test_relplot_density_guard_is_the_whole_difference`` shows that guard is
the only difference.
"""
import numpy as np
import pandas as pd
import pytest
from scipy.stats import norm

from calibdash.measures import smooth_ece as S
from calibdash.measures import smooth_ece as SM
from calibdash.core.errors import DataError, SettingsError


def _qr(n, a):
    """Deterministic equidistributed sequence frac(i * a), i = 1..n (no RNG, so relplot's inputs are exact)."""
    return np.mod(np.arange(1, n + 1) * a, 1.0)


def _case(name):
    if name == "eight":
        return np.array([0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8]), np.array([0, 1, 0, 0, 1, 1, 0, 1])
    if name == "square200":       # true probability f^2: over-confident
        f = _qr(200, 0.6180339887498949)
        return f, (_qr(200, 0.41421356237309515) < f ** 2).astype(int)
    if name == "ties500":         # forecasts on 0, 0.1, ..., 1 (ties), calibrated labels
        f = np.round(_qr(500, 0.7548776662466927), 1)
        return f, (_qr(500, 0.5698402909980532) < f).astype(int)
    if name == "calib20000":      # nearly calibrated: sigma* < 0.01, so a finer grid (E = 1139)
        f = _qr(20000, 0.6180339887498949)
        return f, (_qr(20000, 0.41421356237309515) < f).astype(int)
    raise KeyError(name)


# relplot output: smECE, its sigma*, smECE_sigma at 0.05 and at 0.003 (grid of 3334 points: even, so relplot's
# half-step offset of the kernel is exercised).
RELPLOT = {
    "eight": (0.102126641039016, 0.1025390625, 0.26695481980724917, 0.42499468597157886),
    "square200": (0.1770790840470438, 0.177734375, 0.17671240938896837, 0.25216123933035006),
    "ties500": (0.021874761712657655, 0.0224609375, 0.01335987959360416, 0.02264544097339432),
    "calib20000": (0.007084890753406545, 0.0087890625, 0.00029080926656423623, 0.033173113635503335),
}


@pytest.mark.parametrize("name", sorted(RELPLOT))
def test_reproduces_relplot(name):
    f, y = _case(name)
    value, sigma, at05, at003 = RELPLOT[name]
    assert S.smooth_ece_bandwidth(f, y) == sigma
    assert S.smooth_ece(f, y) == pytest.approx(value, rel=2e-5)
    assert S.smooth_ece_at(f, y, 0.05) == pytest.approx(at05, rel=2e-5)
    assert S.smooth_ece_at(f, y, 0.003) == pytest.approx(at003, rel=2e-5)
    assert S.smooth_ece(f, y, bandwidth=0.05) == S.smooth_ece_at(f, y, 0.05)


@pytest.mark.parametrize("name", ["eight", "square200"])
def test_relplot_density_guard_is_the_whole_difference(name):
    """Adding relplot's 1e-4 to the density at each integration point gives its numbers to rounding."""
    f, y = _case(name)
    rows = SM._Rows(*SM.check_inputs(f, y))
    for sigma, expected in zip((0.05, 0.003), RELPLOT[name][2:]):
        num, den = rows.smoothed(sigma)
        t = np.linspace(0, 1, SM._integration_points(sigma))
        guarded = np.sum(np.abs(SM._interpolate(t, num))) / np.sum(SM._interpolate(t, den) + 1e-4)
        assert guarded == pytest.approx(expected, rel=1e-12)


def test_tiny_bandwidth_gives_mean_absolute_residual():
    """Hand-worked: with forecasts 0.1 apart and sigma = 0.003 no two kernels overlap (nor reach 0 or 1), so
    smECE_sigma = mean |y - f| = (0.1 + 0.8 + 0.3 + 0.4 + 0.5 + 0.4 + 0.7 + 0.2) / 8 = 0.425."""
    f, y = _case("eight")
    assert S.smooth_ece_at(f, y, 0.003) == pytest.approx(0.425, abs=1e-12)


def test_equals_direct_computation_with_reflected_gaussian():
    """smECE_sigma = integral_0^1 |sum_i K(t, f_i) (y_i - f_i)| dt / integral sum_i K(t, f_i) dt with the Gaussian
    reflected at 0 and 1, computed directly (no grid: the kernel's images summed at each point).

    With relplot's integration rule (equal weights on 200 equally spaced points, both ends included) the
    direct value agrees to the grid's interpolation error; against the exact integral, the rule's end
    points cost a few parts in a thousand when forecasts come near 0 and 1, as here."""
    rng = np.random.default_rng(7)
    f = rng.uniform(0.02, 0.98, 300)
    y = (rng.uniform(size=300) < f ** 2).astype(int)
    sigma = 0.05

    def kernel(t):
        d = t[:, None]
        return sum(norm.pdf(d - f - 2 * j, scale=sigma) + norm.pdf(d + f - 2 * j, scale=sigma) for j in (-1, 0, 1))

    value = S.smooth_ece_at(f, y, sigma)
    t = np.linspace(0, 1, 200)
    k = kernel(t)
    assert value == pytest.approx(np.abs(k @ (y - f)).sum() / k.sum(), rel=1e-5)
    t = np.linspace(0, 1, 4001)
    k = kernel(t)
    assert value == pytest.approx(np.trapezoid(np.abs(k @ (y - f)), t) / np.trapezoid(k.sum(axis=1), t), rel=5e-3)


def test_decreases_in_bandwidth_and_bandwidth_is_the_fixed_point():
    f, y = _case("square200")
    sigmas = np.linspace(0.005, 0.6, 60)
    values = np.array([S.smooth_ece_at(f, y, s) for s in sigmas])
    assert np.all(np.diff(values) <= 1e-4)              # decreasing, up to the grid's discretisation
    assert values[0] > values[-1] + 0.05
    sigma = S.smooth_ece_bandwidth(f, y)
    # relplot's bisection: sigma* is not too small, one step of 2**-10 below it is
    assert sigma >= S.smooth_ece_at(f, y, sigma)
    assert sigma - 2 ** -10 < S.smooth_ece_at(f, y, sigma - 2 ** -10)


def test_calibrated_forecasts_give_small_values_shrinking_with_n():
    means = []
    for n in (1_000, 10_000, 100_000):
        vals = []
        for seed in (0, 1):
            rng = np.random.default_rng(seed)
            f = rng.uniform(size=n)
            vals.append(S.smooth_ece(f, (rng.uniform(size=n) < f).astype(int)))
        means.append(np.mean(vals))
    assert means[0] > means[1] > means[2]
    assert means[0] < 0.05 and means[2] < 0.01
    assert means[0] / means[2] > 2.5


def test_known_shift_is_measured_and_drawn():
    """Outcomes with probability f + 0.1 (f uniform on [0.1, 0.8]): the residual is 0.1 everywhere, so SmoothECE
    is 0.1 and the curve is t + 0.1 where the forecasts lie."""
    rng = np.random.default_rng(5)
    n = 200_000
    f = rng.uniform(0.1, 0.8, n)
    y = (rng.uniform(size=n) < f + 0.1).astype(int)
    assert S.smooth_ece(f, y) == pytest.approx(0.1, abs=0.003)
    c = S.smoothed_curve(f, y)
    inner = (c["score"] >= 0.2) & (c["score"] <= 0.7)
    assert np.abs(c["calibrated"][inner] - c["score"][inner] - 0.1).max() < 0.01


def test_curve_encodes_smooth_ece_and_density_integrates_to_one():
    f, y = _case("square200")
    c = S.smoothed_curve(f, y, grid=4001)
    t = c["score"].to_numpy()
    assert list(c.columns) == ["score", "calibrated", "density"]
    assert np.trapezoid(c["density"], t) == pytest.approx(1.0, abs=1e-3)
    area = np.trapezoid(np.abs(c["calibrated"] - t) * c["density"], t)
    assert area == pytest.approx(c.attrs["smooth_ece"], rel=2e-3)
    assert c.attrs["smooth_ece"] == S.smooth_ece(f, y)
    assert c.attrs["bandwidth"] == S.smooth_ece_bandwidth(f, y)
    # the curve is t + (kernel mean of y - f): with a huge bandwidth it tends to t + mean(y - f)
    wide = S.smoothed_curve(f, y, bandwidth=1.0, grid=[0.5])
    assert wide["calibrated"].iloc[0] == pytest.approx(0.5 + np.mean(y - f), abs=0.03)


def test_weights_equal_repeated_rows_and_scale_free():
    rng = np.random.default_rng(11)
    m = 400
    f = rng.uniform(size=m)
    y = (rng.uniform(size=m) < f ** 1.5).astype(int)
    w = rng.integers(0, 5, size=m)
    fr, yr = np.repeat(f, w), np.repeat(y, w)
    assert S.smooth_ece_bandwidth(f, y, w) == S.smooth_ece_bandwidth(fr, yr)
    assert S.smooth_ece(f, y, w) == pytest.approx(S.smooth_ece(fr, yr), rel=1e-10)
    assert S.smooth_ece_at(f, y, 0.03, sample_weight=w) == pytest.approx(S.smooth_ece_at(fr, yr, 0.03), rel=1e-10)
    a, b = S.smoothed_curve(f, y, w), S.smoothed_curve(fr, yr)
    pd.testing.assert_frame_equal(a, b, rtol=1e-9)
    # fractional weights: only their ratios matter
    assert S.smooth_ece(f, y, w / 7.3) == pytest.approx(S.smooth_ece(f, y, w), rel=1e-10)


def test_score_cells_equal_their_rows():
    """A cell table (score, n, n_pos) as rows (score, 1) of weight n_pos and (score, 0) of weight n - n_pos."""
    rng = np.random.default_rng(3)
    x = np.sort(rng.uniform(size=300))
    n = rng.integers(1, 8, size=300)
    npos = rng.binomial(n, x ** 2)
    p = np.r_[x, x]
    y = np.r_[np.ones(300, int), np.zeros(300, int)]
    w = np.r_[npos, n - npos]
    rows_p = np.repeat(p, w)
    rows_y = np.repeat(y, w)
    assert S.smooth_ece(p, y, w) == pytest.approx(S.smooth_ece(rows_p, rows_y), rel=1e-10)


def test_band_covers_truth_narrows_with_n_and_cells_match_rows():
    rng = np.random.default_rng(2)
    n = 5000
    f = rng.uniform(size=n)
    y = (rng.uniform(size=n) < f).astype(int)
    b = S.smoothed_curve_band(f, y, n_boot=60, seed=0)
    assert list(b.columns) == ["score", "calibrated", "density", "lower", "upper"]
    assert np.all(b["lower"] <= b["upper"])
    inner = (b["score"] >= 0.05) & (b["score"] <= 0.95)
    # the forecasts are calibrated, so the smoothed curve's target is the diagonal itself
    covered = ((b["lower"] <= b["score"]) & (b["score"] <= b["upper"]))[inner].mean()
    assert covered >= 0.75
    inside = ((b["lower"] - 1e-12 <= b["calibrated"]) & (b["calibrated"] <= b["upper"] + 1e-12))[inner].mean()
    assert inside >= 0.95
    small = S.smoothed_curve_band(f[:500], y[:500], bandwidth=b.attrs["bandwidth"], n_boot=60, seed=0)
    mid = (b["score"] >= 0.3) & (b["score"] <= 0.7)
    assert (small["upper"] - small["lower"])[mid].mean() > 2 * (b["upper"] - b["lower"])[mid].mean()
    # cells and the rows they stand for: the same resamples for the same seed
    x = np.round(f[:800], 2)
    w = rng.integers(1, 4, size=800)
    cells = S.smoothed_curve_band(x, y[:800], w, n_boot=20, seed=4)
    rows = S.smoothed_curve_band(np.repeat(x, w), np.repeat(y[:800], w), n_boot=20, seed=4)
    pd.testing.assert_frame_equal(cells, rows, rtol=1e-9)


def test_band_quantiles_equal_numpy_nanquantile():
    rng = np.random.default_rng(0)
    c = rng.normal(size=(50, 400))
    c[rng.uniform(size=c.shape) < 0.3] = np.nan
    c[:, 0] = np.nan
    c[:49, 1] = np.nan
    c[49, 1] = 3.0                                       # one resample reaches that point: both bounds are it
    lo, hi = S.band_quantiles(c, 0.9)
    with np.errstate(all="ignore"), pytest.warns(RuntimeWarning):
        ref = np.nanquantile(c, [0.05, 0.95], axis=0)
    np.testing.assert_allclose(lo, ref[0], rtol=0, atol=1e-12)
    np.testing.assert_allclose(hi, ref[1], rtol=0, atol=1e-12)
    assert np.isnan(lo[0]) and np.isnan(hi[0]) and lo[1] == hi[1] == 3.0


def test_bad_settings_and_data():
    f, y = _case("eight")
    for bad in (0, -0.1, 1.5, "x"):
        with pytest.raises(SettingsError):
            S.smooth_ece(f, y, bandwidth=bad)
    with pytest.raises(SettingsError):
        S.smoothed_curve(f, y, grid=1)
    with pytest.raises(SettingsError):
        S.smoothed_curve_band(f, y, n_boot=1)
    with pytest.raises(SettingsError):
        S.smoothed_curve_band(f, y, level=1.0)
    with pytest.raises(DataError):
        S.smooth_ece(f + 0.5, y)
    with pytest.raises(DataError):
        S.smooth_ece(f, y, sample_weight=-np.ones(8))


def test_smoothed_diagram_draws_curve_band_density_and_value():
    from calibdash.diagrams.smooth import smoothed_diagram
    f, y = _case("square200")
    curves = {"model": S.smoothed_curve_band(f, y, n_boot=20), "plain": S.smoothed_curve(f, y, bandwidth=0.05)}
    fig = smoothed_diagram(curves)
    named = {t.name: t for t in fig.data if t.showlegend is not False and t.name}
    main = named[f"model · smECE {curves['model'].attrs['smooth_ece']:.3f} (σ 0.178)"]
    np.testing.assert_array_equal(main.y, curves["model"]["calibrated"])
    assert f"plain · smECE {S.smooth_ece_at(f, y, 0.05):.3f} (σ 0.050)" in named
    filled = [t for t in fig.data if t.fill == "tonexty"]
    assert len(filled) == 1 and np.array_equal(filled[0].y, curves["model"]["lower"])   # only "model" has a band
    density = [t for t in fig.data if t.fill == "tozeroy"]
    assert len(density) == 2 and density[0].yaxis == "y2"
    assert len(smoothed_diagram(curves, show_density=False).data) == len(fig.data) - 2
