"""Tests of calibdash.data: reading, role guessing, the logistic mapping, validation and refusals."""
from __future__ import annotations

import gzip
import hashlib
import io

import numpy as np
import pandas as pd
import pytest

import calibdash
import calibdash.data
from calibdash import DataError, EnvironmentProblem, ProgrammingError
from calibdash.data import (MIN_ROWS, FileInfo, ScoreSet, build_score_set, guess_roles,
                            load_scores, read_table)
from calibdash.core.margins import to_probabilities


def _frame(n: int = 40, seed: int = 0) -> pd.DataFrame:
    """A small table: id, feature, score in [0, 1], 0/1 label."""
    rng = np.random.default_rng(seed)
    score = np.round(rng.uniform(0.01, 0.99, n), 4)
    return pd.DataFrame({
        "id": np.arange(1000, 1000 + n),
        "age": rng.integers(20, 60, n),
        "score": score,
        "label": (rng.uniform(size=n) < score).astype(int),
    })


def _csv_bytes(df: pd.DataFrame, sep: str = ",", encoding: str = "utf-8") -> bytes:
    return df.to_csv(index=False, sep=sep, lineterminator="\n").encode(encoding)


# ---------------------------------------------------------------------------
# formats
# ---------------------------------------------------------------------------
@pytest.mark.parametrize("sep,name", [(",", "comma"), (";", "semicolon"), ("\t", "tab")])
def test_delimiters_are_detected_and_values_read(sep, name):
    df = _frame()
    data = _csv_bytes(df, sep)
    got, info = read_table(data, filename="t.csv")
    assert info.delimiter == sep and info.format == "csv" and info.encoding == "utf-8"
    pd.testing.assert_frame_equal(got, df)
    ss = build_score_set(got, info=info)
    assert any(name in m for m in ss.report.messages)
    np.testing.assert_allclose(ss.scores, df["score"].to_numpy())


def test_semicolon_with_decimal_commas_is_read_as_numbers():
    text = "score;label\n" + "".join(f"0,{i:02d};{i % 2}\n" for i in range(10, 40))
    df, info = read_table(text.encode(), filename="eu.csv")
    assert info.delimiter == ";"
    assert pd.api.types.is_float_dtype(df["score"])
    assert df["score"].iloc[0] == pytest.approx(0.10)
    ss = build_score_set(df, info=info)
    assert any("Decimal commas" in m for m in ss.report.messages)


def test_utf8_bom_is_stripped_from_the_first_column_name():
    data = b"\xef\xbb\xbf" + _csv_bytes(_frame())
    df, info = read_table(data, filename="bom.csv")
    assert info.encoding == "utf-8-sig"
    assert list(df.columns) == ["id", "age", "score", "label"]


def test_latin1_file_with_accented_column_name():
    df = _frame().rename(columns={"age": "âge", "label": "étiquette"})
    data = _csv_bytes(df, encoding="latin-1")
    with pytest.raises(UnicodeDecodeError):
        data.decode("utf-8")
    got, info = read_table(data, filename="latin.csv")
    assert info.encoding == "latin-1"
    assert "âge" in got.columns and "étiquette" in got.columns
    ss = build_score_set(got, label="étiquette", info=info)
    assert ss.feature_columns == ["âge"]
    assert any("Latin-1" in m for m in ss.report.messages)


def test_gzipped_csv_by_name_and_by_magic_bytes():
    df = _frame()
    gz = gzip.compress(_csv_bytes(df), mtime=0)
    for name in ("t.csv.gz", "t.gz", "mislabelled.csv"):
        got, info = read_table(gz, filename=name)
        assert info.format == "csv.gz"
        assert info.n_bytes == len(gz)
        pd.testing.assert_frame_equal(got, df)


