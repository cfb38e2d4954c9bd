"""ELiTE: the trend-filter solver against its optimality conditions and a generic convex solver,
the lambda path's end points, the AICc ensemble, its explanation and the figures."""
import pickle

import numpy as np
import pandas as pd
import pytest
from scipy.optimize import lsq_linear

from calibdash import calibrators
from calibdash.measures import calibration as metrics
from calibdash.io import export
from calibdash.calibrators._trend_filter import KINK_TOL, TrendFilter, evaluate_linear, merge_ties
from calibdash.calibrators.elite import information_criteria, lambda_path
from calibdash.core.errors import ProgrammingError, SettingsError
from calibdash.explain import elite as explain_elite
from calibdash.explain import explain
from calibdash.explain.elite import ELiTEExplanation
from calibdash.figures.methods import elite as elite_fig
from calibdash.figures import inner_figures
from tests.conftest import shared_file


# -- independent helpers (dense matrices, small n) ----------------------------------------------
def second_difference(x):
    """The paper's D_{n-1} A (Eq. 3.3): rows give the change of slope at x_2 .. x_{n-1}."""
    n = x.size
    h = np.diff(x)
    D = np.zeros((n - 2, n))
    for i in range(n - 2):
        D[i, i] = 1 / h[i]
        D[i, i + 1] = -1 / h[i] - 1 / h[i + 1]
        D[i, i + 2] = 1 / h[i + 1]
    return D


def objective(p, x, z, w, lam):
    return 0.5 * np.sum(w * (p - z) ** 2) + lam * np.abs(second_difference(x) @ p).sum()


def generic_solution(x, z, w, lam):
    """Eq. 3.2 through its dual, a box-constrained least-squares problem, solved by scipy's BVLS:
    min_nu 1/2 ||W^-1/2 D^T nu - W^1/2 z||^2 s.t. |nu| <= lam, then p = z - W^-1 D^T nu."""
    D = second_difference(x)
    sw = np.sqrt(w)
    res = lsq_linear(D.T / sw[:, None], sw * z, bounds=(-lam, lam), method="bvls", tol=1e-15)
    assert res.success, res.message
    return z - (D.T @ res.x) / w


def random_problem(seed, n=20):
    rng = np.random.default_rng(seed)
    x = np.sort(rng.uniform(size=n))
    w = rng.integers(1, 5, size=n).astype(float)
    z = rng.integers(0, w + 1) / w                 # mean labels of w tied rows
    return x, z, w


def fitted(tf, fit):
    """The fit's values at the solver's merged points."""
    return np.interp(tf.x, fit.nodes_x, fit.nodes_p)


def duality_gap(tf, fit) -> float:
    """Primal objective minus the dual objective of a feasible dual point (a certificate: by strong convexity
    ``||p - p*||_W^2 <= 2 gap``): the residual ``r = W (z - p)`` projected on the complement of span{1, x} (so that
    ``Delta^T nu = r`` holds exactly), its ``nu`` scaled into the box ``|nu| <= lam``, and the dual objective
    ``c r^T z - c^2/2 r^T W^-1 r``."""
    x, z, w, lam = tf.x, tf.z, tf.w, fit.lam
    r = w * (z - fitted(tf, fit))
    kinks = np.diff(np.diff(fit.nodes_p) / np.diff(fit.nodes_x))
    primal = 0.5 * float(np.dot(r, r / w)) + lam * float(np.abs(kinks).sum())
    xc = x - x.mean()
    rp = r - r.mean() - xc * (np.dot(xc, r) / np.dot(xc, xc))
    nu = np.cumsum(np.cumsum(rp)[:-2] * np.diff(x)[:-1])
    c = min(1.0, lam / float(np.max(np.abs(nu))))
    return primal - (c * float(np.dot(rp, z)) - 0.5 * c * c * float(np.dot(rp, rp / w)))


def model_predict(ex, k, scores):
    """The k-th trend filter of an explanation's path alone (not clipped)."""
    m = ex.models[k]
    return evaluate_linear(m["score"].to_numpy(), m["value"].to_numpy(), np.asarray(scores, dtype=float))


