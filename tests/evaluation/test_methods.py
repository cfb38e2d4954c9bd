"""The one method-spec parser (calibdash.evaluation.methods) and its callers."""
import numpy as np
import pytest

from calibdash import calibrators, synthetic
from calibdash.evaluation import methods
from calibdash.calibrators.bbq import BBQCalibrator
from calibdash.core.errors import SettingsError
from calibdash.evaluation.holdout import Scheme, evaluate


def test_split_names_drops_blanks_and_spaces():
    assert methods.split_names(" platt, bbq,,abb ,") == ["platt", "bbq", "abb"]
    assert methods.split_names("") == []


def test_every_spec_form_gives_the_same_calibrators():
    forms = ["platt,bbq", ["platt", "bbq"], {"platt": {}, "bbq": None}, {"platt": "platt", "bbq": "bbq"},
             ["platt", BBQCalibrator()]]
    for form in forms:
        got = methods.resolve(form)
        assert list(got) == ["platt", "bbq"], form
        assert type(got["bbq"]) is BBQCalibrator
        assert got["bbq"].get_params() == BBQCalibrator().get_params()


def test_params_in_a_mapping_and_a_key_of_ones_own():
    got = methods.resolve({"bbq": {"ess": 5}, "fine": {"method": "bbq", "c": 5}})
    assert got["bbq"].ess == 5
    assert got["fine"].name == "bbq" and got["fine"].c == 5


def test_objects_passed_are_cloned_never_changed():
    mine = BBQCalibrator(c=7)
    got = methods.resolve({"mine": mine}, params={"mine": {"ess": 3}})
    assert got["mine"] is not mine and got["mine"].c == 7 and got["mine"].ess == 3
    assert mine.ess == BBQCalibrator().ess


def test_parse_params_reads_json_values():
    assert methods.parse_params(["bbq.c=5", "bbq.prune=false", "elite.criterion=bic", "histogram.n_bins=20"]) == {
        "bbq": {"c": 5, "prune": False}, "elite": {"criterion": "bic"}, "histogram": {"n_bins": 20}}


@pytest.mark.parametrize("spec, params, words", [
    ("platt,nosuch", None, "unknown calibrator 'nosuch'"),
    ({"bbq": {"nosuch": 1}}, None, "no hyperparameter"),
    ("platt,platt", None, "chosen twice"),
    ("uncalibrated", None, "raw scores"),
    ("platt", {"bbq": {"c": 5}}, "not among the chosen"),
    (3.5, None, "name, a list or a mapping"),
])
def test_bad_specs_say_what_is_wrong(spec, params, words):
    with pytest.raises(SettingsError, match=words):
        methods.resolve(spec, params)


def test_parse_params_refuses_malformed_items():
    with pytest.raises(SettingsError, match="METHOD.NAME=VALUE"):
        methods.parse_params(["bbq-c=5"])


def test_evaluate_takes_params_in_a_mapping(noisy):
    """evaluate(s, y, {"bbq": {"ess": 5}}) used to crash with a TypeError from clone."""
    s, y = noisy
    ev = evaluate(s, y, {"bbq": {"ess": 5}}, Scheme(seed=1))
    assert ev.models["bbq"].ess == 5
    same = evaluate(s, y, {"bbq": BBQCalibrator(ess=5)}, Scheme(seed=1))
    np.testing.assert_array_equal(ev.predictions["bbq"], same.predictions["bbq"])


def test_synthetic_and_evaluate_read_a_spec_alike():
    t = synthetic.trial("overconfident", 2000, 0, {"bbq": {"ess": 5}, "platt": None})
    assert set(t.models) == {"bbq", "platt"} and t.models["bbq"].ess == 5
    assert calibrators.get("bbq").ess == BBQCalibrator().ess != 5      # the spec changed nothing else
