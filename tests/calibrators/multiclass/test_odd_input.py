"""Every K-class method family on odd but valid input: finite rows that sum to 1, and each case's property.

Methods (:data:`METHODS`): the scaling family (temperature, vector, matrix, Dirichlet), one-vs-rest over
every binary calibrator a composite takes, and top-label over four (histogram binning, the paper's;
isotonic regression; Platt scaling; BBQ): every family, and every binary method through one-vs-rest.

Cases: one-hot rows among soft rows; a class absent from the labels; a single class in the labels; two of
ten classes present; logits of magnitude 1e4; K = 1,000 with n = 5,000; fewer rows than classes; the
columns permuted; the rows shuffled; integer weights against repeated rows; float32 input against the same
numbers in float64. Each asserts finite rows, each summing to 1, what the case promises, and, where a
method reports its iterations (``n_iter_``: the scaling family; Platt, beta and temperature inside a
composite), that its solver stopped within :data:`ITERATION_CAP` iterations: work is capped in
iterations, never in seconds.
"""
from __future__ import annotations

import warnings

import numpy as np
import pytest
from scipy.special import softmax

from calibdash import calibrators
from calibdash.core.errors import DataError
from calibdash.calibrators.multiclass.methods.ovr import ZeroProbabilityWarning

SCALING = ["temperature", "vector", "matrix", "dirichlet"]
BINARY = [b for b in calibrators.available() if not calibrators.get_class(b).uses_features]
TOP_LABEL = ["histogram", "isotonic", "platt", "bbq"]
METHODS = SCALING + [f"ovr:{b}" for b in BINARY] + [f"top_label:{b}" for b in TOP_LABEL]

#: A fit that reports its iterations must stop before this many: the scaling family's Newton steps (a
#: handful on these small problems; its own limit is 5,000) and the binary Newton fits inside a composite
#: (their limit is 100; on separable rows, such as a class with one row of 12, they may use it).
ITERATION_CAP = 500


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
    1e-9 (calibdash.calibrators.multiclass.linear), which, through a Hessian whose smallest eigenvalue on these data is
    above 1e-3, leaves the parameters within 1e-6 and the probabilities within about that."""
    if name in SCALING:
        return {"rtol": 0, "atol": 1e-6}
    if _binary(name) in {"platt", "beta", "temperature", "scaling_binning"}:
        return {"rtol": 1e-9, "atol": 1e-12}
    return {"rtol": 1e-15, "atol": 1e-15}


# -- data ------------------------------------------------------------------------------------------------
def soft(n: int, k: int, seed: int = 0, scale: float = 1.5):
    """(P, y): softmax rows of Gaussian logits, labels from a sharper softmax (miscalibrated scores)."""
    rng = np.random.default_rng(seed)
    Z = rng.normal(size=(n, k)) * scale
    truth = softmax(1.6 * Z, axis=1)
    y = (rng.random(n)[:, None] > np.cumsum(truth, axis=1)).sum(axis=1)
    return softmax(Z, axis=1), np.minimum(y, k - 1)


def with_one_hot(n: int = 90, k: int = 4, seed: int = 1):
    """Soft rows with every third row replaced by a one-hot row (probabilities exactly 0 and 1.0), most of
    them on the right class."""
    P, y = soft(n, k, seed)
    rows = np.arange(0, n, 3)
    hot = np.where(np.arange(rows.size) % 4 == 0, (y[rows] + 1) % k, y[rows])
    P[rows] = np.eye(k)[hot]
    return P, y


#: Rows to predict in every case: soft rows, one-hot rows, a uniform row, a row with zeros.
def probe(k: int) -> np.ndarray:
    grid = np.vstack([np.random.default_rng(99).dirichlet(np.ones(k), 12), np.eye(k), np.full((1, k), 1.0 / k)])
    zeros = np.zeros((1, k))
    zeros[0, :2] = [0.25, 0.75]
    return np.vstack([grid, zeros])


def fit(name: str, P, y, w=None, **params):
    """The method fitted (its ZeroProbabilityWarnings, which these inputs call for, kept quiet), every
    solver inside it stopped within :data:`ITERATION_CAP` iterations."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ZeroProbabilityWarning)
        cal = calibrators.get(name, "classes", **params).fit(P, y, sample_weight=w)
    for it in iterations(cal):
        assert it < ITERATION_CAP, f"the solver used {it} iterations (cap {ITERATION_CAP})"
    return cal


