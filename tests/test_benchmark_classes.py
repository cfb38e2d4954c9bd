"""Multi-class benchmarks (calibdash.benchmark.classes): the binary benchmark's protocol on K-class data sets."""
from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest

from calibdash import benchmark, cli, data as cdata
from calibdash.errors import DataError
from calibdash.multiclass import metrics as mmetrics
from calibdash.evaluation import UNCALIBRATED
from calibdash.synthetic.multiclass import gaussian_classes
from conftest import REPO

SAMPLES = REPO / "sample_data" / "multiclass"
METHODS = ["ovr:histogram", "top_label:histogram"]


def _draw(k: int, t: float, seed: int, n: int = 600) -> pd.DataFrame:
    return gaussian_classes(k, temperature=t).draw(n, seed, decimals=6).frame.drop(
        columns=[f"true_{c}" for c in range(k)] + ["x1", "x2"])


@pytest.fixture(scope="module")
def sets():
    frames = {"a": _draw(3, 2.0, 1), "b": _draw(4, 3.0, 2), "c": _draw(5, 1.5, 3)}
    return {name: cdata.build_class_set(df, name=name) for name, df in frames.items()}


@pytest.fixture(scope="module")
def result(sets):
    return benchmark.run_class_benchmark(sets, METHODS, n_folds=3, repeats=2)


def test_ranks_sum_and_average(result):
    """Each data set's ranks are a permutation of 1..k (mid-ranks for ties): they sum to k(k+1)/2; the average
    ranks are the column means, and the ranked measure is the log-loss, as Kull et al. (2019) rank first."""
    k = len(result.methods)
    assert result.metric == "LogLoss" and result.catalogue is benchmark.CLASS_MEASURES
    np.testing.assert_allclose(result.ranks.sum(axis=1), k * (k + 1) / 2)
    np.testing.assert_allclose(result.average_ranks, result.ranks.mean(axis=0))
    assert {"LogLoss", "cwECE"} <= set(result.rank_summary.columns)
    np.testing.assert_allclose(result.rank_summary.sum(axis=0), k * (k + 1) / 2)
    assert result.friedman is not None and result.holm is not None


def test_values_are_the_mean_of_the_units(result, sets):
    """A data set's value is the mean over repeats of its units; each unit is evaluate_classes on K folds."""
    u = result.units
    for d in sets:
        for m in result.methods:
            rows = u[(u["dataset"] == d) & (u["method"] == m)]
            assert len(rows) == 2
            assert result.table.loc[d, m] == pytest.approx(rows["LogLoss"].mean(), rel=1e-12)
    raw = u[(u["dataset"] == "a") & (u["method"] == UNCALIBRATED)].iloc[0]
    cs = sets["a"]
    assert raw["cwECE"] == pytest.approx(mmetrics.classwise_ece(cs.scores().probabilities, cs.labels), rel=1e-12)


def test_row_order_does_not_change_the_result(sets, result):
    """Folds are cut by the rows' content, so a data set with its rows shuffled gives the same numbers."""
    shuffled = {}
    for name, cs in sets.items():
        df = cs.raw.sample(frac=1.0, random_state=5).reset_index(drop=True)
        shuffled[name] = cdata.build_class_set(df, name=name)
    again = benchmark.run_class_benchmark(shuffled, METHODS, n_folds=3, repeats=2)
    pd.testing.assert_frame_equal(again.table, result.table, rtol=1e-10)
    pd.testing.assert_frame_equal(again.rank_summary, result.rank_summary)


def test_cache_resumes_and_compute_false(sets):
    cache = benchmark.UnitCache()
    first = benchmark.run_class_benchmark(sets, METHODS[:1], n_folds=2, repeats=1, cache=cache)
    seen = benchmark.run_class_benchmark(sets, METHODS[:1], n_folds=2, repeats=1, cache=cache, compute=False)
    pd.testing.assert_frame_equal(first.table, seen.table)
    assert len(cache) == 2 * len(sets)


def test_binary_and_kclass_refused_together(tmp_path):
    (tmp_path / "k.csv").write_text(_draw(3, 2.0, 1).to_csv(index=False))
    pd.DataFrame({"score": np.linspace(0.05, 0.95, 60), "label": np.arange(60) % 2}).to_csv(tmp_path / "b.csv",
                                                                                        index=False)
    with pytest.raises(DataError, match="b.csv is binary, k.csv"):
        benchmark.load_benchmark_datasets([str(tmp_path)])
    kind, found = benchmark.load_benchmark_datasets([str(tmp_path / "k.csv")])
    assert kind == "multiclass" and isinstance(found["k.csv"], cdata.ClassSet)


def test_a_binary_data_set_is_refused_by_the_multiclass_runner(sets):
    ss = cdata.build_score_set(pd.DataFrame({"s": np.linspace(0.05, 0.95, 60), "y": np.arange(60) % 2}))
    with pytest.raises(DataError, match="not a K-class table"):
        benchmark.run_class_benchmark({"a": sets["a"], "bin": ss}, METHODS)


def test_cli_runs_a_multiclass_benchmark_on_kclass_files(capsys):
    """The benchmark command finds K-class files by their columns and, with the binary default methods, runs the
    multi-class defaults; --metric ranks the multi-class measure of that name."""
    assert cli.main(["benchmark", str(SAMPLES / "logits_4class.csv"), str(SAMPLES / "animals_3class.csv"),
                     "--methods", "ovr:histogram,top_label:histogram", "--repeats", "1", "--folds", "3",
                     "--metric", "LogLoss", "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["kind"] == "multiclass" and out["metric"] == "LogLoss"
    assert out["methods"] == [UNCALIBRATED, "ovr:histogram", "top_label:histogram"]
    assert set(out["average_ranks_by_metric"]) >= {"cwECE", "LogLoss"}
