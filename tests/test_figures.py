"""Figure builders: data separate from drawing, one colour per method, gaps for empty bins."""
import numpy as np
import pandas as pd

from calibdash import calibrators, figures, metrics
from calibdash.figures.palette import color_of


def test_every_method_has_its_own_colour():
    names = calibrators.available() + ["uncalibrated"]
    colours = [color_of(n) for n in names]
    assert len(set(colours)) == len(colours)
    assert color_of("some_model") == color_of("some_model")


def test_reliability_diagram_traces_colours_and_gaps():
    p = np.array([0.05, 0.07, 0.12, 0.95, 0.97])
    y = np.array([0, 0, 1, 1, 1])
    preds = pd.DataFrame({"uncalibrated": p, "platt": np.clip(p + 0.01, 0, 1)})
    tables = figures.reliability_tables(preds, y, n_bins=10, strategy="uniform")
    fig = figures.reliability_diagram(tables)
    lines = [t for t in fig.data if t.type == "scatter" and t.name in ("uncalibrated", "platt")]
    bars = [t for t in fig.data if t.type == "bar"]
    assert [t.line.color for t in lines] == [color_of("uncalibrated"), color_of("platt")]
    assert len(bars) == 2
    ys = np.array(lines[0].y, dtype=float)
    assert np.isnan(ys[3]) and not lines[0].connectgaps          # empty bin left as a gap
    assert "rows: 2" in lines[0].text[0]                          # hover carries the count
    np.testing.assert_array_equal(np.array(bars[0].y), tables["uncalibrated"]["count"].to_numpy())


def test_map_curves_are_model_predictions(noisy):
    s, y = noisy
    cal = calibrators.get("isotonic").fit(s, y)
    curves = figures.map_curves({"isotonic": cal}, scores=s[:100])
    assert (curves["kind"] == "line").all()
    np.testing.assert_allclose(curves["prob"], cal.predict(curves["score"].to_numpy()))
    fig = figures.calibration_map(curves, s[:100])
    assert any(t.type == "histogram" for t in fig.data)
    assert [t.line.color for t in fig.data if t.name == "isotonic"] == [color_of("isotonic")]


def test_inner_figures_empty_for_methods_without_a_module(noisy):
    from calibdash.explain import Explanation

    assert figures.inner_figures(Explanation(method="platt")) == []
    assert figures.inner_figures(Explanation(method="no_such_method")) == []


def test_reliability_table_feeds_diagram_unchanged():
    rng = np.random.default_rng(0)
    p = rng.uniform(size=300)
    y = (rng.uniform(size=300) < p).astype(int)
    t = metrics.reliability_table(p, y, 10, "quantile")
    fig = figures.reliability_diagram({"x": t}, show_counts=False)
    line = [tr for tr in fig.data if tr.name == "x"][0]
    np.testing.assert_allclose(np.array(line.x, dtype=float), t["mean_pred"])
