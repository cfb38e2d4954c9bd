"""Paired bootstrap intervals and the verdict sentence."""
import numpy as np
import pandas as pd
import pytest

from calibdash import metrics
from calibdash.bootstrap import bootstrap_metrics, resamples_for, verdict


@pytest.fixture
def preds():
    rng = np.random.default_rng(0)
    truth = rng.uniform(0.05, 0.95, size=3000)
    y = (rng.uniform(size=3000) < truth).astype(int)
    df = pd.DataFrame({
        "uncalibrated": np.clip(truth ** 0.5, 0, 1),         # under-predicts nothing, over-confident upward
        "good": truth,                                        # the true probabilities
        "same": truth.copy(),                                 # identical to "good"
        "bad": np.clip(truth * 0.6 + 0.3, 0, 1),              # squeezed toward 0.5
    })
    return df, y


def test_point_values_are_the_metrics(preds):
    df, y = preds
    b = bootstrap_metrics(df, y, n_boot=30)
    assert b.table.loc["good", ("ECE", "value")] == pytest.approx(metrics.ece(df["good"], y, 10, "quantile"))
    assert b.n_boot == 30
    for m in df.columns:
        lo, hi = b.interval(m, "Brier")
        assert lo <= b.table.loc[m, ("Brier", "value")] <= hi


def test_paired_difference_of_identical_methods_is_exactly_zero(preds):
    df, y = preds
    b = bootstrap_metrics(df, y, n_boot=30)
    assert b.difference("ECE", "good", "same") == (0.0, 0.0, 0.0)
    point, lo, hi = b.difference("Brier", "good", "bad")
    assert point < 0 and hi < 0            # the truth beats the squeezed scores on every resample


def test_verdict_names_a_clear_winner_and_a_tie(preds):
    df, y = preds
    clear = verdict(bootstrap_metrics(df[["uncalibrated", "good", "bad"]], y, n_boot=40))
    assert clear.startswith("good has the lowest ECE") and "larger than the 95% paired interval" in clear
    tie = verdict(bootstrap_metrics(df[["uncalibrated", "good", "same"]], y, n_boot=40))
    assert "cannot be told apart" in tie


def test_verdict_flags_lost_discrimination():
    rng = np.random.default_rng(1)
    p = rng.uniform(size=2000)
    y = (rng.uniform(size=2000) < p).astype(int)
    df = pd.DataFrame({"uncalibrated": p, "flat": np.full(2000, y.mean()), "fine": p})
    text = verdict(bootstrap_metrics(df, y, n_boot=40))
    assert "AUC clearly lowered by flat" in text


def test_resample_budget():
    assert resamples_for(1000, 4) == 200
    assert resamples_for(36_000, 4) == 50
    assert 50 < resamples_for(8_000, 4) < 200
