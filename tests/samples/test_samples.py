"""Tests of the sample data (sample_data/, calibdash.samples and its generators in calibdash.samples.make)."""
from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from calibdash import EnvironmentProblem, SettingsError, samples
from calibdash.data import guess_roles, read_table
from calibdash.measures.calibration import accuracy, auc
from calibdash.samples import DEFAULT_SAMPLE, SAMPLES, load_sample, sample_path
from calibdash.samples import make as make_samples

REPO = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def committed():
    return {name: pd.read_csv(sample_path(name)) for name in SAMPLES}


@pytest.fixture
def installed_layout(monkeypatch, tmp_path):
    """calibdash as if installed: no sample_data/ next to the package, the user cache under tmp_path."""
    monkeypatch.setattr(samples, "SAMPLE_DIR", None)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    return tmp_path / "cache"


# ---------------------------------------------------------------------------
# registry, paths and the cache
# ---------------------------------------------------------------------------
def test_registry_and_paths():
    assert list(SAMPLES) == ["circles_svm", "breast_cancer_nb", "ctr_120k", "drift"]
    assert DEFAULT_SAMPLE == "circles_svm"
    assert samples.SAMPLE_DIR == REPO / "sample_data"          # a checkout uses its own files
    for name, s in SAMPLES.items():
        assert s.name == name
        path = sample_path(name)
        assert path == REPO / "sample_data" / s.filename and path.is_file()
    with pytest.raises(SettingsError, match="unknown sample 'iris'; available: circles_svm, "):
        load_sample("iris")
    with pytest.raises(SettingsError, match="unknown sample 'iris'"):
        sample_path("iris")


def test_cache_dir_follows_xdg_cache_home(monkeypatch, tmp_path):
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    d = samples.cache_dir()
    assert d.parent == tmp_path / "calibdash" / "samples" and len(d.name) == 12
    assert not d.exists()                                       # created only when a file is generated
    monkeypatch.setenv("XDG_CACHE_HOME", "relative/ignored")    # the XDG spec: relative values are ignored
    if os.name != "nt":
        assert samples.cache_dir().parent == Path.home() / ".cache" / "calibdash" / "samples"
    monkeypatch.delenv("XDG_CACHE_HOME")
    if os.name != "nt":
        assert samples.cache_dir().parent == Path.home() / ".cache" / "calibdash" / "samples"


def test_installed_copy_generates_samples_once_into_the_cache(installed_layout, committed, monkeypatch):
    path = sample_path("breast_cancer_nb")
    assert path == samples.cache_dir() / "breast_cancer_nb.csv" and path.is_relative_to(installed_layout)
    _assert_same(pd.read_csv(path), committed["breast_cancer_nb"])
    assert [p.name for p in path.parent.iterdir()] == ["breast_cancer_nb.csv"]     # no temporary file left
    # the second call reads the cached file: generation is not run again
    monkeypatch.setitem(make_samples.GENERATORS, "breast_cancer_nb.csv", lambda: pytest.fail("regenerated"))
    assert sample_path("breast_cancer_nb") == path
    ss = load_sample("breast_cancer_nb")
    assert ss.n_rows == 569 and ss.score == "nb_score"


def test_a_file_missing_from_sample_data_is_generated_into_the_cache(monkeypatch, tmp_path):
    monkeypatch.setattr(samples, "SAMPLE_DIR", tmp_path / "empty")
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    assert sample_path("circles_svm").is_relative_to(tmp_path / "cache")


def test_unwritable_cache_is_an_environment_problem(installed_layout, monkeypatch):
    def refuse(fname, out_dir):
        raise PermissionError(13, "Permission denied")

    monkeypatch.setattr(make_samples, "write", refuse)
    with pytest.raises(EnvironmentProblem, match=r"cannot write sample circles_svm\.csv into the cache folder "
                                                 r".*: Permission denied\. Point XDG_CACHE_HOME to a writable folder"):
        load_sample("circles_svm")


def test_cache_that_is_a_file_is_an_environment_problem(installed_layout):
    installed_layout.parent.mkdir(exist_ok=True)
    installed_layout.write_text("not a folder")
    with pytest.raises(EnvironmentProblem, match=r"cannot write sample circles_svm\.csv into the cache folder "
                                                 r".*Point XDG_CACHE_HOME to a writable folder"):
        load_sample("circles_svm")


def test_generators_match_the_registry():
    assert list(make_samples.GENERATORS) == [s.filename for s in SAMPLES.values()]


# ---------------------------------------------------------------------------
# role guessing and loading, per sample
# ---------------------------------------------------------------------------
EXPECTED_ROLES = {
    "circles_svm": ("label", ["linear_svm", "quadratic_svm"], ["x1", "x2"], "split"),
    "breast_cancer_nb": ("malignant", ["nb_score"],
                         ["mean_radius", "mean_texture", "mean_perimeter", "mean_area"], None),
    "ctr_120k": ("click", ["pctr"], ["device", "site_category", "hour", "banner_pos", "user_age"], None),
    "drift": ("label", ["score"], ["date", "segment"], None),
}


