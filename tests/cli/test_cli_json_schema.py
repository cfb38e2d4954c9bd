"""The ``--json`` output of evaluate, groups, drift and benchmark: one schema per command (calibdash/schemas),
whatever the engine (memory, DuckDB, Spark) and for binary and K-class files alike.

Each command runs on every engine; each record is validated with ``jsonschema`` against the package's schema,
parsed as strict JSON (no NaN or Infinity), and the records of the engines must have the same keys at every
level (a script that reads them must not care which engine ran). The schemas are strict enough to refuse the
records the engines wrote before they were unified.
"""
import json

import jsonschema
import numpy as np
import pandas as pd
import pytest

from calibdash import cli
from calibdash.io import schemas
from tests.conftest import spark_with_workers

ENGINES = ("memory", "duckdb", "spark")
N = 1200


@pytest.fixture(scope="module")
def data(tmp_path_factory):
    """A binary file (score, label, a segment, a date) twice, and a K-class file of three animals twice."""
    d = tmp_path_factory.mktemp("schema")
    rng = np.random.default_rng(11)
    s = np.round(rng.beta(2, 4, N), 3)
    y = (rng.random(N) < s).astype(int)
    day = pd.Timestamp("2025-01-06") + pd.to_timedelta(rng.integers(0, 70, N), unit="D")
    binary = pd.DataFrame({"score": s, "label": y, "segment": rng.choice(["a", "b", "c"], N), "day": day})
    binary.to_csv(d / "bin.csv", index=False)
    binary.assign(score=np.round(np.clip(s + rng.normal(0, 0.05, N), 0, 1), 3)).to_csv(d / "bin2.csv", index=False)
    for name, seed in (("animals.csv", 1), ("animals2.csv", 2)):
        r = np.random.default_rng(seed)
        logits = r.normal(size=(N, 3)) * 1.5
        p = np.exp(logits) / np.exp(logits).sum(axis=1, keepdims=True)
        label = (p.cumsum(axis=1) > r.random(N)[:, None]).argmax(axis=1)
        pd.DataFrame({"label": np.array(["cat", "dog", "emu"])[label], "p_cat": p[:, 0], "p_dog": p[:, 1],
                      "p_emu": p[:, 2]}).to_csv(d / name, index=False)
    return d


@pytest.fixture(scope="module")
def spark():
    """A local Spark whose Python workers run this checkout (K-class batches are calibrated in pandas UDFs)."""
    yield from spark_with_workers("calibdash-json-schema-tests", "local[2]", **{
        "spark.sql.shuffle.partitions": "2", "spark.sql.adaptive.enabled": "false"})


def _not_json(constant):
    raise AssertionError(f"the output holds {constant}, which is not JSON")


def _run(capsys, argv) -> dict:
    assert cli.main([str(a) for a in argv]) == 0
    return json.loads(capsys.readouterr().out, parse_constant=_not_json)      # strict JSON: no NaN, Infinity


def _shape(v):
    """The keys at every level (a list of records by its first record): what must not depend on the engine."""
    if isinstance(v, dict):
        return {k: _shape(x) for k, x in v.items()}
    if isinstance(v, list) and v and isinstance(v[0], dict):
        return [_shape(v[0])]
    return "list" if isinstance(v, list) else None


#: (command, kind) -> the arguments after the command (files relative to the data folder) and the engines.
CASES = {
    ("evaluate", "binary"): (["bin.csv", "--methods", "platt,isotonic"], ENGINES),
    ("evaluate", "multiclass"): (["animals.csv", "--methods", "temperature,ovr:isotonic"], ENGINES),
    ("groups", "binary"): (["bin.csv", "--by", "segment", "--boot", "20"], ENGINES),
    ("drift", "binary"): (["bin.csv", "--time", "day", "--boot", "20", "--method", "platt"], ENGINES),
    ("benchmark", "binary"): (["bin.csv", "bin2.csv", "--methods", "platt,isotonic", "--folds", "3",
                               "--repeats", "1"], ENGINES),
    # a K-class benchmark runs in memory (an engine refuses it: test_benchmark_refuses_a_k_class_table_on_an_engine)
    ("benchmark", "multiclass"): (["animals.csv", "animals2.csv", "--methods", "temperature,vector", "--folds", "3",
                                   "--repeats", "1"], ("memory",)),
}


@pytest.mark.parametrize("command, kind", list(CASES), ids=[f"{c}-{k}" for c, k in CASES])
def test_every_engine_writes_the_schema_of_the_command(data, capsys, request, command, kind):
    args, engines = CASES[(command, kind)]
    argv = [command, *[data / a if a.endswith(".csv") else a for a in args], "--json"]
    docs = {}
    for engine in engines:
        if engine == "spark":
            request.getfixturevalue("spark")
        docs[engine] = _run(capsys, [*argv, "--engine", engine])
        schemas.validate(docs[engine], command)
        assert docs[engine]["engine"] == engine
    shapes = {engine: _shape(doc) for engine, doc in docs.items()}
    assert all(s == shapes["memory"] for s in shapes.values()), "the keys depend on the engine"
    if command == "evaluate":
        for doc in docs.values():
            v = doc["validation"]
            assert doc["problem"] == kind and doc["n_classes"] == len(doc["classes"])
            assert list(v["class_counts"]) == [str(c) for c in doc["classes"]]        # keyed by the class
            assert sum(v["class_counts"].values()) == v["rows_used"] == v["rows_read"] == N
            assert doc["file"] == args[0]                                           # named alike everywhere
        # the engines count the same rows of each class
        assert len({json.dumps(d["validation"]["class_counts"]) for d in docs.values()}) == 1
    if command == "benchmark":
        assert all(d["datasets"] == docs["memory"]["datasets"] for d in docs.values())