# -- the solver ------------------------------------------------------------------------------
@pytest.mark.parametrize("seed", range(6))
@pytest.mark.parametrize("ratio", [0.5, 0.05, 0.002])
def test_kkt_conditions_hold(seed, ratio):
    """nu solving D^T nu = W (z - p) has |nu| <= lam, and nu = lam * sign(kink) at every knot."""
    x, z, w = random_problem(seed)
    tf = TrendFilter(x, z, w)
    lam = ratio * tf.lambda_max
    fit = tf.path(tf.lambda_max * np.geomspace(1, ratio, 8))[-1]
    assert fit.converged and fit.lam == pytest.approx(lam)
    p = fitted(tf, fit)
    D = second_difference(x)
    nu, *_ = np.linalg.lstsq(D.T, w * (z - p), rcond=None)
    np.testing.assert_allclose(D.T @ nu, w * (z - p), atol=1e-9)      # r is in the range of D^T
    assert np.max(np.abs(nu)) <= lam * (1 + 1e-7)
    kinks = D @ p
    heights = np.abs(kinks) * (np.diff(x)[:-1] * np.diff(x)[1:]) / (x[2:] - x[:-2])
    at_knot = heights > 1e-7
    assert at_knot.sum() == fit.n_knots
    np.testing.assert_allclose(nu[at_knot], lam * np.sign(kinks[at_knot]), rtol=1e-7)


def test_kkt_conditions_hold_along_a_path_of_thousands_of_points(noisy):
    """Every fit of a 50-lambda path on 3,000 distinct scores: nu from a sparse triangular solve of
    the first n-2 equations of D^T nu = W (z - p); the other two hold iff r is orthogonal to 1 and x."""
    from scipy.sparse import diags
    from scipy.sparse.linalg import spsolve_triangular

    s, y = noisy
    x, z, w = merge_ties(s[:3000], y[:3000])
    h = np.diff(x)
    n = x.size
    DT = diags([1 / h[:-1], -(1 / h[:-1] + 1 / h[1:]), 1 / h[1:]], [0, -1, -2], shape=(n, n - 2)).tocsr()
    tf = TrendFilter(x, z, w)
    fits = tf.path(tf.lambda_max * np.geomspace(1, 1e-4, 50))
    for fit in fits:
        assert fit.converged and not fit.at_rounding_floor
        p = fitted(tf, fit)
        r = w * (z - p)
        nu = spsolve_triangular(DT[: n - 2], r[: n - 2], lower=True)
        assert abs(r.sum()) <= 1e-12 * np.abs(r).sum() and abs(r @ x) <= 1e-12 * np.abs(r).sum()
        assert np.max(np.abs(nu)) <= fit.lam * (1 + 1e-8)
        kinks = np.diff(np.diff(p) / h)
        at_knot = np.abs(kinks) * h[:-1] * h[1:] / (h[:-1] + h[1:]) > KINK_TOL
        np.testing.assert_allclose(nu[at_knot], fit.lam * np.sign(kinks[at_knot]), rtol=1e-8)
        assert abs(duality_gap(tf, fit)) <= 1e-10 * fit.objective
    assert fits[-1].n_knots > 50


@pytest.mark.parametrize("seed", range(5))
@pytest.mark.parametrize("ratio", [0.3, 0.01])
def test_agrees_with_a_generic_convex_solver(seed, ratio):
    x, z, w = random_problem(100 + seed, n=18)
    tf = TrendFilter(x, z, w)
    lam = ratio * tf.lambda_max
    fit = tf.solve(lam)                                   # cold start from the affine fit
    p = fitted(tf, fit)
    q = generic_solution(x, z, w, lam)
    np.testing.assert_allclose(p, q, atol=2e-6)
    ours, theirs = objective(p, x, z, w, lam), objective(q, x, z, w, lam)
    assert ours <= theirs + 1e-10 * theirs                # never worse than the generic solver
    assert fit.objective == pytest.approx(ours, rel=1e-10)
    assert -1e-9 * ours <= duality_gap(tf, fit) <= 1e-9 * ours         # duality gap certificate