def check_rows(Q: np.ndarray, n: int, k: int) -> None:
    assert Q.shape == (n, k)
    assert np.all(np.isfinite(Q)), f"{int((~np.isfinite(Q)).sum())} non-finite probabilities"
    assert np.all(Q >= 0)
    np.testing.assert_allclose(Q.sum(axis=1), 1.0, rtol=0, atol=1e-12)


def iterations(cal) -> list[int]:
    """The iterations each solver inside ``cal`` reports: its own ``n_iter_``, or its sub-models'."""
    subs = [cal] + [m for m in getattr(cal, "models_", []) if m is not None] + [getattr(cal, "pooled_", None)]
    return [int(m.n_iter_) for m in subs if hasattr(m, "n_iter_")]


def check_fit(cal, P, logits: bool = False) -> np.ndarray:
    """Finite rows summing to 1 on the training rows and on :func:`probe`."""
    k = np.shape(P)[1]
    Q = cal.predict_proba(P)
    check_rows(Q, len(P), k)
    G = probe(k)
    check_rows(cal.predict_proba(np.log(np.maximum(G, 1e-300)) if logits else G), len(G), k)
    return Q


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


def test_ovr_bbq_on_logits_1e4_as_reported():
    """The report: one-vs-rest BBQ on 1,000 rows of logits of magnitude 1e4 gave NaN rows (BBQ's bin of no
    width at 1.0, tests/calibrators/test_odd_input.py). Labels the logits' argmax: classes separated by the scores."""
    Z = np.random.default_rng(0).normal(size=(1000, 5)) * 1e4
    cal = fit("ovr:bbq", Z, Z.argmax(axis=1), logits=True)
    check_fit(cal, Z, logits=True)


#: K = 1,000 with 5 rows a class: the methods whose one fit is cheap enough here (each one-vs-rest method
#: fits 1,000 binary maps on 5,000 rows; ovr:histogram, the cheapest, stands for them).
K1000 = SCALING + ["ovr:histogram", "top_label:isotonic", "top_label:histogram"]


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


# -- K = 2 through the K-class path against the binary path ---------------------------------------------------
def two_classes(n: int = 300, seed: int = 14):
    """Scores p from a Beta(2, 2) (no ties, none on a bin edge, none within 1e-16 of 0 or 1), labels from
    p^1.5 (miscalibrated), and the K = 2 table [1 - p, p]."""
    rng = np.random.default_rng(seed)
    p = rng.beta(2, 2, n)
    y = (rng.random(n) < p ** 1.5).astype(int)
    return p, y, np.column_stack([1 - p, p])


#: BBQ's paper variant moves each equal-count boundary to the nearest change of score, the lower one when
#: two are as near: mirrored, that is the upper one, so the binnings of ``p`` and ``1 - p`` differ (here
#: by 1e-4 in the map).
ASYMMETRIC = {"bbq"}


@pytest.mark.parametrize("binary", BINARY)
def test_k2_ovr_is_the_binary_method_on_each_column_normalised(binary):
    """One-vs-rest at K = 2 is, by definition, ``q1 / (q0 + q1)`` with ``q1 = X`` fitted on ``(p, y)`` at
    ``p`` and ``q0 = X`` fitted on ``(1 - p, 1 - y)`` at ``1 - p``: exactly (the same numbers reach the
    binary fits: the columns as given). A binary method symmetric under ``(s, y) -> (1 - s, 1 - y)``
    (``q0 = 1 - q1`` but for rounding: equal-width edges mirror, PAV, the logistic fits' logit changes
    sign, symmetric priors) makes one-vs-rest at K = 2 ``X(p)`` to rounding (seen: 8e-15); every one here
    is, on these scores, but BBQ (:data:`ASYMMETRIC`)."""
    p, y, P = two_classes()
    grid = np.unique(np.r_[p, np.random.default_rng(15).random(100)])
    G = np.column_stack([1 - grid, grid])
    Q = fit(f"ovr:{binary}", P, y).predict_proba(G)
    q1 = calibrators.get(binary).fit(p, y).predict(grid)
    q0 = calibrators.get(binary).fit(1 - p, 1 - y).predict(1 - grid)
    np.testing.assert_array_equal(Q[:, 1], q1 / (q0 + q1))
    if binary not in ASYMMETRIC:
        np.testing.assert_allclose(Q[:, 1], q1, rtol=0, atol=1e-12)


