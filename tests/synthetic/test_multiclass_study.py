"""The multi-class lesson's study (calibdash.synthetic.multiclass_study): errors against the known truth."""
from __future__ import annotations

import numpy as np
import pytest
from scipy.special import softmax

from calibdash import calibrators
from calibdash.evaluation.holdout import UNCALIBRATED
from calibdash.synthetic import multiclass_study as mstudy
from calibdash.synthetic.gaussian_classes import true_canonical_error

HAS_TEMPERATURE = "temperature" in calibrators.available("classes")


def test_trial_halves_and_true_error():
    """The halves split the draw; the raw row's true error is the distance of the model from the known posterior,
    and the exact recalibration softmax(log p / T) has true error 0 (to rounding)."""
    sc = mstudy.overconfident(3)
    tr = mstudy.class_trial(sc, 2000, 4, ["ovr:histogram"])
    assert np.intersect1d(tr.fit_rows, tr.judged_rows).size == 0
    assert tr.fit_rows.size + tr.judged_rows.size == 2000
    d, j = tr.draw, tr.judged_rows
    raw = tr.errors.set_index("method").loc[UNCALIBRATED, "true_error"]
    assert raw == pytest.approx(true_canonical_error(d.reported[j], d.true[j]), rel=1e-12)
    assert true_canonical_error(softmax(np.log(d.reported[j]) / sc.temperature, axis=1), d.true[j]) < 1e-12


def test_ovr_histogram_error_falls_with_n():
    """One-vs-rest binning's true error falls with the sample size (means over 4 draws; the gap between 500 and
    10,000 rows, about 0.05, is many times the means' standard errors, about 0.005), while the raw model's does
    not depend on n (it is the model's own: within 0.02 of each other)."""
    study = mstudy.size_study(mstudy.overconfident(3), sizes=(500, 10000), seeds=range(4), methods=["ovr:histogram"])
    s = mstudy.size_summary(study).set_index(["n", "method"])
    assert s.loc[(500, "ovr:histogram"), "mean"] > s.loc[(10000, "ovr:histogram"), "mean"] + 0.02
    assert abs(s.loc[(500, UNCALIBRATED), "mean"] - s.loc[(10000, UNCALIBRATED), "mean"]) < 0.02
    assert (s["draws"] == 4).all()


@pytest.mark.skipif(not HAS_TEMPERATURE, reason="temperature scaling is not registered on this branch yet")
def test_temperature_fixes_the_overconfident_model():
    """At n = 5000 temperature scaling's true error is far below the raw model's (the scenario has no class bias,
    so a temperature can reach the truth) and below one-vs-rest binning's."""
    tr = mstudy.class_trial(mstudy.overconfident(3), 5000, 0, ["temperature", "ovr:histogram"])
    e = tr.errors.set_index("method")["true_error"]
    assert e["temperature"] < 0.25 * e[UNCALIBRATED]
    assert e["temperature"] < e["ovr:histogram"]