def test_lambda_max_is_where_the_fit_stops_being_the_least_squares_line():
    x, z, w = random_problem(7, n=40)
    tf = TrendFilter(x, z, w)
    line = np.polyval(np.polyfit(x, z, 1, w=np.sqrt(w)), x)
    at_max = tf.solve(tf.lambda_max)
    assert at_max.n_knots == 0
    np.testing.assert_allclose(fitted(tf, at_max), line, atol=1e-12)
    above = tf.solve(3 * tf.lambda_max)
    np.testing.assert_allclose(fitted(tf, above), line, atol=1e-12)
    below = tf.solve(0.98 * tf.lambda_max)
    assert below.n_knots >= 1
    assert np.max(np.abs(fitted(tf, below) - line)) > 1e-6
    # the paper's formula: lambda_max = ||(D A A^T D^T)^{-1} D A z||_inf, weighted: (D W^-1 D^T)^{-1} D z
    D = second_difference(x)
    nu = np.linalg.solve(D @ np.diag(1 / w) @ D.T, D @ z)
    assert tf.lambda_max == pytest.approx(np.max(np.abs(nu)), rel=1e-7)


def test_fit_interpolates_the_merged_points_as_lambda_goes_to_zero():
    x, z, w = random_problem(11, n=30)
    tf = TrendFilter(x, z, w)
    fits = tf.path(tf.lambda_max * np.geomspace(1, 1e-9, 40))
    errors = np.array([np.max(np.abs(fitted(tf, f) - z)) for f in fits])
    # p - z = -W^-1 D^T nu with |nu| <= lam: the gap to the points shrinks at least linearly in lam
    bound = np.max(np.abs(second_difference(x)).sum(axis=0) / w)
    lams = np.array([f.lam for f in fits])
    assert np.all(errors <= lams * bound * (1 + 1e-6) + 1e-12)
    assert errors[-1] < 1e-5 and errors[-1] < 1e-4 * errors[0]
    assert fits[-1].n_knots == x.size - 2                   # every interior point is a knot


def test_ties_are_merged_into_weighted_points():
    s = np.array([0.1, 0.1, 0.1, 0.3, 0.5, 0.5, 0.9])
    y = np.array([1, 0, 0, 1, 1, 1, 0])
    x, z, w = merge_ties(s, y)
    np.testing.assert_allclose(x, [0.1, 0.3, 0.5, 0.9])
    np.testing.assert_allclose(z, [1 / 3, 1, 1, 0])
    np.testing.assert_allclose(w, [3, 1, 2, 1])


def test_doubling_every_row_leaves_a_single_trend_filter_unchanged(noisy):
    s, y = noisy
    s = np.round(s[:1500], 3)
    y = y[:1500]
    one = calibrators.get("elite", mode="single", lam_ratio=0.01).fit(s, y)
    two = calibrators.get("elite", mode="single", lam_ratio=0.01).fit(np.r_[s, s], np.r_[y, y])
    assert two.lambda_max_ == pytest.approx(2 * one.lambda_max_, rel=1e-10)
    grid = np.linspace(0, 1, 301)
    np.testing.assert_allclose(two.predict(grid), one.predict(grid), atol=1e-9)


# -- the calibrator ---------------------------------------------------------------------------------
@pytest.fixture(scope="module")
def fitted_elite():
    rng = np.random.default_rng(3)
    s = rng.beta(2, 3, 4000)
    y = (rng.uniform(size=s.size) < np.clip(0.1 + 0.8 * s ** 2 + 0.1 * np.sin(12 * s), 0, 1)).astype(int)
    return calibrators.get("elite").fit(s, y), s, y


@pytest.fixture(scope="module")
def explained(fitted_elite):
    cal, s, y = fitted_elite
    return explain(cal, s, y)


def test_degrees_of_freedom_are_knots_plus_two(explained):
    """df counted independently from the kinks of each model's fitted values at the merged points."""
    ex = explained
    x = ex.points["score"].to_numpy()
    h = np.diff(x)
    for k, row in ex.path.iterrows():
        p = model_predict(ex, k, x)
        kinks = np.diff(np.diff(p) / h)
        heights = np.abs(kinks) * h[:-1] * h[1:] / (h[:-1] + h[1:])
        n_knots = int(np.count_nonzero(heights > 10 * KINK_TOL))
        assert row["df"] == n_knots + 2
        assert row["knots"] == len(ex.knots[k]) == n_knots
    assert ex.path["df"].iloc[0] == 2                                  # lambda_max: the line
    assert ex.path["df"].iloc[-1] > 10


