"""Benchmark: units are evaluate() calls, ranks and tests follow from them, interrupt/resume, report kinds, figures,
page; and the same protocol on K-class data sets (one run_benchmark). The command line is tested in test_cli.py."""
import json

import numpy as np
import pandas as pd
import pytest
from streamlit.testing.v1 import AppTest

from calibdash import benchmark, calibrators, cli, data as cdata
from calibdash.benchmark import TableKind, rank_tests
from calibdash.data import build_score_set
from calibdash.core.errors import DataError, SettingsError
from calibdash.evaluation.holdout import UNCALIBRATED, Scheme, evaluate
from calibdash.figures.charts import benchmark as bfig
from calibdash.measures import class_measures as mmetrics
from calibdash.synthetic.gaussian_classes import gaussian_classes
from tests.conftest import APPTEST_TIMEOUT, REPO
from tests.pages.test_app import _run_entry_point_every_time, go, upload  # noqa: F401 (every run starts from app.py)
from tests.pages.test_app import assert_clean, shown as _shown

APP = REPO / "app.py"
PAGE = "pages/benchmark.py"
METHODS = ["platt", "histogram", "isotonic"]


def over_confident(seed: int, n: int = 600):
    """Scores whose true probability is score**3: far from calibrated, easy to fix."""
    rng = np.random.default_rng(seed)
    s = rng.uniform(0.01, 0.99, n)
    y = (rng.uniform(size=n) < s ** 3).astype(int)
    return build_score_set(pd.DataFrame({"score": s, "label": y}), name=f"synthetic {seed}")


@pytest.fixture(scope="module")
def six():
    return {f"d{i}": over_confident(i) for i in range(6)}


@pytest.fixture(scope="module")
def result(six):
    return benchmark.run_benchmark(six, METHODS, n_folds=3, repeats=2, seed=5, metric="ECE", reference="isotonic")


def test_a_unit_is_one_kfold_evaluate_call(six, result):
    ss = six["d2"]
    for r in (0, 1):
        ev = evaluate(ss.scores, ss.labels, ["histogram"], Scheme("kfold", n_folds=3, seed=5 + r))
        row = result.units.query("dataset == 'd2' and method == 'histogram' and repeat == @r").iloc[0]
        assert row["seed"] == 5 + r
        for m in ("AUC", "ECE", "MVCE", "LogLoss"):
            assert row[m] == pytest.approx(ev.metrics.loc["histogram", m])
        raw = result.units.query("dataset == 'd2' and method == @UNCALIBRATED and repeat == @r").iloc[0]
        assert raw["ECE"] == pytest.approx(ev.metrics.loc[UNCALIBRATED, "ECE"])


def test_means_ranks_and_tests_follow_from_the_units(result):
    n, k = 6, 4
    assert result.complete and len(result.units) == n * 2 * k
    assert result.methods == [UNCALIBRATED, *METHODS] and result.datasets == [f"d{i}" for i in range(6)]
    by_hand = result.units.groupby(["dataset", "method"])["ECE"].mean().unstack()
    pd.testing.assert_frame_equal(result.table, by_hand.loc[result.table.index, result.table.columns],
                                  check_names=False)
    np.testing.assert_allclose(result.ranks.sum(axis=1), k * (k + 1) / 2)
    pd.testing.assert_series_equal(result.average_ranks, rank_tests.average_ranks(result.table), check_names=False)
    assert result.friedman == rank_tests.friedman(result.table)
    # AUC: higher is better, so the ranks per metric are taken in that direction
    assert result.rank_summary["AUC"].to_dict() == rank_tests.average_ranks(
        result.means["AUC"].unstack().loc[result.datasets, result.methods], lower_is_better=False).to_dict()


def test_calibrators_beat_over_confident_scores_significantly(result):
    """On every data set the raw scores have the worst ECE, so their average rank is k; with 6 data sets
    and 4 methods the Friedman test rejects and Holm separates them from the reference."""
    assert (result.ranks[UNCALIBRATED] == 4).all()
    assert result.friedman.reject
    assert result.holm.loc[UNCALIBRATED, "significant"] and result.holm.loc[UNCALIBRATED, "diff"] > 0
    assert UNCALIBRATED not in result.joined() and "isotonic" in result.joined()
    text = result.describe()
    assert "rejects" in text and "uncalibrated is significantly worse" in text


