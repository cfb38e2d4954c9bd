"""K-class sources: their columns found, the softmax every engine writes, and a real data set through DuckDB.

The same K-class cells from every engine are checked in ``tests/engines/test_engine_contract.py``, which uses the
files, the reference and the comparison defined here.

The reference is :func:`calibdash.evaluation.cells.class_cells` on the rows concatenated in sorted file
order with parts from :func:`calibdash.evaluation.holdout.cell_parts`, computed independently of the engines.
"""
import numpy as np
import pandas as pd
import pytest

from tests.conftest import shared_file
from tests.engines.test_engines import assert_same_cells

from calibdash.engines.classes import ClassSource, aggregate_classes, class_source, softmax_rows
from calibdash.engines.source import Source
from calibdash.evaluation.holdout import Scheme, cell_parts
from calibdash.measures import class_measures as M
from calibdash.evaluation.cells import cell_measures, class_cells

pytestmark = pytest.mark.filterwarnings("ignore:The copy keyword is deprecated")
K = 4
SIZES = {"part-b.parquet": 1500, "part-a.parquet": 2000, "part-c.parquet": 1000}     # written out of name order
SCHEMES = {"kfold": Scheme("kfold", n_folds=3, seed=4), "split": Scheme("split", test_size=0.3, seed=9),
           "column": Scheme("column")}
EXACT, GRID_FORCED = 10 ** 6, 200          # max_exact: ~1,000 distinct values per reduction exact, or the grid


@pytest.fixture(scope="module")
def files(tmp_path_factory):
    return write_files(tmp_path_factory.mktemp("class_engines"))


def write_files(folder):
    """Three Parquet files of K-class rows (written out of name order), the same rows as one CSV."""
    rng = np.random.default_rng(11)
    frames = {}
    for name, n in SIZES.items():
        P = np.round(rng.dirichlet(np.full(K, 0.8), n), 3)           # ties; rows sum to 1 within 2e-3
        y = np.array([rng.choice(K, p=p / p.sum()) for p in P])
        df = pd.DataFrame(P, columns=[f"p_{k}" for k in range(K)])
        for k in range(K):
            df[f"logit_{k}"] = np.round(rng.normal(0, 2, n), 2)
        df["label"] = y
        df["split"] = rng.choice(["train", "test"], n, p=[0.7, 0.3])
        df.to_parquet(folder / name, index=False, row_group_size=600)
        frames[name] = df
    rows = pd.concat([frames[k] for k in sorted(frames)], ignore_index=True)
    rows.to_csv(folder / "all.csv", index=False)
    return {"glob": str(folder / "part-*.parquet"), "csv": str(folder / "all.csv"), "rows": rows, "dir": folder}


def _source(files, kind, logits=False):
    path = files["glob"] if kind == "parquet" else files["csv"]
    cols = tuple(f"{'logit' if logits else 'p'}_{k}" for k in range(K))
    return ClassSource(Source(path, score=cols[0], label="label", split="split"), cols, tuple(range(K)), logits)


def _reference(rows, scheme, max_exact, logits=False):
    part = cell_parts(len(rows), scheme, rows["split"].to_numpy())
    X = rows[[f"{'logit' if logits else 'p'}_{k}" for k in range(K)]].to_numpy()
    return class_cells(softmax_rows(X) if logits else X, rows["label"].to_numpy(), part, max_exact=max_exact)


def assert_same_class_cells(a, b, exact_scores=True):
    assert a.n_rows == b.n_rows and a.k == b.k
    for x, z in zip(a.reductions, b.reductions):
        if exact_scores:
            assert_same_cells(x, z)
        else:              # logits: exp() of numpy, DuckDB and the JVM may differ in the last bit
            assert x.exact == z.exact and len(x) == len(z)
            np.testing.assert_array_equal(x.n, z.n)
            np.testing.assert_array_equal(x.n_pos, z.n_pos)
            np.testing.assert_allclose(x.score, z.score, rtol=1e-13)


def test_class_source_finds_the_columns(files):
    cs = class_source(files["glob"], split="split")
    assert cs.columns == tuple(f"p_{k}" for k in range(K)) and cs.classes == tuple(range(K)) and not cs.logits
    assert class_source(files["csv"], logits="logit_").logits


def test_softmax_rows_is_scipys(files):
    """The softmax written left to right (as every engine computes it) is scipy's to rounding."""
    from scipy.special import softmax
    X = files["rows"][[f"logit_{k}" for k in range(K)]].to_numpy()
    np.testing.assert_allclose(softmax_rows(X), softmax(X, axis=1), rtol=1e-14)


def test_cifar_through_duckdb_gives_the_row_measures(tmp_path):
    d = np.load(shared_file("multiclass-cifar", "wideresnet-16-4-cifar-10.npz"))
    P, y = d["predictions"], d["ground_truth"]
    df = pd.DataFrame(P, columns=[f"p_{k}" for k in range(P.shape[1])]).assign(label=y)
    df.iloc[:6000].to_parquet(tmp_path / "a.parquet", index=False)
    df.iloc[6000:].to_parquet(tmp_path / "b.parquet", index=False)
    got = cell_measures(aggregate_classes(class_source(str(tmp_path / "*.parquet")), engine="duckdb"))
    rows = M.compute(P, y)
    for key in rows:        # exact cells: equal to the order of summation (see tests/evaluation/test_cells.py)
        assert got[key] == pytest.approx(rows[key], rel=1e-12, abs=1e-15), key
    assert round(got["ECE"], 5) == 0.05372 and got["Accuracy"] == 0.9109
