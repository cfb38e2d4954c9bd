"""Every K-class method family on odd but valid input: finite rows that sum to 1, and each case's property.

Methods (:data:`METHODS`): every registered K-class method but the composites (:data:`OWN`: today the scaling
family, temperature, vector, matrix, Dirichlet; a method added is run at once), one-vs-rest over
every binary calibrator a composite takes, and top-label over four (histogram binning, the paper's;
isotonic regression; Platt scaling; BBQ): every family, and every binary method through one-vs-rest.

Cases: one-hot rows among soft rows; a class absent from the labels; a single class in the labels; two of
ten classes present; logits of magnitude 1e4; K = 1,000 with n = 5,000; fewer rows than classes; the
columns permuted; the rows shuffled; integer weights against repeated rows; float32 input against the same
numbers in float64. Each asserts finite rows, each summing to 1, what the case promises, and, where a
method reports its iterations (``n_iter_``: the scaling family; Platt, beta and temperature inside a
composite), that its solver stopped within ``ITERATION_CAP`` iterations (conftest.py): work is capped in
iterations, never in seconds. A method's own odd cases (K = 2 against the binary path, ties at the top, exact zeros)
sit in its module: test_ovr.py, test_top_label.py, test_temperature.py.
"""
from __future__ import annotations

import numpy as np
import pytest
from scipy.special import softmax

from calibdash import calibrators
from calibdash.core.errors import DataError
from calibdash.calibrators.multiclass.methods.ovr import ZeroProbabilityWarning
from tests.calibrators.multiclass.conftest import (BINARY, TOP_LABEL, check_fit, check_rows, fit, probe, soft,
                                                   with_one_hot)

OWN = [n for n in calibrators.available("classes", expand=False) if n not in calibrators.composites()]
METHODS = OWN + [f"ovr:{b}" for b in BINARY] + [f"top_label:{b}" for b in TOP_LABEL]


def _binary(name: str) -> str:
    return name.partition(":")[2]


def tolerance(name: str) -> dict:
    """How closely two fits on the same data (another row or column order, weights for repeats) agree.

    The composites of methods that are functions of per-score counts (binning, PAV, ...) agree exactly but
    for the row's final division by its sum, whose K terms are added in the columns' order: 1e-15
    relative. The Newton solvers (Platt, beta, temperature inside a composite; the scaling family) stop at
    the floating-point limit, where the coefficients are off the optimum by the rounding of the gradient's
    sums carried through the inverse Hessian: tests/test_weights.py bounds that by 2.4e-11 relative on
    4,000 rows; 1e-9 keeps its margin. The scaling family's stopping rule is a largest gradient entry of
    1e-9 (calibdash.calibrators.multiclass.linear), which, through a Hessian whose smallest eigenvalue on these data
    is above 1e-3, leaves the parameters within 1e-6 and the probabilities within about that: the bound for every
    method that is not a composite."""
    if not _binary(name):
        return {"rtol": 0, "atol": 1e-6}
    if _binary(name) in {"platt", "beta", "temperature", "scaling_binning"}:
        return {"rtol": 1e-9, "atol": 1e-12}
    return {"rtol": 1e-15, "atol": 1e-15}


def cases(case: str, names=METHODS):
    """``names`` as the parameters of ``case`` (every method runs every case)."""
    return list(names)


# -- the cases --------------------------------------------------------------------------------------------
@pytest.mark.parametrize("name", cases("one-hot"))
def test_one_hot_rows_among_soft_rows(name):
    """A third of the rows one-hot (log-probabilities of -690.8 beside 0): rows finite and summing to 1."""
    P, y = with_one_hot()
    check_fit(fit(name, P, y), P)


@pytest.mark.parametrize("name", cases("absent class"))
def test_a_class_absent_from_the_labels(name):
    """Class 3 of 4 never occurs. One-vs-rest gives it 0 in every row (its documented rate) and says so."""
    P, y = soft(120, 4, seed=2)
    y = np.where(y == 3, 0, y)
    cal = fit(name, P, y)
    Q = check_fit(cal, P)
    if name.startswith("ovr:"):
        assert np.all(Q[:, 3] == 0.0)
        assert any("do not occur in the fitted labels" in note for note in cal.notes_)
        with pytest.warns(ZeroProbabilityWarning, match=r"classes \(column 3\) do not occur"):
            calibrators.get(name, "classes").fit(P, y)


@pytest.mark.parametrize("name", cases("single class"))
def test_a_single_class_in_the_labels(name):
    """Every label is class 1: a typed DataError that says so, or a fit whose rows are finite. One-vs-rest
    states its fit: every row is class 1, and its notes say so."""
    P, _ = soft(60, 3, seed=3)
    y = np.ones(60, dtype=int)
    try:
        cal = fit(name, P, y)
    except DataError as exc:
        assert "class" in str(exc)
        return
    Q = check_fit(cal, P)
    if name.startswith("ovr:"):
        np.testing.assert_array_equal(Q, np.tile([0.0, 1.0, 0.0], (60, 1)))
        assert any("label of every row" in note for note in cal.notes_)