def test_no_post_hoc_without_a_significant_friedman():
    """8 data sets, 6 methods, ranks chosen so that Holm alone would separate "c" from the reference
    (p = 0.0050 < 0.05/5) while the Friedman test does not reject (F_F = 1.83, p = 0.13): as in the papers,
    the post-hoc result does not count and every method shares the bar."""
    rows = [[3, 5, 1, 6, 4, 2], [2, 4, 3, 6, 5, 1], [1, 4, 6, 5, 2, 3], [1, 2, 3, 4, 6, 5],
            [1, 3, 2, 4, 5, 6], [5, 6, 4, 1, 3, 2], [2, 3, 5, 6, 1, 4], [2, 1, 3, 6, 5, 4]]
    names = ["ref", "a", "b", "c", "d", "e"]
    units = pd.DataFrame([{"dataset": f"d{i}", "repeat": 0, "seed": 0, "method": m, "ECE": r / 100}
                          for i, row in enumerate(rows) for m, r in zip(names, row)])
    r = benchmark.summarise(units, metric="ECE", reference="ref")
    assert not r.friedman.reject and r.friedman.ff == pytest.approx(1.8288, abs=1e-4)
    assert r.holm.index[0] == "c" and r.holm.loc["c", "reject"] and not r.holm["significant"].any()
    assert r.joined() == names
    assert "finds no significant difference" in r.describe()


def test_progress_is_reported_per_fold_and_reaches_one(six):
    calls = []
    ds = {k: six[k] for k in ("d0", "d1")}
    benchmark.run_benchmark(ds, ["platt", "isotonic"], n_folds=4, repeats=2,
                            progress=lambda f, m: calls.append((f, m)))
    # per (data set, repeat): the raw scores once, and each calibrator once per fold
    assert len(calls) == 2 * 2 * (1 + 2 * 4)
    fracs = [f for f, _ in calls]
    assert fracs == sorted(fracs) and fracs[-1] == pytest.approx(1.0)
    assert sum("fold 4 of 4" in m for _, m in calls) == 2 * 2 * 2


class Interrupted(Exception):
    """Stands for what stops a run from outside: the dashboard's Stop reruns the page, and Streamlit raises its
    rerun exception inside the next progress call."""


def test_an_interrupted_run_keeps_its_finished_units_and_resumes_from_the_cache(six):
    ds = {k: six[k] for k in ("d0", "d1", "d2")}
    cache = benchmark.UnitCache()
    seen = []

    def stop_in_the_second_data_set(frac, msg):
        seen.append(msg)
        if msg.startswith("d1 · histogram"):
            raise Interrupted

    with pytest.raises(Interrupted):
        benchmark.run_benchmark(ds, METHODS, n_folds=3, repeats=1, progress=stop_in_the_second_data_set,
                                cache=cache)
    # every unit of d0 and the two before histogram on d1 finished and are cached: 4 + 2
    assert len(cache) == 6
    # only what is cached, nothing fitted: the complete blocks so far
    partial = benchmark.run_benchmark(ds, METHODS, n_folds=3, repeats=1, cache=cache, compute=False)
    assert not partial.complete and len(partial.units) == 6 and partial.planned == 3 * 4
    assert partial.datasets == ["d0"] and "d1" in " ".join(partial.notes)
    # resuming fits only the missing units (histogram and isotonic on d1, the calibrators on d2) and gives the
    # uninterrupted answer
    fitted = []
    resumed = benchmark.run_benchmark(ds, METHODS, n_folds=3, repeats=1, cache=cache,
                                      progress=lambda f, m: fitted.append(m) if "fold 1 of" in m else None)
    fresh = benchmark.run_benchmark(ds, METHODS, n_folds=3, repeats=1)
    assert [m.split(" · ")[:2] for m in fitted] == [["d1", "histogram"], ["d1", "isotonic"], ["d2", "platt"],
                                                    ["d2", "histogram"], ["d2", "isotonic"]]
    assert resumed.complete
    pd.testing.assert_frame_equal(resumed.table, fresh.table)


