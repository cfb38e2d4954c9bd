"""Export and apply: JSON round trips reproduce every calibrator's predictions exactly; bad files are refused."""
import io
import json

import numpy as np
import pandas as pd
import pytest
from scipy.special import expit

from calibdash import calibrators
from calibdash.io import export
from calibdash.__main__ import main
from calibdash.calibrators.base import Calibrator
from calibdash.core.errors import DataError, NotFittedError, ProgrammingError
from tests.conftest import REPO

ALL = calibrators.available()
CIRCLES = str(REPO / "sample_data" / "circles_svm.csv")

#: Every registered calibrator with its defaults, plus settings that take other code paths.
VARIANTS = [(name, {}) for name in ALL] + [
    ("platt", {"smooth_targets": True}),
    ("histogram", {"by": "size", "bin_size": 250}),
    ("isotonic", {"interpolation": "linear"}),
    ("bbq", {"variant": "authors"}),
    ("sbb", {"max_positions": 300}),           # micro-bins: a position spans several scores
    ("abb", {"max_positions": 300}),
    ("elite", {"mode": "single"}),
    ("mbct", {"bin_size": 100}),               # splits on the feature columns too
    ("mbct", {"holdout": 0.0, "bin_size": 100, "max_depth": 3}),
]


def _features(rng, n, devices=("a", "b", "c"), sites=(1, 2, 3)):
    """Feature columns of every kind MBCT codes: text, category (integer values), numbers with gaps, bool."""
    age = rng.normal(40, 10, n)
    age[rng.uniform(size=n) < 0.05] = np.nan
    return pd.DataFrame({
        "device": rng.choice(list(devices), n),
        "site": pd.Categorical(rng.choice(list(sites), n)),
        "age": age,
        "returning": rng.uniform(size=n) < 0.3,
    })


@pytest.fixture(scope="module")
def data():
    """3,000 training rows (ties, 0 and 1 included; the truth depends on the device) and new rows to predict."""
    rng = np.random.default_rng(7)
    n = 3000
    s = rng.uniform(size=n)
    s[:600] = np.round(s[:600], 2)                       # runs of tied scores
    s[:4] = [0.0, 1.0, 0.0, 1.0]
    feats = _features(rng, n)
    truth = np.clip(s ** 2 * np.where(feats["device"] == "a", 1.6, 0.7), 0, 1)
    y = (rng.uniform(size=n) < truth).astype(int)
    y[:4] = [0, 1, 1, 0]
    distinct = np.unique(s)
    new = np.concatenate([[0.0, 1.0, 0.5], np.linspace(0, 1, 1001), s, (distinct[:-1] + distinct[1:]) / 2,
                          np.nextafter(distinct, 1.0), rng.uniform(size=1000)])
    # unseen values in every feature column: a new device, a new category, missing numbers
    new_feats = _features(rng, new.size, devices=("a", "b", "c", "zz"), sites=(1, 2, 3, 4))
    return s, y, feats, new, new_feats


def _fit(name, params, data):
    s, y, feats, new, new_feats = data
    cal = calibrators.get(name, **params)
    uses = cal.uses_features
    cal.fit(s, y, feats if uses else None)
    return cal, (new_feats if uses else None)


@pytest.mark.parametrize("name,params", VARIANTS, ids=[f"{n}-{'-'.join(map(str, p.values())) or 'default'}"
                                                      for n, p in VARIANTS])
def test_round_trip_reproduces_predictions_exactly(name, params, data):
    cal, new_feats = _fit(name, params, data)
    new = data[3]
    text = export.dumps(cal)
    doc = json.loads(text)
    assert doc["format"] == "calibdash-calibrator" and doc["version"] == 2 and doc["kind"] == "binary"
    assert doc["method"] == name
    assert doc["params"] == cal.get_params()
    assert doc["state"]["n_train"] == 3000

    back = export.loads(text)
    assert type(back) is type(cal) and back.get_params() == cal.get_params()
    assert np.array_equal(back.predict(new, new_feats), cal.predict(new, new_feats))
    assert export.dumps(back) == text                    # a second round trip is byte-identical


