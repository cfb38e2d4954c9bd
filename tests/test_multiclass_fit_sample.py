"""Large K-class data: the parametric maps fitted on a content-keyed, class-stratified sample
(calibdash.scheme.content_sample, evaluate_classes(max_fit_rows=...)), judged on every held-out row."""
import numpy as np
import pytest

from calibdash import SettingsError, multiclass
from calibdash.multiclass.base import MulticlassCalibrator
from calibdash.evaluation import MAX_FIT_ROWS, evaluate_classes
from calibdash.scheme import content_sample
from calibdash.scheme import Scheme
from calibdash.synthetic.multiclass import gaussian_classes


class ClassFrequencies(MulticlassCalibrator):
    """A parametric test map: every row gets the fitted rows' (weighted) class frequencies."""

    name = ""                       # not registered
    label = "Class frequencies"
    parametric = True

    def _fit(self, x, y, w):
        self.freq_ = np.bincount(y, weights=w, minlength=x.k) / (y.size if w is None else w.sum())

    def _predict(self, x):
        return np.tile(self.freq_, (x.n, 1))


def _data(n=600, k=4, seed=1):
    d = gaussian_classes(k).draw(n, seed)
    return d.reported, d.labels


def test_sample_has_the_size_and_the_largest_remainder_shares():
    """Classes of 5, 3 and 2 rows, a sample of 5: shares 2.5, 1.5, 1.0 -> floors 2, 1, 1 and the one place
    left to the largest remainder, 0.5, tied between classes 0 and 1: the lower index, class 0."""
    y = np.array([0] * 5 + [1] * 3 + [2] * 2)
    v = np.random.default_rng(0).dirichlet(np.ones(3), size=10)
    s = content_sample(v, y, np.arange(10), 5, seed=0)
    assert s.size == 5 and np.all(np.diff(s) > 0)
    assert np.bincount(y[s], minlength=3).tolist() == [3, 1, 1]
    assert content_sample(v, y, np.arange(10), 10).tolist() == list(range(10))     # all rows when size >= n
    with pytest.raises(SettingsError):
        content_sample(v, y, np.arange(10), 0)


def test_sample_does_not_depend_on_the_row_order():
    P, y = _data()
    rows = np.arange(0, 600, 2)
    perm = np.random.default_rng(5).permutation(600)          # row i of the shuffled table is row perm[i]
    inv = np.argsort(perm)
    a = content_sample(P, y, rows, 77, seed=3)
    b = content_sample(P[perm], y[perm], inv[rows], 77, seed=3)
    assert sorted(perm[b].tolist()) == a.tolist()
    assert content_sample(P, y, rows, 77, seed=4).tolist() != a.tolist()          # the seed picks others


def test_parametric_maps_fit_on_the_sample_and_others_on_every_row():
    P, y = _data()
    methods = {"freq": ClassFrequencies(), "ovr": "ovr:histogram"}
    ev = evaluate_classes(P, y, methods, Scheme(), max_fit_rows=100)
    fit = ev.fit_rows.size
    assert ev.models["freq"].n_train_ == 100 and ev.models["ovr"].n_train_ == fit > 100
    assert any("Class frequencies fitted on a sample of 100 of the" in n for n in ev.notes)
    # the judged rows and the non-parametric method are those of the unlimited evaluation
    full = evaluate_classes(P, y, methods, Scheme(), max_fit_rows=None)
    assert full.models["freq"].n_train_ == fit and not full.notes
    np.testing.assert_array_equal(ev.rows, full.rows)
    np.testing.assert_array_equal(ev.predictions["ovr"], full.predictions["ovr"])
    # the sampled map is the sample's frequencies: the fitting part's shares to within one row per class
    fit_freq = np.bincount(y[ev.fit_rows], minlength=4) / fit
    assert np.all(np.abs(ev.models["freq"].freq_ - fit_freq) <= 1 / 100)


def test_kfold_samples_each_fold_and_the_deployed_model():
    P, y = _data()
    ev = evaluate_classes(P, y, {"freq": ClassFrequencies()}, Scheme(kind="kfold", n_folds=3), max_fit_rows=90)
    assert ev.models["freq"].n_train_ == 90 and ev.rows.size == 600
    assert "400 fitting rows" in ev.notes[-1]


def test_sampled_evaluation_does_not_depend_on_the_row_order():
    P, y = _data()
    perm = np.random.default_rng(2).permutation(y.size)
    methods = {"freq": ClassFrequencies(), "ovr": "ovr:histogram"}
    a = evaluate_classes(P, y, methods, Scheme(seed=7), max_fit_rows=120)
    b = evaluate_classes(P[perm], y[perm], methods, Scheme(seed=7), max_fit_rows=120)
    # the same rows judged and fitted, in another order: the measures agree to summation rounding
    np.testing.assert_allclose(b.metrics.to_numpy(), a.metrics.to_numpy(), rtol=1e-12, atol=1e-12)


def test_the_policy_is_off_below_the_limit_and_checked():
    P, y = _data(n=300)
    ev = evaluate_classes(P, y, {"freq": ClassFrequencies()}, Scheme())
    assert MAX_FIT_ROWS == 200_000 and not ev.notes and ev.models["freq"].n_train_ == ev.fit_rows.size
    with pytest.raises(SettingsError, match="max_fit_rows"):
        evaluate_classes(P, y, {"freq": ClassFrequencies()}, Scheme(), max_fit_rows=0)
    assert not multiclass.get("ovr:isotonic").parametric


def test_content_order_is_the_lexsort_of_class_key_and_values():
    """The packed sort with its tie pass gives lexsort's order, ties (repeated rows, rounded values) included."""
    from calibdash.scheme import content_keys, content_order
    rng = np.random.default_rng(9)
    v = np.round(rng.dirichlet(np.ones(3), size=2000), 1)          # few distinct rows: long runs of ties
    v = np.vstack([v, v[:500]])
    y = rng.integers(0, 3, v.shape[0])
    for seed in (0, 11):
        keys = content_keys(v, y, seed)
        want = np.lexsort((v[:, 2], v[:, 1], v[:, 0], keys, y))
        np.testing.assert_array_equal(content_order(v, y, seed), want)


@pytest.mark.parametrize("scheme", [Scheme(seed=2), Scheme(kind="kfold", n_folds=3, seed=1)])
def test_model_rows_are_the_rows_each_deployed_model_was_fitted_on(scheme):
    """A parametric map's rows are the sample it was fitted on: refitted there it is the same map (its class
    frequencies exactly); a map fitted on every row gets every fitting row; no sampling: ``ev.fit_rows``."""
    from calibdash.evaluation import model_rows

    P, y = _data()
    ev = evaluate_classes(P, y, {"freq": ClassFrequencies(), "ovr": "ovr:histogram"}, scheme, max_fit_rows=100)
    rows = model_rows(ev, "freq", P, y, max_fit_rows=100)
    assert rows.size == 100 and np.all(np.diff(rows) > 0) and np.isin(rows, ev.fit_rows).all()
    again = ClassFrequencies().fit(P[rows], y[rows])
    np.testing.assert_array_equal(again.freq_, ev.models["freq"].freq_)
    # the sample is not just any 100 rows: other rows give other frequencies here
    other = ClassFrequencies().fit(P[ev.fit_rows[:100]], y[ev.fit_rows[:100]])
    assert not np.array_equal(other.freq_, ev.models["freq"].freq_)
    np.testing.assert_array_equal(model_rows(ev, "ovr", P, y, max_fit_rows=100), ev.fit_rows)
    np.testing.assert_array_equal(model_rows(ev, "freq", P, y, max_fit_rows=None), ev.fit_rows)