def test_summarise_reranks_without_refitting(result):
    auc = benchmark.summarise(result.units, metric="AUC", reference="platt", n_folds=3, repeats=2)
    assert not auc.lower_is_better and auc.reference == "platt"
    pd.testing.assert_series_equal(auc.average_ranks, result.rank_summary["AUC"], check_names=False)
    assert list(auc.holm.index) != [] and "platt" not in auc.holm.index


def test_cache_key_tracks_data_parameters_and_seed(six):
    a = benchmark.unit_key(six["d0"], calibrators.get("histogram", n_bins=10), 5, 0)
    assert a == benchmark.unit_key(six["d0"], calibrators.get("histogram"), 5, 0)
    assert a != benchmark.unit_key(six["d0"], calibrators.get("histogram", n_bins=5), 5, 0)
    assert a != benchmark.unit_key(six["d1"], calibrators.get("histogram"), 5, 0)
    assert a != benchmark.unit_key(six["d0"], calibrators.get("histogram"), 5, 1)
    assert a != benchmark.unit_key(six["d0"], None, 5, 0)


def test_refusals_name_the_problem(six):
    with pytest.raises(SettingsError, match="unknown metric"):
        benchmark.run_benchmark(six, METHODS, metric="F1")
    with pytest.raises(SettingsError, match="reference"):
        benchmark.run_benchmark({"d0": six["d0"]}, ["platt"], n_folds=2, repeats=1, reference="bbq")
    with pytest.raises(SettingsError, match="raw scores"):
        benchmark.run_benchmark(six, {UNCALIBRATED: calibrators.get("platt")})
    tiny = build_score_set(pd.DataFrame({"score": np.linspace(0.05, 0.95, 20), "label": [1] * 1 + [0] * 19}),
                           name="tiny")                      # one positive: no fold can both fit on and judge it
    with pytest.raises(DataError, match="'tiny'.*at least 2 rows of each class"):
        benchmark.run_benchmark({"tiny": tiny}, ["platt"], n_folds=5, repeats=1)


def test_one_data_set_gives_tables_but_no_test(six):
    r = benchmark.run_benchmark({"d0": six["d0"]}, ["platt"], n_folds=3, repeats=1, metrics=("AUC",))
    assert r.friedman is None and r.holm is None and r.table.shape == (1, 2)
    assert list(r.rank_summary.columns) == ["AUC", "ECE"]          # the kept metrics plus the ranked one
    assert "no test across data sets" in r.describe()


def test_reference_defaults_to_bbq_when_present():
    assert benchmark.default_reference([UNCALIBRATED, "platt", "bbq"]) == "bbq"
    assert benchmark.default_reference([UNCALIBRATED, "isotonic", "platt"]) == "isotonic"


# -- report ----------------------------------------------------------------------------------------------
def test_report_tables_carry_their_kind_and_the_result_numbers(result):
    labels = {UNCALIBRATED: "Raw", "platt": "Platt"}
    tables = benchmark.report_tables(result, labels)
    assert [t.kind for t in tables] == [TableKind.PER_DATASET_MEAN, TableKind.PER_DATASET_RANK,
                                        TableKind.AVERAGE_RANK, TableKind.FRIEDMAN, TableKind.HOLM]
    by_kind = {t.kind: t for t in tables}
    names = ["Raw", "Platt", "histogram", "isotonic"]
    mean = by_kind[TableKind.PER_DATASET_MEAN]
    assert list(mean.frame.columns) == names and mean.lower_is_better is True          # ECE
    np.testing.assert_array_equal(mean.frame.to_numpy(), result.table.to_numpy())
    np.testing.assert_array_equal(by_kind[TableKind.PER_DATASET_RANK].frame.to_numpy(), result.ranks.to_numpy())
    avg = by_kind[TableKind.AVERAGE_RANK]
    assert list(avg.frame.index) == names and avg.lower_is_better is True
    assert by_kind[TableKind.FRIEDMAN].lower_is_better is None
    assert by_kind[TableKind.FRIEDMAN].frame.loc["ECE", "F_F"] == pytest.approx(result.friedman.ff)
    holm = by_kind[TableKind.HOLM]
    assert holm.lower_is_better is None and "Raw" in holm.frame.index and "isotonic" not in holm.frame.index
    # the kind is data, the title is for people: the kinds' values are stable strings
    assert {str(t.kind) for t in tables} == {"per_dataset_mean", "per_dataset_rank", "average_rank", "friedman",
                                             "holm"}


