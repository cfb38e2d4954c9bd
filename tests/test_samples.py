"""Tests of the shipped sample data (sample_data/) and calibdash.samples."""
from __future__ import annotations

import importlib.util
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from calibdash import EnvironmentProblem, SettingsError, samples
from calibdash.data import guess_roles, read_table
from calibdash.metrics import accuracy, auc
from calibdash.samples import DEFAULT_SAMPLE, SAMPLES, load_sample, sample_path

REPO = Path(__file__).resolve().parents[1]


def _make_samples_module():
    spec = importlib.util.spec_from_file_location("make_samples", REPO / "sample_data" / "make_samples.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


@pytest.fixture(scope="module")
def make_samples():
    return _make_samples_module()


@pytest.fixture(scope="module")
def committed():
    return {name: pd.read_csv(sample_path(name)) for name in SAMPLES}


# ---------------------------------------------------------------------------
# registry
# ---------------------------------------------------------------------------
def test_registry_and_paths():
    assert list(SAMPLES) == ["circles_svm", "breast_cancer_nb", "ctr_120k"]
    assert DEFAULT_SAMPLE == "circles_svm"
    for name, s in SAMPLES.items():
        assert s.name == name
        path = sample_path(name)
        assert path == REPO / "sample_data" / s.filename and path.is_file()
    with pytest.raises(SettingsError, match="unknown sample 'iris'; available: circles_svm, "):
        load_sample("iris")
    with pytest.raises(SettingsError, match="unknown sample 'iris'"):
        sample_path("iris")


def test_missing_sample_file_is_an_environment_problem(monkeypatch, tmp_path):
    monkeypatch.setattr(samples, "SAMPLE_DIR", tmp_path)
    with pytest.raises(EnvironmentProblem, match=r"sample file .*circles_svm\.csv is missing; regenerate it with "
                                                 r"`python sample_data/make_samples\.py`"):
        load_sample("circles_svm")


def test_generators_match_the_registry(make_samples):
    assert list(make_samples.GENERATORS) == [s.filename for s in SAMPLES.values()]


# ---------------------------------------------------------------------------
# role guessing and loading, per sample
# ---------------------------------------------------------------------------
EXPECTED_ROLES = {
    "circles_svm": ("label", ["linear_svm", "quadratic_svm"], ["x1", "x2"], "split"),
    "breast_cancer_nb": ("malignant", ["nb_score"],
                         ["mean_radius", "mean_texture", "mean_perimeter", "mean_area"], None),
    "ctr_120k": ("click", ["pctr"], ["device", "site_category", "hour", "banner_pos", "user_age"], None),
}


@pytest.mark.parametrize("name", list(SAMPLES))
def test_roles_are_guessed_without_hints(name, committed):
    roles = guess_roles(committed[name])
    assert (roles.label, roles.scores, roles.features, roles.split) == EXPECTED_ROLES[name]
    s = SAMPLES[name]
    assert roles.label == s.label and s.score in roles.scores


@pytest.mark.parametrize("name,n,n_pos", [("circles_svm", 2000, 1000), ("breast_cancer_nb", 569, 212),
                                          ("ctr_120k", 120_000, None)])
def test_load_sample(name, n, n_pos, committed):
    ss = load_sample(name)
    raw = committed[name]
    assert ss.score == SAMPLES[name].score and ss.n_rows == n and ss.report.dropped == {}
    assert ss.report.mapped == {} and ss.positive_label == 1
    np.testing.assert_allclose(ss.scores, raw[ss.score].to_numpy())
    np.testing.assert_array_equal(ss.labels, raw[ss.label_column].to_numpy())
    if n_pos is not None:
        assert int(ss.labels.sum()) == n_pos


def test_load_sample_other_score_and_split():
    ss = load_sample("circles_svm", score="quadratic_svm")
    assert ss.score == "quadratic_svm" and ss.split_column == "split"
    assert sorted(set(ss.split)) == ["test", "train"]


# ---------------------------------------------------------------------------
# what each sample is meant to show
# ---------------------------------------------------------------------------
def test_circles_geometry_and_svms(committed):
    df = committed["circles_svm"]
    r = np.hypot(df["x1"], df["x2"])
    assert r[df["label"] == 0].max() < 2.0 + 1e-5 and r[df["label"] == 1].min() > 2.0 - 1e-5
    assert r.max() < 4.0 + 1e-5
    counts = df.groupby(["split", "label"]).size()
    assert counts.tolist() == [500, 500, 500, 500]
    test = df[df["split"] == "test"]
    y = test["label"].to_numpy()
    assert auc(test["quadratic_svm"].to_numpy(), y) > 0.99
    assert accuracy(test["quadratic_svm"].to_numpy(), y) > 0.97
    assert auc(test["linear_svm"].to_numpy(), y) < 0.6       # a line cannot rank circles


def test_breast_cancer_nb_is_over_confident(committed):
    df = committed["breast_cancer_nb"]
    p = df["nb_score"].to_numpy()
    assert ((p < 1e-3) | (p > 1 - 1e-3)).mean() > 0.8
    assert auc(p, df["malignant"].to_numpy()) > 0.95


def test_ctr_miscalibration_depends_on_site_category(committed):
    df = committed["ctr_120k"]
    df = df.assign(band=pd.qcut(df["pctr"], 4, labels=False))
    g = df.groupby(["band", "site_category"])
    ratio = (g["click"].sum() / g["pctr"].sum()).unstack()
    # at the same score band, news is over-estimated and games under-estimated, in every band
    assert (ratio["news"] < 0.85).all() and (ratio["games"] > 1.3).all()


# ---------------------------------------------------------------------------
# determinism: regenerating gives the committed files
# ---------------------------------------------------------------------------
def _assert_same(got: pd.DataFrame, want: pd.DataFrame):
    assert list(got.columns) == list(want.columns) and len(got) == len(want)
    for c in want.columns:
        if pd.api.types.is_numeric_dtype(want[c]):
            np.testing.assert_allclose(got[c].to_numpy(float), want[c].to_numpy(float),
                                       rtol=1e-5, atol=2e-6, err_msg=c)
        else:
            assert got[c].astype(str).tolist() == want[c].astype(str).tolist(), c


def test_small_samples_regenerate_identically(make_samples, committed, tmp_path):
    files = ["circles_svm.csv", "breast_cancer_nb.csv"]
    make_samples.write_all(tmp_path, only=files)
    for name in ("circles_svm", "breast_cancer_nb"):
        path = tmp_path / SAMPLES[name].filename
        _assert_same(pd.read_csv(path), committed[name])


def test_ctr_regenerates_identically(make_samples, committed):
    _assert_same(make_samples.make_ctr(), committed["ctr_120k"])


def test_generators_depend_on_seed(make_samples):
    a = make_samples.make_ctr(seed=1, n=1000)
    b = make_samples.make_ctr(seed=2, n=1000)
    assert not np.array_equal(a["pctr"].to_numpy(), b["pctr"].to_numpy())
    pd.testing.assert_frame_equal(a, make_samples.make_ctr(seed=1, n=1000))


def test_committed_files_read_cleanly():
    for name in SAMPLES:
        df, info = read_table(sample_path(name))
        assert info.format == "csv" and info.delimiter == "," and info.encoding == "utf-8"
        assert not df.isna().any().any()
