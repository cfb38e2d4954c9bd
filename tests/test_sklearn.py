"""calibdash inside scikit-learn: the CalibratedClassifier adapter and the 1-D calibrators' sklearn surface."""
import numpy as np
import pandas as pd
import pytest
from sklearn.base import clone
from sklearn.calibration import CalibratedClassifierCV
from sklearn.datasets import make_classification
from sklearn.exceptions import NotFittedError as SklearnNotFitted
from sklearn.linear_model import LogisticRegression
from sklearn.model_selection import GridSearchCV, StratifiedKFold, cross_val_score
from sklearn.naive_bayes import GaussianNB
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import StandardScaler
from sklearn.utils.estimator_checks import check_estimator

from calibdash import calibrators
from calibdash.core.errors import SettingsError
from calibdash.sklearn import CalibratedClassifier


@pytest.fixture(scope="module")
def xy():
    X, y = make_classification(n_samples=1500, n_features=6, n_informative=4, random_state=0)
    return X, y


# -- the adapter -----------------------------------------------------------------------------------
def test_matches_calibrated_classifier_cv_isotonic_on_the_same_folds(xy):
    """GaussianNB has predict_proba only, so both calibrate the same scores; scikit-learn's isotonic
    interpolates linearly and clips outside the training range, as interpolation="linear" does."""
    X, y = xy
    folds = StratifiedKFold(5, shuffle=True, random_state=1)
    ours = CalibratedClassifier(GaussianNB(), method="isotonic", cv=folds, interpolation="linear").fit(X, y)
    theirs = CalibratedClassifierCV(GaussianNB(), method="isotonic", cv=folds).fit(X, y)
    np.testing.assert_allclose(ours.predict_proba(X), theirs.predict_proba(X), atol=1e-6)


def test_matches_calibrated_classifier_cv_sigmoid_within_solver_tolerance(xy):
    """scikit-learn's sigmoid is Platt's method with smoothed targets on the decision values; ours
    fits on the logit of the logistic of the same values."""
    X, y = xy
    folds = StratifiedKFold(5, shuffle=True, random_state=2)
    ours = CalibratedClassifier(LogisticRegression(), method="platt", cv=folds, smooth_targets=True).fit(X, y)
    theirs = CalibratedClassifierCV(LogisticRegression(), method="sigmoid", cv=folds).fit(X, y)
    np.testing.assert_allclose(ours.predict_proba(X), theirs.predict_proba(X), atol=1e-4)


@pytest.mark.parametrize("scoring", ["neg_brier_score", "neg_log_loss", "roc_auc", "accuracy"])
def test_every_scorer_is_finite_in_cross_val_score(xy, scoring):
    X, y = xy
    pipe = make_pipeline(StandardScaler(), CalibratedClassifier(LogisticRegression(), method="bbq", cv=3))
    scores = cross_val_score(pipe, X, y, cv=3, scoring=scoring)
    assert np.isfinite(scores).all()
    if scoring == "roc_auc":        # calibration keeps the base model's ranking, up to BBQ's binning
        base = cross_val_score(make_pipeline(StandardScaler(), LogisticRegression()), X, y, cv=3, scoring=scoring)
        np.testing.assert_allclose(scores, base, atol=0.03)


def test_grid_search_over_methods_and_their_hyperparameters(xy):
    X, y = xy
    grid = GridSearchCV(CalibratedClassifier(LogisticRegression(), cv=3),
                        [{"method": ["platt", "isotonic"]}, {"method": ["bbq"], "ess": [1.0, 5.0]}],
                        scoring="neg_log_loss", cv=3)
    grid.fit(X, y)
    assert len(grid.cv_results_["params"]) == 4
    assert np.isfinite(grid.cv_results_["mean_test_score"]).all()
    best = grid.best_estimator_
    assert best.get_params()["method"] == grid.best_params_["method"]


def test_clone_keeps_the_methods_hyperparameters():
    est = CalibratedClassifier(LogisticRegression(C=0.5), method="bbq", cv=4, ess=3.0)
    twin = clone(est)
    assert twin.get_params()["ess"] == 3.0 and twin.cv == 4 and twin.estimator.C == 0.5
    twin.set_params(ess=7.0, estimator__C=2.0)
    assert twin.ess == 7.0 and twin.estimator.C == 2.0 and est.ess == 3.0


def test_a_hyperparameter_of_another_method_is_refused(xy):
    X, y = xy
    with pytest.raises(SettingsError, match="no hyperparameter"):
        CalibratedClassifier(LogisticRegression(), method="platt", ess=2.0).fit(X, y)


