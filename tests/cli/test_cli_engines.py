"""The command line on large sources: evaluate and fit through DuckDB give what the in-memory path gives."""
import io
import json
import re
import signal
import subprocess
import sys

import numpy as np
import pandas as pd
import pytest

from calibdash import cli
from calibdash.io import export
from tests.conftest import REPO


@pytest.fixture(scope="module")
def glob(tmp_path_factory):
    """Three Parquet parts of 30,000 rows (rounded scores: exact cells) and the same rows as one CSV."""
    d = tmp_path_factory.mktemp("lake")
    rng = np.random.default_rng(5)
    s = np.round(rng.beta(2, 5, 30_000), 3)
    y = (rng.random(s.size) < np.clip(1.2 * s, 0, 1)).astype(int)
    df = pd.DataFrame({"pred": s, "clicked": y})
    for i, part in enumerate(np.array_split(np.arange(s.size), 3)):
        df.iloc[part].to_parquet(d / f"part-{i}.parquet", index=False)
    df.to_csv(d / "all.csv", index=False)
    return d


def _run(capsys, *argv):
    assert cli.main(list(argv)) == 0
    return capsys.readouterr().out


def test_evaluate_on_a_glob_through_duckdb_equals_the_in_memory_cells(glob, capsys):
    mem = json.loads(_run(capsys, "evaluate", str(glob / "all.csv"), "--methods", "platt,isotonic,bbq",
                          "--scheme", "kfold", "--cells", "always", "--json"))
    duck = json.loads(_run(capsys, "evaluate", str(glob / "part-*.parquet"), "--methods", "platt,isotonic,bbq",
                           "--scheme", "kfold", "--json"))
    assert duck["engine"] == "duckdb" and duck["score"] == "pred"        # the roles were guessed from a sample
    assert duck["rows_judged"] == mem["rows_judged"] == 30_000
    for method, row in mem["metrics"].items():
        for name, value in row.items():
            assert duck["metrics"][method][name] == pytest.approx(value, rel=1e-9, abs=1e-12), (method, name)


def test_fit_through_duckdb_gives_the_model_of_the_rows(glob, tmp_path, capsys):
    out = tmp_path / "iso.json"
    assert cli.main(["fit", str(glob / "part-*.parquet"), "--method", "isotonic", "--engine", "duckdb",
                     "--out", str(out)]) == 0
    assert "aggregated by duckdb" in capsys.readouterr().err
    on_cells = export.loads(out.read_text())
    df = pd.concat(pd.read_parquet(glob / f"part-{i}.parquet") for i in range(3))
    from calibdash.calibrators import get
    on_rows = get("isotonic").fit(df["pred"], df["clicked"])
    grid = np.linspace(0, 1, 1001)
    np.testing.assert_array_equal(on_cells.predict(grid), on_rows.predict(grid))


def test_a_feature_aware_method_or_a_query_without_roles_is_refused(glob, capsys):
    assert cli.main(["evaluate", str(glob / "part-*.parquet"), "--methods", "mbct"]) == 2
    assert "needs the rows" in capsys.readouterr().err
    assert cli.main(["evaluate", "x", "--query", "SELECT 1"]) == 2
    assert "--score and --label" in capsys.readouterr().err


def test_benchmark_on_a_glob_through_duckdb_equals_the_in_memory_cells(glob, capsys):
    """One data set kept in Parquet: each repeat's folds are aggregated by DuckDB; the means equal the cells
    evaluation of the same rows read into memory (the same hashed folds)."""
    out = json.loads(_run(capsys, "benchmark", str(glob / "part-*.parquet"), "--engine", "duckdb", "--methods",
                          "platt,isotonic", "--folds", "3", "--repeats", "2", "--json"))
    from calibdash.evaluation import cells
    from calibdash.evaluation.holdout import Scheme, cell_parts, evaluate_cells
    df = pd.concat(pd.read_parquet(glob / f"part-{i}.parquet") for i in range(3))
    expect = []
    for seed in (0, 1):
        scheme = Scheme("kfold", n_folds=3, seed=seed)
        c = cells.aggregate(df["pred"].to_numpy(), df["clicked"].to_numpy(), cell_parts(len(df), scheme))
        expect.append(evaluate_cells(c, "platt,isotonic", scheme).metrics["ECE"])
    mean = (expect[0] + expect[1]) / 2
    (means,) = out["means"].values()                                   # the one data set
    for method in ("uncalibrated", "platt", "isotonic"):
        assert means[method]["ECE"] == pytest.approx(mean[method], rel=1e-9)


