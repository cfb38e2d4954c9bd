"""Held-out evaluation: no row is judged by a model that saw it."""
import numpy as np
import pandas as pd
import pytest

from calibdash import calibrators
from calibdash.measures import calibration as metrics
from calibdash.calibrators.base import Calibrator
from calibdash.core.errors import DataError, SettingsError
from calibdash.evaluation.holdout import MAX_FIT_ROWS, Scheme, UNCALIBRATED, combine, evaluate, evaluate_classes, split_indices
from calibdash.calibrators.multiclass.base import MulticlassCalibrator
from calibdash.evaluation.scheme import content_sample
from calibdash.synthetic.gaussian_classes import gaussian_classes


class Memorizer(Calibrator):
    """Predicts 1 for scores it was trained on, 0 otherwise: exposes any leak."""

    def _fit(self, s, y, features, w):
        self.seen_ = set(s.tolist())

    def _predict(self, s, features):
        return np.array([1.0 if v in self.seen_ else 0.0 for v in s])


@pytest.fixture
def data():
    rng = np.random.default_rng(7)
    s = rng.uniform(size=1000)                       # all distinct
    y = (rng.uniform(size=1000) < s).astype(int)
    return s, y


@pytest.mark.parametrize("scheme", [Scheme("split", test_size=0.25, seed=3), Scheme("kfold", n_folds=4)])
def test_no_leak(data, scheme):
    s, y = data
    ev = evaluate(s, y, {"mem": Memorizer()}, scheme)
    assert np.all(ev.predictions["mem"] == 0.0)


def test_insample_is_in_sample(data):
    s, y = data
    ev = evaluate(s, y, {"mem": Memorizer()}, Scheme("insample"))
    assert np.all(ev.predictions["mem"] == 1.0) and ev.rows.size == 1000


def test_split_is_stratified_disjoint_and_sized(data):
    s, y = data
    (tr, te), = split_indices(y, Scheme("split", test_size=0.3, seed=1))
    assert np.intersect1d(tr, te).size == 0 and tr.size + te.size == 1000
    assert te.size == 300
    assert abs(y[te].mean() - y.mean()) < 0.01


def test_kfold_judges_every_row_once(data):
    s, y = data
    pairs = split_indices(y, Scheme("kfold", n_folds=5))
    judged = np.concatenate([te for _, te in pairs])
    assert np.sort(judged).tolist() == list(range(1000))


def test_column_scheme_words_and_override(data):
    s, y = data
    split = np.where(np.arange(1000) < 600, "train", "test")
    (tr, te), = split_indices(y, Scheme("column"), split)
    assert tr.tolist() == list(range(600)) and te.tolist() == list(range(600, 1000))
    odd = np.where(np.arange(1000) < 600, "A", "B")
    with pytest.raises(DataError, match="neither a training part"):
        split_indices(y, Scheme("column"), odd)
    (tr, te), = split_indices(y, Scheme("column", train_value="B"), odd)
    assert tr.min() == 600
    with pytest.raises(DataError, match="no split column"):
        split_indices(y, Scheme("column"), None)


def test_metrics_table_first_row_is_uncalibrated(data):
    s, y = data
    ev = evaluate(s, y, ["platt", "isotonic"], Scheme(seed=2))
    assert ev.metrics.index.tolist() == [UNCALIBRATED, "platt", "isotonic"]
    raw = metrics.summary(s[ev.rows], y[ev.rows])
    assert ev.metrics.loc[UNCALIBRATED, "ECE"] == pytest.approx(raw["ECE"])
    assert ev.metrics.loc["platt", "Brier"] == pytest.approx(
        np.mean((ev.predictions["platt"] - y[ev.rows]) ** 2))
    # the model kept for display is the one fitted on the fitting rows
    np.testing.assert_allclose(ev.models["platt"].predict(s[ev.rows]), ev.predictions["platt"])


def test_combine_equals_joint_evaluation(data):
    s, y = data
    joint = evaluate(s, y, ["platt", "histogram"], Scheme("kfold"))
    parts = combine([evaluate(s, y, ["platt"], Scheme("kfold")), evaluate(s, y, ["histogram"], Scheme("kfold"))])
    pd.testing.assert_frame_equal(joint.metrics, parts.metrics)
    pd.testing.assert_frame_equal(joint.predictions, parts.predictions)
    with pytest.raises(DataError):
        combine([evaluate(s, y, ["platt"], Scheme(seed=1)), evaluate(s, y, ["histogram"], Scheme(seed=2))])


def test_refusals(data):
    s, y = data
    with pytest.raises(SettingsError, match="at least 2 folds"):
        evaluate(s, y, ["platt"], Scheme("kfold", n_folds=1))
    with pytest.raises(SettingsError, match="strictly between"):
        evaluate(s, y, ["platt"], Scheme(test_size=1.5))
    yy = np.zeros(1000, dtype=int)
    yy[0] = 1
    for scheme, what in ((Scheme("kfold"), "5-fold cross-fitting"), (Scheme(), "a held-out split")):
        with pytest.raises(DataError) as err:
            evaluate(s, yy, ["platt"], scheme)
        msg = str(err.value)
        assert msg.startswith(f"{what} needs at least 2 rows of each class")
        assert "the positive class has 1 row among 1,000" in msg and "in-sample" in msg
        assert "least populated" not in msg                      # calibdash's words, not scikit-learn's