def test_report_of_a_higher_is_better_metric_and_of_one_data_set(six, result):
    auc = benchmark.summarise(result.units, metric="AUC", reference="platt", n_folds=3, repeats=2)
    assert benchmark.report_tables(auc)[0].lower_is_better is False
    one = benchmark.run_benchmark({"d0": six["d0"]}, ["platt"], n_folds=3, repeats=1)
    assert [t.kind for t in benchmark.report_tables(one)] == [TableKind.PER_DATASET_MEAN,
                                                              TableKind.PER_DATASET_RANK, TableKind.AVERAGE_RANK]


def test_load_benchmark_datasets_makes_one_data_set_per_score_column(tmp_path):
    for i, name in enumerate(("one.csv", "two.csv")):
        rng = np.random.default_rng(i)
        s = rng.uniform(0.01, 0.99, 300)
        df = pd.DataFrame({"score": s, "label": (rng.uniform(size=300) < s).astype(int)})
        if i:
            df["other_score"] = np.clip(s + rng.normal(0, 0.1, 300), 0.01, 0.99)
        df.to_csv(tmp_path / name, index=False)
    sets = benchmark.load_benchmark_datasets([str(tmp_path)])[1]
    assert list(sets) == ["one.csv", "two.csv · score", "two.csv · other_score"]
    assert sets["two.csv · other_score"].score == "other_score" and sets["one.csv"].n_rows == 300
    only = benchmark.load_benchmark_datasets([str(tmp_path / "two.csv")], scores=["other_score"])[1]
    assert list(only) == ["two.csv"] and only["two.csv"].score == "other_score"
    (tmp_path / "empty").mkdir()
    with pytest.raises(DataError, match="holds no .csv"):
        benchmark.load_benchmark_datasets([str(tmp_path / "empty")])


# -- figures ---------------------------------------------------------------------------------------------
DEMSAR = pd.Series({"C4.5": 3.143, "C4.5+m": 2.000, "C4.5+cf": 2.893, "C4.5+m+cf": 1.964})


def test_rank_diagram_joins_exactly_the_methods_holm_keeps():
    """Demšar's example against C4.5: Holm separates C4.5+m+cf and C4.5+m, so the bar joins C4.5 and C4.5+cf."""
    h = rank_tests.holm(DEMSAR, 14, "C4.5")
    joined = ["C4.5"] + [m for m in h.index if not h.loc[m, "reject"]]
    data = bfig.rank_diagram_data(DEMSAR, "C4.5", joined)
    assert data["method"].tolist() == ["C4.5", "C4.5+cf", "C4.5+m", "C4.5+m+cf"]      # worst first
    assert data["side"].tolist() == ["left", "left", "right", "right"]
    assert data["row"].tolist() == [1, 2, 2, 1]           # outermost methods on the top row
    assert data.set_index("method")["joined"].to_dict() == {"C4.5": True, "C4.5+cf": True, "C4.5+m": False,
                                                            "C4.5+m+cf": False}
    fig = bfig.rank_diagram(data)
    bars = [t for t in fig.data if t.mode == "lines" and t.line.width == 6]
    assert len(bars) == 1
    left, right = (0.27, 0.73)
    pos = {r: left + (right - left) * (4 - r) / 3 for r in (3.143, 2.893, 2.000)}
    x0, x1 = bars[0].x
    assert x0 < pos[3.143] < pos[2.893] < x1 < pos[2.000]    # covers C4.5 and C4.5+cf, stops before C4.5+m
    markers = {t.name: t.x[0] for t in fig.data if t.mode == "markers"}
    assert markers["C4.5+m+cf"] > markers["C4.5+m"] > markers["C4.5+cf"] > markers["C4.5"]   # best on the right