def test_weights_follow_the_criterion_and_sum_to_one(fitted_elite, explained):
    cal, s, _ = fitted_elite
    path = explained.path
    np.testing.assert_array_equal(cal.weights_, path["weight"])
    assert path["weight"].sum() == pytest.approx(1.0, abs=1e-12)
    assert (path["weight"] >= 0).all()
    a = path["aicc"].to_numpy()
    expected = np.exp(-(a - a.min()) / 2)
    np.testing.assert_allclose(path["weight"], expected / expected.sum(), rtol=1e-9, atol=1e-300)
    assert len(path) == 50
    np.testing.assert_allclose(path["lam_ratio"], np.geomspace(1, 1e-4, 50), rtol=1e-12)
    assert path["converged"].all()


def test_criteria_use_the_bernoulli_likelihood_of_clipped_fits(fitted_elite, explained):
    cal, s, y = fitted_elite
    path = explained.path
    for k in (0, 20, 49):
        p = np.clip(model_predict(explained, k, s), 1e-15, 1 - 1e-15)
        ll = float(np.sum(y * np.log(p) + (1 - y) * np.log(1 - p)))
        assert path["loglik"].iloc[k] == pytest.approx(ll, rel=1e-10)
        df, n = path["df"].iloc[k], s.size
        assert path["aicc"].iloc[k] == pytest.approx(-2 * ll + 2 * df + 2 * df * (df + 1) / (n - df - 1))
        assert path["bic"].iloc[k] == pytest.approx(-2 * ll + df * np.log(n))


def test_information_criteria_hand_computed():
    ic = information_criteria(-10.0, 3, 20)
    assert ic["aic"] == pytest.approx(26.0)
    assert ic["aicc"] == pytest.approx(26.0 + 24 / 16)
    assert ic["bic"] == pytest.approx(20 + 3 * np.log(20))
    assert information_criteria(-1.0, 4, 5)["aicc"] == np.inf


def test_prediction_is_the_clipped_weighted_average_of_linear_models(fitted_elite, explained):
    cal, _, _ = fitted_elite
    w = cal.weights_
    grid = np.r_[np.linspace(0, 1, 401), explained.points["score"].to_numpy()[:50]]
    avg = sum(wk * model_predict(explained, k, grid) for k, wk in enumerate(w) if wk > 0)
    np.testing.assert_allclose(cal.predict(grid), np.clip(avg, 0, 1), atol=1e-12)
    p = cal.predict(np.linspace(0, 1, 1001))
    assert np.all((p >= 0) & (p <= 1))


def test_each_model_extrapolates_linearly_beyond_the_training_scores():
    s = np.array([0.2, 0.3, 0.4, 0.6, 0.7, 0.8] * 5)
    y = np.array([0, 0, 1, 1, 0, 1] * 5)
    cal = calibrators.get("elite", mode="single", lam_ratio=1.0).fit(s, y)
    line = np.polyfit(s, y, 1)
    np.testing.assert_allclose(model_predict(explain(cal, s, y), 0, [0.0, 0.1, 0.9, 1.0]),
                               np.polyval(line, [0, 0.1, 0.9, 1]), atol=1e-12)
    np.testing.assert_allclose(cal.predict([0.0, 1.0]), np.clip(np.polyval(line, [0, 1]), 0, 1), atol=1e-12)


def test_single_mode_moves_from_the_line_to_the_data(noisy):
    s, y = noisy
    s, y = np.round(s[:2000], 2), y[:2000]                       # 101 distinct scores
    knots = []
    for ratio in (1.0, 0.1, 0.01, 1e-4):
        cal = calibrators.get("elite", mode="single", lam_ratio=ratio).fit(s, y)
        path = explain(cal, s, y).path
        assert path["weight"].iloc[-1] == 1.0 and path["lam_ratio"].iloc[-1] == pytest.approx(ratio)
        knots.append(int(path["knots"].iloc[-1]))
    assert knots[0] == 0 and knots == sorted(knots) and knots[-1] > 20
    x, z, _ = merge_ties(s, y)
    tiny = calibrators.get("elite", mode="single", lam_ratio=1e-9).fit(s, y)
    ex = explain(tiny, s, y)
    np.testing.assert_allclose(model_predict(ex, len(ex.models) - 1, x), z, atol=1e-5)


