"""The one cross-fit (calibdash.evaluation.crossfit): fit on one part, judge on another, rows or cells alike; the rows-or-cells rule."""
from __future__ import annotations

import ast
from pathlib import Path as FilePath

import numpy as np
import pandas as pd
import pytest

from calibdash import calibrators
from calibdash.evaluation import cells
from calibdash.evaluation.crossfit import CELLS_MIN_ROWS, REASONS, Path, choose_path, cross_fit
from calibdash.core.errors import SettingsError
from calibdash.evaluation.holdout import Scheme, cell_parts, evaluate, evaluate_cells, split_indices


@pytest.fixture(scope="module")
def sample():
    rng = np.random.default_rng(3)
    n = 1_500
    s = np.round(rng.beta(2, 3, n), 3)                      # ties: the cells are fewer than the rows
    y = (rng.random(n) < np.clip(1.3 * s - 0.1, 0, 1)).astype(int)
    feats = pd.DataFrame({"g": pd.Categorical(rng.choice(["a", "b"], n))})
    return s, y, feats


def test_each_pair_is_fitted_on_its_fit_part_and_predicts_its_judged_part(sample):
    s, y, _ = sample
    pairs = split_indices(y, Scheme("kfold", n_folds=3, seed=1))
    fit = cross_fit("platt,isotonic", s, y, None, pairs)
    for key in ("platt", "isotonic"):
        for i, (tr, te) in enumerate(pairs):
            alone = calibrators.get(key).fit(s[tr], y[tr])
            np.testing.assert_array_equal(fit.predictions[key][i], alone.predict(s[te]))
            np.testing.assert_array_equal(fit.column(key, i)[te], alone.predict(s[te]))
        col = fit.column(key)
        assert np.isfinite(col).all()                         # k-fold judges every row once
        # no refit: the model kept is the last pair's (``alone``, fitted on the last fit part)
        np.testing.assert_array_equal(fit.models[key].predict(s), alone.predict(s))
        assert fit.seconds[key] >= 0


def test_refit_keeps_the_model_of_the_whole_sample(sample):
    s, y, _ = sample
    w = np.linspace(0.5, 2.0, s.size)
    fit = cross_fit({"p": calibrators.get("platt")}, s, y, w, [(np.arange(100, s.size), np.arange(100))], refit=True)
    whole = calibrators.get("platt").fit(s, y, sample_weight=w)
    np.testing.assert_array_equal(fit.models["p"].predict(s[:50]), whole.predict(s[:50]))
    part = calibrators.get("platt").fit(s[100:], y[100:], sample_weight=w[100:])
    np.testing.assert_array_equal(fit.predictions["p"][0], part.predict(s[:100]))


def test_masks_and_indices_give_the_same_fit_and_an_empty_judged_part_predicts_nothing(sample):
    s, y, _ = sample
    fit_mask = np.arange(s.size) % 2 == 0
    a = cross_fit("histogram", s, y, None, [(fit_mask, ~fit_mask), (fit_mask, np.zeros(s.size, bool))])
    b = cross_fit("histogram", s, y, None, [(np.flatnonzero(fit_mask), np.flatnonzero(~fit_mask))])
    np.testing.assert_array_equal(a.predictions["histogram"][0], b.predictions["histogram"][0])
    assert a.predictions["histogram"][1].size == 0
    assert np.isnan(a.column("histogram", 1)).all()


def test_features_reach_only_the_methods_that_read_them(sample):
    s, y, feats = sample
    pairs = split_indices(y, Scheme(seed=2))
    fit = cross_fit({"mbct": {"bin_size": 50}, "platt": {}}, s, y, None, pairs, feats)
    tr, te = pairs[0]
    mbct = calibrators.get("mbct", bin_size=50).fit(s[tr], y[tr], feats.iloc[tr])
    np.testing.assert_array_equal(fit.predictions["mbct"][0], mbct.predict(s[te], feats.iloc[te]))
    np.testing.assert_array_equal(fit.predictions["platt"][0], calibrators.get("platt").fit(s[tr], y[tr]).predict(s[te]))


def test_evaluate_and_evaluate_cells_are_the_cross_fit_of_rows_and_of_cells(sample):
    s, y, _ = sample
    scheme = Scheme("kfold", n_folds=4, seed=5)
    ev = evaluate(s, y, "isotonic,bbq", scheme)
    pairs = split_indices(y, scheme, scores=s)
    fit = cross_fit("isotonic,bbq", s, y, None, pairs)
    for key in ("isotonic", "bbq"):
        np.testing.assert_array_equal(ev.predictions[key].to_numpy(), fit.column(key)[ev.rows])

    c = cells.aggregate(s, y, cell_parts(s.size, scheme))
    evc = evaluate_cells(c, "isotonic", scheme)
    cs, cy, cw = c.weighted_rows()
    kept = np.concatenate([c.n_pos, c.n - c.n_pos]) > 0
    pairs = [(np.concatenate([c.part != k] * 2)[kept], np.concatenate([c.part == k] * 2)[kept]) for k in range(4)]
    fit = cross_fit("isotonic", cs, cy, cw, pairs)
    np.testing.assert_array_equal(evc.predictions["isotonic"].to_numpy(), fit.column("isotonic"))
    np.testing.assert_array_equal(evc.weights, cw)                       # every cell judged once


def test_only_crossfit_clones_calibrators_to_fit_them():
    """The fit-and-judge loop is written once: evaluation, groups, drift and the benchmark engine clone nothing."""
    root = FilePath(__file__).resolve().parents[2] / "calibdash"
    for rel in ("evaluation/holdout.py", "monitoring/groups.py", "monitoring/drift.py", "monitoring/staleness.py", "benchmark/engine.py"):
        tree = ast.parse((root / rel).read_text(encoding="utf-8"))
        names = {n.id for n in ast.walk(tree) if isinstance(n, ast.Name)}
        assert "clone" not in names, f"{rel} clones a calibrator: fit through calibdash.evaluation.crossfit.cross_fit"


# -- rows or cells ----------------------------------------------------------------------------------
def test_the_path_says_rows_or_cells_and_why():
    small = choose_path(CELLS_MIN_ROWS, ["platt"])
    assert small == Path(False, "small") and small.note == ""
    assert choose_path(CELLS_MIN_ROWS + 1, ["platt", "mbct"]) == Path(True, "large")      # no feature columns
    assert choose_path(CELLS_MIN_ROWS + 1, ["platt"], ["age"]) == Path(True, "large")
    assert choose_path(CELLS_MIN_ROWS, ["mbct"], ["age"]) == Path(False, "small")
    rows = choose_path(CELLS_MIN_ROWS + 1, {"platt": {}, "mbct": {}}, ["age", "site"])
    assert not rows.on_cells and rows.reason == "features"
    assert rows.note.startswith(f"{calibrators.get_class('mbct').label} reads the feature columns (age, site)")
    assert f"{CELLS_MIN_ROWS + 1:,} rows" in rows.note and "every method here is" in rows.note
    assert "it is fitted" in choose_path(CELLS_MIN_ROWS + 1, ["mbct"], ["age"]).note
    assert choose_path(10, ["mbct"], ["age"], large=True) == Path(True, "large source")
    assert choose_path(10, ["platt"], cells="always") == Path(True, "always")
    assert choose_path(10 * CELLS_MIN_ROWS, ["platt"], cells="never") == Path(False, "never")
    for p in (small, rows):
        assert p.explain() == REASONS[p.reason]
    with pytest.raises(SettingsError, match="cells must be one of"):
        choose_path(10, ["platt"], cells="sometimes")
