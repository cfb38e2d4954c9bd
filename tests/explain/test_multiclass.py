"""The inner workings of multi-class calibrators (calibdash.explain.k_*): what each explanation holds is what
the fitted calibrator does, and the temperature objective is the log-loss the paper minimises."""
from __future__ import annotations

import numpy as np
import pytest
from scipy.optimize import minimize_scalar
from scipy.special import softmax

from calibdash import data as cdata
from calibdash import calibrators
from calibdash.explain import explain as explain_classes
from calibdash.explain.k_temperature import fitted_temperature, temperature_curve
from calibdash.figures import inner_figures
from calibdash.measures import class_measures as mmetrics
from calibdash.calibrators.multiclass.base import MulticlassCalibrator, Scores
from calibdash.synthetic import multiclass_study as mstudy
from tests.conftest import REPO

SAMPLES = REPO / "sample_data" / "multiclass"
HAS_TEMPERATURE = "temperature" in calibrators.available("classes")


@pytest.fixture(scope="module")
def animals():
    return cdata.load_classes(SAMPLES / "animals_3class.csv")


@pytest.fixture(scope="module")
def cifar():
    return cdata.load_classes(SAMPLES / "cifar10_lenet5.csv")


class _FixedTemperature(MulticlassCalibrator):
    """softmax(s / T) with a given T (the definition of temperature scaling, Guo et al. 2017), for reading T back."""

    name = "fixed_temperature_for_tests"

    def __init__(self, t: float = 2.0, logits: bool = False):
        self.t = t
        self.logits = logits

    def _fit(self, x, y, w):
        pass

    def _predict(self, x):
        return softmax(x.log_scores / self.t, axis=1)


@pytest.mark.parametrize("logits", [False, True])
def test_temperature_read_back_from_the_map(logits):
    """fitted_temperature reads T from the map itself: exact (to rounding of one log-ratio) on probabilities and
    on logits."""
    P = softmax(np.random.default_rng(0).normal(size=(50, 4)), axis=1)
    model = _FixedTemperature(t=2.7, logits=logits).fit(np.log(P) if logits else P, np.arange(50) % 4)
    assert fitted_temperature(model) == pytest.approx(2.7, rel=1e-12)


def test_temperature_curve_is_the_log_loss_and_finds_the_scenario_temperature():
    """The curve at T = 1 is the raw log-loss; with no class bias the scenario's model is over-confident by exactly
    T = 2.5, so the log-loss minimiser on 20,000 rows sits near 2.5. Tolerance: the minimiser's sampling SD on
    20,000 rows is about 0.02 (one parameter, Fisher information of this scenario), so 0.1 is five SDs."""
    d = mstudy.overconfident(3, 2.5).draw(20_000, seed=3)
    x = Scores(d.reported, False)
    assert temperature_curve(x, d.labels, [1.0])[0] == pytest.approx(mmetrics.log_loss(d.reported, d.labels), rel=1e-12)
    best = minimize_scalar(lambda t: temperature_curve(x, d.labels, [t])[0], bounds=(0.5, 8), method="bounded",
                           options={"xatol": 1e-6})
    assert abs(best.x - 2.5) < 0.1


@pytest.mark.skipif(not HAS_TEMPERATURE, reason="temperature scaling is not registered on this branch yet")
def test_explained_temperature_is_the_models_and_the_curve_is_lowest_there(animals):
    """The explained T is the fitted model's (its map equals softmax(log P / T) on every row), and the fitting
    rows' log-loss curve is lowest at T: on a fine grid around T no value is lower than the value at T by more
    than the solver's stopping rule allows. The solver stops when the relative change of T is small (about 1e-6
    or finer); the log-loss is flat at its minimum, so a T off by 1e-5 changes the curve by far less than 1e-8."""
    model = calibrators.get("temperature", "classes").fit(animals.given, animals.labels)
    ex = explain_classes(model, animals.given, animals.labels)
    t = ex.temperature
    np.testing.assert_allclose(model.predict_proba(animals.given), softmax(np.log(animals.given) / t, axis=1),
                               atol=1e-10)
    curve = ex.loss_curve
    assert curve["fit"].min() >= float(curve.loc[curve["temperature"] == t, "fit"].iloc[0]) - 1e-8
    fine = t * np.exp(np.linspace(-0.01, 0.01, 41))
    values = temperature_curve(Scores(animals.given, False), animals.labels, fine)
    assert values.min() >= temperature_curve(Scores(animals.given, False), animals.labels, [t])[0] - 1e-8
    assert "held_out" not in curve           # none given


def test_ovr_maps_are_the_per_class_binary_maps(animals):
    """Each shown class's curve is its own binary calibrator evaluated on the grid; classes come worst first
    (largest class-wise ECE of the fitting rows)."""
    model = calibrators.get("ovr:histogram", "classes").fit(animals.given, animals.labels)
    ex = explain_classes(model, animals.given, animals.labels, class_names=animals.classes)
    assert ex.kind == "ovr" and sorted(ex.shown) == [0, 1, 2]
    ece = mmetrics.per_class_ece(animals.given, animals.labels)
    assert list(ex.shown) == list(np.argsort(-ece, kind="stable"))
    for c in ex.shown:
        m = ex.maps[ex.maps["class"] == c]
        np.testing.assert_array_equal(m["calibrated"], model.models_[c].predict(m["score"].to_numpy()))