def test_one_positive_in_1000_rows_on_score_cells_says_the_same():
    from calibdash.evaluation.cells import aggregate
    from calibdash.evaluation.holdout import cell_parts, evaluate_cells

    s = np.random.default_rng(0).uniform(size=1000)
    y = np.zeros(1000, dtype=int)
    y[5] = 1
    for scheme in (Scheme(), Scheme("kfold")):
        with pytest.raises(DataError, match="the positive class has 1 row among 1,000.*in-sample"):
            evaluate_cells(aggregate(s, y, cell_parts(1000, scheme)), ["platt"], scheme)


def test_fewer_rows_of_a_class_than_folds_still_cross_fits_and_says_so(data):
    s, _ = data
    yy = np.zeros(1000, dtype=int)
    yy[[10, 500, 900]] = 1
    ev = evaluate(s, yy, ["platt"], Scheme("kfold", n_folds=5))
    assert np.array_equal(ev.rows, np.arange(1000))              # every row judged once
    assert "only 3 positive rows for 5 folds: 2 folds judge rows of one class only" in ev.note
    for tr, te in split_indices(yy, Scheme("kfold", n_folds=5)):
        assert yy[tr].sum() >= 2                                 # every fold fits on both classes


def test_folds_when_every_class_is_smaller_than_k_are_dealt_and_still_fit_on_both_classes():
    """scikit-learn's StratifiedKFold refuses K above every class's count; the rows are then dealt to the folds."""
    rng = np.random.default_rng(5)
    y = np.r_[np.ones(6, int), np.zeros(8, int)]
    s = rng.uniform(size=y.size)
    pairs = split_indices(y, Scheme("kfold", n_folds=10, seed=2))
    judged = np.sort(np.concatenate([te for _, te in pairs]))
    assert len(pairs) == 10 and np.array_equal(judged, np.arange(y.size))   # every row judged once
    for tr, te in pairs:
        assert te.size >= 1 and set(y[tr]) == {0, 1} and np.bincount(y[te], minlength=2).max() == 1
    ev = evaluate(s, y, ["platt"], Scheme("kfold", n_folds=10, seed=2))
    assert ev.note.startswith("only 6 positive rows for 10 folds: ")


def test_a_split_too_small_to_stratify_is_random_and_says_why():
    rng = np.random.default_rng(3)
    s = rng.uniform(size=40)
    y = np.r_[np.ones(20, int), np.zeros(20, int)]
    ev = evaluate(s, y, ["platt"], Scheme(test_size=0.02))       # one held-out row cannot hold both classes
    assert ev.rows.size == 1
    assert "not stratified by class: the held-out part would hold 1 row" in ev.note
    assert "held-out rows hold no" in ev.note                    # and that row's class alone is judged
    assert np.isnan(ev.metrics.loc["platt", "AUC"])
    assert evaluate(s, y, ["platt"], Scheme(test_size=0.3)).note == ""   # a stratified split says nothing
    with pytest.raises(DataError, match="leaves the fitting part empty"):
        evaluate(s, y, ["platt"], Scheme(test_size=0.99))


def test_evaluation_says_its_binning_and_fit_rows(data):
    s, y = data
    ev = evaluate(s, y, ["histogram"], Scheme(seed=2))
    assert ev.binning == "10 equal-count bins"
    fine = evaluate(s, y, ["histogram"], Scheme(seed=2), n_bins=20, strategy="uniform")
    assert fine.binning == "20 equal-width bins"
    assert fine.metrics.loc["histogram", "ECE"] != ev.metrics.loc["histogram", "ECE"]
    # the stored model was fitted on exactly fit_rows: refitting there gives the same predictions
    assert np.intersect1d(ev.fit_rows, ev.rows).size == 0 and ev.fit_rows.size + ev.rows.size == s.size
    again = calibrators.get("histogram").fit(s[ev.fit_rows], y[ev.fit_rows])
    np.testing.assert_array_equal(again.predict(s[ev.rows]), ev.predictions["histogram"].to_numpy())
    kfold = evaluate(s, y, ["histogram"], Scheme("kfold", n_folds=3))
    np.testing.assert_array_equal(kfold.fit_rows, np.arange(s.size))     # deployed model: all rows


# ----------------------------------------------------------------------------------------------------
# Large K-class data: the parametric maps fitted on a content-keyed, class-stratified sample
# ----------------------------------------------------------------------------------------------------
# Large K-class data: the parametric maps fitted on a content-keyed, class-stratified sample
# (calibdash.evaluation.scheme.content_sample, evaluate_classes(max_fit_rows=...)), judged on every held-out row.
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
    assert not calibrators.get("ovr:isotonic", "classes").parametric


def test_content_order_is_the_lexsort_of_class_key_and_values():
    """The packed sort with its tie pass gives lexsort's order, ties (repeated rows, rounded values) included."""
    from calibdash.evaluation.scheme import content_keys, content_order
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
    from calibdash.evaluation.holdout import model_rows

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