@pytest.mark.parametrize("binary", BINARY)
def test_k2_top_label_is_the_binary_method_on_each_half(binary):
    """Top-label at K = 2 (``min_rows=0``: every predicted class its own map) is not ``X(p)``: it fits one
    map on the rows with ``p > 1/2``, ``h1 = X`` on ``(p, y)``, and one on the others, ``h0 = X`` on
    ``(1 - p, 1 - y)``, and predicts ``h1(p)`` or ``1 - h0(1 - p)`` for class 1. That relation holds to the
    rounding of the row's division by ``h + (1 - h)``."""
    p, y, P = two_classes()
    grid = np.unique(np.r_[p, np.random.default_rng(15).random(100)])
    grid = grid[grid != 0.5]
    Q = fit(f"top_label:{binary}", P, y, min_rows=0).predict_proba(np.column_stack([1 - grid, grid]))
    up = p > 1 - p
    h1 = calibrators.get(binary).fit(p[up], y[up])
    h0 = calibrators.get(binary).fit(1 - p[~up], 1 - y[~up])
    top = grid > 1 - grid
    want = np.where(top, h1.predict(np.where(top, grid, 0.5)), 1 - h0.predict(np.where(top, 0.5, 1 - grid)))
    np.testing.assert_allclose(Q[:, 1], want, rtol=0, atol=1e-15)


def test_k2_temperature_is_the_binary_temperature():
    """Both fit ``sigmoid(logit(p) / T)`` by maximum likelihood: the K-class form's ``softmax(log P / T)`` at
    K = 2 is ``sigmoid((log p - log(1 - p)) / T)``. They differ only (a) in the logit's clip (binary:
    ``p`` clipped to ``[1e-12, 1 - 1e-12]``; K-class: each probability floored at 1e-300 before its log),
    (b) in the range of ``T`` (binary ``[1e-3, 1e3]``; K-class ``1 / T`` in ``[e^-10, e^10]``) and (c) in
    the stopping rules (binary: the floating-point limit; K-class: a gradient of the mean NLL in ``1 / T``
    below 1e-9, so ``1 / T`` within 1e-9 / (mean NLL's curvature, here above 0.05) = 2e-8 of the optimum). On scores
    inside the clip with an optimum inside both ranges, the fitted temperatures agree to that (1e-6 relative
    is the margin) and the maps to the same order."""
    p, y, P = two_classes()
    k_class = fit("temperature", P, y)
    binary = calibrators.get("temperature").fit(p, y)
    assert 1e-3 < binary.temperature_ < 1e3
    assert k_class.temperature_ == pytest.approx(binary.temperature_, rel=1e-6)
    grid = np.linspace(0.01, 0.99, 99)
    np.testing.assert_allclose(k_class.predict_proba(np.column_stack([1 - grid, grid]))[:, 1],
                               binary.predict(grid), rtol=0, atol=1e-7)


# -- ties between classes ----------------------------------------------------------------------------------
def test_top_label_ties_at_the_top_do_not_depend_on_the_column_order():
    """Rows rounded to one decimal tie at the top often ([0.4, 0.4, 0.2]). A tied row counts as each
    tie-break with weight 1/m and predicts their mean, so reordering the columns reorders the output.
    By hand, histogram binning with one bin (each class's rate of correct rows, min_rows=0): rows
    [0.4, 0.4, 0.2] y=0 and [0.6, 0.3, 0.1] y=0 and [0.3, 0.5, 0.2] y=2: class 0's set holds (0.4, correct,
    weight 1/2) and (0.6, correct, 1): h0 = 1; class 1's holds (0.4, wrong, 1/2) and (0.5, wrong, 1): h1 = 0.
    A tied row [0.45, 0.45, 0.1] predicts the mean of [1, 0, 0] (class 0 predicted, h0 = 1) and
    [0.45 / 0.55, 0, 0.1 / 0.55] (class 1 predicted at h1 = 0, the rest shared 0.45 : 0.1)."""
    P = np.array([[0.4, 0.4, 0.2], [0.6, 0.3, 0.1], [0.3, 0.5, 0.2]])
    y = np.array([0, 0, 2])
    cal = fit("top_label:histogram", P, y, n_bins=1, min_rows=0)
    assert cal.models_[0] == 1.0 and cal.models_[1] == 0.0 and cal.models_[2] is None
    row = np.array([[0.45, 0.45, 0.1]])
    np.testing.assert_allclose(cal.predict_proba(row), [[(1 + 0.45 / 0.55) / 2, 0.0, 0.1 / 0.55 / 2]],
                               rtol=0, atol=1e-15)
    for perm in ([1, 0, 2], [2, 1, 0]):
        perm = np.array(perm)
        moved = fit("top_label:histogram", P[:, perm], np.argsort(perm)[y], n_bins=1, min_rows=0)
        np.testing.assert_allclose(moved.predict_proba(row[:, perm]), cal.predict_proba(row)[:, perm],
                                   rtol=0, atol=1e-15)