@pytest.mark.parametrize("name,params", VARIANTS, ids=[f"{n}-{'-'.join(map(str, p.values())) or 'default'}"
                                                      for n, p in VARIANTS])
def test_round_trip_on_heavily_tied_scores(name, params):
    """300 scores on a 0.01 grid: zero-width bins, where BBQ's authors' variant adds point corrections."""
    rng = np.random.default_rng(3)
    s = np.round(rng.beta(2, 5, size=300), 2)
    y = (rng.uniform(size=300) < s ** 0.8).astype(int)
    cal = calibrators.get(name, **params).fit(s, y)
    if name == "bbq" and params.get("variant") == "authors":
        assert cal.point_x_.size > 0
    new = np.concatenate([np.linspace(0, 1, 10001), np.unique(s), np.nextafter(np.unique(s), 0.0)])
    back = export.loads(export.dumps(cal))
    assert np.array_equal(back.predict(new), cal.predict(new))


def test_loaded_mbct_still_uses_the_features(data):
    """The loaded trees route by feature: the same score gets different values on different devices.
    All 8 trees are grown (no early stopping), so that splits on the weaker columns are in the file."""
    cal, _ = _fit("mbct", {"bin_size": 100, "early_stopping": False}, data)
    back = export.loads(export.dumps(cal))
    assert {"device", "site", "age"} <= {back.columns_[j].name for t in back.trees_ for j in t.feature if j > 0}
    s = np.full(3, 0.6)
    feats = pd.DataFrame({"device": ["a", "b", "zz"], "site": pd.Categorical([1, 1, 1]),
                          "age": [40.0, 40.0, np.nan], "returning": [False, False, False]})
    p = back.predict(s, feats)
    assert p[0] > p[1]                                    # device "a" has the higher true rate
    assert np.array_equal(p, cal.predict(s, feats))
    with pytest.raises(DataError, match="lack the column"):
        back.predict(s, feats.drop(columns="device"))


def test_file_holds_only_what_predict_needs(data):
    """No training rows: the step and tree methods write a few kilobytes for 3,000 rows."""
    for name in ("platt", "histogram", "isotonic", "bbq", "sbb", "mbct"):
        cal, _ = _fit(name, {}, data)
        assert len(export.dumps(cal)) < 8_000, name
    text = export.dumps(_fit("mbct", {}, data)[0])
    assert "check" not in text and "loss" not in text


def test_known_histogram_file():
    """Four rows, two bins: the cut lies halfway between 0.2 and 0.3, the bins hold 0/2 and 2/2 positives."""
    cal = calibrators.get("histogram", n_bins=2).fit([0.1, 0.2, 0.3, 0.4], [0, 0, 1, 1])
    assert export.dumps(cal) == (
        '{\n"format":"calibdash-calibrator",\n"version":2,\n"kind":"binary",\n"method":"histogram",\n'
        '"params":{"bin_size":100,"by":"bins","n_bins":2},\n'
        '"state":{\n "n_train":4,\n "cuts":[0.25],\n "estimates":[0.0,1.0]\n}\n}\n')
    assert export.loads(export.dumps(cal)).predict([0.0, 0.2499, 0.25, 1.0]).tolist() == [0.0, 0.0, 1.0, 1.0]


def _doc(method="platt", params=None, state=None, **top):
    doc = {"format": "calibdash-calibrator", "version": 1, "method": method, "params": params or {},
           "state": {"n_train": 10, "a": 2.0, "b": -1.0} if state is None else state}
    doc.update(top)
    return json.dumps(doc)


def test_hand_written_file_is_read_as_documented():
    """A file written by hand: Platt with A = 2, B = -1 predicts sigmoid(2 logit(s) - 1)."""
    cal = export.loads(_doc())
    assert cal.a_ == 2.0 and cal.b_ == -1.0 and cal.n_train_ == 10
    assert cal.predict([0.5])[0] == expit(-1.0)
    assert cal.predict([expit(1.5)])[0] == pytest.approx(expit(2.0))