def test_rank_diagram_without_a_test_has_no_bar():
    fig = bfig.rank_diagram(bfig.rank_diagram_data(DEMSAR))
    assert not [t for t in fig.data if t.mode == "lines" and t.line.width == 6]


def test_heatmap_colours_by_rank_and_prints_values(result):
    cells = bfig.heatmap_data(result.table, result.ranks)
    assert len(cells) == result.table.size
    fig = bfig.metric_heatmap(cells, metric="ECE")
    np.testing.assert_array_equal(np.array(fig.data[0].z, dtype=float), result.ranks.to_numpy())
    v = result.table.loc["d0", "platt"]
    assert f"{v:.4f}<br>({result.ranks.loc['d0', 'platt']:g})" in np.array(fig.data[0].text).ravel()


# -- the page (AppTest) ------------------------------------------------------------------------------------
def open_page(sample: str | None = None) -> AppTest:
    """A fresh session on the page; ``sample``: a multi-class sample uploaded on the Data page first."""
    at = AppTest.from_file(str(APP), default_timeout=APPTEST_TIMEOUT).run()
    if sample is not None:
        go(at, "pages/data.py")
        upload(at, sample, (REPO / "sample_data" / "multiclass" / sample).read_bytes())
    at.switch_page(PAGE).run()
    return at


def test_page_runs_a_benchmark_and_shows_the_result():
    at = open_page()
    assert not at.exception, [e.value for e in at.exception]
    assert at.title[0].value == "Benchmark calibrators across data sets"
    assert at.multiselect(key="bench.methods").value == ["platt", "histogram", "isotonic", "bbq"]
    assert not at.get("plotly_chart")                     # nothing runs before the button
    at.multiselect(key="bench.datasets").set_value(["circles_svm · linear_svm", "breast_cancer_nb"]).run()
    at.select_slider(key="bench.folds").set_value(3).run()
    at.select_slider(key="bench.repeats").set_value(1).run()
    at.button(key="bench.run").click().run()
    assert not at.exception, [e.value for e in at.exception]
    assert not at.error, [_shown(e.value) for e in at.error]
    keys = {el.proto.id.rsplit("-", 1)[-1] for el in at.get("plotly_chart")}
    assert {"bench.ranks", "bench.heatmap"} <= keys
    means = at.dataframe[0].value
    assert list(means.index) == ["circles_svm · linear_svm", "breast_cancer_nb"]
    assert means.columns[0] == "Uncalibrated" and means.notna().all().all()
    summary = " ".join(_shown(m.value) for m in at.markdown)
    assert "On ECE" in summary and "over 2 data sets" in summary
    # one table per kind (means, ranks, average ranks, Friedman, Holm), the tests' tables with their formulas
    assert len(at.dataframe) == len(TableKind)
    assert set(at.dataframe[4].value.index) == {"Uncalibrated", "Platt scaling", "Histogram binning",
                                                "Isotonic regression"}                   # Holm: all but BBQ
    captions = " ".join(_shown(c.value) for c in at.caption)
    assert "chi2_F = 12N/(k(k+1))" in captions and "alpha / (k - i)" in captions
    # another ranking metric and reference: no refit, the sentence follows
    at.selectbox(key="bench.metric").set_value("AUC").run()
    at.selectbox(key="bench.reference").set_value("isotonic").run()
    assert not at.exception
    summary = " ".join(_shown(m.value) for m in at.markdown)
    assert "On AUC (higher is better)" in summary and "Isotonic regression" in summary
    # a further measure ranks too, from the same run (the pieces computed every rankable measure)
    at.selectbox(key="bench.metric").set_value("Slope").run()
    assert not at.exception and not at.warning
    summary = " ".join(_shown(m.value) for m in at.markdown)
    assert "On Slope (1 is ideal)" in summary
    # Stop after the run keeps the results on the page
    at.button(key="bench.stop").click().run()
    assert not at.exception and at.dataframe