@pytest.mark.parametrize("name", list(SAMPLES))
def test_roles_are_guessed_without_hints(name, committed):
    roles = guess_roles(committed[name])
    assert (roles.label, roles.scores, roles.features, roles.split) == EXPECTED_ROLES[name]
    s = SAMPLES[name]
    assert roles.label == s.label and s.score in roles.scores


@pytest.mark.parametrize("name,n,n_pos", [("circles_svm", 2000, 1000), ("breast_cancer_nb", 569, 212),
                                          ("ctr_120k", 120_000, None), ("drift", 20_000, 4114)])
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


@pytest.mark.parametrize("name", list(SAMPLES))
def test_package_generators_reproduce_the_committed_files(name, committed, tmp_path):
    """The package's generator gives the repository's file (same columns, values to 1e-6; bytes on the pins)."""
    path = make_samples.write(SAMPLES[name].filename, tmp_path)
    _assert_same(pd.read_csv(path), committed[name])
    assert [p.name for p in tmp_path.iterdir()] == [path.name]


def test_make_samples_script_is_a_wrapper_of_the_package(tmp_path):
    """sample_data/make_samples.py writes with the package's generators (from its own checkout, whatever the cwd)."""
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    out = subprocess.run([sys.executable, str(REPO / "sample_data" / "make_samples.py"), "--out", str(tmp_path),
                          "breast_cancer_nb.csv"], cwd=tmp_path, env=env, capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    assert "wrote" in out.stdout and [p.name for p in tmp_path.iterdir()] == ["breast_cancer_nb.csv"]
    _assert_same(pd.read_csv(tmp_path / "breast_cancer_nb.csv"), pd.read_csv(REPO / "sample_data" / "breast_cancer_nb.csv"))
    bad = subprocess.run([sys.executable, str(REPO / "sample_data" / "make_samples.py"), "--out", str(tmp_path),
                          "iris.csv"], cwd=tmp_path, env=env, capture_output=True, text=True, timeout=120)
    assert bad.returncode == 2 and "not a sample file: iris.csv" in bad.stderr


def test_generators_depend_on_seed():
    a = make_samples.make_ctr(seed=1, n=1000)
    b = make_samples.make_ctr(seed=2, n=1000)
    assert not np.array_equal(a["pctr"].to_numpy(), b["pctr"].to_numpy())
    pd.testing.assert_frame_equal(a, make_samples.make_ctr(seed=1, n=1000))


def test_committed_files_read_cleanly():
    for name in SAMPLES:
        df, info = read_table(sample_path(name))
        assert info.format == "csv" and info.delimiter == "," and info.encoding == "utf-8"
        assert not df.isna().any().any()


# ---------------------------------------------------------------------------
# the multi-class samples (sample_data/multiclass/, kept apart from the binary SAMPLES)
# ---------------------------------------------------------------------------
@pytest.mark.parametrize("name,k,n,accuracy,ece", [
    # accuracy and confidence ECE (15 equal-width bins) as sample_data/multiclass/README.md gives them; the
    # CIFAR-10 pair is netcal's and torchmetrics' figure for the LeNet-5 record (shared/data/README.md)
    ("animals_3class", 3, 3000, 0.842, 0.093), ("cifar10_lenet5", 10, 10_000, 0.5308, 0.10789),
    ("logits_4class", 4, 400, 0.838, 0.093)])
def test_class_samples_load_with_their_declared_columns(name, k, n, accuracy, ece):
    from calibdash.measures import class_measures as mmetrics
    s = samples.CLASS_SAMPLES[name]
    cs = samples.load_class_sample(name)
    assert name not in SAMPLES and sample_path(name) == REPO / "sample_data" / s.filename
    assert (cs.k, cs.n_rows, cs.label_column, cs.prefix, cs.logits) == (k, n, s.label, s.prefix, s.logits)
    assert all(c.startswith(s.prefix) for c in cs.columns) and cs.report.dropped == {}
    P = cs.scores().probabilities
    # the README rounds to its printed digits: accuracy within half a unit of its last one, ECE likewise
    digits = {0.842: 5e-4, 0.838: 5e-4, 0.5308: 5e-5}[accuracy]
    assert abs(mmetrics.accuracy(P, cs.labels) - accuracy) <= digits
    assert abs(mmetrics.top_label_ece(P, cs.labels) - ece) <= (5e-6 if name == "cifar10_lenet5" else 5e-4)


def test_class_samples_need_a_checkout_and_a_known_name(monkeypatch):
    with pytest.raises(SettingsError, match="unknown multi-class sample 'circles_svm'"):
        samples.load_class_sample("circles_svm")          # a binary sample is not a multi-class one
    with pytest.raises(SettingsError, match="available: circles_svm, .*animals_3class"):
        sample_path("iris")
    monkeypatch.setattr(samples, "SAMPLE_DIR", None)       # an installed calibdash ships no data file
    with pytest.raises(EnvironmentProblem, match="comes with a checkout of the calibdash repository"):
        sample_path("cifar10_lenet5")
