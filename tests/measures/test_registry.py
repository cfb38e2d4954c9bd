"""The one measure registry (calibdash.measures.registry): the binary and K-class tables are views of it, and a
record's statistics form is what the bootstraps resample."""
from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from scipy.special import softmax

from calibdash.evaluation import bootstrap
from calibdash import measures
from calibdash.evaluation.bootstrap import cell_resamples as cells_boot
from calibdash.core.errors import SettingsError
from calibdash.measures import calibration
from calibdash.measures.registry import (BINARY, CLASSES, RECORDS, Binned, Mean, Measure, Moments, Sorted,
                                         select_names, view)
from calibdash.measures import class_measures as mm


def test_the_binary_and_k_class_tables_are_views_of_the_registry():
    assert tuple(view(BINARY, metric=True)) == calibration.METRIC_NAMES
    assert tuple(view(BINARY, metric=False)) == measures.MEASURE_NAMES
    assert tuple(view(BINARY)) == measures.ALL_NAMES == calibration.METRIC_NAMES + measures.MEASURE_NAMES
    assert tuple(view(CLASSES)) == mm.MEASURE_NAMES
    assert mm.MEASURES["ECE"].reduction == "top_label" and mm.MEASURES["cwECE"].reduction == "ovr"
    assert mm.MEASURES["Brier"].reduction == "classes" and measures.MEASURES["smECE"].reduction == "score"
    for reductions in (BINARY, CLASSES):                    # a name means one record within a view
        names = [m.name for m in RECORDS if m.reduction in reductions]
        assert len(names) == len(set(names))


def test_every_record_is_well_formed():
    for m in RECORDS:
        assert m.reduction in BINARY + CLASSES and m.best in ("lower", "higher", "target", "none"), m.name
        assert m.label and m.caption, m.name
        if isinstance(m.statistics, (Sorted, Moments)):
            assert m.reduction == "score", m.name           # the sorted cells and MVCE's moments are a score's
        if isinstance(m.statistics, Binned):
            assert m.reduction in ("top_label", "ovr"), m.name


def test_directions_follow_the_record():
    ece, slope, unc, dsc = (view(BINARY)[n] for n in ("ECE", "Slope", "UNC", "DSC"))
    assert ece.lower_is_better is True and dsc.lower_is_better is False and slope.lower_is_better is None
    assert slope.oriented(np.array([0.5, 1.2])) == pytest.approx([0.5, 0.2])
    assert dsc.oriented(0.3) == -0.3 and mm.MEASURES["Overconfidence"].oriented(-0.1) == 0.1
    assert slope.phrase() == "1 is ideal" and unc.phrase() == "the same for every method"
    with pytest.raises(SettingsError, match="ranks nothing"):
        unc.oriented(1.0)
    assert measures.direction("AUC") is False and measures.best_phrase("MVCE") == "lower is better"


def test_select_names_keeps_the_table_order_and_names_an_unknown_one():
    assert select_names(["b", "a"], ("a", "b", "c")) == ("a", "b")
    with pytest.raises(SettingsError, match="unknown measure 'z'; choose from a, b"):
        select_names(["z"], ("a", "b"))


def test_a_k_class_record_reads_its_reduction():
    """The K-class records measure the binary reduction they declare: the top-label ECE is the binary ECE of
    (confidence, correct), the class-wise ECE the mean of the one-vs-rest columns' ECEs."""
    rng = np.random.default_rng(2)
    P = softmax(rng.normal(size=(300, 4)) * 2, axis=1)
    y = rng.integers(0, 4, 300)
    c, a = P.max(axis=1), (P.argmax(axis=1) == y)
    values = mm.compute(P, y)
    assert values["ECE"] == calibration.ece(c, a, 15, "uniform")
    assert values["cwECE"] == pytest.approx(np.mean([calibration.ece(P[:, k], y == k, 15, "uniform")
                                                     for k in range(4)]), rel=1e-15)
    assert values["Accuracy"] == pytest.approx(a.mean()) and values["Overconfidence"] == pytest.approx((c - a).mean())


def test_a_declared_record_is_resampled_by_its_statistics_form(monkeypatch):
    """Declaring a measure is one record: a new record with the Brier score's statistics form gets, from the
    cells bootstrap, the Brier score's point value and the very same resamples (the same draws, the same sums)."""
    twin = Measure("Brier2", "Brier score again", "a test's record", "score", "lower",
                   lambda p, y, w: calibration.brier(p, y, sample_weight=w),
                   statistics=Mean(calibration.squared_errors))
    monkeypatch.setattr(cells_boot, "_RECORDS", {**cells_boot._RECORDS, "Brier2": twin})
    rng = np.random.default_rng(0)
    s = np.round(rng.uniform(size=400), 2)
    y = (rng.uniform(size=400) < s).astype(int)
    cells = pd.DataFrame({"s": s, "y": y}).groupby("s")["y"].agg(["size", "sum"])
    preds = pd.DataFrame({"raw": cells.index.to_numpy(), "sq": cells.index.to_numpy() ** 2})
    boot = bootstrap.bootstrap_cells(preds, cells["size"], cells["sum"], n_boot=30, seed=3,
                                     names=["Brier", "Brier2"], workers=1)
    np.testing.assert_array_equal(boot.samples["Brier2"], boot.samples["Brier"])
    for m in preds.columns:
        assert boot.table.loc[m, ("Brier2", "value")] == pytest.approx(boot.table.loc[m, ("Brier", "value")],
                                                                        rel=1e-14)


def test_a_declared_k_class_record_is_resampled_on_rows_by_its_form_or_its_rows(monkeypatch):
    """A K-class record with the accuracy's statistics form gets the accuracy's resamples exactly; one without a
    form (the same measure computed on each resample's reduction) gets them to rounding."""
    acc = mm.MEASURES["Accuracy"]
    twin = Measure("Acc2", "accuracy again", "a test's record", "top_label", "higher", acc.compute,
                   statistics=acc.statistics)
    by_rows = Measure("Acc3", "accuracy on rows", "a test's record", "top_label", "higher", acc.compute)
    monkeypatch.setattr(mm, "MEASURES", {**mm.MEASURES, "Acc2": twin, "Acc3": by_rows})
    monkeypatch.setattr(mm, "MEASURE_NAMES", tuple(mm.MEASURES))
    rng = np.random.default_rng(1)
    P = softmax(rng.normal(size=(120, 3)), axis=1)
    y = rng.integers(0, 3, 120)
    boot = bootstrap.bootstrap_multiclass({"a": P, "b": P[:, [2, 0, 1]]}, y, names=["Accuracy", "Acc2", "Acc3"],
                                          n_boot=20, seed=5, workers=1)
    np.testing.assert_array_equal(boot.samples["Acc2"], boot.samples["Accuracy"])
    np.testing.assert_allclose(boot.samples["Acc3"], boot.samples["Accuracy"], rtol=1e-12)
    assert boot.table.loc["a", ("Acc2", "value")] == boot.table.loc["a", ("Accuracy", "value")]

