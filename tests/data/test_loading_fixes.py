"""Tests of three loading fixes in calibdash.data.

1. A score column with a few non-numeric entries ("abc") is read as numbers
   when at least NUMERIC_SHARE (half) of its entries are numbers; the other
   rows are dropped, counted, and shown with up to five examples.
2. UTF-16 with a byte-order mark (Excel's "Unicode text": UTF-16 LE, BOM,
   tab-separated) is decoded, LE and BE, and the encoding reported.
3. A gzip whose decompressed size passes the limit is refused quickly,
   without decompressing more than the limit, pointing to the large-data
   source.
"""
from __future__ import annotations

import gzip
import tracemalloc
import zlib

import numpy as np
import pandas as pd
import pytest

from calibdash import DataError
from calibdash.data import build_score_set, guess_roles, load_scores, read_table
from calibdash.data import roles as roles_module
from calibdash.data.roles import NUMERIC_SHARE, parse_numbers, reads_as_numbers
from calibdash.data.scoreset import NOT_A_NUMBER

JUNK = ["abc", "#DIV/0!", "?", "high", "--", "err", "x1"]        # 7 distinct non-numbers


def _scores_with_junk(n: int, junk_every: int, seed: int = 0):
    """(CSV bytes, numeric scores or NaN, labels, junk mask): every ``junk_every``-th score is text."""
    rng = np.random.default_rng(seed)
    s = np.round(rng.uniform(0.01, 0.99, n), 6)
    y = (rng.uniform(size=n) < s).astype(int)
    junk = np.zeros(n, dtype=bool)
    junk[::junk_every] = True
    cells = [JUNK[(i // junk_every) % len(JUNK)] if junk[i] else repr(float(s[i])) for i in range(n)]
    text = "age,score,label\n" + "".join(f"{20 + i % 40},{c},{y[i]}\n" for i, c in enumerate(cells))
    return text.encode(), np.where(junk, np.nan, s), y, junk


# ---------------------------------------------------------------------------
# 1. scores with a few non-numeric entries
# ---------------------------------------------------------------------------
def test_a_score_column_with_ten_percent_text_is_a_score_column():
    data, s, y, junk = _scores_with_junk(200, 10)
    df, info = read_table(data, filename="junk.csv")
    assert not pd.api.types.is_numeric_dtype(df["score"])           # pandas reads it as text
    assert reads_as_numbers(df["score"])
    assert guess_roles(df).scores == ["score"]
    ss = build_score_set(df, info=info)
    assert ss.score == "score" and ss.label_column == "label"
    r = ss.report
    assert r.dropped == {NOT_A_NUMBER: 20}
    assert (r.n_read, r.n_used) == (200, 180) and r.n_read == r.n_used + sum(r.dropped.values())
    # the first five distinct entries in row order (of 7 distinct)
    assert r.dropped_examples == {NOT_A_NUMBER: JUNK[:5]}
    assert ('Dropped 20 rows whose score is not a number, such as "abc", "#DIV/0!", "?", "high", "--".'
            in r.messages)
    np.testing.assert_array_equal(ss.scores, s[~junk])               # the numbers, exactly as written
    np.testing.assert_array_equal(ss.labels, y[~junk])
    np.testing.assert_array_equal(ss.features["age"].to_numpy(), (20 + np.arange(200) % 40)[~junk])


def test_the_count_is_formatted_and_reasons_stay_disjoint():
    data, s, y, junk = _scores_with_junk(10_000, 10, seed=1)
    text = data.decode().splitlines()
    text[2] = text[2].split(",")[0] + ",," + text[2].split(",")[2]   # row 1: an empty (missing) score
    text[3] = text[3].rsplit(",", 1)[0] + ","                         # row 2: a missing label
    ss = load_scores("\n".join(text).encode(), filename="big.csv")
    r = ss.report
    assert r.dropped == {"missing or non-finite score": 1, NOT_A_NUMBER: 1000, "missing label": 1}
    assert r.n_read == 10_000 and r.n_used == 10_000 - 1002
    assert any(m.startswith("Dropped 1,000 rows whose score is not a number, such as ") for m in r.messages)
    assert "Dropped 1 row with a missing or non-finite score." in r.messages


def test_the_threshold_is_half_of_the_present_entries():
    assert NUMERIC_SHARE == 0.5
    n = 40
    half = pd.DataFrame({"score": [f"0.{i + 10}" for i in range(n // 2)] + ["abc"] * (n // 2),
                         "label": [0, 1] * (n // 2)})
    assert reads_as_numbers(half["score"])                          # exactly half: numbers
    under = half.copy()
    under.loc[0, "score"] = "abc"                                     # 19 of 40: text
    assert not reads_as_numbers(under["score"])
    assert guess_roles(under).scores == []
    with pytest.raises(DataError, match="no numeric column .* at least 50% of its entries are numbers"):
        build_score_set(under)
    with pytest.raises(DataError, match=r"score column 'score' is mostly text: 21 of its 40 entries are not "
                                        r"numbers \(such as \"abc\"\)"):
        build_score_set(under, score="score")
    # missing and blank entries count neither way: 19 numbers, 19 text, 1 missing, 1 blank
    with_gaps = half.assign(score=half["score"].astype(object))
    with_gaps.loc[0, "score"], with_gaps.loc[n - 1, "score"] = None, "  "
    assert reads_as_numbers(with_gaps["score"])
    with pytest.raises(DataError, match=r"only 19 usable rows in data \(of 40 read; dropped 2 with a missing or "
                                        r"non-finite score; 19 whose score is not a number\); at least 20"):
        build_score_set(with_gaps)


def test_parse_numbers_by_hand():
    s = pd.Series(["0.5", " 0.25 ", "", True, 1.5, None, "x", np.nan, "-1e-3", "inf"], dtype=object)
    values, not_number = parse_numbers(s)
    np.testing.assert_array_equal(values, [0.5, 0.25, np.nan, np.nan, 1.5, np.nan, np.nan, np.nan, -1e-3, np.inf])
    # blanks and missing are missing, not "not a number"; a boolean is not a number
    assert not_number.tolist() == [False, False, False, True, False, False, True, False, False, False]
    v, nn = parse_numbers(pd.Series([1, 2, 3]))
    assert v.dtype == float and not nn.any()


def test_one_text_entry_does_not_make_distinct_scores_an_id_column():
    rng = np.random.default_rng(3)
    n = 60
    scores = [str(v) for v in np.round(rng.uniform(size=n), 8)]
    scores[7] = "abc"
    df = pd.DataFrame({"score": pd.Series(scores, dtype="str"), "label": rng.integers(0, 2, n),
                       "code": pd.Series([str(1000 + i) + "x" for i in range(n)], dtype="str")})
    roles = guess_roles(df)
    assert roles.scores == ["score"] and "score" not in roles.features
    assert "code" not in roles.features                               # distinct text: still an id
    ss = build_score_set(df)
    assert ss.report.dropped == {NOT_A_NUMBER: 1} and ss.report.dropped_examples == {NOT_A_NUMBER: ["abc"]}


def test_the_quick_screen_of_long_columns_is_not_fooled_by_periodic_text():
    n = 50_000
    periodic = pd.Series(np.where(np.arange(n) % 10 == 0, "abc", "0.5"), dtype="str")   # 90% numbers
    assert reads_as_numbers(periodic)
    sixty = pd.Series(np.where(np.arange(n) % 5 < 2, "n.a.", "0.25"), dtype="str")     # 60% numbers
    assert reads_as_numbers(sixty)
    names = pd.Series([f"user{i}" for i in range(n)], dtype="str")
    parsed = []                                   # the work done, not the time it took: only the screen is parsed
    real = roles_module.parse_numbers
    roles_module.parse_numbers = lambda s: parsed.append(len(s)) or real(s)
    try:
        assert not reads_as_numbers(names)
    finally:
        roles_module.parse_numbers = real
    assert parsed == [roles_module._SCREEN]
    df = pd.DataFrame({"label": np.arange(n) % 2, "p": periodic, "who": names})
    assert guess_roles(df).scores == ["p"]


def test_semicolon_file_with_decimal_commas_and_a_few_text_scores():
    rows = [f"0,{i:02d};{i % 2}" if i % 8 else f"n.v.;{i % 2}" for i in range(10, 90)]
    ss = load_scores(("score;label\n" + "\n".join(rows) + "\n").encode(), filename="eu.csv")
    assert ss.report.dropped == {NOT_A_NUMBER: 10} and ss.report.dropped_examples == {NOT_A_NUMBER: ["n.v."]}
    want = [i / 100 for i in range(10, 90) if i % 8]
    np.testing.assert_allclose(ss.scores, want, rtol=0, atol=1e-15)
    assert any("Decimal commas" in m and "score" in m for m in ss.report.messages)


def test_with_score_switches_to_a_column_of_mostly_numbers():
    data, s, y, junk = _scores_with_junk(100, 4)
    df, info = read_table(data.replace(b"age,score", b"age,margin_svm"), filename="t.csv")
    df["p_model"] = np.linspace(0.01, 0.99, 100)
    ss = build_score_set(df, score="p_model", info=info)
    assert set(ss.score_columns) == {"p_model", "margin_svm"}
    other = ss.with_score("margin_svm")
    assert other.report.dropped == {NOT_A_NUMBER: 25} and other.n_rows == 75
    np.testing.assert_array_equal(other.scores, s[~junk])


# ---------------------------------------------------------------------------
# 2. UTF-16 with a byte-order mark
# ---------------------------------------------------------------------------
def _excel_unicode_text(df: pd.DataFrame, codec: str = "utf-16-le") -> bytes:
    bom = b"\xff\xfe" if codec == "utf-16-le" else b"\xfe\xff"
    return bom + df.to_csv(index=False, sep="\t", lineterminator="\r\n").encode(codec)


def _frame(n: int = 40) -> pd.DataFrame:
    rng = np.random.default_rng(4)
    s = np.round(rng.uniform(0.01, 0.99, n), 4)
    return pd.DataFrame({"âge": rng.integers(20, 60, n), "score": s,
                         "étiquette": (rng.uniform(size=n) < s).astype(int)})


@pytest.mark.parametrize("codec,shown", [("utf-16-le", "UTF-16 LE with BOM"), ("utf-16-be", "UTF-16 BE with BOM")])
def test_utf16_with_bom_is_decoded_and_reported(codec, shown):
    df = _frame()
    data = _excel_unicode_text(df, codec)
    assert data.startswith(b"\xff\xfe" if codec == "utf-16-le" else b"\xfe\xff")
    got, info = read_table(data, filename="unicode.txt")
    assert (info.encoding, info.delimiter, info.format) == (codec, "\t", "csv")
    pd.testing.assert_frame_equal(got, df)                            # the BOM is not in the first name
    ss = build_score_set(got, label="étiquette", info=info)
    assert any(shown in m and "tab-separated" in m for m in ss.report.messages)
    # gzipped too
    got_gz, info_gz = read_table(gzip.compress(data, mtime=0), filename="unicode.txt.gz")
    assert info_gz.encoding == codec and info_gz.format == "csv.gz"
    pd.testing.assert_frame_equal(got_gz, df)


def test_pythons_utf16_codec_output_and_excel_decimal_commas():
    df = _frame()
    got, info = read_table(df.to_csv(index=False, sep="\t").encode("utf-16"), filename="u16.csv")
    assert info.encoding in ("utf-16-le", "utf-16-be")
    pd.testing.assert_frame_equal(got, df)
    text = "score\tlabel\r\n" + "".join(f"0,{i:02d}\t{i % 2}\r\n" for i in range(10, 40))
    got, info = read_table(b"\xff\xfe" + text.encode("utf-16-le"), filename="eu.txt")
    assert got["score"].tolist() == pytest.approx([i / 100 for i in range(10, 40)])


def test_utf16_without_bom_or_broken_is_still_refused():
    df = _frame()
    with pytest.raises(DataError, match="UTF-16 or a binary file; save it as a UTF-8 CSV"):
        read_table(df.to_csv(index=False).encode("utf-16-le"), filename="nobom.csv")
    with pytest.raises(DataError, match="byte-order mark but is not valid UTF-16"):
        read_table(b"\xff\xfe" + "score,label\n0.5,1\n".encode("utf-16-le") + b"\x00", filename="odd.csv")
    with pytest.raises(DataError, match="UTF-32"):
        read_table(df.to_csv(index=False).encode("utf-32"), filename="u32.csv")


# ---------------------------------------------------------------------------
# 3. gzip over the limit
# ---------------------------------------------------------------------------
def _gzip_stream(n_bytes: int, chunk: bytes = b"0.123,1\n" * 16384) -> bytes:
    """A gzip member of ``n_bytes`` (rounded up to whole chunks) of short CSV rows, built in pieces."""
    c = zlib.compressobj(1, zlib.DEFLATED, 16 + zlib.MAX_WBITS)
    out = [c.compress(b"score,label\n")]
    for _ in range(-(-n_bytes // len(chunk))):
        out.append(c.compress(chunk))
    out.append(c.flush())
    return b"".join(out)


def _refused_early(data: bytes, limit: int) -> tuple[str, int]:
    """The message and the peak of traced memory while refusing: the stream stops at the limit, so the peak
    stays near it (the time it takes is measured in bench/bench_load.py, never asserted)."""
    tracemalloc.start()
    with pytest.raises(DataError) as err:
        read_table(data, filename="rows.csv.gz", max_bytes=limit)
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    return str(err.value), peak


def test_a_gzip_over_the_limit_is_refused_before_it_is_inflated():
    limit = 1024 * 1024                                   # 1 MB; the archive holds 24 MB of rows
    data = _gzip_stream(24 * 1024 * 1024)
    assert len(data) < limit                              # the compressed bytes pass the size check
    msg, peak = _refused_early(data, limit)
    assert msg.startswith("rows.csv.gz decompresses to more than 1.0 MB: its decompressed size exceeds the "
                          "upload limit (1.0 MB); large files are read through the large-data source")
    assert "CALIBDASH_DATA_ROOT" in msg and "python -m calibdash evaluate PATH --engine duckdb" in msg
    assert peak < 4 * limit                               # nothing like the 24 MB of rows was made


def test_the_cap_does_not_trust_the_trailer():
    """A second, empty member hides the size from the last trailer (ISIZE 0): the capped stream decides."""
    limit = 1024 * 1024
    data = _gzip_stream(24 * 1024 * 1024) + gzip.compress(b"", mtime=0)
    assert int.from_bytes(data[-4:], "little") == 0
    msg, peak = _refused_early(data, limit)
    assert "its decompressed size exceeds the upload limit (1.0 MB)" in msg
    assert peak < 4 * limit


def test_the_limit_is_inclusive_and_members_are_read_in_turn():
    body = b"score,label\n" + b"".join(f"0.{i:03d},{i % 2}\n".encode() for i in range(100, 400))
    one = gzip.compress(body, mtime=0)
    df, _ = read_table(one, filename="t.csv.gz", max_bytes=len(body))
    assert len(df) == 300 and df["score"].iloc[0] == pytest.approx(0.1)
    with pytest.raises(DataError, match="decompressed size exceeds the upload limit"):
        read_table(one, filename="t.csv.gz", max_bytes=len(body) - 1)
    half = len(body) // 2
    cut = body.rindex(b"\n", 0, half) + 1
    two = gzip.compress(body[:cut], mtime=0) + gzip.compress(body[cut:], mtime=0) + b"\x00" * 8
    df2, _ = read_table(two, filename="cat.csv.gz", max_bytes=len(body))
    pd.testing.assert_frame_equal(df2, df)
    with pytest.raises(DataError, match="decompressed size exceeds"):                # by the stream
        read_table(two, filename="cat.csv.gz", max_bytes=len(body) - 1)


def test_damaged_gzip_files_are_refused():
    good = gzip.compress(b"score,label\n0.5,1\n" * 50, mtime=0)
    with pytest.raises(DataError, match="truncated gzip"):
        read_table(good[: len(good) // 2], filename="t.csv.gz")
    with pytest.raises(DataError, match="unexpected bytes after its end"):
        read_table(good + b"garbage!", filename="t.csv.gz")
    with pytest.raises(DataError, match="not a valid gzip file"):
        read_table(good[:10] + b"\xff" * 40, filename="t.csv.gz")