def test_prefit_and_ensemble_false(xy):
    X, y = xy
    base = LogisticRegression().fit(X[:800], y[:800])
    pre = CalibratedClassifier(base, method="isotonic", cv="prefit").fit(X[800:], y[800:])
    assert len(pre.calibrated_pairs_) == 1 and pre.calibrated_pairs_[0][0] is base
    one = CalibratedClassifier(LogisticRegression(), method="platt", cv=3, ensemble=False).fit(X, y)
    assert len(one.calibrated_pairs_) == 1
    many = CalibratedClassifier(LogisticRegression(), method="platt", cv=3).fit(X, y)
    assert len(many.calibrated_pairs_) == 3


def test_string_classes_decision_function_and_predict_agree(xy):
    X, y = xy
    labels = np.where(y == 1, "spam", "ham")
    clf = CalibratedClassifier(LogisticRegression(), method="histogram", cv=3).fit(X, labels)
    assert clf.classes_.tolist() == ["ham", "spam"]
    p = clf.predict_proba(X)
    np.testing.assert_allclose(p.sum(axis=1), 1.0)
    d = clf.decision_function(X)
    assert np.array_equal(clf.predict(X) == "spam", d > 0)
    assert not hasattr(CalibratedClassifier(GaussianNB()), "decision_function")


def test_sample_weight_reaches_estimator_and_calibrator(xy):
    X, y = xy
    k = np.random.default_rng(0).integers(1, 3, y.size)
    folds = [(np.arange(0, 1000), np.arange(1000, 1500))]
    weighted = CalibratedClassifier(LogisticRegression(), method="isotonic", cv=folds).fit(X, y, sample_weight=k)
    repeated = CalibratedClassifier(LogisticRegression(), method="isotonic",
                                    cv=[(np.arange(0, k[:1000].sum()), np.arange(k[:1000].sum(), k.sum()))]
                                    ).fit(np.repeat(X, k, axis=0), np.repeat(y, k))
    np.testing.assert_allclose(weighted.predict_proba(X), repeated.predict_proba(X), atol=1e-6)


def test_mbct_takes_its_features_from_x():
    rng = np.random.default_rng(4)
    n = 6000
    device = rng.choice(["phone", "desktop"], n)
    x = rng.normal(size=n)
    logit = 1.5 * x + np.where(device == "phone", 1.0, -1.0)
    y = (rng.random(n) < 1 / (1 + np.exp(-logit))).astype(int)
    X = pd.DataFrame({"x": x, "device": pd.Categorical(device)})
    base = make_pipeline(_XOnly(), LogisticRegression())     # the model ignores the device: MBCT must not
    clf = CalibratedClassifier(base, method="mbct", cv=3, features=["device"], bin_size=200).fit(X, y)
    names = [c.name for c in clf.calibrators_[0].columns_]
    assert "device" in names and "x" not in names
    p = clf.predict_proba(X)[:, 1]
    for d in ("phone", "desktop"):                          # calibrated per device
        sel = device == d
        assert abs(p[sel].mean() - y[sel].mean()) < 0.02


class _XOnly:
    """A transformer keeping column "x" (so the base model is blind to the device)."""

    def fit(self, X, y=None):
        return self

    def transform(self, X):
        return X[["x"]].to_numpy()

    def get_params(self, deep=True):
        return {}

    def set_params(self, **params):
        return self


#: check_estimator's checks that are expected to fail, each with its reason: none. The adapter calibrates
#: multiclass targets (one-vs-rest for a binary method's name: tests/test_sklearn_classes.py) and refuses
#: one-class and continuous targets with the messages scikit-learn's checks look for.
EXPECTED_FAILED_CHECKS: dict[str, str] = {}


def test_check_estimator_passes_except_the_listed_checks():
    """Runs scikit-learn's estimator checks; each expected failure is listed above with its reason."""
    results = check_estimator(CalibratedClassifier(LogisticRegression(), method="platt", cv=3),
                              expected_failed_checks=EXPECTED_FAILED_CHECKS, on_fail=None)
    failed = {r["check_name"] for r in results if r["status"] == "failed"}
    passed = {r["check_name"] for r in results if r["status"] == "passed"}
    assert failed == set(), f"unexpected failures: {sorted(failed)}"
    assert len(passed) >= 30


# -- the 1-D calibrators -------------------------------------------------------------------------
@pytest.mark.parametrize("name", calibrators.available())
def test_calibrators_speak_sklearn(name):
    rng = np.random.default_rng(1)
    s = rng.uniform(size=2000)
    y = (rng.uniform(size=2000) < s ** 2).astype(int)
    cal = calibrators.get(name)
    with pytest.raises(SklearnNotFitted):
        cal.predict(s)
    assert cal.fit(s.reshape(-1, 1), y) is cal               # (n, 1) is one column of scores
    p = cal.predict(s)
    np.testing.assert_array_equal(cal.predict_proba(s), np.column_stack([1 - p, p]))
    np.testing.assert_array_equal(cal.transform(s), p.reshape(-1, 1))
    tags = cal.__sklearn_tags__()
    assert tags.input_tags.one_d_array and not tags.input_tags.two_d_array
