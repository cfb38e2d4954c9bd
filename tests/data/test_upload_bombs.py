"""Small uploads that would unpack into huge work are refused before the work is done (issue 17, finding 1).

Each attack of the finding is built here, small on disk, and must be refused
with a DataError that names the limit it passed and quotes nothing of the
file. Memory is checked with tracemalloc (which sees Python objects and
numpy arrays), work by counting operations; times are measured in
bench/bench_bombs.py, never asserted. Legit files still load as pandas
reads them, and the page caches never hold an entry larger than their limit.
"""
from __future__ import annotations

import gzip
import io
import tracemalloc
import zlib

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from calibdash import DataError
from calibdash.data import build_score_set, guess_roles, read, read_table
from calibdash.core import limits
from calibdash.data.sniff import read_header, unique_names
from calibdash.samples import SAMPLES, sample_path

SECRET = "s3cr3t"               # in every bomb's column names: it must never appear in a message


def _refused(data: bytes, filename: str, **limits_) -> tuple[str, int]:
    """The message of the DataError that refuses ``data``, and the peak of traced memory while refusing."""
    tracemalloc.start()
    try:
        with pytest.raises(DataError) as err:
            read_table(data, filename=filename, **limits_)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    msg = str(err.value)
    assert SECRET not in msg
    return msg, peak


def _gzip(head: bytes, chunk: bytes, times: int, level: int = 6) -> bytes:
    """``head`` then ``chunk`` repeated ``times``, gzipped in pieces (the whole is never in memory)."""
    c = zlib.compressobj(level, zlib.DEFLATED, 16 + zlib.MAX_WBITS)
    out = [c.compress(head)]
    out += [c.compress(chunk) for _ in range(times)]
    out.append(c.flush())
    return b"".join(out)


