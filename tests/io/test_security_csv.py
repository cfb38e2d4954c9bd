"""CSV formula injection: every CSV calibdash writes opens in a spreadsheet as data, never as a formula.

Text cells (values, column names, index labels) that start with ``=``, ``+``, ``-``, ``@``, a tab or a
carriage return get a single quote in front (:mod:`calibdash.core.safe_text`); numbers, negative ones included,
are written as numbers. Each writer is run on such names: the CLI's ``apply`` (binary and K-class) and the
dashboard's prediction downloads; a scan checks that no other ``to_csv`` is left in calibdash or the pages.
"""
import io
import re
from pathlib import Path
from types import SimpleNamespace

import numpy as np
import pandas as pd
import pytest

from calibdash.cli import main
from calibdash.core.safe_text import FORMULA_START, cell, csv_text, safe_frame

REPO = Path(__file__).resolve().parents[2]
#: Text a spreadsheet would run, one per formula start.
FORMULAS = ['=HYPERLINK("http://x.test","click")', "+cat", "-2+3", "@SUM(A1:A9)", "\t=1+1", "\r=1+1"]


def _raw_cells(text: str) -> list[list[str]]:
    """The CSV's cells as text, as a spreadsheet reads them (no type conversion)."""
    return pd.read_csv(io.StringIO(text), dtype=str, keep_default_na=False, header=None).values.tolist()


def _formula_cells(cells) -> list[str]:
    return [c for row in cells for c in row if isinstance(c, str) and c.startswith(FORMULA_START)
            and not re.fullmatch(r"[+-]?(\d+\.?\d*|\.\d+)([eE][+-]?\d+)?", c)]


def test_cell_quotes_formulas_and_leaves_numbers_and_plain_text():
    for text in FORMULAS:
        assert cell(text) == "'" + text
    for value in ["-1", "+0.5", "-2e-3", ".5", "cat", "a=b", "", None, -1.5, 3, np.nan]:
        assert cell(value) is value or cell(value) == value
    assert cell(("=a", "b")) == ("'=a", "b")


def test_safe_frame_quotes_values_names_and_index_and_keeps_numbers():
    df = pd.DataFrame({"=label": pd.Categorical(["+x", "y", None]), "p": [-0.5, 0.25, np.nan],
                       "n": [-1, 2, 3], "code": ["-1", "@a", "b"]},
                      index=pd.Index(["@i", "-2", "k"], name="=rows"))
    out = safe_frame(df)
    assert list(out.columns) == ["'=label", "p", "n", "code"] and out.index.name == "'=rows"
    assert out.index.tolist() == ["'@i", "-2", "k"]
    assert out["'=label"].tolist()[:2] == ["'+x", "y"] and pd.isna(out["'=label"].iloc[2])
    assert out["code"].tolist() == ["-1", "'@a", "b"]
    assert out["p"].dtype == float and out["n"].dtype == df["n"].dtype
    np.testing.assert_array_equal(out["p"].to_numpy(), df["p"].to_numpy())
    assert df.columns[0] == "=label" and df["code"].iloc[1] == "@a"           # the input is not changed
    text = csv_text(df)
    assert "-0.5" in text and "\n-2," in text and not _formula_cells(_raw_cells(text))


def test_cli_apply_writes_no_formula(tmp_path, capsys):
    rng = np.random.default_rng(3)
    n = 200
    s = rng.uniform(size=n)
    df = pd.DataFrame({"note": [FORMULAS[i % len(FORMULAS)] for i in range(n)], "margin": np.log(s / (1 - s)),
                       "score": s, "label": (rng.uniform(size=n) < s).astype(int)})
    data, model, out = tmp_path / "d.csv", tmp_path / "m.json", tmp_path / "out.csv"
    df.to_csv(data, index=False)
    assert main(["fit", str(data), "--method", "histogram", "--score", "score", "--label", "label",
                 "--out", str(model)]) == 0
    assert main(["apply", str(model), str(data), "--score", "score", "--out", str(out)]) == 0
    text = out.read_text()
    assert not _formula_cells(_raw_cells(text))
    got = pd.read_csv(out)
    given = pd.read_csv(data)["note"]
    assert got["note"].tolist() == ["'" + t for t in given]                 # the text kept, behind a quote
    np.testing.assert_array_equal(got["margin"].to_numpy(), df["margin"].to_numpy())   # negative numbers as numbers
    assert (got["margin"] < 0).any()


def test_cli_apply_of_a_class_model_writes_no_formula(tmp_path, capsys):
    rng = np.random.default_rng(4)
    n = 300
    P = rng.dirichlet([1, 1, 1], size=n)
    names = ["=cmd", "@SUM(A1)", "+x"]
    labels = np.array(names, dtype=object)[[rng.choice(3, p=p) for p in P]]
    df = pd.DataFrame({"label": labels, **{f"p_{c}": P[:, j] for j, c in enumerate(names)}})
    data, model, out = tmp_path / "d.csv", tmp_path / "m.json", tmp_path / "out.csv"
    df.to_csv(data, index=False)
    assert main(["fit", str(data), "--method", "ovr:histogram", "--out", str(model)]) == 0
    assert main(["apply", str(model), str(data), "--out", str(out)]) == 0
    text = out.read_text()
    assert not _formula_cells(_raw_cells(text))
    got = pd.read_csv(out)
    assert sorted(set(got["label"])) == sorted("'" + c for c in names)
    calibrated = got[[c for c in got.columns if c.startswith("calibrated_")]].to_numpy()
    np.testing.assert_allclose(calibrated.sum(axis=1), 1.0, atol=1e-12)


def test_dashboard_prediction_downloads_write_no_formula():
    from pages.parts import downloads
    preds = pd.DataFrame({"=m": [0.2, 0.7], "-x": [-0.1, 0.5]})
    ev = SimpleNamespace(weights=None, predictions=preds, labels=np.array(["=l", "@k"], dtype=object))
    text = downloads.predictions_csv(ev)().decode()
    cells = _raw_cells(text)
    assert not _formula_cells(cells)
    assert cells[0] == ["row", "label", "'=m", "'-x"] and cells[1][1:] == ["'=l", "0.2", "-0.1"]
    classes = ["=a", "+b"]
    cev = SimpleNamespace(rows=np.array([0, 1]), labels=np.array([0, 1]),
                          predictions={"-m": np.array([[0.4, 0.6], [0.3, 0.7]])})
    cells = _raw_cells(downloads.class_probabilities_csv(cev, classes)().decode())
    assert not _formula_cells(cells)
    assert cells[0] == ["row", "label", "'-m:=a", "'-m:+b"] and [r[1] for r in cells[1:]] == ["'=a", "'+b"]


def test_every_csv_writer_goes_through_csv_text():
    """No ``to_csv`` call outside :mod:`calibdash.core.safe_text` in calibdash or the pages (the sample data
    generator writes synthetic values it chose itself)."""
    allowed = {REPO / "calibdash" / "core/safe_text.py", REPO / "calibdash" / "samples" / "make.py"}
    found = []
    for path in [*REPO.glob("calibdash/**/*.py"), *REPO.glob("pages/**/*.py"), REPO / "app.py"]:
        if path not in allowed and ".to_csv(" in path.read_text():
            found.append(str(path.relative_to(REPO)))
    assert found == []