def test_files_of_version_1_still_load_as_their_kind():
    """Files written before ``kind`` (version 1): "calibdash-calibrator" holds a binary model, "calibdash-multiclass"
    a K-class one; both load with the same predictions as the version-2 file written from them."""
    binary = export.read_model(_doc())
    assert binary.kind == "binary" and binary.calibrator.a_ == 2.0
    old = {"format": "calibdash-multiclass", "version": 1, "method": "temperature", "params": {"logits": False},
           "state": {"n_train": 5, "n_classes": 3, "weights": [0.5]}}
    model = export.read_model(json.dumps(old))
    assert model.kind == "classes" and model.calibrator.n_classes_ == 3
    P = np.array([[0.7, 0.2, 0.1], [0.2, 0.5, 0.3]])
    expected = np.sqrt(P) / np.sqrt(P).sum(axis=1, keepdims=True)        # W = 1/2: softmax(log p / 2)
    np.testing.assert_allclose(model.calibrator.predict_proba(P), expected, rtol=1e-12)
    again = json.loads(export.dumps(model.calibrator))
    assert (again["format"], again["version"], again["kind"]) == ("calibdash-calibrator", 2, "classes")
    assert again["state"] == old["state"] and again["method"] == "temperature"
    with pytest.raises(DataError, match="holds a K-class calibrator; a binary calibrator is needed"):
        export.read_model(json.dumps(old), "binary")


def test_sql_and_engine_apply_refuse_a_k_class_model_file():
    """What writes or applies one score column reads binary models only: a K-class file is a DataError."""
    from calibdash.io import sql

    text = json.dumps({"format": "calibdash-calibrator", "version": 2, "kind": "classes", "method": "temperature",
                       "params": {"logits": False}, "state": {"n_train": 5, "n_classes": 3, "weights": [0.5]}})
    assert export.read_model(text).kind == "classes"
    for read in (lambda: sql.to_sql(text, score_column="s"), lambda: export.apply_model(text, "no.csv", "o.parquet")):
        with pytest.raises(DataError, match="holds a K-class calibrator; a binary calibrator is needed"):
            read()


def test_awkward_floats_survive_exactly():
    """Floats with long decimal forms (0.1 + 0.2, 1/3 and its next float, the smallest subnormal) read back exactly."""
    cuts = [5e-324, 0.1 + 0.2]
    values = [0.0, 1 / 3, float(np.nextafter(1 / 3, 1))]
    text = _doc("isotonic", {"interpolation": "step"}, {"n_train": 3, "cuts": cuts, "values": values})
    cal = export.loads(text)
    assert cal.predict([0.0, 0.3, 0.30000000000000004, 1.0]).tolist() == [values[0], values[1], values[2], values[2]]
    assert json.loads(export.dumps(cal))["state"] == {"n_train": 3, "cuts": cuts, "values": values}


HIST = {"n_train": 4, "cuts": [0.25], "estimates": [0.0, 1.0]}
MBCT_STATE = {"n_train": 100, "columns": [{"name": "score", "kind": "score", "n_codes": 2, "missing_code": -1}],
              "trees": [{"feature": [0, -1, -1], "table_len": [2, 0, 0], "table": [1, 2],
                         "positives": [5.0, 1.0, 4.0], "sum_input": [5.0, 2.0, 3.0]}]}


