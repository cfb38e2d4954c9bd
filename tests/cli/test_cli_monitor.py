"""The ``groups`` and ``drift`` commands (calibdash.cli.monitor): the page's numbers, through every engine.

Tolerances. Every engine gives the same exact keyed cells (integer counts equal, score sums to rounding:
``tests/engines/test_keyed_engines.py``); the measures of equal cells are equal, and their intervals are the same draws
(the bootstrap merges and sorts each key's cells before drawing, from the same seed). The only differences are
the order of floating-point sums of at most 1e4 terms: 1e-12 absolute holds with a wide margin.
"""
from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest

from calibdash import cli
from calibdash.evaluation.cells import parts_for
from calibdash.data import load_scores
from calibdash.monitoring.group_metrics import STATS
from calibdash.monitoring.groups import column_for_rows
from calibdash.monitoring.keyed import Key
from calibdash.monitoring.keyed.per_key import by_key, fix_keys, over_periods, staleness_of
from calibdash.monitoring.keyed.from_rows import keyed_cells
from calibdash.samples.drifting_score import make_drift
from calibdash.evaluation.scheme import Scheme
from tests.conftest import start_spark

N = 10_000
TOL = 1e-12                               # see the module docstring


@pytest.fixture(scope="module")
def lake(tmp_path_factory):
    """The drift sample's first 1e4 rows as one CSV and as two Parquet parts (a glob)."""
    d = tmp_path_factory.mktemp("monitor")
    df = make_drift(N)
    df.to_csv(d / "drift.csv", index=False)
    for i, part in enumerate(np.array_split(np.arange(N), 2)):
        df.iloc[part].to_parquet(d / f"part-{i}.parquet", index=False)
    return d


def _run(capsys, *argv, status: int = 0):
    code = cli.main([str(a) for a in argv])
    out, err = capsys.readouterr()
    assert code == status, err
    return out, err


def _json(capsys, *argv, status: int = 0) -> dict:
    return json.loads(_run(capsys, *argv, "--json", status=status)[0])


def _same_records(a: list, b: list) -> None:
    assert [r["key"] for r in a] == [r["key"] for r in b]
    for ra, rb in zip(a, b):
        assert (ra["rows"], ra["positives"], ra["note"]) == (rb["rows"], rb["positives"], rb["note"])
        for name in STATS:
            for part in ("value", "low", "high"):
                x, y = ra[name][part], rb[name][part]
                assert (x is None and y is None) or x == pytest.approx(y, abs=TOL), (ra["key"], name, part)


# -- groups ---------------------------------------------------------------------------------------------------------
def test_groups_json_is_by_key_of_the_pages_keyed_cells(lake, capsys):
    got = _json(capsys, "groups", lake / "drift.csv", "--by", "segment", "--boot", "40", "--seed", "3")
    ss = load_scores(str(lake / "drift.csv"))                  # the page's rows, read as the page reads them
    kc = keyed_cells(ss.scores, ss.labels, column_for_rows(ss, "segment"), Key("segment"))
    rep = by_key(kc, n_boot=40, seed=3)
    assert got["engine"] == "memory" and got["by"] == "segment" and got["resamples"] == 40
    assert [g["key"] for g in got["groups"]] == ["app", "partner", "store", "web"]
    assert sum(g["rows"] for g in got["groups"]) == N == got["overall"]["rows"]
    assert set(got) >= {"groups", "overall", "notes", "alerts", "cells", "binning", "level"}
    assert set(got["groups"][0]) == {"key", "rows", "positives", "note", *STATS}
    for rec, (key, row) in zip(got["groups"], rep.table.iterrows()):
        assert rec["key"] == key and rec["rows"] == row["rows"] and rec["positives"] == row["positives"]
        for name in STATS:
            assert rec[name] == pytest.approx({"value": row[name], "low": row[f"{name}_low"],
                                               "high": row[f"{name}_high"]}, abs=TOL)
            assert rec[name]["low"] <= rec[name]["high"]