def test_degenerate_inputs():
    one = calibrators.get("elite").fit([0.4] * 4, [0, 1, 1, 1])
    np.testing.assert_allclose(one.predict([0, 0.4, 1]), 0.75)
    two = calibrators.get("elite").fit([0.2, 0.2, 0.6], [0, 1, 1])
    np.testing.assert_allclose(two.predict([0.2, 0.6, 0.4]), [0.5, 1.0, 0.75])
    s, y = [0.1, 0.2, 0.3, 0.4] * 2, [0, 0, 1, 1, 0, 1, 1, 1]
    line = calibrators.get("elite").fit(s, y)
    assert explain(line, s, y).path["weight"].sum() == pytest.approx(1.0)
    notes = explain(two, [0.2, 0.2, 0.6], [0, 1, 1]).notes
    assert any("least-squares line" in n for n in notes) and any("Too few rows for AICc" in n for n in notes)


def test_hyperparameters_out_of_range_are_settings_errors():
    s, y = [0.1, 0.2, 0.3, 0.4], [0, 1, 0, 1]
    for params, word in (({"mode": "both"}, "mode"), ({"criterion": "cv"}, "criterion"),
                         ({"n_lambdas": 0}, "n_lambdas"), ({"lam_ratio": 0.0}, "lam_ratio"), ({"tol": -1}, "tol")):
        with pytest.raises(SettingsError, match=word):
            calibrators.get("elite", **params).fit(s, y)


def test_improves_the_authors_quadratic_svm_scores():
    """Fitted on the authors' train CSVs, ELiTE lowers the test RMSE and ECE of the raw scores."""
    def load(name):
        return np.loadtxt(shared_file("svm-quadratic-scores", name), delimiter=",")
    s_tr, y_tr = load("train_data_y.csv"), load("train_data_z.csv").astype(int)
    s_te, y_te = load("test_data_y.csv"), load("test_data_z.csv").astype(int)
    cal = calibrators.get("elite").fit(s_tr, y_tr)
    assert explain(cal, s_tr, y_tr).path["converged"].all()
    p = cal.predict(s_te)
    assert metrics.rmse(p, y_te) < metrics.rmse(s_te, y_te)
    assert metrics.ece(p, y_te, 10, "quantile") < metrics.ece(s_te, y_te, 10, "quantile")


def test_improves_a_click_model_on_the_mbct_avazu_sample():
    """Avazu (MBCT benchmarks): fitted on the 10,000 train rows, ELiTE lowers the test log loss and
    10-bin ECE of the base model's predictions."""
    def load(part):
        return np.load(shared_file("mbct-benchmarks", f"Avazu__{part}_samples.npy")).ravel()
    s_tr, y_tr = load("train_prediction").astype(float), load("train_label").astype(int)
    s_te, y_te = load("test_prediction").astype(float), load("test_label").astype(int)
    cal = calibrators.get("elite").fit(s_tr, y_tr)
    p = cal.predict(s_te)
    assert metrics.log_loss(p, y_te) < metrics.log_loss(s_te, y_te) - 0.005
    assert metrics.ece(p, y_te, 10, "quantile") < 0.5 * metrics.ece(s_te, y_te, 10, "quantile")


# -- explanation and figures ----------------------------------------------------------------------
def test_explanation_reproduces_the_fitted_map(fitted_elite, explained):
    """The path solved again from the training rows gives the fitted averaged map; the calibrator
    keeps only that map and the weights, not the path or the rows."""
    cal, s, y = fitted_elite
    ex = explained
    assert isinstance(ex, ELiTEExplanation) and ex.method == "elite" and ex.mode == "ensemble"
    np.testing.assert_array_equal(ex.map["score"], cal.map_x_)
    np.testing.assert_array_equal(ex.map["value"], cal.map_p_)
    again = lambda_path(s, y, **cal.get_params())
    w = again.weights
    avg = sum(wk * model_predict(ex, k, cal.map_x_) for k, wk in enumerate(w) if wk > 0) / w.sum()
    np.testing.assert_allclose(avg, cal.map_p_, atol=1e-12)
    assert ex.lambda_max == cal.lambda_max_
    np.testing.assert_allclose(ex.points["fitted"], cal.predict(ex.points["score"].to_numpy()))
    assert ex.points["count"].sum() == s.size and set(ex.tables) == {"path", "map", "points"}
    assert len(pickle.dumps(cal)) <= 2 * len(export.dumps(cal).encode()) + 4096
    assert not any(np.size(v) >= s.size for v in vars(cal).values())