def _constant_parquet(rows: int, step: int = 10_000_000) -> bytes:
    """A Parquet file of ``rows`` rows of a constant score and label, written ``step`` rows at a time."""
    n = min(rows, step)
    table = pa.table({f"score_{SECRET}": np.full(n, 0.5), f"label_{SECRET}": np.ones(n, dtype=np.int64)})
    buf = io.BytesIO()
    with pq.ParquetWriter(buf, table.schema, write_statistics=False) as w:
        for _ in range(rows // n):
            w.write_table(table, row_group_size=n)
    return buf.getvalue()


@pytest.fixture
def no_parquet_reading(monkeypatch):
    """Reading a Parquet file's rows fails the test: a refusal must come from the metadata alone."""
    def read_rows(*args, **kwargs):
        raise AssertionError("the rows were read")
    monkeypatch.setattr(read, "parquet_to_frame", read_rows)


# ---------------------------------------------------------------------------
# Parquet: rows x columns from the metadata
# ---------------------------------------------------------------------------
def test_fifty_million_constant_parquet_rows_are_refused_from_the_metadata(no_parquet_reading):
    data = _constant_parquet(50_000_000)
    assert len(data) < 1_000_000                          # small on disk: the finding's was 2 kB
    msg, peak = _refused(data, "rows.parquet")
    assert msg.startswith("rows.parquet has 50,000,000 rows of 2 columns (its Parquet metadata says): "
                          "100,000,000 cells, over the limit of 52,428,800 a table may have (twice the 200.0 MB "
                          "upload limit in 8-byte numbers); upload a sample of the rows or fewer columns")
    assert "CALIBDASH_DATA_ROOT" in msg                   # where large data is read instead
    assert peak < 8 * 1024 * 1024                         # nothing like the 800 MB of the rows


def test_the_cell_limit_is_inclusive_for_parquet():
    table = pa.table({"score": np.linspace(0.01, 0.99, 50), "label": np.arange(50) % 2})
    buf = io.BytesIO()
    pq.write_table(table, buf)
    df, _ = read_table(buf.getvalue(), filename="t.parquet", max_cells=100)
    assert df.shape == (50, 2)
    with pytest.raises(DataError, match=r"50 rows of 2 columns .*: 100 cells, over the limit of 99 a table may have;"):
        read_table(buf.getvalue(), filename="t.parquet", max_cells=99)


def test_ten_million_rows_of_five_columns_pass_the_metadata_check(monkeypatch):
    """The largest legit shape named in the issue (1e7 rows, a few columns) is not refused by the limits."""
    n = 10_000_000
    assert n * 5 <= limits.MAX_CELLS
    table = pa.table({c: np.full(n // 10, 0.5) for c in "abcde"})
    buf = io.BytesIO()
    with pq.ParquetWriter(buf, table.schema, write_statistics=False) as w:
        for _ in range(10):
            w.write_table(table)
    monkeypatch.setattr(read, "parquet_to_frame", lambda *a, **k: pd.DataFrame({"read": [1]}))
    df, _ = read_table(buf.getvalue(), filename="big.parquet")
    assert list(df.columns) == ["read"]                   # the check passed and reading was reached


def test_a_parquet_file_with_too_many_columns_is_refused_from_its_schema(no_parquet_reading):
    table = pa.table({f"{SECRET}_{i}": [0.5] for i in range(limits.MAX_COLUMNS + 1)})
    buf = io.BytesIO()
    pq.write_table(table, buf)
    msg, _ = _refused(buf.getvalue(), "wide.parquet")
    assert msg.startswith("wide.parquet has 2,001 columns, over the limit of 2,000 a table may have; keep the "
                          "label, the score columns and the features you need")


def test_a_parquet_footer_is_parsed_only_so_far(no_parquet_reading, monkeypatch):
    """A footer listing a million columns is refused as its list is met, not after seconds of parsing it."""
    monkeypatch.setattr(read, "MAX_METADATA_ITEMS", 50)
    buf = io.BytesIO()
    pq.write_table(pa.table({f"{SECRET}{i}": [0.5] for i in range(100)}), buf)
    msg, _ = _refused(buf.getvalue(), "footer.parquet")
    assert msg.startswith("footer.parquet's Parquet metadata lists more than 50 columns or row groups")


def test_a_parquet_file_whose_data_decompresses_past_the_limit_is_refused(no_parquet_reading, monkeypatch):
    """One long string compresses to almost nothing; the row groups' decompressed size in the metadata tells."""
    monkeypatch.setattr(read, "MAX_UNPACKED_BYTES", 1024 * 1024)
    buf = io.BytesIO()
    pq.write_table(pa.table({"text": [SECRET * 500_000]}), buf, compression="zstd")
    assert len(buf.getvalue()) < 100_000
    msg, _ = _refused(buf.getvalue(), "long.parquet")
    assert msg.startswith("long.parquet's columns take 2.9 MB once decoded (its Parquet metadata says: 1 rows of 1 "
                          "columns), more than the 1.0 MB a table may take "
                          "(MAX_UNPACKED_BYTES in calibdash.core.limits)")


def test_nested_parquet_columns_are_refused(no_parquet_reading):
    buf = io.BytesIO()
    pq.write_table(pa.table({"score": [0.5, 0.6], "lists": [[1.0] * 1000, [2.0]]}), buf)
    msg, _ = _refused(buf.getvalue(), "nested.parquet")
    assert msg.startswith("nested.parquet has 1 nested column (lists, structs or maps), such as 'lists'")


# ---------------------------------------------------------------------------
# CSV: columns from the header, cells from the line breaks
# ---------------------------------------------------------------------------
def test_a_gzip_whose_header_unpacks_to_190_mib_is_refused_after_its_first_mebibyte():
    data = _gzip(f"{SECRET},".encode(), b"1," * (1 << 19), 190, level=9)
    assert len(data) < 300_000                            # the finding's was 194 kB
    msg, peak = _refused(data, "header.csv.gz")
    assert msg.startswith("header.csv.gz has more than 2,000 columns, the most a table may have; keep the label")
    assert peak < 16 * limits.MAX_HEADER_BYTES            # 190 MiB were never inflated (nor 7.2 GB allocated)


def test_a_header_with_no_end_in_its_first_mebibyte_is_refused():
    data = _gzip(SECRET.encode(), b"y" * 16384 + b",", 3000)        # long names, and no line break in 49 MB
    msg, peak = _refused(data, "long.csv.gz")
    assert msg.startswith("long.csv.gz's header (its first line, the column names) does not end within its "
                          "first 1.0 MB")
    assert peak < 16 * limits.MAX_HEADER_BYTES
    data = _gzip(b'"' + SECRET.encode(), b"x" * (1 << 20), 50)     # an open quote: one name, never closed
    msg, peak = _refused(data, "open.csv.gz")
    assert msg.startswith("open.csv.gz's header (its first line) holds a column name longer than 131,072 characters")
    assert peak < 16 * limits.MAX_HEADER_BYTES


def test_eighty_thousand_repeated_column_names_are_refused_by_the_column_cap():
    data = gzip.compress(f"{SECRET},".encode() * 80_000 + b"1\n", 9, mtime=0)
    assert len(data) < 1_000                              # the finding's was 195 bytes
    msg, _ = _refused(data, "names.csv.gz")
    assert msg.startswith("names.csv.gz has 80,001 columns, over the limit of 2,000 a table may have; keep "
                          "the label, the score columns and the features you need")


def test_a_csv_of_a_million_numeric_columns_is_refused_from_its_header():
    n = 1_000_000
    data = (",".join(f"{SECRET}{i}" for i in range(n)) + "\n" + ("1," * (n - 1) + "1\n") * 2).encode()
    msg, peak = _refused(data, "wide.csv")
    assert msg.startswith("wide.csv has more than 2,000 columns")
    assert peak < 4 * len(data)                           # the text once or so, never a table of a million columns


def test_the_column_cap_is_inclusive():
    k = limits.MAX_COLUMNS
    row = ",".join(["0.5"] * k) + "\n"
    df, _ = read_table((",".join(f"c{i}" for i in range(k)) + "\n" + row * 3).encode(), filename="t.csv")
    assert df.shape == (3, k)
    with pytest.raises(DataError, match="has 2,001 columns"):
        read_table((",".join(f"c{i}" for i in range(k + 1)) + "\n" + row * 3).encode(), filename="t.csv")


def test_a_small_gzip_of_many_short_rows_is_refused_while_it_inflates():
    data = _gzip(f"score_{SECRET},label\n".encode(), b"1,1\n" * 65536, 200)     # 52 MB of rows, 0.1 MB on disk
    msg, peak = _refused(data, "rows.csv.gz", max_cells=2_000_000)
    assert msg.startswith("rows.csv.gz has at least ")
    assert "lines of 2 columns (its header's): at least " in msg and "cells, over the limit of 2,000,000" in msg
    assert peak < 24 * 1024 * 1024                        # stopped near 1e6 lines, not after 52 MB


def test_rows_short_of_fields_count_as_rows_of_every_column():
    """pandas pads a short row with NaN: a header of 2,000 columns over lines of one digit is a huge table."""
    header = ",".join(f"{SECRET}{i}" for i in range(limits.MAX_COLUMNS)) + "\n"
    data = (header + "1\n" * 30_000).encode()                        # 0.1 MB: 60 million cells
    msg, peak = _refused(data, "short.csv")
    assert msg.startswith("short.csv has 30,001 lines of 2,000 columns: 60,002,000 cells, over the "
                          "limit of 52,428,800 a table may have")
    assert peak < 8 * 1024 * 1024


def test_the_cell_limit_is_inclusive_for_csv_and_counts_every_line_break():
    body = "score,label\n" + "".join(f"0.{i:03d},{i % 2}\n" for i in range(100, 400))   # 301 line breaks
    df, _ = read_table(body.encode(), filename="t.csv", max_cells=602)
    assert df.shape == (300, 2)
    with pytest.raises(DataError, match="301 lines of 2 columns"):
        read_table(body.encode(), filename="t.csv", max_cells=601)
    crlf = body.replace("\n", "\r\n")                     # \r\n is one line break, as is a lone \r
    assert read_table(crlf.encode(), filename="t.csv", max_cells=602)[0].shape == (300, 2)
    assert read_table(body.replace("\n", "\r").encode(), filename="t.csv", max_cells=602)[0].shape == (300, 2)
    gz = gzip.compress(body.encode(), mtime=0)
    assert read_table(gz, filename="t.csv.gz", max_cells=602)[0].shape == (300, 2)


def test_a_first_row_one_field_longer_than_the_header_counts_its_index_column():
    """pandas reads that first field as the index: one more number a row than the header says."""
    body = "score\n" + "".join(f"{i},0.{i:03d}\n" for i in range(100, 400))              # 301 line breaks
    df, _ = read_table(body.encode(), filename="t.csv", max_cells=602)
    assert df.shape == (300, 1) and df.index[0] == 100
    with pytest.raises(DataError, match="301 lines of 2 columns: 602 cells"):
        read_table(body.encode(), filename="t.csv", max_cells=601)


# ---------------------------------------------------------------------------
# linear work: de-duplication and role guessing
# ---------------------------------------------------------------------------
class _Name(str):
    """A column name that counts how often it is compared for equality."""

    comparisons = 0

    def __eq__(self, other):
        _Name.comparisons += 1
        return str.__eq__(self, other)

    __hash__ = str.__hash__


@pytest.mark.parametrize("header", ["a,a,b", "x,x,x.1", ",a,,a", "Unnamed: 2,a,,a", '"a,b",x,"a,b"',
                                    '"a\nb",c,"a\nb"'])
def test_repeated_names_are_numbered_as_pandas_numbers_them(header):
    text = "\n\n" + header + "\n" + ",".join(str(i) for i in range(header.count(",") + 1)) + "\n"
    want = pd.read_csv(io.StringIO(text), skipinitialspace=True)
    got, _ = read_table(text.encode(), filename="t.csv")
    assert list(got.columns) == [str(c).strip() for c in want.columns]
    assert got.to_numpy().tolist() == want.to_numpy().tolist()


def test_names_that_repeat_once_stripped_are_numbered_too():
    df, _ = read_table(b"a, a ,a\n1,2,3\n", filename="t.csv")      # pandas reads 'a', 'a ', 'a.1'
    assert list(df.columns) == ["a", "a.2", "a.1"]


def test_a_parse_error_keeps_its_line_number_when_names_repeat():
    with pytest.raises(DataError, match="Expected 2 fields in line 4, saw 3"):
        read_table(b"a,a\n1,2\n3,4\n5,6,7\n", filename="t.csv")


def test_numbering_repeated_names_is_linear():
    n = limits.MAX_COLUMNS
    _Name.comparisons = 0
    names = unique_names([_Name("a") for _ in range(n)])
    assert names[:3] == ["a", "a.1", "a.2"] and len(set(names)) == n
    assert _Name.comparisons < 10 * n                     # pandas' own numbering: about n**2 / 2
    df, _ = read_table(("a," * (n - 1) + "a\n" + "1," * (n - 1) + "1\n").encode(), filename="t.csv")
    assert list(df.columns) == names


def test_role_guessing_compares_each_column_name_a_bounded_number_of_times():
    """The finding: ``c not in scores`` on a list made 20,000 numeric columns take 9.9 s (quadratic)."""
    counts = {}
    for n in (500, 2000):
        df = pd.DataFrame(np.random.default_rng(0).integers(0, 100, (30, n)))
        df.columns = pd.Index([_Name(f"c{i}") for i in range(n)], dtype=object)
        _Name.comparisons = 0
        roles = guess_roles(df)
        counts[n] = _Name.comparisons
        assert len(roles.scores) + len(roles.features) <= n and not set(roles.scores) & set(roles.features)
    assert counts[2000] < 10 * 2000 and counts[2000] < 5 * counts[500]      # the old code: 1,985,953 at 2,000


def test_a_wide_table_under_the_cap_still_gets_its_roles():
    rng = np.random.default_rng(1)
    df = pd.DataFrame(rng.normal(size=(200, 300)), columns=[f"f{i}" for i in range(300)])
    df.insert(0, "label", rng.integers(0, 2, 200))
    df.insert(1, "p_model", rng.uniform(size=200))
    ss = build_score_set(df)
    assert ss.label_column == "label" and ss.score == "p_model" and len(ss.feature_columns) == 300


def test_the_delimiter_sniffer_reads_a_bounded_sample(monkeypatch):
    """csv.Sniffer's quote guess is quadratic on text of many quotes: 64 kB of ``+"a`` cost it 19 s."""
    import csv

    from calibdash.data import sniff

    seen = []
    sniffer = csv.Sniffer.sniff
    monkeypatch.setattr(csv.Sniffer, "sniff", lambda self, sample, *a, **k: seen.append(len(sample))
                        or sniffer(self, sample, *a, **k))
    df, info = read_table(('+"a' * 21845).encode(), filename="quotes.csv")
    with pytest.raises(DataError, match="has a header but no rows"):
        build_score_set(df, info=info)
    assert seen and max(seen) <= sniff.SNIFFER_CHARS


def test_the_header_is_read_from_a_bounded_prefix():
    h = read_header("a,b,c\n" + "1,2,3\n" * 10, ",", 7)
    assert h.fields == ["a", "b", "c"] and h.complete and h.end == 6
    assert not read_header("a,b,c\n" + "1,2,3\n" * 10, ",", 6).complete   # reaching the cut is not an end
    cut = read_header("a,b,c,d,e\n", ",", 4)
    assert cut.fields == ["a", "b", ""] and not cut.complete                # "a,b," of a longer line
    assert not read_header('"a\n', ",", 3, more=True).complete       # an open quote at the cut hides more


# ---------------------------------------------------------------------------
# legit files load as before
# ---------------------------------------------------------------------------
@pytest.mark.parametrize("name", sorted(SAMPLES))
def test_the_samples_load_as_pandas_reads_them(name):
    path = sample_path(name)
    df, info = read_table(path)
    want = pd.read_csv(path, sep=info.delimiter, skipinitialspace=True)
    held = [c for c in df.columns if isinstance(df[c].dtype, pd.CategoricalDtype)]
    assert all(pd.api.types.is_string_dtype(want[c]) for c in held)   # only text is held as categories
    pd.testing.assert_frame_equal(df.astype({c: want[c].dtype for c in held}), want)


def test_a_million_row_csv_of_a_few_columns_loads():
    n = 1_000_000
    rng = np.random.default_rng(0)
    s = np.round(rng.uniform(size=n), 4)
    frame = pd.DataFrame({"score": s, "label": (rng.uniform(size=n) < s).astype(int), "group": rng.integers(0, 9, n)})
    text = frame.to_csv(index=False).encode()
    df, _ = read_table(text, filename="million.csv")
    pd.testing.assert_frame_equal(df, frame)
    df_gz, _ = read_table(gzip.compress(text, 1, mtime=0), filename="million.csv.gz")
    pd.testing.assert_frame_equal(df_gz, frame)


# ---------------------------------------------------------------------------
# the page caches hold at most their limit
# ---------------------------------------------------------------------------
def test_the_cache_never_stores_an_entry_larger_than_its_limit():
    import logging

    from pages.parts import bounded_cache

    warnings = []
    handler = logging.Handler()
    handler.emit = lambda record: warnings.append(record.getMessage())
    streamlit_cache = logging.getLogger("streamlit.runtime.caching.storage.in_memory_cache_storage_wrapper")
    streamlit_cache.addHandler(handler)
    made = []

    @bounded_cache.cache_data(max_size="1MB", max_entries=8)
    def make(key: str, n: int, _unhashed=None):
        made.append(key)
        return np.ones(n, dtype=np.uint8)

    try:
        assert make("small", 1000, _unhashed=object()).sum() == 1000
        make("small", 1000, _unhashed=object())
        assert made.count("small") == 1                   # stored, and found again
        assert make("big", 2_000_000).sum() == 2_000_000  # returned to its caller...
        make("big", 2_000_000)
        assert made.count("big") == 2                     # ...but never stored
        make("small", 1000)
        assert made.count("small") == 1                   # and the entries under the limit were not dropped for it
        for key in "abc":                                 # three of 0.4 MB: the oldest go to stay under 1 MB
            make(key, 400_000)
        make("c", 400_000)
        make("a", 400_000)
        assert made.count("c") == 1 and made.count("a") == 2
        assert not [w for w in warnings if "stored anyway" in w]
    finally:
        make.clear()
        streamlit_cache.removeHandler(handler)


def test_pickled_size_is_measured_without_a_copy_and_stops_at_the_limit():
    from pages.parts import bounded_cache

    big = np.zeros(50_000_000, dtype=np.uint8)
    tracemalloc.start()
    try:
        assert bounded_cache.pickled_size_over(big, 1024 * 1024)
        assert not bounded_cache.pickled_size_over(big[:1000], 1024 * 1024)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak < 4 * 1024 * 1024                         # the array is never copied to be measured
    assert bounded_cache.size_in_bytes("512MB") == 512 * 1024 ** 2 == bounded_cache.size_in_bytes("0.5GiB")


def test_the_upload_caches_are_bounded():
    from pages.parts import cache_budget, source
    from pages.parts.bounded_cache import size_in_bytes

    for fn, limit in ((source._read_bytes, source.TABLES_MAX),
                      (source._read_sample, cache_budget.size("source.samples")),
                      (source._score_set, source.SCORE_SETS_MAX)):
        assert fn.max_size == size_in_bytes(limit)


# ---------------------------------------------------------------------------
# K-class tables and groups: bounded like binary ones, before any work per class or group
# ---------------------------------------------------------------------------
def _logit_parquet(rows: int, k: int, distinct: int = 8) -> bytes:
    """``rows`` rows of ``k`` ``logit_`` columns and a label, dictionary-encoded: each column repeats
    ``distinct`` values in long runs, so the file is about a megabyte whatever its decoded size."""
    rng = np.random.default_rng(0)
    base = rng.normal(size=(distinct, k))
    which = np.sort(rng.integers(0, distinct, rows))
    cols = {f"logit_{j}": pa.array(base[which, j]) for j in range(k)}
    cols["label"] = pa.array((which % 3).astype(str))
    buf = io.BytesIO()
    pq.write_table(pa.table(cols), buf, use_dictionary=True, compression="zstd")
    return buf.getvalue()


def test_a_dictionary_encoded_parquet_is_measured_by_its_decoded_size(no_parquet_reading, monkeypatch):
    """26,000 rows of 1,999 logit_ columns of 8 repeated values: about 1 MB on disk and in the row groups'
    sizes, 416 MB decoded (8 bytes a cell). The check counts the decoded bytes: under a limit of 100 MB it
    refuses the file from its metadata, where the encoded sizes (under 1 MB) let it through."""
    data = _logit_parquet(26_000, 1_999)
    meta = pq.ParquetFile(io.BytesIO(data)).metadata
    encoded = sum(meta.row_group(i).total_byte_size for i in range(meta.num_row_groups))
    assert len(data) < 2_000_000 and encoded < 1_000_000
    assert read._decoded_bytes(meta, pq.ParquetFile(io.BytesIO(data)).schema_arrow) >= 26_000 * 2_000 * 8
    monkeypatch.setattr(read, "MAX_UNPACKED_BYTES", 100 * 1024 * 1024)
    msg, peak = _refused(data, "logits.parquet")
    assert msg.startswith("logits.parquet's columns take") and "MAX_UNPACKED_BYTES" in msg
    assert peak < 16 * 1024 * 1024


def test_text_columns_count_their_characters_once_decoded():
    """A Parquet text column counts 8 bytes a row plus its characters; a number column 8 bytes a row."""
    table = pa.table({"t": ["x" * 1000] * 100 + [f"{i}" for i in range(900)], "x": np.arange(1_000.0)})
    buf = io.BytesIO()
    pq.write_table(table, buf, use_dictionary=False, compression="zstd")
    pf = pq.ParquetFile(io.BytesIO(buf.getvalue()))
    decoded = read._decoded_bytes(pf.metadata, pf.schema_arrow)
    assert 2 * 8 * 1_000 + 100 * 1_000 <= decoded < 2 * 8 * 1_000 + 100 * 1_000 + 20_000


def _fail_if_called(name):
    def fail(*args, **kwargs):
        raise AssertionError(f"{name} ran: work per class began")
    return fail


def test_thousands_of_class_columns_are_refused_before_any_work_per_class(monkeypatch):
    """1,999 logit_ columns name 1,999 classes, past MAX_CLASSES: refused before a class column is read as
    numbers, with the limit named, and memory stays at the table's own size."""
    from calibdash.data import class_set as dclasses

    monkeypatch.setattr(dclasses, "_numbers", _fail_if_called("_numbers"))
    k = 1_999
    assert k > limits.MAX_CLASSES
    df, _ = read_table(_logit_parquet(2_000, k), filename="logits.parquet")
    tracemalloc.start()
    try:
        with pytest.raises(DataError) as err:
            dclasses.build_class_set(df)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    msg = str(err.value)
    assert f"has {k:,} class columns, more than the {limits.MAX_CLASSES:,} classes" in msg
    assert "MAX_CLASSES in calibdash.core.limits" in msg
    assert peak < 0.5 * df.memory_usage(deep=False).sum()   # no copy of the class columns was made


def test_a_label_of_a_million_distinct_values_is_refused_after_one_pass(monkeypatch):
    """Three p_ columns and a label named by the user holding a million ids: refused from the label's
    distinct count, before any value is paired with a column or looked at one by one."""
    from calibdash.data import class_set as dclasses, roles

    n = 1_000_000
    rng = np.random.default_rng(1)
    P = rng.dirichlet(np.ones(3), n)
    df = pd.DataFrame({"p_a": P[:, 0], "p_b": P[:, 1], "p_c": P[:, 2], "label": np.arange(n).astype(str)})
    real_pair = roles.pair

    def pair(values, suffixes):
        assert len(values) <= limits.MAX_CLASSES + 1, "a million label values were paired with columns"
        return real_pair(values, suffixes)

    monkeypatch.setattr(roles, "pair", pair)
    monkeypatch.setattr(dclasses, "pair", pair)
    for given in ({"label": "label"}, {"label": "label", "probs": "p_"}):
        with pytest.raises(DataError) as err:
            dclasses.build_class_set(df, **given)
        msg = str(err.value)
        assert f"holds more than {limits.MAX_CLASSES:,} distinct values" in msg and "MAX_CLASSES" in msg


def test_a_group_column_of_a_million_distinct_texts_is_refused_before_any_work_per_group(monkeypatch):
    """Groups & time on a column of ids: one distinct count, then the refusal naming MAX_GROUP_VALUES; the
    keyed cells (a code, pooling and a name per group) are never made."""
    from calibdash.core.errors import SettingsError
    from calibdash.monitoring.keyed import Key
    from pages.parts import segments_data

    monkeypatch.setattr(segments_data, "keyed_cells", _fail_if_called("keyed_cells"))
    n = 1_000_000
    rng = np.random.default_rng(2)
    p = rng.uniform(0.05, 0.95, n)
    ss = build_score_set(pd.DataFrame({"score": p, "label": (rng.uniform(size=n) < p).astype(int),
                                       "id": pd.Series(np.arange(n)).map("id{}".format)}),
                         score="score", label="label")
    with pytest.raises(SettingsError) as err:
        segments_data.keyed(ss, Key("id", "group"))
    assert f"id has {n:,} distinct values" in str(err.value) and "MAX_GROUP_VALUES" in str(err.value)
    numbers = pd.Series(rng.normal(size=n))                       # numbers: quantile groups, not refused
    segments_data.check_group_values(numbers, Key("x", "group"))
    segments_data.check_group_values(pd.Series(np.arange(n).astype(str)), Key("t", "period"))