def test_groups_and_drift_give_the_same_numbers_in_memory_and_through_duckdb(lake, capsys):
    args = ("--by", "segment", "--boot", "30")
    mem = _json(capsys, "groups", lake / "drift.csv", *args)
    duck = _json(capsys, "groups", lake / "part-*.parquet", *args)          # a glob: DuckDB by default
    assert duck["engine"] == "duckdb"
    _same_records(mem["groups"], duck["groups"])
    args = ("--time", "date", "--period", "month", "--boot", "30")
    mem = _json(capsys, "drift", lake / "drift.csv", *args)
    duck = _json(capsys, "drift", lake / "drift.csv", *args, "--engine", "duckdb")
    _same_records(mem["periods"], duck["periods"])
    matrix = [np.array(run["staleness"]["matrix"]["ECE"], dtype=float) for run in (mem, duck)]   # null -> NaN
    np.testing.assert_allclose(matrix[0], matrix[1], atol=TOL, rtol=0)


def test_groups_fix_is_fix_keys_on_the_hashed_split(lake, capsys):
    got = _json(capsys, "groups", lake / "drift.csv", "--by", "segment", "--boot", "0", "--fix", "isotonic",
                "--scheme", "kfold", "--folds", "3")
    df = pd.read_csv(lake / "drift.csv")
    kc = keyed_cells(df["score"], df["label"], df["segment"], Key("segment"), parts_for(N, "kfold", k=3))
    fix = fix_keys(kc, "isotonic", Scheme(kind="kfold", n_folds=3), n_boot=0)
    assert got["fix"]["method"] == "isotonic" and "3-fold" in got["fix"]["scheme"]
    assert [r["key"] for r in got["fix"]["ECE"]] == list(fix.table.index)
    for rec, (_, row) in zip(got["fix"]["ECE"], fix.table.iterrows()):
        assert [rec[m] for m in ("uncalibrated", "isotonic", "mbct")] == pytest.approx(list(row), abs=TOL)
    partner = next(r for r in got["fix"]["ECE"] if r["key"] == "partner")
    assert partner["mbct"] < partner["isotonic"] < partner["uncalibrated"]


def test_fail_above_names_the_groups_past_it_and_sets_the_exit_status(lake, capsys):
    base = ("groups", lake / "drift.csv", "--by", "segment", "--boot", "0")
    table, _ = _run(capsys, *base)
    assert "partner" in table and "ECE" in table
    got = _json(capsys, *base)
    ece = {g["key"]: g["ECE"]["value"] for g in got["groups"]}
    cut = (ece["partner"] + max(v for k, v in ece.items() if k != "partner")) / 2     # only partner is past it
    out, err = _run(capsys, *base, "--fail-above", f"ece={cut}", status=1)             # any case
    assert f"ECE above {cut:g} in 1 of 4 groups: partner ({ece['partner']:.4f})" in err
    assert "partner" in out                                    # the table is still printed
    got = _json(capsys, *base, "--fail-above", f"ECE={cut}", "--fail-above", "auc=0.99", status=1)
    assert got["alerts"] == [{"measure": "ECE", "above": cut, "keys": ["partner"], "values": [ece["partner"]]}]
    _run(capsys, *base, "--fail-above", "ECE=0.9", "--fail-above", "Brier=0.9")         # nothing past: 0
    _, err = _run(capsys, *base, "--fail-above", "calibration=0.1", status=2)
    assert "unknown measure 'calibration'" in err and "ECE" in err
    _, err = _run(capsys, *base, "--fail-above", "ECE", status=2)
    assert "MEASURE=VALUE" in err


