"""What the K-class fits say of themselves reaches a user of the pages (where no warning does)."""
from __future__ import annotations

import warnings

import numpy as np
import pandas as pd

from calibdash import calibrators
from calibdash.evaluation.holdout import fit_notes
from pages.parts.url_state import CLASS_METHODS
from tests.pages.test_app import COMPARE, DATA, _run_entry_point_every_time, go, shown, start, upload  # noqa: F401


def _rows(n: int = 90, seed: int = 0):
    rng = np.random.default_rng(seed)
    P = rng.dirichlet(np.full(3, 0.5), n)
    y = np.array([rng.choice(3, p=p) for p in P])
    return P, y


def test_fit_notes_gather_each_methods_own_sentences_with_its_key():
    P, y = _rows()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        iso = calibrators.get("ovr:isotonic", "classes").fit(P, y)
        platt = calibrators.get("ovr:platt", "classes").fit(P, y)
        const = calibrators.get("dirichlet", "classes").fit(np.tile([[0.5, 0.3, 0.2], [0.2, 0.5, 0.3]], (20, 1)),
                                                            np.tile([0, 1, 1, 2], 10))
    notes = fit_notes({"ovr:isotonic": iso, "ovr:platt": platt, "dirichlet": const})
    assert any(n.startswith("ovr:isotonic: ") and "probability 0" in n for n in notes)
    assert not any(n.startswith("ovr:platt") for n in notes)              # a smooth map gives no zero
    assert any(n.startswith("dirichlet: ") and "lambda=" in n for n in notes)  # the penalty fallback, said
    assert fit_notes({"ovr:platt": platt}) == []


def test_compare_shows_what_the_fits_say():
    P, y = _rows(120, seed=1)
    frame = pd.DataFrame({"label": np.array(["ant", "bee", "cow"])[y],
                          **{f"p_{c}": P[:, j] for j, c in enumerate(["ant", "bee", "cow"])}})
    at = start(DATA)
    upload(at, "three.csv", frame.to_csv(index=False, float_format="%.6f").encode())
    go(at, COMPARE)
    at.multiselect(key=CLASS_METHODS).set_value(["temperature", "ovr:isotonic"]).run()
    assert not at.exception, [e.value for e in at.exception]
    said = [shown(w.value) for w in at.warning if "What the fits say" in w.value]
    assert said and "ovr:isotonic: " in said[0] and "probability 0" in said[0]