@pytest.mark.parametrize("text,match", [
    ("{", "not valid JSON: Expecting property name"),
    ("[1, 2]", "must hold a JSON object, not a list"),
    (b"\xff\xfe{}", "not UTF-8"),
    (None, "JSON text, not NoneType"),
    (_doc(format="sklearn-model"), "not a calibdash calibrator file: 'format' is 'sklearn-model'"),
    (json.dumps({"version": 1, "method": "platt"}), "'format' is None"),
    (_doc(version=3), "version 3 is not supported"),
    (_doc(version=2), "'kind' is None; it must be one of 'binary', 'classes'"),
    (_doc(version=2, kind="ternary"), "'kind' is 'ternary'"),
    (_doc(kind="binary"), "version 1 holds 'kind'"),
    (_doc(format="calibdash-multiclass", version=2), "version 2 is not supported"),
    (_doc(version="1"), "version '1' is not supported"),
    (_doc(version=True), "version True is not supported"),
    (_doc(method="nope"), "method 'nope' is unknown"),
    (_doc(method=3), "'method' must be a string"),
    (_doc(params={"n_bins": 3}), "no hyperparameter"),
    (_doc(params=[1]), "'params' must be an object"),
    (_doc(state=[1]), "'state' must be an object"),
    (_doc(state={"a": 1.0, "b": 0.0}), "'n_train' is missing"),
    (_doc(state={"n_train": 5, "a": 1.0}), "platt state: 'b' is missing"),
    (_doc(state={"n_train": 5, "a": "1", "b": 0.0}), "'a' must be a finite number"),
    (_doc("histogram", state={**HIST, "estimates": [0.0]}), "'estimates' must hold 2 numbers, got 1"),
    (_doc("histogram", state={**HIST, "cuts": [0.5, 0.25], "estimates": [0, 1, 0]}), "'cuts' must be in increasing"),
    (_doc("histogram", state={**HIST, "cuts": ["x"]}), "'cuts' must be a list of numbers"),
    (_doc("histogram", state={**HIST, "cuts": [float("nan")]}), "'cuts' holds a non-finite number"),
    (_doc("mbct", state={**MBCT_STATE, "trees": [{**MBCT_STATE["trees"][0], "table": [0, 2]}]}),
     "do not describe a tree"),
    (_doc("mbct", state={**MBCT_STATE, "columns": [{**MBCT_STATE["columns"][0], "kind": "colour"}]}),
     r"columns\[0\]: kind must be"),
    (_doc(fitted_on=[1]), "'fitted_on' must be an object"),
])
def test_bad_files_are_refused(text, match):
    with pytest.raises(DataError, match=match):
        export.loads(text)


def test_hand_written_mbct_tree_routes_by_score():
    """One tree, root split on the score's two halves: scales 1/2 below 0.5 and 4/3 above."""
    cal = export.loads(_doc("mbct", state=MBCT_STATE))
    assert cal.predict([0.2, 0.6]).tolist() == [0.2 * (1.0 / 2.0), 0.6 * (4.0 / 3.0)]


def test_dumps_refuses_what_it_cannot_write():
    with pytest.raises(NotFittedError):
        export.dumps(calibrators.get("platt"))
    with pytest.raises(ProgrammingError, match="only calibdash calibrators can be exported, not object"):
        export.dumps(object())
    rng = np.random.default_rng(0)
    s = rng.uniform(size=400)
    when = pd.Series(pd.to_datetime(["2024-01-01", "2024-02-01"])[rng.integers(0, 2, 400)], dtype=object)
    cal = calibrators.get("mbct", bin_size=50).fit(s, rng.uniform(size=400) < s, pd.DataFrame({"when": when}))
    with pytest.raises(DataError, match="'when' holds values of type Timestamp"):
        export.dumps(cal)


class _Toy(Calibrator):
    """A calibrator without _export_state/_import_state: a step map in plain fitted attributes."""

    name = "toy"
    label = "toy"

    def _fit(self, s, y, features, w):
        self.cuts_ = np.array([np.median(s)])
        self.levels_ = np.array([y[s < self.cuts_[0]].mean(), y[s >= self.cuts_[0]].mean()])

    def _predict(self, s, features):
        return self.levels_[np.searchsorted(self.cuts_, s, side="right")]


def test_every_registered_calibrator_says_what_its_state_is():
    """No fallback: each registered class has its own _export_state and _import_state."""
    for name, cls in calibrators.classes().items():
        assert callable(getattr(cls, "_export_state", None)), name
        assert callable(getattr(cls, "_import_state", None)), name