def test_binary_and_k_class_evaluate_share_their_keys(data, capsys):
    b = _run(capsys, ["evaluate", data / "bin.csv", "--methods", "platt", "--json"])
    k = _run(capsys, ["evaluate", data / "animals.csv", "--methods", "temperature", "--json"])
    assert list(b) == list(k) and list(b["validation"]) == list(k["validation"])
    assert (b["problem"], b["n_classes"], b["positive"], b["class_columns"]) == ("binary", 2, 1, None)
    assert (k["problem"], k["n_classes"], k["positive"], k["score"]) == ("multiclass", 3, None, None)
    assert b["classes"] == [0, 1] and k["classes"] == ["cat", "dog", "emu"]


def test_intervals_and_verdict_fit_the_schema(data, capsys):
    """``--measures`` (binary) and ``--boot`` (K-class) add ``intervals`` of one shape; the verdict is K-class's."""
    b = _run(capsys, ["evaluate", data / "bin.csv", "--methods", "platt", "--measures", "smECE,HL", "--boot", "5",
                      "--json"])
    k = _run(capsys, ["evaluate", data / "animals.csv", "--methods", "temperature", "--boot", "5", "--json"])
    for doc in (b, k):
        schemas.validate(doc, "evaluate")
        assert doc["intervals"]["resamples"] == 5 and list(doc["intervals"]["values"])[0] == "uncalibrated"
    assert "verdict" not in b and isinstance(k["verdict"], str)
    assert cli.main(["groups", str(data / "bin.csv"), "--by", "segment", "--boot", "0", "--fix", "platt", "--json",
                     "--fail-above", "ECE=0"]) == 1                   # every group past the threshold: status 1
    g = json.loads(capsys.readouterr().out, parse_constant=_not_json)
    schemas.validate(g, "groups")
    assert g["fix"]["method"] == "platt" and g["alerts"][0]["measure"] == "ECE"


def test_infinite_statistics_are_written_as_null(data, capsys):
    """Two identical data sets rank every method alike: the Iman-Davenport statistic is infinite, which JSON
    cannot hold; the output says null (and parses as strict JSON)."""
    doc = _run(capsys, ["benchmark", data / "bin.csv", data / "bin.csv", "--methods", "platt,isotonic", "--folds", "3",
                        "--repeats", "1", "--json"])
    schemas.validate(doc, "benchmark")
    assert doc["friedman"]["ff"] is None and doc["friedman"]["chi2"] > 0


def test_benchmark_refuses_a_k_class_table_on_an_engine(data, capsys):
    assert cli.main(["benchmark", str(data / "animals.csv"), "--engine", "duckdb", "--json"]) == 2
    assert "K-class benchmark runs in memory" in capsys.readouterr().err


# -- the schemas refuse what the engines wrote before --------------------------------------------------------
_METRICS = {"uncalibrated": {"AUC": 0.72, "ACC": 0.71, "RMSE": 0.43, "Brier": 0.18, "LogLoss": 0.54, "ECE": 0.03,
                             "MCE": 0.1, "MVCE": 0.04}}
OLD_MEMORY = {"file": "bin.csv", "score": "score", "rows_judged": 900, "scheme": "split", "cells": None, "notes": [],
              "binning": "10 equal-count bins",
              "validation": {"rows_read": 3000, "rows_used": 3000, "rows_dropped": 0, "dropped": {},
                             "dropped_examples": {}, "label": {"column": "label", "positive": 1, "negative": 0},
                             "class_counts": {"positive (1)": 892, "negative (0)": 2108}, "mapped": {},
                             "messages": ["a", "b", "c"]},
              "metrics": _METRICS}
OLD_DUCKDB = {"file": "/tmp/bin.csv", "score": "score", "engine": "duckdb", "rows_judged": 875, "scheme": "split",
              "cells": "3,000 rows in 1,082 cells", "notes": [], "binning": "10 equal-count bins",
              "validation": {"rows_read": 3000, "rows_used": 3000, "rows_dropped": 0, "dropped": {},
                             "label": {"column": "label", "positive": None},
                             "class_counts": {"positive": 892, "negative": 2108}, "messages": ["a"]},
              "metrics": _METRICS}


@pytest.mark.parametrize("old", [OLD_MEMORY, OLD_DUCKDB], ids=["memory", "duckdb"])
def test_the_old_engine_specific_records_are_refused(old):
    errors = list(schemas.validator("evaluate").iter_errors(old))
    assert errors
    v = schemas.validator("evaluate")
    assert list(v.iter_errors(old["validation"], v.schema["properties"]["validation"]))   # its own block too


def test_a_record_of_the_new_shape_is_refused_when_it_mixes_the_kinds(data, capsys):
    doc = _run(capsys, ["evaluate", data / "bin.csv", "--methods", "platt", "--json"])
    schemas.validate(doc, "evaluate")
    for broken in ({**doc, "positive": None}, {**doc, "class_columns": ["p_0", "p_1"]}, {**doc, "extra": 1},
                   {**doc, "validation": {**doc["validation"], "label": {"column": "label"}}},
                   {k: v for k, v in doc.items() if k != "engine"}, {**doc, "engine": "pandas"}):
        with pytest.raises(jsonschema.ValidationError):
            schemas.validate(broken, "evaluate")


def test_the_schemas_are_valid_json_schemas_with_self_explaining_names():
    for name in (*schemas.COMMANDS, "common"):
        schema = schemas.load(name)
        jsonschema.Draft202012Validator.check_schema(schema)
        if name != "common":
            assert schema["$id"] == f"urn:calibdash:schema:{name}" and schema["additionalProperties"] is False
            assert set(schema["required"]) <= set(schema["properties"])
    with pytest.raises(ValueError, match="no schema 'report'"):
        schemas.load("report")