def test_explanation_refuses_other_rows_and_explains_a_loaded_model(fitted_elite, explained):
    cal, s, y = fitted_elite
    with pytest.raises(ProgrammingError, match="fitted on"):
        explain(cal, s[:-1], y[:-1])
    flipped = y.copy()
    flipped[:40] = 1 - flipped[:40]
    with pytest.raises(ProgrammingError, match="not the ones"):
        explain(cal, s, flipped)
    loaded = explain(export.loads(export.dumps(cal)), s, y)
    pd.testing.assert_frame_equal(loaded.path, explained.path)
    assert loaded.notes == explained.notes
    assert any("Solved 50 trend filter(s) exactly" in n for n in loaded.notes)
    assert any(n.startswith("Weights by AICc") for n in loaded.notes)


def test_map_figure_draws_the_map_and_its_knots(fitted_elite, explained):
    cal, _, _ = fitted_elite
    ex = explained
    np.testing.assert_allclose(ex.curve["prob"], cal.predict(ex.curve["score"].to_numpy()))
    support = {}
    for ks, wt in zip(ex.knots, ex.path["weight"]):
        for k in ks:
            support[k] = support.get(k, 0.0) + wt
    strong = sorted(k for k, v in support.items() if v >= explain_elite.MIN_SUPPORT)
    np.testing.assert_allclose(ex.knot_support["score"], strong)
    np.testing.assert_allclose(ex.knot_support["support"], [support[k] for k in strong])
    assert ex.groups["rows"].sum() == cal.n_train_
    assert len(ex.groups) <= explain_elite.N_GROUPS
    fig = elite_fig.map_figure(ex)
    (knots,) = [t for t in fig.data if t.meta == "knots"]
    np.testing.assert_allclose(np.array(knots.x, dtype=float), strong)
    (best,) = [t for t in fig.data if t.meta == "best"]
    np.testing.assert_allclose(np.array(best.x, dtype=float), ex.models[int(np.argmax(ex.path["weight"]))]["score"])


def test_path_figure_shows_df_criterion_and_weight(explained):
    ex = explained
    path = ex.path
    assert path["delta"].min() == 0.0
    np.testing.assert_allclose(path["delta"], path["aicc"] - path["aicc"].min())
    fig = elite_fig.path_figure(ex)
    assert fig.layout.xaxis.type == "log"
    traces = {t.name: t for t in fig.data if t.name}
    np.testing.assert_array_equal(np.array(traces["df = knots + 2"].y), path["df"])
    np.testing.assert_allclose(np.array(traces["weight"].y, dtype=float), path["weight"])
    titles = [t for t, _ in inner_figures(ex)]
    assert len(titles) == 2 and "AICc" in titles[1]


def test_single_mode_figures_mark_the_chosen_lambda(noisy):
    s, y = noisy
    s, y = s[:1000], y[:1000]
    cal = calibrators.get("elite", mode="single", lam_ratio=0.02).fit(s, y)
    ex = explain(cal, s, y)
    assert ex.path["weight"].iloc[-1] == 1.0 and ex.best == len(ex.path) - 1
    fig = elite_fig.path_figure(ex)
    assert "weight" not in {t.name for t in fig.data}
    assert any(shape.x0 == pytest.approx(0.02) for shape in fig.layout.shapes)
    assert (ex.knot_support["support"] == 1.0).all()
    assert len(ex.knot_support) == int(ex.path["knots"].iloc[-1])
    assert isinstance(ex.groups, pd.DataFrame)
    assert ex.notes[-1].startswith("Single trend filter at λ = 0.02 λ_max")


