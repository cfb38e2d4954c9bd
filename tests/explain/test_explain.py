"""calibdash.explain: the dispatcher, and what every method's explanation holds."""
import numpy as np
import pandas as pd
import pytest

from calibdash import calibrators, figures
from calibdash.core.errors import NotFittedError, ProgrammingError
from calibdash.explain import Explanation, explain


@pytest.fixture(scope="module")
def rows():
    rng = np.random.default_rng(5)
    s = rng.uniform(size=3000)
    y = (rng.uniform(size=3000) < s ** 2).astype(int)
    f = pd.DataFrame({"g": rng.choice(list("ab"), 3000)})
    return s, y, f


@pytest.mark.parametrize("name", calibrators.available())
def test_every_method_explains_itself_as_plain_data(name, rows):
    s, y, f = rows
    cal = calibrators.get(name)
    feats = f if cal.uses_features else None
    cal.fit(s, y, feats)
    ex = explain(cal, s, y, feats)
    assert isinstance(ex, Explanation) and ex.method == name
    assert all(isinstance(n, str) and n for n in ex.notes)
    assert all(isinstance(t, pd.DataFrame) for t in ex.tables.values())
    for title, fig in figures.inner_figures(ex):       # drawing needs nothing but the explanation
        assert title and fig.data


def test_explaining_needs_a_fitted_calibrator_and_its_own_rows(rows):
    s, y, _ = rows
    with pytest.raises(NotFittedError):
        explain(calibrators.get("platt"), s, y)
    cal = calibrators.get("platt").fit(s, y)
    with pytest.raises(ProgrammingError, match="fitted on 3,000 rows"):
        explain(cal, s[:100], y[:100])
    with pytest.raises(ProgrammingError, match="not a calibdash calibrator"):
        explain(object(), s, y)