@pytest.mark.parametrize("name", cases("two of ten"))
def test_two_of_ten_classes_present(name):
    """Ten columns, labels only 2 and 7: rows finite; one-vs-rest puts all mass on those two."""
    P, y = soft(80, 10, seed=4)
    y = np.where(np.arange(80) % 3 == 0, 2, 7)
    cal = fit(name, P, y)
    Q = check_fit(cal, P)
    if name.startswith("ovr:"):
        np.testing.assert_array_equal(np.delete(Q, [2, 7], axis=1), 0.0)


@pytest.mark.parametrize("name", cases("logits 1e4"))
def test_logits_of_magnitude_1e4(name):
    """Logits ~ N(0, 1e4): the softmax is one-hot to the last bit in nearly every row (scores exactly 0 and
    1.0 and a few one ulp from them)."""
    rng = np.random.default_rng(5)
    Z = rng.normal(size=(200, 5)) * 1e4
    y = np.where(rng.random(200) < 0.7, Z.argmax(axis=1), rng.integers(0, 5, 200))
    check_fit(fit(name, Z, y, logits=True), Z, logits=True)


#: K = 1,000 with 5 rows a class: the methods whose one fit is cheap enough here (each one-vs-rest method
#: fits 1,000 binary maps on 5,000 rows; ovr:histogram, the cheapest, stands for them).
K1000 = OWN + ["ovr:histogram", "top_label:isotonic", "top_label:histogram"]


@pytest.mark.parametrize("name", cases("K=1000", K1000))
def test_k_1000_classes_5_rows_each(name):
    """5,000 rows, 1,000 classes, 5 rows a class: finite rows, or a DataError naming the limit; never a
    MemoryError. One-vs-rest isotonic/histogram give probability 0 below a class's few rows and say so."""
    k = 1000
    rng = np.random.default_rng(6)
    y = np.repeat(np.arange(k), 5)
    Z = rng.normal(size=(y.size, k))
    Z[np.arange(y.size), y] += 0.5
    P = softmax(Z, axis=1)
    try:
        cal = fit(name, P, y)
    except DataError as exc:
        assert "1,000" in str(exc) or "1000" in str(exc), str(exc)
        return
    Q = cal.predict_proba(P[:50])
    check_rows(Q, 50, k)
    if name == "ovr:histogram":
        assert any("of 1,000 classes" in note for note in cal.notes_)


@pytest.mark.parametrize("name", cases("n < K"))
def test_fewer_rows_than_classes(name):
    """12 rows, 20 classes (at most 12 present)."""
    P, y = soft(12, 20, seed=7)
    y = np.arange(12) % 20
    check_fit(fit(name, P, y), P)


@pytest.mark.parametrize("name", cases("columns permuted"))
def test_permuting_the_columns_permutes_the_output(name):
    """Columns (and labels) permuted: the output's columns permute along, to :func:`tolerance`."""
    P, y = with_one_hot(seed=8)
    perm = np.array([2, 0, 3, 1])
    inverse = np.argsort(perm)
    base = fit(name, P, y)
    moved = fit(name, P[:, perm], inverse[y])
    G = probe(4)
    check_fit(moved, P[:, perm])
    np.testing.assert_allclose(moved.predict_proba(G[:, perm]), base.predict_proba(G)[:, perm], **tolerance(name))


@pytest.mark.parametrize("name", cases("rows shuffled"))
def test_shuffled_rows_give_the_same_predictions(name):
    P, y = with_one_hot(seed=9)
    perm = np.random.default_rng(10).permutation(len(y))
    base = fit(name, P, y)
    shuffled = fit(name, P[perm], y[perm])
    check_fit(shuffled, P)
    G = probe(4)
    np.testing.assert_allclose(shuffled.predict_proba(G), base.predict_proba(G), **tolerance(name))


@pytest.mark.parametrize("name", cases("weights"))
def test_integer_weights_equal_repeated_rows(name):
    P, y = with_one_hot(seed=11)
    w = np.random.default_rng(12).integers(0, 4, len(y))
    w[:4] = 1                                           # one-hot rows among them stay in
    weighted = fit(name, P, y, w)
    repeated = fit(name, np.repeat(P, w, axis=0), np.repeat(y, w))
    check_fit(weighted, P)
    G = probe(4)
    np.testing.assert_allclose(weighted.predict_proba(G), repeated.predict_proba(G), **tolerance(name))


@pytest.mark.parametrize("name", cases("float32"))
def test_float32_input_is_its_numbers_in_float64(name):
    """A float32 table is the same numbers as its float64 copy: the same fit and predictions, exactly. Its
    rows do not sum to 1 in float64 and it holds ties the float64 table had not; the binary methods see
    the numbers as given (not divided by the row's sum), so those ties stay ties."""
    P, y = with_one_hot(seed=13)
    P32 = P.astype(np.float32)
    a = fit(name, P32, y)
    b = fit(name, P32.astype(np.float64), y)
    G32 = probe(4).astype(np.float32)
    check_fit(a, P32)
    np.testing.assert_array_equal(a.predict_proba(G32), b.predict_proba(G32.astype(np.float64)))