def test_classes_that_cannot_be_exported_are_programming_errors(monkeypatch, noisy):
    s, y = noisy
    with pytest.raises(ProgrammingError, match="_Toy is not a registered calibrator"):
        export.dumps(_Toy().fit(s, y))
    monkeypatch.setitem(calibrators._FOUND, "binary", {**calibrators.classes(), "toy": _Toy})
    with pytest.raises(ProgrammingError, match="_Toy has no _export_state or _import_state"):
        export.dumps(_Toy().fit(s, y))
    with pytest.raises(ProgrammingError, match="_Toy has no _export_state or _import_state"):
        export.loads(_doc("toy"))
    cal = calibrators.get("platt").fit(s, y)
    with pytest.raises(ProgrammingError, match=r"fitted_on\['when'\] is a Timestamp"):
        export.dumps(cal, fitted_on={"when": pd.Timestamp("2024-01-01")})


# -- command line ---------------------------------------------------------------------------------
def _csv(tmp_path, name, **columns):
    path = tmp_path / name
    pd.DataFrame(columns).to_csv(path, index=False)
    return str(path)


def _read(path_or_text, text=False):
    """A CSV written by `apply` (pandas 3 reads floats back exactly by default)."""
    return pd.read_csv(io.StringIO(path_or_text) if text else path_or_text)


def test_fit_then_apply_writes_every_row_with_exact_predictions(tmp_path, capsys):
    model, out = tmp_path / "iso.json", tmp_path / "out.csv"
    assert main(["fit", CIRCLES, "--method", "isotonic", "--split-value", "train", "--out", str(model)]) == 0
    assert "Fitted isotonic on 1,000 rows" in capsys.readouterr().err
    saved = export.read_model(model.read_text())
    assert saved.calibrator.n_train_ == 1000
    assert saved.fitted_on == {"file": "circles_svm.csv", "score": "linear_svm", "score_transform": "identity",
                               "features": []}

    assert main(["apply", str(model), CIRCLES, "--out", str(out)]) == 0
    src, got = pd.read_csv(CIRCLES), _read(out)
    assert list(got.columns) == list(src.columns) + ["calibrated"] and len(got) == len(src) == 2000
    pd.testing.assert_frame_equal(got[src.columns], src)
    expected = saved.calibrator.predict(src["linear_svm"].to_numpy())
    assert np.array_equal(got["calibrated"].to_numpy(), expected)


def test_fit_and_apply_known_histogram(tmp_path, capsys):
    """20 rows, scores 0.05 .. 1.00, the upper half positive: two bins cut at 0.525 with estimates 0 and 1."""
    s = np.round(np.arange(1, 21) * 0.05, 2)
    train = _csv(tmp_path, "train.csv", score=s, label=(s > 0.5).astype(int))
    assert main(["fit", train, "--method", "histogram", "--param", "histogram.n_bins=2"]) == 0
    text = capsys.readouterr().out                       # no --out: the model goes to stdout
    state = json.loads(text)["state"]
    assert json.loads(text)["params"]["n_bins"] == 2
    assert state["cuts"] == [0.525] and state["estimates"] == [0.0, 1.0]
    model = tmp_path / "h.json"
    model.write_text(text)
    new = _csv(tmp_path, "new.csv", score=[0.1, 0.52, 0.525, 0.9])     # no label column
    assert main(["apply", str(model), new]) == 0
    assert _read(capsys.readouterr().out, text=True)["calibrated"].tolist() == [0.0, 0.0, 1.0, 1.0]


