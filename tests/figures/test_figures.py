"""Figure builders: data separate from drawing, one colour per method, gaps for empty bins."""
import numpy as np
import pandas as pd

from calibdash import calibrators, diagrams, figures
from calibdash.measures import calibration as metrics
from calibdash.figures.charts.calibration_map import SCORE_BARS
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
    tables = diagrams.reliability_tables(preds, y, n_bins=10, strategy="uniform")
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
    assert [t.type for t in fig.data if t.name == "scores"] == ["bar"]
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


# -- score cells: weighted rows stand for the rows they summarise -----------------------------------
def _rows_and_cells(n: int = 20_000, seed: int = 3):
    """Rows with ~10^3 distinct scores, a Platt model fitted on them, and the same predictions on the rows'
    exact score cells as weighted rows: (rows frame, labels, cells frame, cell labels, cell weights)."""
    from calibdash.evaluation import cells

    rng = np.random.default_rng(seed)
    s = np.round(rng.beta(2, 5, n), 3)
    y = (rng.uniform(size=n) < np.clip(1.2 * s, 0, 1)).astype(int)
    c = cells.aggregate(s, y)
    assert c.exact and len(c) < n
    cal = calibrators.get("platt").fit(s, y)
    cs, cy, cw = c.weighted_rows()
    rows = pd.DataFrame({"uncalibrated": s, "platt": cal.predict(s)})
    on_cells = pd.DataFrame({"uncalibrated": cs, "platt": cal.predict(cs)})
    return rows, y, on_cells, cy, cw


def test_weighted_reliability_tables_equal_the_rows_on_exact_cells():
    rows, y, on_cells, cy, cw = _rows_and_cells()
    for strategy in metrics.STRATEGIES:
        for n_bins in (5, 10, 30):
            by_rows = diagrams.reliability_tables(rows, y, n_bins, strategy)
            by_cells = diagrams.reliability_tables(on_cells, cy, n_bins, strategy, sample_weight=cw)
            assert list(by_cells) == list(by_rows)
            for key in by_rows:
                pd.testing.assert_frame_equal(by_cells[key], by_rows[key], check_exact=False, rtol=1e-9, atol=1e-12,
                                              obj=f"{key}, {n_bins} {strategy} bins")
    # and the diagram drawn from them counts rows, not cells
    fig = figures.reliability_diagram(diagrams.reliability_tables(on_cells, cy, 10, "uniform", sample_weight=cw))
    bars = [t for t in fig.data if t.type == "bar"]
    assert sum(bars[0].y) == len(y)


def test_weighted_calibration_map_histogram_sums_the_weights():
    rows, y, on_cells, cy, cw = _rows_and_cells()
    cal = calibrators.get("isotonic").fit(rows["uncalibrated"].to_numpy(), y)
    curves = figures.map_curves({"isotonic": cal}, on_cells["uncalibrated"], sample_weight=cw)
    assert (curves["kind"] == "line").all()
    np.testing.assert_allclose(curves["prob"], cal.predict(curves["score"].to_numpy()))
    fig = figures.calibration_map(curves, on_cells["uncalibrated"], sample_weight=cw)
    hist = [t for t in fig.data if t.name == "scores"][0]
    assert hist.type == "bar" and len(hist.y) == SCORE_BARS   # bars, not cells
    assert np.asarray(hist.y).sum() == len(y)                           # every row counted once
    on_rows = [t for t in figures.calibration_map(curves, rows["uncalibrated"]).data if t.name == "scores"][0]
    # the cells' weighted bars are the rows' bars: the same edges (same smallest and largest score), same counts
    np.testing.assert_array_equal(np.asarray(on_rows.y), np.asarray(hist.y))
    np.testing.assert_allclose(np.asarray(on_rows.x), np.asarray(hist.x))