def test_page_uses_uploaded_files_and_refuses_bad_ones_politely():
    at = open_page()
    rng = np.random.default_rng(0)
    s = rng.uniform(0.01, 0.99, 200)
    good = ("score,label\n" + "".join(f"{a:.4f},{int(b)}\n" for a, b in zip(s, rng.uniform(size=200) < s))).encode()
    at.file_uploader(key="bench.uploader").set_value(
        [("mine.csv", good, "text/csv"), ("bad.csv", b"score,label\n0.1,1\n0.2,0\n", "text/csv")]).run()
    assert not at.exception, [e.value for e in at.exception]
    assert any("bad.csv" in _shown(e.value) and "at least 20" in _shown(e.value) for e in at.error)
    assert "mine.csv" in at.multiselect(key="bench.datasets").options
    at.multiselect(key="bench.datasets").set_value(["mine.csv", "breast_cancer_nb"]).run()
    at.multiselect(key="bench.methods").set_value(["platt", "isotonic"]).run()
    at.select_slider(key="bench.repeats").set_value(1).run()
    at.button(key="bench.run").click().run()
    assert not at.exception, [e.value for e in at.exception]
    assert list(at.dataframe[0].value.index) == ["mine.csv", "breast_cancer_nb"]


def test_page_reports_a_data_set_that_k_fold_cannot_use():
    at = open_page()
    rows = "".join(f"{0.05 + 0.03 * i:.2f},{int(i == 0)}\n" for i in range(30))          # 1 positive
    at.file_uploader(key="bench.uploader").set_value([("few.csv", ("score,label\n" + rows).encode(), "text/csv")]).run()
    at.multiselect(key="bench.datasets").set_value(["few.csv", "breast_cancer_nb"]).run()
    at.button(key="bench.run").click().run()
    assert not at.exception, [e.value for e in at.exception]
    assert any("few.csv" in _shown(e.value) and "at least 2 rows of each class" in _shown(e.value)
               for e in at.error)
    at.run()                                               # the failed run is not retried on every rerun
    assert not at.exception and not any("few.csv" in _shown(e.value) for e in at.error)


# -- K-class data sets: the same protocol, the multi-class measures -----------------------------------------
SAMPLES = REPO / "sample_data" / "multiclass"
CLASS_METHODS = ["ovr:histogram", "top_label:histogram"]


def _draw(k: int, t: float, seed: int, n: int = 600) -> pd.DataFrame:
    return gaussian_classes(k, temperature=t).draw(n, seed, decimals=6).frame.drop(
        columns=[f"true_{c}" for c in range(k)] + ["x1", "x2"])


@pytest.fixture(scope="module")
def class_sets():
    frames = {"a": _draw(3, 2.0, 1), "b": _draw(4, 3.0, 2), "c": _draw(5, 1.5, 3)}
    return {name: cdata.build_class_set(df, name=name) for name, df in frames.items()}


@pytest.fixture(scope="module")
def class_result(class_sets):
    return benchmark.run_benchmark(class_sets, CLASS_METHODS, n_folds=3, repeats=2)


def test_kclass_ranks_sum_and_average(class_result):
    """Each data set's ranks are a permutation of 1..k (mid-ranks for ties): they sum to k(k+1)/2; the average
    ranks are the column means, and the ranked measure is the log-loss, as Kull et al. (2019) rank first."""
    k = len(class_result.methods)
    assert class_result.metric == "LogLoss" and class_result.catalogue is benchmark.CLASS_MEASURES
    np.testing.assert_allclose(class_result.ranks.sum(axis=1), k * (k + 1) / 2)
    np.testing.assert_allclose(class_result.average_ranks, class_result.ranks.mean(axis=0))
    assert {"LogLoss", "cwECE"} <= set(class_result.rank_summary.columns)
    np.testing.assert_allclose(class_result.rank_summary.sum(axis=0), k * (k + 1) / 2)
    assert class_result.friedman is not None and class_result.holm is not None


