"""The multi-class diagrams (calibdash.diagrams: confidence, classwise, simplex): the data they hold and the
traces drawn."""
from __future__ import annotations

import numpy as np
import pytest
from scipy.special import softmax

from calibdash.core.errors import DataError, SettingsError
from calibdash import diagrams as md
from calibdash.measures import class_measures as mm

K = 20


@pytest.fixture(scope="module")
def data():
    rng = np.random.default_rng(0)
    n = 1500
    logits = rng.normal(scale=2.5, size=(n, K)) + np.linspace(0, 1.5, K)   # unequal class frequencies
    truth = softmax(logits, axis=1)
    y = np.array([rng.choice(K, p=p) for p in truth])
    raw = softmax(2.0 * logits, axis=1)                                      # overconfident
    return {"uncalibrated": raw, "truth": truth}, y


def test_confidence_bins_hold_every_row_and_the_ece_of_the_measures(data):
    Ps, y = data
    d = md.prepare_confidence(Ps, y)
    assert d.n_bins == mm.N_BINS and d.strategy == "uniform"
    for key, t in d.tables.items():
        assert int(t["count"].sum()) == y.size
        assert d.ece[key] == mm.top_label_ece(Ps[key], y)
        # the table is the confidence reduction binned: its ECE is the measure's
        gap = np.nansum(t["count"] * np.abs(t["gap"])) / y.size
        assert gap == pytest.approx(d.ece[key], abs=1e-12)
    w = np.random.default_rng(1).integers(0, 3, y.size)
    dw = md.prepare_confidence(Ps, y, w, n_bins="auto")
    assert dw.tables["truth"]["count"].sum() == w.sum() and dw.bins_text.startswith("auto:")


def test_confidence_of_exactly_one_is_counted_in_the_last_bin():
    P = np.array([[1.0, 0.0, 0.0], [0.0, 1.0, 0.0], [0.5, 0.3, 0.2]])
    t = md.prepare_confidence({"m": P}, [0, 2, 0]).tables["m"]
    assert len(t) == mm.N_BINS and t["count"].iloc[-1] == 2 and t["count"].sum() == 3


def test_classwise_shows_the_worst_classes_first(data):
    Ps, y = data
    d = md.prepare_classwise(Ps, y)
    worst = mm.per_class_ece(Ps["uncalibrated"], y)
    assert d.order == sorted(range(K), key=lambda k: (-worst[k], k))
    assert d.classes == d.order[:md.MAX_PANELS] and d.order_by == "worst"
    np.testing.assert_allclose(d.ece["uncalibrated"], worst, rtol=0, atol=0)
    for c in d.classes:
        for t in d.tables[c].values():
            assert int(t["count"].sum()) == y.size
            assert int(np.round(np.nansum(t["count"] * t["obs_freq"]))) == int(np.sum(y == c))
    rows = np.bincount(y, minlength=K)
    assert md.prepare_classwise(Ps, y, order="frequency").order == sorted(range(K), key=lambda k: (-rows[k], k))
    picked = md.prepare_classwise(Ps, y, classes=[3, "c1"], class_names=[f"c{i}" for i in range(K)])
    assert picked.classes == [3, 1] and picked.order_by == "picked" and set(picked.tables) == {1, 3}
    with pytest.raises(SettingsError, match="order"):
        md.prepare_classwise(Ps, y, order="alphabetical")
    with pytest.raises(DataError, match="not one of"):
        md.prepare_classwise(Ps, y, classes=[K])


def test_class_table_counts_frequencies_means_and_eces(data):
    Ps, y = data
    t = md.class_table(Ps, y)
    assert len(t) == K and t["rows"].sum() == y.size and t["frequency"].sum() == pytest.approx(1.0)
    np.testing.assert_array_equal(t["rows"], np.bincount(y, minlength=K))
    np.testing.assert_allclose(t["mean p (truth)"], Ps["truth"].mean(axis=0))
    np.testing.assert_allclose(t["ECE (uncalibrated)"], mm.per_class_ece(Ps["uncalibrated"], y))


def test_simplex_map_evaluates_the_callable_on_the_grid():
    g = md.simplex_grid(10)
    assert g.shape == (36, 3) and np.all(g > 0) and np.allclose(g.sum(axis=1), 1.0)
    assert md.simplex_grid(4, interior=False).shape == (15, 3)            # (n + 1)(n + 2) / 2 points
    ident = md.prepare_simplex_map(lambda X: X, 10)
    # the outputs are checked and divided by their sums; grid rows such as (0.1, 0.2, 0.7) sum to 1 to rounding
    np.testing.assert_allclose(ident.shift, 0.0, atol=1e-15)
    sharpen = md.prepare_simplex_map(lambda X: softmax(2 * np.log(X), axis=1), 10)
    np.testing.assert_allclose(sharpen.outputs, softmax(2 * np.log(g), axis=1), rtol=1e-12)
    centre = np.flatnonzero(np.all(np.isclose(g, [0.4, 0.3, 0.3]), axis=1))
    assert sharpen.shift[centre] > 0 and sharpen.shift.max() <= 1.0
    with pytest.raises(DataError, match="shape"):
        md.prepare_simplex_map(lambda X: X[:, :2], 10)
    with pytest.raises(DataError, match="sum to 1"):
        md.prepare_simplex_map(lambda X: 2 * X, 10)


def test_figures_have_the_expected_traces(data):
    Ps, y = data
    conf = md.plot_confidence(md.prepare_confidence(Ps, y), names={"truth": "true probabilities"})
    # the diagonal, then per method its points and its bars
    assert [t.type for t in conf.data] == ["scatter", "scatter", "bar", "scatter", "bar"]
    assert conf.data[3].name.startswith("true probabilities (ECE ")
    assert conf.layout.yaxis.title.text == "accuracy"
    cw = md.prepare_classwise(Ps, y)
    fig = md.plot_classwise(cw)
    assert len(fig.data) == md.MAX_PANELS * (1 + len(Ps))
    assert sum(bool(t.showlegend) for t in fig.data) == len(Ps)           # each method once in the legend
    assert [a.text.split(" · ")[0] for a in fig.layout.annotations] == [cw.names[c] for c in cw.classes]
    simplex = md.plot_simplex_map(md.prepare_simplex_map(lambda X: softmax(2 * np.log(X), axis=1)),
                                   class_names=["cat", "dog", "bird"])
    assert [t.type for t in simplex.data] == ["scatterternary"] * 3
    assert len(simplex.data[2].a) == 36 and simplex.layout.ternary.aaxis.title.text == "cat"