def test_score_bars_count_rows_per_equal_width_bar():
    from calibdash.figures.charts.calibration_map import score_bars

    # edges 0, .25, .5, .75, 1 (numpy's last bar includes its right edge): one score in each bar
    centers, counts, widths = score_bars([0.0, 0.25, 0.5, 1.0], n_bars=4)
    np.testing.assert_allclose(centers, [0.125, 0.375, 0.625, 0.875])
    np.testing.assert_array_equal(counts, [1, 1, 1, 1])
    np.testing.assert_allclose(widths, 0.25)
    _, weighted, _ = score_bars([0.0, 0.25, 0.5, 1.0], [2, 1, 1, 3], n_bars=4)    # rows each score stands for
    np.testing.assert_array_equal(weighted, [2, 1, 1, 3])
    _, one, _ = score_bars([0.3] * 5, n_bars=4)                                 # a single score: all in one bar
    assert one.sum() == 5 and (one > 0).sum() == 1


def test_score_grid_is_refined_at_the_rows_quantiles_on_cells():
    rows, y, on_cells, cy, cw = _rows_and_cells()
    s = rows["uncalibrated"].to_numpy()
    by_cells = figures.score_grid(on_cells["uncalibrated"], sample_weight=cw)
    q = np.linspace(0, 1, 201)
    expected = np.union1d(np.linspace(0, 1, 301), np.quantile(s, q, method="inverted_cdf"))
    # the grid's refinement points are the rows' quantiles (inverse CDF), not the cells' unweighted quantiles
    assert np.isin(np.quantile(s, q[1:-1:10], method="inverted_cdf"), by_cells).all()
    assert by_cells.min() == 0 and by_cells.max() == 1 and np.isin([s.min(), s.max()], by_cells).all()
    assert abs(by_cells.size - expected.size) <= 2
    assert not np.isin(np.quantile(on_cells["uncalibrated"], [0.3, 0.5, 0.7]), by_cells).all()


def test_color_of_knows_the_multi_class_methods():
    """A composite's colour is the one its instance declares: its binary method's, shaded by the composite
    (one-vs-rest unchanged, top-label darkened 35% towards black); no central list of names."""
    from calibdash.calibrators.multiclass.methods.ovr import shade
    assert color_of("ovr:isotonic") == color_of("isotonic") == calibrators.get_class("isotonic").color
    assert color_of("top_label:isotonic") == shade(color_of("isotonic"), 0.35)
    assert color_of("OVR:Platt") == color_of("ovr:platt")                 # names are case-insensitive
    # a composite of no binary method is no method: a stable colour of the extra palette
    assert color_of("ovr:nonsense") == color_of("ovr:nonsense") and color_of("ovr:nonsense").startswith("#")


def test_multi_class_charts_take_the_multi_class_colour_of_a_shared_name(monkeypatch):
    """A multi-class method named like a binary one (both have a ``temperature``) is drawn in its own declared
    colour in the multi-class charts; the binary charts keep the binary colour."""
    from calibdash import diagrams as fmulticlass
    from calibdash.figures.palette import class_color_of
    from calibdash import diagrams as mdiagrams

    binary, k_class = calibrators.classes(), calibrators.classes("classes")
    k_class["isotonic"] = type("Twin", (k_class["ovr"],), {"name": "isotonic", "color": "#123456"})
    monkeypatch.setattr(calibrators, "classes", lambda family="binary": k_class if family == "classes" else binary)
    assert class_color_of("isotonic") == "#123456" and color_of("isotonic") != "#123456"
    assert class_color_of("uncalibrated") == color_of("uncalibrated")
    assert class_color_of("ovr:platt") == color_of("platt")
    P = np.array([[0.7, 0.2, 0.1], [0.1, 0.8, 0.1], [0.2, 0.2, 0.6], [0.5, 0.3, 0.2]])
    y = np.array([0, 1, 2, 1])
    data = mdiagrams.prepare_confidence({"uncalibrated": P, "isotonic": P}, y)
    lines = {t.legendgroup: t.line.color for t in fmulticlass.plot_confidence(data).data
             if t.legendgroup and t.type == "scatter"}
    assert lines == {"uncalibrated": color_of("uncalibrated"), "isotonic": "#123456"}