def test_ovr_on_ten_classes_shows_the_ten_worst(cifar):
    model = calibrators.get("ovr:histogram", "classes").fit(cifar.given, cifar.labels)
    ex = explain_classes(model, cifar.given, cifar.labels, max_classes=4)
    ece = mmetrics.per_class_ece(cifar.given, cifar.labels)
    assert sorted(ex.shown) == sorted(np.argsort(-ece)[:4].tolist())
    assert ex.notes and ex.simplex is None                      # no simplex map for K = 10
    titles = [t for t, _ in inner_figures(ex)]
    fig = dict(inner_figures(ex))[titles[0]]
    assert [tr.meta for tr in fig.data if tr.meta is not None] == ex.shown


def test_top_label_pooled_classes_and_counts(animals):
    """Classes predicted in fewer than min_rows rows use the pooled map and are named; the predicted counts are
    the argmax counts; the pooled curve is the pooled model on the grid."""
    P, y = animals.given, animals.labels
    counts = np.bincount(P.argmax(axis=1), minlength=3)
    min_rows = float(np.sort(counts)[1])               # the smallest class falls below it, the others do not
    model = calibrators.get("top_label:histogram", "classes", min_rows=min_rows).fit(P, y)
    ex = explain_classes(model, P, y)
    np.testing.assert_array_equal(ex.predicted, counts)
    assert ex.pooled == [int(np.argmin(counts))]
    assert int(np.argmin(counts)) not in ex.shown
    np.testing.assert_array_equal(ex.pooled_map["calibrated"], model.pooled_.predict(ex.pooled_map["score"].to_numpy()))


def test_simplex_map_is_the_same_on_logits_and_probabilities(animals):
    """For K = 3 the simplex map is the calibrator on the grid; a model fitted on the logarithm of the probabilities
    (as logits) is the same map, so both explanations draw the same arrows."""
    P, y = animals.given, animals.labels
    on_p = calibrators.get("ovr:histogram", "classes").fit(P, y)
    on_z = calibrators.get("ovr:histogram", "classes").set_params(logits=True).fit(np.log(P), y)
    a = explain_classes(on_p, P, y).simplex
    b = explain_classes(on_z, np.log(P), y).simplex
    np.testing.assert_allclose(a.outputs, on_p.predict_proba(a.inputs), atol=1e-12)
    np.testing.assert_allclose(a.outputs, b.outputs, atol=1e-9)


@pytest.mark.parametrize("name", [n for n in calibrators.available("classes", expand=False)
                                  if n not in calibrators.composites()]
                         + [f"{c}:histogram" for c in calibrators.composites()])
def test_every_k_class_method_is_explained_by_its_declared_explainer_and_drawn(name, animals):
    """explain() finds a K-class method's explainer by the calibrator's class: the explanation is the class its
    explainer declares, of the method's name, and its figures end with the simplex map (K = 3)."""
    from typing import get_type_hints

    from calibdash.explain import explainers
    from calibdash.explain.k_class import ClassExplanation

    model = calibrators.get(name, "classes").fit(animals.given, animals.labels)
    ex = explain_classes(model, animals.given, animals.labels, class_names=animals.classes)
    declared = next(explainers()[c] for c in type(model).__mro__ if c in explainers())     # the nearest declared
    assert type(ex) is get_type_hints(declared)["return"] and isinstance(ex, ClassExplanation)
    assert ex.method == name and ex.classes == list(animals.classes)
    figs = inner_figures(ex)
    assert figs[-1][0] == "The map on the probability simplex" and all(fig.data for _, fig in figs)


@pytest.mark.parametrize("name", ["vector", "matrix", "dirichlet"])
def test_the_linear_maps_show_their_fitted_w_b_and_search_path(name, animals):
    """W and b are the fitted map's (``coef_``, ``intercept_``: the heatmap and the bars draw them), and a searched
    penalty draws its path. Until the explainer read ``coef_``/``intercept_``, every such explanation said "W and b
    cannot be shown" and drew neither."""
    model = calibrators.get(name, "classes").fit(animals.given, animals.labels)
    ex = explain_classes(model, animals.given, animals.labels, class_names=animals.classes)
    assert not any("cannot be shown" in n for n in ex.notes)
    np.testing.assert_array_equal(ex.weights, model.coef_)
    np.testing.assert_array_equal(ex.bias, model.intercept_)
    titles = [t for t, _ in inner_figures(ex)]
    assert titles[:2] == ["Fitted W (new log-score of each class from the input log-scores)",
                          "Fitted b (one intercept per class)"]
    searched = model.cv_grid_ is not None
    assert ("Regularisation path (cross-validated choice)" in titles) == searched == (name != "vector")
    heat = dict(inner_figures(ex))[titles[0]].data[0]
    np.testing.assert_array_equal(np.asarray(heat.z, dtype=float), model.coef_)