def test_parquet_via_pyarrow(tmp_path):
    pytest.importorskip("pyarrow")
    df = _frame()
    df["group"] = ["a", "b"] * (len(df) // 2)
    path = tmp_path / "t.parquet"
    df.to_parquet(path, index=False)
    got, info = read_table(path)
    assert info.format == "parquet" and info.encoding is None and info.delimiter is None
    assert info.name == "t.parquet"
    assert isinstance(got["group"].dtype, pd.CategoricalDtype)        # two values: held as categories
    pd.testing.assert_frame_equal(got.astype({"group": str}), df, check_dtype=False)
    ss = load_scores(path)
    assert ss.label_column == "label" and ss.score == "score"
    assert ss.feature_columns == ["age", "group"]        # id dropped


def test_fileinfo_hash_and_size_and_file_like_sources():
    data = _csv_bytes(_frame())

    class Upload:                       # like Streamlit's UploadedFile
        name = "folder/upload.csv"

        def getvalue(self):
            return data

    _, info = read_table(Upload())
    assert info == FileInfo(name="upload.csv", format="csv", encoding="utf-8", delimiter=",",
                            n_bytes=len(data), sha256=hashlib.sha256(data).hexdigest())
    df, info2 = read_table(io.BytesIO(data), filename="x.csv")
    assert info2.sha256 == info.sha256 and len(df) == 40


def test_load_scores_is_exported_from_the_package():
    assert calibdash.load_scores is load_scores and calibdash.ScoreSet is ScoreSet
    assert "load_scores" in calibdash.__all__ and "ScoreSet" in calibdash.__all__


def test_public_names_are_importable_from_calibdash_data_and_live_in_their_job_modules():
    from calibdash.data import class_set as classes, large_source as large, read, roles, scoreset, sniff
    from calibdash.core import limits
    home = {"DEFAULT_MAX_BYTES": limits, "MIN_ROWS": limits, "FileInfo": read, "read_table": read,
            "guess_roles": roles, "ScoreSet": scoreset, "ValidationReport": scoreset,
            "build_score_set": scoreset, "LargeData": large}
    home.update(dict.fromkeys(["guess_class_columns", "is_multiclass"], roles))
    home.update(dict.fromkeys(["ClassSet", "build_class_set", "load_classes"], classes))
    for name, module in home.items():
        assert getattr(calibdash.data, name) is getattr(module, name), name
    assert set(home) | {"load_scores"} == set(calibdash.data.__all__)
    assert classes.PREFIXES is roles.PREFIXES
    assert sniff.sniff_delimiter("a;b\n1;2\n") == ";"


# ---------------------------------------------------------------------------
# refusals
# ---------------------------------------------------------------------------
def test_refuses_empty_file(tmp_path):
    path = tmp_path / "empty.csv"
    path.write_bytes(b"")
    with pytest.raises(DataError, match="empty"):
        read_table(path)
    with pytest.raises(DataError, match="empty"):
        read_table(b"\n  \n", filename="blank.csv")


def test_unreadable_path_is_an_environment_problem_and_a_wrong_source_type_a_programming_error(tmp_path):
    missing = tmp_path / "nope.csv"
    with pytest.raises(EnvironmentProblem, match=f"file not found: {missing}"):
        read_table(missing)
    with pytest.raises(EnvironmentProblem, match="file not found"):
        load_scores(str(missing))
    with pytest.raises(ProgrammingError, match="cannot read a float: give a path, bytes or an open file"):
        read_table(3.5)


def test_refuses_header_only_file():
    df, info = read_table(b"score,label\n", filename="h.csv")
    with pytest.raises(DataError, match="header but no rows"):
        build_score_set(df, info=info)


def test_refuses_file_over_the_limit_naming_size_and_limit(tmp_path):
    data = _csv_bytes(_frame(2000))
    path = tmp_path / "big.csv"
    path.write_bytes(data)
    limit = 10 * 1024
    for src in (path, data):
        with pytest.raises(DataError) as err:
            read_table(src, filename="big.csv", max_bytes=limit)
        msg = str(err.value)
        assert "big.csv" in msg and f"{len(data) / 1048576:.1f} MB" in msg and "0.0 MB limit" in msg


def test_refuses_utf16_and_binary_content():
    utf16 = _frame().to_csv(index=False).encode("utf-16-le")
    with pytest.raises(DataError, match="UTF-16 or a binary file; save it as a UTF-8 CSV"):
        read_table(utf16, filename="u16.csv")
    with pytest.raises(DataError, match="UTF-16 or a binary"):
        read_table(bytes(range(256)) * 4, filename="blob.csv")
    with pytest.raises(DataError, match="ZIP archive"):
        read_table(b"PK\x03\x04" + b"\x14" * 100, filename="book.xlsx")


def test_a_parquet_date_column_is_read_as_datetimes_not_python_objects(tmp_path):
    """DATE columns come back as datetime64 (8 bytes a row) and still read as dates by Groups & time."""
    import datetime

    import pyarrow as pa
    import pyarrow.parquet as pq

    from calibdash.monitoring.drift import to_periods

    days = [datetime.date(2025, 1, 1) + datetime.timedelta(days=i % 40) for i in range(200)]
    pq.write_table(pa.table({"score": np.linspace(0.01, 0.99, 200), "label": np.arange(200) % 2,
                             "day": pa.array(days, pa.date32())}), tmp_path / "d.parquet")
    got, _ = read_table(tmp_path / "d.parquet")
    assert pd.api.types.is_datetime64_dtype(got["day"]) and got["day"].iloc[39] == pd.Timestamp("2025-02-09")
    assert to_periods(got["day"], "M").labels == ["2025-01", "2025-02"]


def test_refuses_file_named_parquet_that_is_not():
    with pytest.raises(DataError, match="PAR1"):
        read_table(_csv_bytes(_frame()), filename="fake.parquet")


def test_refuses_table_without_numeric_column():
    df = pd.DataFrame({"name": [f"n{i}" for i in range(30)], "label": ["yes", "no"] * 15})
    with pytest.raises(DataError, match="no numeric column.*'name'"):
        build_score_set(df)


def test_refuses_label_with_one_class():
    df = _frame().assign(label=1)
    with pytest.raises(DataError, match=r"label column 'label' holds one class only \(1\)"):
        build_score_set(df, label="label")


def test_refuses_label_with_more_than_two_values_and_lists_them():
    df = _frame().assign(label=np.tile(["cat", "dog", "eel", "fox"], 10))
    with pytest.raises(DataError) as err:
        build_score_set(df, label="label")
    msg = str(err.value)
    assert "4 distinct values" in msg and all(v in msg for v in ("'cat'", "'dog'", "'eel'", "'fox'"))


def test_refuses_too_few_usable_rows_saying_how_many():
    df = _frame(25)
    df.loc[:9, "score"] = np.nan                      # 15 usable rows remain
    with pytest.raises(DataError, match=rf"only 15 usable rows .*of 25 read.*at least {MIN_ROWS}"):
        build_score_set(df)
    build_score_set(_frame(MIN_ROWS))                  # exactly MIN_ROWS is accepted


@pytest.mark.parametrize("kw,role", [({"score": "nope"}, "score"), ({"label": "nope"}, "label"),
                                     ({"features": ["age", "nope"]}, "feature"),
                                     ({"split": "nope"}, "split")])
def test_refuses_unknown_named_column_listing_the_columns(kw, role):
    with pytest.raises(DataError) as err:
        build_score_set(_frame(), **kw)
    msg = str(err.value)
    assert msg.startswith(f"{role} column 'nope' not found")
    assert "'id', 'age', 'score', 'label'" in msg


def test_refuses_positive_label_that_is_not_a_label_value():
    with pytest.raises(DataError, match="positive label 'maybe' is not one of .* 0, 1"):
        build_score_set(_frame(), positive="maybe")


def test_refuses_text_score_column():
    df = _frame().assign(score=["high"] * 40)
    with pytest.raises(DataError, match="score column 'score' holds no finite numbers .*'high'"):
        build_score_set(df, score="score", label="label")


# ---------------------------------------------------------------------------
# labels
# ---------------------------------------------------------------------------
@pytest.mark.parametrize("values,positive", [
    ((-1, 1), 1), ((0, 1), 1), ((True, False), True), (("Yes", "No"), "Yes"), (("yes", "no"), "yes"),
    (("neg", "pos"), "pos"), (("Negative", "Positive"), "Positive"), (("n", "y"), "y"),
    (("benign", "malignant"), "malignant"),          # any two strings: the second in sorted order
])
def test_label_encodings_and_default_positive(values, positive):
    df = _frame()
    codes = df["label"].to_numpy()
    pos_idx = values.index(positive)
    df["label"] = [values[pos_idx] if c == 1 else values[1 - pos_idx] for c in codes]
    ss = load_scores(_csv_bytes(df), filename="t.csv")
    assert ss.label_column == "label"
    assert str(ss.positive_label) == str(positive)
    np.testing.assert_array_equal(ss.labels, codes)
    assert ss.labels.dtype == np.int8
    assert ss.report.class_counts == {f"positive ({positive})": int(codes.sum()),
                                      f"negative ({ss.negative_label})": int((1 - codes).sum())}


def test_positive_override_with_two_strings():
    df = _frame()
    df["label"] = np.where(df["label"] == 1, "spam", "ham")
    default = build_score_set(df)
    assert default.positive_label == "spam"           # sorted: ham < spam
    flipped = build_score_set(df, positive="ham")
    assert flipped.positive_label == "ham" and flipped.negative_label == "spam"
    np.testing.assert_array_equal(flipped.labels, 1 - default.labels)
    assert flipped.content_key() != default.content_key()


def test_positive_override_matches_text_form_of_numbers():
    ss = build_score_set(_frame(), positive="0")
    assert ss.positive_label == 0
    np.testing.assert_array_equal(ss.labels, 1 - _frame()["label"].to_numpy())


# ---------------------------------------------------------------------------
# scores and dropped rows
# ---------------------------------------------------------------------------
def test_margins_are_mapped_by_the_logistic_function_not_min_max():
    df = _frame()
    margins = np.linspace(-3.0, 2.0, len(df))
    df["score"] = margins
    ss = build_score_set(df, score="score")
    np.testing.assert_allclose(ss.scores, 1.0 / (1.0 + np.exp(-margins)), rtol=0, atol=1e-15)
    assert ss.scores[0] == pytest.approx(0.04742587317756678)     # sigmoid(-3)
    assert ss.report.mapped == {"score": (-3.0, 2.0)}
    assert any("logistic" in m and "-3" in m for m in ss.report.messages)
    assert ss.scores.min() > 0.0 and ss.scores.max() < 1.0       # min-max would give exactly 0 and 1


def test_to_probabilities_by_hand():
    """logistic(0) = 1/2, logistic(ln 3) = 3/4, logistic(-ln 3) = 1/4; NaN stays NaN and infinities become NaN."""
    margins = np.array([0.0, np.log(3.0), np.nan, -np.log(3.0), np.inf])
    before = margins.copy()
    p, mapped = to_probabilities(margins)
    assert mapped is True
    np.testing.assert_allclose(p[[0, 1, 3]], [0.5, 0.75, 0.25], rtol=0, atol=1e-15)
    assert np.isnan(p[2]) and np.isnan(p[4])
    np.testing.assert_array_equal(margins, before)               # the input is not changed
    # inside [0, 1]: None keeps them, "logistic" maps them all the same (a model fitted on margins)
    inside = np.array([0.0, 0.25, np.nan, 1.0])
    kept, mapped = to_probabilities(inside)
    assert mapped is False and np.array_equal(kept, inside, equal_nan=True)
    logistic, mapped = to_probabilities(inside, transform="logistic")
    assert mapped is True and logistic[0] == 0.5 and np.isnan(logistic[2])
    same, mapped = to_probabilities(inside, transform="identity")
    assert mapped is False and np.array_equal(same, inside, equal_nan=True)


def test_to_probabilities_refusals():
    with pytest.raises(DataError, match=r"fitted on probabilities in \[0, 1\], but score column 'm' ranges "
                                        r"from -3 to 4; give the column the model was fitted on"):
        to_probabilities(np.array([-3.0, 0.5, np.nan, 4.0]), transform="identity", column="m")
    with pytest.raises(DataError, match="score_transform 'probit' is unknown"):
        to_probabilities(np.array([0.5]), transform="probit")
    with pytest.raises(DataError, match="score column 'm' holds no finite numbers"):
        to_probabilities(np.array([np.nan, np.inf]), column="m")


def test_scores_inside_unit_interval_are_untouched():
    df = _frame()
    df.loc[0, "score"], df.loc[1, "score"] = 0.0, 1.0
    ss = build_score_set(df)
    np.testing.assert_array_equal(ss.scores, df["score"].to_numpy())
    assert ss.report.mapped == {}


def test_dropped_rows_are_counted_by_reason_and_disjoint():
    df = _frame(40)
    df["score"] = df["score"].astype(float)
    df["label"] = df["label"].astype(float)
    df.loc[[0, 1], "score"] = np.nan
    df.loc[2, "score"] = np.inf
    df.loc[[3, 4, 5], "label"] = np.nan
    df.loc[0, "label"] = np.nan                       # bad score and missing label: counted once
    ss = build_score_set(df)
    r = ss.report
    assert r.dropped == {"missing or non-finite score": 3, "missing label": 3}
    assert (r.n_read, r.n_used, ss.n_rows) == (40, 34, 34)
    assert r.n_read == r.n_used + sum(r.dropped.values())
    keep = np.arange(6, 40)
    np.testing.assert_array_equal(ss.scores, df["score"].to_numpy()[keep])
    np.testing.assert_array_equal(ss.labels, df["label"].to_numpy()[keep].astype(int))
    np.testing.assert_array_equal(ss.features["age"].to_numpy(), df["age"].to_numpy()[keep])
    assert list(ss.features.index) == list(range(34))
    assert sum("Dropped" in m for m in r.messages) == 2


def test_missing_label_in_csv_text_column():
    text = "score,label\n" + "".join(f"0.{i:02d},{'yes' if i % 3 else ''}{'no' if i % 3 == 0 and i % 2 else ''}\n"
                                     for i in range(10, 50))
    ss = load_scores(text.encode(), filename="t.csv")
    n_missing = sum(1 for i in range(10, 50) if i % 3 == 0 and i % 2 == 0)
    assert ss.report.dropped == {"missing label": n_missing}
    assert ss.positive_label == "yes"


# ---------------------------------------------------------------------------
# roles
# ---------------------------------------------------------------------------
def test_guess_roles_uses_names_and_drops_ids():
    rng = np.random.default_rng(1)
    n = 60
    df = pd.DataFrame({
        "row_id": rng.permutation(n), "Unnamed: 0": np.arange(n),
        "fold": np.tile(["train", "valid", "test"], 20),
        "is_member": rng.integers(0, 2, n),              # a two-valued feature
        "x": rng.normal(size=n), "weight": rng.uniform(0, 1, n),
        "svm_margin": rng.normal(size=n), "p_model": rng.uniform(0, 1, n),
        "target": rng.integers(0, 2, n),
    })
    roles = guess_roles(df)
    assert roles.label == "target"                       # by name, before is_member
    assert roles.split == "fold"
    assert roles.scores == ["svm_margin", "p_model"]     # name hints win over [0,1] 'weight'
    assert roles.features == ["is_member", "x", "weight"]


def test_guess_roles_falls_back_to_unit_interval_then_any_two_valued_column():
    rng = np.random.default_rng(2)
    n = 50
    df = pd.DataFrame({"a": rng.normal(size=n), "b": rng.uniform(0, 1, n),
                       "c": rng.choice(["up", "down"], n)})
    roles = guess_roles(df)
    assert (roles.label, roles.scores, roles.features, roles.split) == ("c", ["b"], ["a"], None)
    ss = build_score_set(df)
    assert ss.positive_label == "up" and ss.features is not None


def test_explicit_roles_override_guesses_and_features_can_be_empty():
    df = _frame()
    df["set"] = np.repeat(["train", "test"], 20)
    ss = build_score_set(df, score="age", label="label", features=[], split=False)
    assert ss.score == "age" and ss.features is None and ss.split is None
    assert ss.report.mapped == {"age": (float(df["age"].min()), float(df["age"].max()))}
    ss2 = build_score_set(df)
    assert ss2.split_column == "set"
    assert list(ss2.split) == ["train"] * 20 + ["test"] * 20


def test_numeric_split_values_become_strings():
    df = _frame().assign(fold=np.tile([0, 1, 2, 3], 10))
    ss = build_score_set(df)
    assert ss.split_column == "fold" and ss.split[:4].tolist() == ["0", "1", "2", "3"]


# ---------------------------------------------------------------------------
# ScoreSet
# ---------------------------------------------------------------------------
def test_with_score_switches_and_revalidates():
    df = _frame()
    df["logit"] = np.linspace(-2, 2, 40)
    df.loc[5, "logit"] = np.nan
    ss = build_score_set(df, score="score")
    assert set(ss.score_columns) == {"score", "logit"}
    other = ss.with_score("logit")
    assert other.score == "logit" and other.n_rows == 39
    assert other.report.dropped == {"missing or non-finite score": 1}
    assert "logit" in other.report.mapped
    assert other.score_columns == ss.score_columns and other.label_column == ss.label_column
    assert other.feature_columns == ss.feature_columns
    assert other.content_key() != ss.content_key()
    assert other.with_score("score").content_key() == ss.content_key()
    with pytest.raises(DataError, match="not found"):
        ss.with_score("missing")


def test_content_key_is_stable_and_depends_on_data():
    data = _csv_bytes(_frame())
    a = load_scores(data, filename="a.csv")
    b = load_scores(data, filename="b.csv")
    assert a.content_key() == b.content_key()
    changed = load_scores(_csv_bytes(_frame(seed=5)), filename="a.csv")
    assert changed.content_key() != a.content_key()
    # without FileInfo the raw table is hashed
    df = _frame()
    assert build_score_set(df).content_key() == build_score_set(df.copy()).content_key()
    assert build_score_set(df).content_key() != build_score_set(_frame(seed=5)).content_key()


def test_score_set_pickles():
    import pickle
    ss = build_score_set(_frame())
    back = pickle.loads(pickle.dumps(ss))
    np.testing.assert_array_equal(back.scores, ss.scores)
    assert back.content_key() == ss.content_key()


def test_named_score_column_is_not_guessed_as_the_label():
    df = pd.DataFrame({"label": np.tile([0, 1], 20), "y": np.tile([1, 0, 0, 1], 10)})
    ss = build_score_set(df, score="label")
    assert ss.score == "label" and ss.label_column == "y"
    np.testing.assert_array_equal(ss.labels, df["y"].to_numpy())
    with pytest.raises(DataError, match="both the score and the label"):
        build_score_set(df, score="y", label="y")


def test_float_labels_keep_their_raw_value_and_match_positive_as_text():
    df = _frame().assign(label=lambda d: d["label"].astype(float))
    df.loc[0, "label"] = np.nan                       # why a 0/1 column becomes float in a CSV
    ss = build_score_set(df)
    assert ss.positive_label == 1.0 and str(ss.positive_label) == "1.0"
    assert ss.report.class_counts == {"positive (1)": int(df["label"].sum()),
                                      "negative (0)": int((df["label"] == 0).sum())}
    for text in ("0.0", "0"):                         # what a select box of str(values) returns
        flipped = build_score_set(df, positive=text)
        assert flipped.positive_label == 0.0
        np.testing.assert_array_equal(flipped.labels, 1 - ss.labels)