# -- drift ----------------------------------------------------------------------------------------------------------
def test_drift_json_is_over_periods_and_staleness_of_the_keyed_cells(lake, capsys):
    got = _json(capsys, "drift", lake / "drift.csv", "--time", "date", "--period", "month", "--boot", "20",
                "--fail-above", "ECE=0.15", status=1)
    df = pd.read_csv(lake / "drift.csv")
    kc = keyed_cells(df["score"], df["label"], df["date"], Key("date", "period", "M"))
    rep, st = over_periods(kc, n_boot=20), staleness_of(kc, "isotonic")
    assert got["period"] == "M" and [p["key"] for p in got["periods"]] == [f"2025-{m:02d}" for m in range(1, 13)]
    assert [p["start"] for p in got["periods"]] == [f"2025-{m:02d}-01" for m in range(1, 13)]
    assert [p["rows"] for p in got["periods"]] == rep.table["rows"].tolist()
    assert [p["ECE"]["value"] for p in got["periods"]] == pytest.approx(rep.table["ECE"].tolist(), abs=TOL)
    stale = got["staleness"]
    assert stale["method"] == "isotonic" and [p["key"] for p in stale["periods"]] == list(st.table.index)
    first = [p["fitted_on_first"] for p in stale["periods"]]
    assert first == pytest.approx(st.table["fitted on the first period"].tolist(), abs=TOL)
    assert first[-1] > 3 * first[0]                            # January's calibrator goes stale
    assert [a["pairs"] for a in stale["by_age"]] == list(range(11, 0, -1))
    assert len(stale["matrix"]["ECE"]) == 12 and stale["matrix"]["ECE"][0][0] is None
    past = [p["key"] for p in got["periods"] if p["ECE"]["value"] > 0.15]
    assert past and got["alerts"][0]["keys"] == past


def test_drift_without_staleness_and_with_one_period(lake, capsys, tmp_path):
    got = _json(capsys, "drift", lake / "drift.csv", "--time", "date", "--period", "quarter", "--boot", "0",
                "--method", "none")
    assert got["staleness"] is None and [p["key"] for p in got["periods"]] == ["2025Q1", "2025Q2", "2025Q3",
                                                                              "2025Q4"]
    one = pd.read_csv(lake / "drift.csv").head(600)
    one.to_csv(tmp_path / "jan.csv", index=False)
    got = _json(capsys, "drift", tmp_path / "jan.csv", "--time", "date", "--period", "month", "--boot", "0")
    assert got["staleness"] is None and any("No staleness" in n for n in got["notes"])


# -- errors ---------------------------------------------------------------------------------------------------------
@pytest.mark.parametrize("argv, words", [
    (("groups", "--by", "nosuch"), "nosuch"),
    (("drift", "--time", "nosuch"), "nosuch"),
    (("groups", "--by", "segment", "--label", "nosuch"), "--label 'nosuch'"),
    (("drift", "--time", "date", "--score", "nosuch"), "--score 'nosuch'"),
    (("groups", "--by", "segment", "--split", "nosuch"), "--split 'nosuch'"),
    (("drift", "--time", "segment"), "does not hold dates"),
    (("groups", "--by", "segment", "--boot", "-1"), "--boot"),
])
@pytest.mark.parametrize("engine", ["memory", "duckdb"])
def test_bad_columns_and_settings_exit_2_with_a_clear_error(lake, capsys, argv, words, engine):
    _, err = _run(capsys, argv[0], lake / "drift.csv", *argv[1:], "--engine", engine, status=2)
    last = err.strip().splitlines()[-1]                       # after the job's progress lines, if it started
    assert last.startswith("error: ") and words in last and "Traceback" not in err
    if "nosuch" in argv:                                       # the columns there are, to choose from
        assert "no such column; its columns are date, segment, score, label." in last


# -- spark ----------------------------------------------------------------------------------------------------------
def test_groups_through_spark_equals_memory(lake, capsys):
    session = start_spark("calibdash-test-monitor", **{"spark.sql.shuffle.partitions": "2"})
    args = ("--by", "segment", "--boot", "30")
    mem = _json(capsys, "groups", lake / "drift.csv", *args)
    try:
        spark = _json(capsys, "groups", lake / "part-*.parquet", *args, "--engine", "spark")
    finally:
        session.stop()
    assert spark["engine"] == "spark"
    _same_records(mem["groups"], spark["groups"])