def test_kclass_values_are_the_mean_of_the_units(class_result, class_sets):
    """A data set's value is the mean over repeats of its units; each unit is evaluate_classes on K folds."""
    u = class_result.units
    for d in class_sets:
        for m in class_result.methods:
            rows = u[(u["dataset"] == d) & (u["method"] == m)]
            assert len(rows) == 2
            assert class_result.table.loc[d, m] == pytest.approx(rows["LogLoss"].mean(), rel=1e-12)
    raw = u[(u["dataset"] == "a") & (u["method"] == UNCALIBRATED)].iloc[0]
    cs = class_sets["a"]
    assert raw["cwECE"] == pytest.approx(mmetrics.classwise_ece(cs.scores().probabilities, cs.labels), rel=1e-12)


def test_kclass_row_order_does_not_change_the_result(class_sets, class_result):
    """Folds are cut by the rows' content, so a data set with its rows shuffled gives the same numbers."""
    shuffled = {}
    for name, cs in class_sets.items():
        df = cs.raw.sample(frac=1.0, random_state=5).reset_index(drop=True)
        shuffled[name] = cdata.build_class_set(df, name=name)
    again = benchmark.run_benchmark(shuffled, CLASS_METHODS, n_folds=3, repeats=2)
    pd.testing.assert_frame_equal(again.table, class_result.table, rtol=1e-10)
    pd.testing.assert_frame_equal(again.rank_summary, class_result.rank_summary)


def test_kclass_cache_resumes_and_compute_false(class_sets):
    cache = benchmark.UnitCache()
    first = benchmark.run_benchmark(class_sets, CLASS_METHODS[:1], n_folds=2, repeats=1, cache=cache)
    seen = benchmark.run_benchmark(class_sets, CLASS_METHODS[:1], n_folds=2, repeats=1, cache=cache, compute=False)
    pd.testing.assert_frame_equal(first.table, seen.table)
    assert len(cache) == 2 * len(class_sets)


def test_binary_and_kclass_files_refused_together(tmp_path):
    (tmp_path / "k.csv").write_text(_draw(3, 2.0, 1).to_csv(index=False))
    pd.DataFrame({"score": np.linspace(0.05, 0.95, 60), "label": np.arange(60) % 2}).to_csv(tmp_path / "b.csv",
                                                                                        index=False)
    with pytest.raises(DataError, match="b.csv is binary, k.csv"):
        benchmark.load_benchmark_datasets([str(tmp_path)])
    kind, found = benchmark.load_benchmark_datasets([str(tmp_path / "k.csv")])
    assert kind == "multiclass" and isinstance(found["k.csv"], cdata.ClassSet)


def test_binary_and_kclass_data_sets_are_refused_together(class_sets):
    ss = cdata.build_score_set(pd.DataFrame({"s": np.linspace(0.05, 0.95, 60), "y": np.arange(60) % 2}))
    with pytest.raises(DataError, match="not a K-class table"):
        benchmark.run_benchmark({"a": class_sets["a"], "bin": ss}, CLASS_METHODS)


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


def test_benchmark_kclass_samples_rank_on_log_loss():
    """With K-class data active, Benchmark offers the K-class samples and the multi-class methods; a run ranks on
    the log-loss and shows average ranks on classwise ECE too. Mixing binary and K-class sets is refused."""
    at = open_page("animals_3class.csv")
    assert_clean(at)
    chosen = at.multiselect(key="bench.datasets").value
    assert chosen and all("classes)" in d for d in chosen)
    at.multiselect(key="bench.mc.methods").set_value(["ovr:histogram", "top_label:histogram"]).run()
    at.select_slider(key="bench.repeats").set_value(1).run()
    at.button(key="bench.run").click().run()
    assert_clean(at)
    text = "\n".join(m.value for m in at.main.markdown)
    assert "On LogLoss (lower is better) over 3 data sets" in text
    avg = next(d.value for d in at.main.dataframe if "cwECE" in d.value.columns)
    np.testing.assert_allclose(avg["cwECE"].sum(), 3 * 4 / 2)          # 3 methods: ranks sum to 6
    at.multiselect(key="bench.datasets").set_value([chosen[0], "circles_svm · linear_svm"]).run()
    assert "cannot be benchmarked together" in at.main.error[0].value
