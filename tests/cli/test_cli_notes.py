"""The command line shows calibdash's own warnings as ``note:`` lines, once each, and no library warning."""
from __future__ import annotations

import io
import warnings

import numpy as np

from calibdash.cli import main
from calibdash.cli.notes import notes_on_stderr


def _small_three_class_csv(path) -> None:
    """90 rows of 3 classes: one-vs-rest isotonic maps give probability 0 at some training scores."""
    rng = np.random.default_rng(0)
    P = rng.dirichlet(np.full(3, 0.5), 90)
    y = np.array([rng.choice(3, p=p) for p in P])
    path.write_text("label,p_a,p_b,p_c\n" + "".join(f"{'abc'[t]},{p[0]:.4f},{p[1]:.4f},{1 - p[0] - p[1]:.4f}\n"
                                                      for t, p in zip(y, P)))


def test_a_fits_warning_is_one_note_line_on_stderr_and_the_json_stays_one_record(tmp_path, capsys, monkeypatch):
    monkeypatch.delenv("PYTHONWARNINGS", raising=False)
    f = tmp_path / "k3.csv"
    _small_three_class_csv(f)
    assert main(["evaluate", str(f), "--methods", "ovr:isotonic", "--json"]) == 0
    out, err = capsys.readouterr()
    import json
    json.loads(out)                                              # stdout: the record only
    notes = [line for line in err.splitlines() if line.startswith("note: ")]
    assert len(notes) == 1 and "ovr:isotonic" in notes[0] and "probability 0" in notes[0]
    assert "Warning" not in err and ".py:" not in err


def test_library_and_numeric_warnings_are_not_shown(monkeypatch):
    monkeypatch.delenv("PYTHONWARNINGS", raising=False)
    out = io.StringIO()
    with notes_on_stderr(out):
        warnings.warn("from a library", UserWarning)             # raised here: not calibdash's code
        with np.errstate(divide="warn"):
            np.log(np.zeros(1))                                  # a numeric RuntimeWarning
    assert out.getvalue() == ""


def test_with_pythonwarnings_set_warnings_are_left_to_python(monkeypatch, recwarn):
    monkeypatch.setenv("PYTHONWARNINGS", "default")
    out = io.StringIO()
    with notes_on_stderr(out):
        warnings.warn("shown by Python", UserWarning)
    assert out.getvalue() == "" and any("shown by Python" in str(w.message) for w in recwarn)