def test_a_glob_defaults_to_duckdb_for_apply_and_benchmark(glob, tmp_path, capsys):
    """Without --engine, a glob is applied and benchmarked where it lies (a file under 200 MB stays in memory)."""
    model = tmp_path / "platt.json"
    assert cli.main(["fit", str(glob / "all.csv"), "--method", "platt", "--out", str(model)]) == 0
    capsys.readouterr()
    out = tmp_path / "calibrated.parquet"
    assert cli.main(["apply", str(model), str(glob / "part-*.parquet"), "--out", str(out)]) == 0
    assert "with duckdb" in capsys.readouterr().err
    rows = pd.read_parquet(out)
    assert len(rows) == 30_000 and "calibrated" in rows
    assert cli.main(["apply", str(model), str(glob / "part-*.parquet")]) == 2            # Parquet needs --out
    assert "--out" in capsys.readouterr().err
    res = json.loads(_run(capsys, "benchmark", str(glob / "part-*.parquet"), "--methods", "platt", "--folds", "2",
                          "--repeats", "1", "--json"))
    assert res["datasets"] == ["3 files (" + str(glob / "part-0.parquet") + ", ...)"]


# -- a long aggregation is a job: its stages on stderr, Ctrl-C cancels it --------------------------------
_STAGE_LINE = re.compile(r"^Aggregating 3 files \(.*\) with duckdb: (.+) \((\d+) s\)$")


def test_an_engine_aggregation_prints_one_line_per_stage_on_stderr_and_only_json_on_stdout(glob, capsys):
    assert cli.main(["evaluate", str(glob / "part-*.parquet"), "--methods", "platt", "--json"]) == 0
    out, err = capsys.readouterr()
    assert json.loads(out)["engine"] == "duckdb"                        # stdout is the JSON and nothing else
    assert "\r" not in err                                             # not a terminal: plain lines
    stages = [_STAGE_LINE.match(line).group(1) for line in err.splitlines()]
    assert stages[0] == "starting" and stages[-1] == "done" and len(set(stages)) == len(stages)
    assert any(s.startswith("1. statistics") for s in stages) and any(s.startswith("3. grouping") for s in stages)
    # a benchmark's aggregations (one per repeat) show theirs the same way, its JSON untouched
    assert cli.main(["benchmark", str(glob / "part-*.parquet"), "--engine", "duckdb", "--methods", "platt",
                     "--folds", "2", "--repeats", "2", "--json"]) == 0
    out, err = capsys.readouterr()
    assert json.loads(out)["datasets"]
    assert [_STAGE_LINE.match(line).group(1) for line in err.splitlines()].count("done") == 2


class _Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


def test_on_a_terminal_the_progress_line_is_rewritten_in_place(glob, tmp_path, monkeypatch):
    term = _Terminal()
    monkeypatch.setattr(sys, "stderr", term)
    assert cli.main(["fit", str(glob / "part-*.parquet"), "--method", "platt", "--engine", "duckdb",
                     "--out", str(tmp_path / "m.json")]) == 0
    progress, rest = term.getvalue().split("\n", 1)
    shown = progress.split("\r")
    assert shown[0] == "" and len(shown) >= 3                          # at least one look, then the end
    assert _STAGE_LINE.match(shown[-1].rstrip()).group(1) == "done"
    assert rest.startswith("Fitted platt on 30,000 rows")


def test_ctrl_c_cancels_the_aggregation(tmp_path):
    """SIGINT while DuckDB scans: the job is cancelled (its query interrupted), exit status 130, stdout empty."""
    query = "SELECT random() AS p, CAST(random() < 0.5 AS INTEGER) AS y FROM range(3000000000)"
    proc = subprocess.Popen([sys.executable, "-m", "calibdash", "evaluate", "x", "--query", query, "--score", "p",
                             "--label", "y", "--scheme", "insample", "--memory-limit", "256MB", "--json"],
                            cwd=REPO, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
    seen = ""
    try:
        while "1. statistics" not in seen:                              # the first query runs
            line = proc.stderr.readline()
            assert line, f"the command ended before aggregating: {seen}"
            seen += line
        proc.send_signal(signal.SIGINT)
        out, err = proc.communicate(timeout=120)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == 130 and out == ""
    assert err.strip().endswith("cancelled.") and "Traceback" not in err