def test_apply_maps_margins_as_the_model_was_fitted(tmp_path, capsys):
    """A model fitted on margins maps new margins by the logistic function even when they all lie in [0, 1];
    rows without a score are kept, with an empty calibrated value."""
    rng = np.random.default_rng(3)
    m = rng.normal(0, 3, 500)
    train = _csv(tmp_path, "train.csv", margin=m, y=(rng.uniform(size=500) < expit(m / 2)).astype(int))
    model = tmp_path / "platt.json"
    assert main(["fit", train, "--method", "platt", "--out", str(model)]) == 0
    cal, fitted_on = export.read_model(model.read_text())
    assert fitted_on["score_transform"] == "logistic"
    new = _csv(tmp_path, "new.csv", id=[1, 2, 3, 4], margin=[0.0, 0.25, None, 1.0])
    capsys.readouterr()
    assert main(["apply", str(model), new]) == 0
    out = capsys.readouterr()
    got = _read(out.out, text=True)
    assert got["id"].tolist() == [1, 2, 3, 4] and np.isnan(got["calibrated"][2])
    assert np.array_equal(got["calibrated"].to_numpy()[[0, 1, 3]], cal.predict(expit(np.array([0.0, 0.25, 1.0]))))
    assert "logistic" in out.err and "3 of 4 rows" in out.err


def test_apply_mbct_with_unseen_category(tmp_path):
    rng = np.random.default_rng(5)
    n = 1500
    s = rng.uniform(size=n)
    dev = rng.choice(["mobile", "desktop"], n)
    y = (rng.uniform(size=n) < s * np.where(dev == "mobile", 0.5, 1.0)).astype(int)
    train = _csv(tmp_path, "train.csv", pctr=s, device=dev, click=y)
    model, out = tmp_path / "m.json", tmp_path / "out.csv"
    assert main(["fit", train, "--method", "mbct", "--param", "mbct.bin_size=100", "--out", str(model)]) == 0
    saved = export.read_model(model.read_text())
    assert saved.fitted_on["features"] == ["device"]
    new = _csv(tmp_path, "new.csv", device=["mobile", "desktop", "tv"], pctr=[0.4, 0.4, 0.4])
    assert main(["apply", str(model), new, "--out", str(out)]) == 0
    got = _read(out)["calibrated"].to_numpy()
    feats = pd.DataFrame({"device": ["mobile", "desktop", "tv"]})
    assert np.array_equal(got, saved.calibrator.predict(np.full(3, 0.4), feats))
    assert got[0] < got[1]


def test_apply_score_option_and_errors(tmp_path, capsys):
    model = tmp_path / "iso.json"
    assert main(["fit", CIRCLES, "--method", "isotonic", "--out", str(model)]) == 0
    out = tmp_path / "q.csv"
    assert main(["apply", str(model), CIRCLES, "--score", "quadratic_svm", "--out", str(out)]) == 0
    got = _read(out)
    assert np.array_equal(got["calibrated"].to_numpy(),
                          export.loads(model.read_text()).predict(got["quadratic_svm"].to_numpy()))
    capsys.readouterr()

    margins = _csv(tmp_path, "margins.csv", linear_svm=[-3.0, 0.5, 4.0])
    assert main(["apply", str(model), margins]) == 2
    assert "fitted on probabilities in [0, 1]" in capsys.readouterr().err
    assert main(["apply", str(tmp_path / "missing.json"), CIRCLES]) == 2
    assert "cannot read the model file" in capsys.readouterr().err
    bad = tmp_path / "bad.json"
    bad.write_text("{not json")
    assert main(["apply", str(bad), CIRCLES]) == 2
    assert "not valid JSON" in capsys.readouterr().err
    assert main(["apply", str(model), CIRCLES, "--score", "nope"]) == 2
    assert "score column 'nope' not found" in capsys.readouterr().err


def test_fit_errors(capsys):
    assert main(["fit", CIRCLES, "--method", "histogram", "--param", "bbq.c=5"]) == 2
    assert "hyperparameter of 'bbq', but --method is 'histogram'" in capsys.readouterr().err
    assert main(["fit", CIRCLES, "--method", "histogram", "--split-value", "validation"]) == 2
    assert "no row of circles_svm.csv has 'validation'" in capsys.readouterr().err
    assert main(["fit", CIRCLES, "--method", "nope"]) == 2
    assert "unknown calibrator" in capsys.readouterr().err