# -- sample weights ---------------------------------------------------------------------------------
def tied_rows(n=3000, seed=21, decimals=3):
    """Scores rounded to 3 decimals (many ties), labels with a curved calibration map."""
    rng = np.random.default_rng(seed)
    s = np.round(rng.beta(2, 3, n), decimals)
    y = (rng.uniform(size=n) < np.clip(0.05 + 0.9 * s ** 1.5, 0, 1)).astype(int)
    return s, y


@pytest.mark.parametrize("params", [{}, {"mode": "single", "lam_ratio": 0.003}, {"criterion": "bic"}])
def test_integer_weights_equal_repeated_rows(params):
    """Weight k (0 included) = the row k times: merged points, path table and map are identical."""
    s, y = tied_rows()
    k = np.random.default_rng(4).integers(0, 4, s.size)
    weighted = calibrators.get("elite", **params).fit(s, y, sample_weight=k)
    repeated = calibrators.get("elite", **params).fit(np.repeat(s, k), np.repeat(y, k))
    np.testing.assert_array_equal(weighted.map_x_, repeated.map_x_)
    np.testing.assert_array_equal(weighted.map_p_, repeated.map_p_)
    np.testing.assert_array_equal(weighted.weights_, repeated.weights_)
    assert weighted.lambda_max_ == repeated.lambda_max_
    a = lambda_path(s, y, sample_weight=k.astype(float), **weighted.get_params())
    b = lambda_path(np.repeat(s, k), np.repeat(y, k), **repeated.get_params())
    assert a.n_rows == b.n_rows == k.sum()
    pd.testing.assert_frame_equal(a.table, b.table)
    assert set(a.x.tolist()) == set(s[k > 0].tolist())             # scores held only by weight-0 rows vanish


def test_score_cells_fit_equals_the_row_fit():
    """(distinct score, label, count) cells weighted by their counts give the row fit exactly."""
    s, y = tied_rows(n=6000, seed=8, decimals=2)
    cells = pd.DataFrame({"s": s, "y": y}).value_counts().reset_index()
    assert len(cells) < s.size / 3
    by_rows = calibrators.get("elite").fit(s, y)
    by_cells = calibrators.get("elite").fit(cells["s"], cells["y"], sample_weight=cells["count"])
    np.testing.assert_array_equal(by_cells.map_p_, by_rows.map_p_)
    np.testing.assert_array_equal(by_cells.weights_, by_rows.weights_)
    grid = np.linspace(0, 1, 501)
    np.testing.assert_array_equal(by_cells.predict(grid), by_rows.predict(grid))


def test_unit_weights_change_nothing():
    s, y = tied_rows(n=2000, seed=3)
    plain = calibrators.get("elite").fit(s, y)
    unit = calibrators.get("elite").fit(s, y, sample_weight=np.ones(s.size))
    np.testing.assert_array_equal(unit.map_p_, plain.map_p_)
    np.testing.assert_array_equal(unit.weights_, plain.weights_)


def test_scaling_weights_keeps_each_trend_filter_but_not_the_ensemble_weights():
    """The documented exception: c multiplies the log-likelihood and the criteria's N, not the
    penalty 2 df, so the ensemble's weights move (towards more knots for c > 1); each trend filter
    on the path (and so single mode) is unchanged, lambda_max scaling by c."""
    s, y = tied_rows(n=2000, seed=5)
    base = lambda_path(s, y, sample_weight=np.ones(s.size))
    mean_df = {}
    for c in (0.25, 1.0, 4.0):
        path = lambda_path(s, y, sample_weight=np.full(s.size, c))
        assert path.lambda_max == pytest.approx(c * base.lambda_max, rel=1e-12)
        assert path.n_rows == pytest.approx(c * s.size, rel=1e-12)
        np.testing.assert_allclose(path.table["loglik"], c * base.table["loglik"], rtol=1e-7)
        for f, g in zip(path.fits, base.fits):
            np.testing.assert_allclose(evaluate_linear(f.nodes_x, f.nodes_p, base.x),
                                       evaluate_linear(g.nodes_x, g.nodes_p, base.x), atol=1e-7)
        ll, df = path.table["loglik"].to_numpy(), path.table["df"].to_numpy()
        aicc = -2 * ll + 2 * df + 2 * df * (df + 1) / (c * s.size - df - 1)
        expect = np.exp(-(aicc - aicc.min()) / 2)
        np.testing.assert_allclose(path.weights, expect / expect.sum(), rtol=1e-6, atol=1e-12)
        mean_df[c] = float(np.dot(path.weights, df))
    assert mean_df[0.25] < mean_df[1.0] < mean_df[4.0]
    grid = np.linspace(0, 1, 201)
    one = calibrators.get("elite", mode="single", lam_ratio=0.01).fit(s, y)
    tenth = calibrators.get("elite", mode="single", lam_ratio=0.01).fit(s, y, sample_weight=np.full(s.size, 0.1))
    np.testing.assert_allclose(tenth.predict(grid), one.predict(grid), atol=1e-7)