@pytest.mark.parametrize("name", ["ovr:isotonic", "top_label:isotonic"])
def test_rounded_rows_keep_their_ties(name):
    """Rows rounded to 2 decimals sum to 0.99-1.01; dividing each by its sum would split scores that are
    equal as given (0.35 in two rows becoming 0.3465 and 0.3535), and isotonic regression would no longer
    pool them. The binary maps see the numbers as given: the K-class fit on the rounded table equals the
    binary fits on its columns."""
    P, y = soft(300, 3, seed=16, scale=0.5)
    R = np.round(P, 2)
    keep = np.abs(R.sum(axis=1) - 1) <= 1e-2
    R, y = R[keep], y[keep]
    assert np.any(R.sum(axis=1) != 1.0)
    cal = fit(name, R, y)
    if name.startswith("ovr:"):
        for k in range(3):
            binary = calibrators.get("isotonic").fit(R[:, k], (y == k).astype(int))
            np.testing.assert_array_equal(cal.models_[k].predict(R[:, k]), binary.predict(R[:, k]))
    else:                                   # each class's set: its rows' top scores, tied ones weighted 1/m
        r, c = np.nonzero(R == R.max(axis=1, keepdims=True))
        share = 1.0 / np.bincount(r)[r]
        assert np.any(share < 1)             # the rounded table ties at the top
        g = R[r, c]
        for k in range(3):
            e = c == k
            if cal.models_[k] is not None:
                binary = calibrators.get("isotonic").fit(g[e], (y[r[e]] == k).astype(int), sample_weight=share[e])
                np.testing.assert_array_equal(cal.models_[k].predict(g[e]), binary.predict(g[e]))
    check_fit(cal, R)


@pytest.mark.parametrize("name", [f"ovr:{b}" for b in BINARY] + [f"top_label:{b}" for b in TOP_LABEL])
def test_logits_and_their_softmax_are_the_same_numbers_to_the_binary_methods(name):
    """Fitted on logits Z and on P = softmax(Z) given as probabilities, the binary fits see the same numbers
    (the softmax's; P not divided again by its rows' sums, which moved them by ulps): the same binary
    states, bit for bit, and one-vs-rest's rows equal."""
    from calibdash.calibrators.state import state_of
    rng = np.random.default_rng(17)
    Z = rng.normal(size=(150, 4)) * 2.0
    y = (rng.random(150)[:, None] > np.cumsum(softmax(1.5 * Z, axis=1), axis=1)).sum(axis=1).clip(0, 3)
    P = softmax(Z, axis=1)
    on_logits, on_probs = fit(name, Z, y, logits=True), fit(name, P, y)
    subs = lambda cal: [m if m is None or isinstance(m, float) else state_of(m)
                        for m in [*cal.models_, getattr(cal, "pooled_", None)]]
    assert subs(on_logits) == subs(on_probs)
    if name.startswith("ovr:"):
        np.testing.assert_array_equal(on_logits.predict_proba(Z), on_probs.predict_proba(P))


def test_exact_zeros_are_said_and_kept_in_the_model_file():
    """Few rows of a class: isotonic one-vs-rest is 0 below the class's lowest positive rows, top-label
    isotonic 1 at the top (every other class 0). Neither floors (scikit-learn's one-vs-rest map); both
    warn and keep the sentence in ``notes_`` and in the model file. Platt scaling has no exact zeros."""
    from calibdash.io import export
    P, y = soft(200, 5, seed=18)
    with pytest.warns(ZeroProbabilityWarning, match="get probability 0 from their binary map"):
        ovr = calibrators.get("ovr:isotonic", "classes").fit(P, y)
    assert any("does not floor" in note for note in ovr.notes_)
    assert export.loads(export.dumps(ovr)).notes_ == ovr.notes_
    zero = [k for k, m in enumerate(ovr.models_) if np.any(m.predict(P[:, k]) == 0)]
    assert zero and np.any(ovr.predict_proba(P)[:, zero] == 0)
    with pytest.warns(ZeroProbabilityWarning, match="calibrated top probability is 1"):
        top = calibrators.get("top_label:isotonic", "classes").fit(P, y)
    assert export.loads(export.dumps(top)).notes_ == top.notes_
    with warnings.catch_warnings():
        warnings.simplefilter("error", ZeroProbabilityWarning)
        assert calibrators.get("ovr:platt", "classes").fit(P, y).notes_ == []