def test_hand_worked_weighted_trend_filter():
    """Rows (0, y=0, w=1), (0.5, y=1, w=2), (1, y=0, w=1). The weighted line is flat at 1/2; with
    D = [2, -4, 2], lambda_max = |D z| / (D W^-1 D^T) = 4 / 16 = 1/4 and below it the one knot gives
    p = z + lambda W^-1 D^T = (2 lambda, 1 - 2 lambda, 2 lambda). Fractional weights (1/2, 1, 1/2)
    give the same map, lambda_max halving."""
    s, y, w = np.array([0.0, 0.5, 1.0]), np.array([0, 1, 0]), np.array([1.0, 2.0, 1.0])
    for scale in (1.0, 0.5):
        for r in (1.0, 0.4, 0.1):
            cal = calibrators.get("elite", mode="single", lam_ratio=r).fit(s, y, sample_weight=scale * w)
            assert cal.lambda_max_ == pytest.approx(0.25 * scale, rel=1e-12)
            np.testing.assert_allclose(cal.predict([0.0, 0.25, 0.5, 1.0]), [r / 2, 0.5, 1 - r / 2, r / 2],
                                       atol=1e-12)
            path = explain(cal, s, y, sample_weight=scale * w).path
            n = 4 * scale
            ll = n * np.log(1 - r / 2)                        # every row's label is fitted at 1 - r/2
            assert path["loglik"].iloc[-1] == pytest.approx(ll, rel=1e-12)
            df = path["df"].iloc[-1]
            assert df == (2 if r == 1.0 else 3)
            assert path["bic"].iloc[-1] == pytest.approx(-2 * ll + df * np.log(n), rel=1e-12)
    # two distinct scores: the line through the weighted mean labels
    two = calibrators.get("elite").fit([0.2, 0.2, 0.6, 0.6], [1, 0, 1, 0], sample_weight=[3, 1, 1, 4])
    np.testing.assert_allclose(two.predict([0.2, 0.4, 0.6]), [0.75, 0.475, 0.2], atol=1e-12)


def test_explanation_of_a_weighted_fit():
    s, y = tied_rows(n=2500, seed=13)
    w = np.random.default_rng(2).uniform(0, 3, s.size)
    w[:100] = 0.0
    cal = calibrators.get("elite").fit(s, y, sample_weight=w)
    ex = explain(cal, s, y, sample_weight=w)
    np.testing.assert_array_equal(ex.map["value"], cal.map_p_)
    pts = ex.points
    assert pts["count"].sum() == pytest.approx(w.sum(), rel=1e-12)
    assert set(pts["score"]) == set(s[w > 0])
    sel = s == pts["score"].iloc[5]
    assert pts["target"].iloc[5] == pytest.approx(np.dot(w[sel], y[sel]) / w[sel].sum(), rel=1e-12)
    assert ex.groups["rows"].sum() == pytest.approx(w.sum(), rel=1e-12)
    assert (ex.groups["rows"] < 2 * w.sum() / explain_elite.N_GROUPS + w.max()).all()   # equal shares of weight
    q = np.clip(model_predict(ex, 10, s), 1e-15, 1 - 1e-15)
    ll = float(np.sum(w * (y * np.log(q) + (1 - y) * np.log(1 - q))))
    assert ex.path["loglik"].iloc[10] == pytest.approx(ll, rel=1e-9)
    assert ex.notes[0].startswith(f"{s.size:,} rows of total weight")
    with pytest.raises(ProgrammingError, match="sample_weight"):
        explain(cal, s, y)                                        # the weights left out
