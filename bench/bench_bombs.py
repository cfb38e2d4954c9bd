"""Upload bombs (issue 17, finding 1): time and memory to refuse each, and to load the legit files as before.

    .venv/bin/python bench/bench_bombs.py            (builds the files in a temporary folder, about a minute)

Each file is read by a fresh child process, as the server would read an
upload: ``read_table`` on the file's bytes, then ``build_score_set`` when it
is read. The child imports calibdash, pandas and pyarrow and reads the bytes
first; that is the process at rest. Its peak resident memory is then reset
(``/proc/self/clear_refs``) and read back after the work (``VmHWM``), so the
"MB above rest" column is the peak the work itself added, Arrow's
allocations included (tracemalloc does not see them). Targets for the
bombs: refused in under 5 s with under 300 MB above rest. The legit files
have no target: they must load, with their rows and columns, as before.
"""
from __future__ import annotations

import gzip
import io
import json
import os
import subprocess
import sys
import tempfile
import time
import zlib
from pathlib import Path

import numpy as np

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(REPO / "bench"))

TARGET_SECONDS = 5.0
TARGET_MB = 300


# --------------------------------------------------------------------------- the child: one file, measured
def _status_mb(key: str) -> float:
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith(key + ":"):
                return int(line.split()[1]) / 1024
    return float("nan")


def child(path: str) -> None:
    """Read ``path`` as an upload and print what happened, its seconds and its peak MB above rest (JSON)."""
    import pyarrow.parquet  # noqa: F401  (a server at rest has these loaded)

    from calibdash.data import build_score_set, read_table
    from calibdash.core.errors import DataError

    data = Path(path).read_bytes()
    name = Path(path).name
    rest = _status_mb("VmRSS")
    with open("/proc/self/clear_refs", "w") as f:      # reset VmHWM to the current RSS
        f.write("5")
    def short(exc: DataError) -> str:
        msg = str(exc)
        cut = [i for i in (msg.find(", over the limit"), msg.find(", the most"), msg.find(";")) if i > 0]
        return msg[:min(cut)] if cut else msg

    t0 = time.perf_counter()
    refused, outcome = True, ""
    try:
        df, info = read_table(data, filename=name)
        outcome = f"read {df.shape[0]:,} x {df.shape[1]:,}, then "
        ss = build_score_set(df, info=info)
        refused, outcome = False, f"read {df.shape[0]:,} x {df.shape[1]:,}, {ss.n_rows:,} rows used"
    except DataError as exc:
        outcome += f"refused: {short(exc)}"
    seconds = time.perf_counter() - t0
    print(json.dumps({"outcome": outcome, "refused": refused, "seconds": seconds,
                      "mb": _status_mb("VmHWM") - rest}))


def run_child(path: Path, timeout: float = 600) -> dict:
    env = dict(os.environ, PYTHONPATH=str(REPO))
    out = subprocess.run([sys.executable, __file__, "--child", str(path)], capture_output=True, text=True, check=False,
                         timeout=timeout, env=env)
    if out.returncode != 0:
        return {"outcome": f"child failed: {out.stderr.strip().splitlines()[-1][:80]}", "refused": False,
                "seconds": float("nan"), "mb": float("nan")}
    return json.loads(out.stdout.strip().splitlines()[-1])


# --------------------------------------------------------------------------- the files
def _gzip_pieces(head: bytes, chunk: bytes, times: int, level: int = 9) -> bytes:
    c = zlib.compressobj(level, zlib.DEFLATED, 16 + zlib.MAX_WBITS)
    out = [c.compress(head)] + [c.compress(chunk) for _ in range(times)] + [c.flush()]
    return b"".join(out)


def constant_parquet(rows: int, step: int = 10_000_000) -> bytes:
    """``rows`` rows of a constant score and label, written ``step`` at a time (the attacker's 43 kB file)."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    n = min(rows, step)
    table = pa.table({"score": np.full(n, 0.5), "label": np.ones(n, dtype=np.int64)})
    buf = io.BytesIO()
    with pq.ParquetWriter(buf, table.schema, write_statistics=False) as w:
        for _ in range(rows // n):
            w.write_table(table, row_group_size=n)
    return buf.getvalue()


def long_string_parquet(n_bytes: int) -> bytes:
    import pyarrow as pa
    import pyarrow.parquet as pq

    buf = io.BytesIO()
    pq.write_table(pa.table({"score": [0.5], "note": ["s" * n_bytes]}), buf, compression="zstd")
    return buf.getvalue()


def bombs() -> list[tuple[str, str, callable]]:
    """(what, file name, builder) of each bomb: the finding's four, then variants of each trick."""
    n_wide = 1_000_000
    return [
        ("Parquet, 1e9 constant rows x 2 (finding: tried 16 GB)", "billion.parquet",
         lambda: constant_parquet(1_000_000_000)),
        ("Parquet, 5e7 constant rows x 2 (finding: 4.2 GB, cached past the limit)", "fifty_million.parquet",
         lambda: constant_parquet(50_000_000)),
        (".csv.gz, a 190 MiB header of 1,1,... (finding: 7.2 GB, MemoryError)", "header.csv.gz",
         lambda: _gzip_pieces(b"", b"1," * (1 << 19), 190)),
        (".csv.gz, 80,000 repeated column names (finding: 137 s CPU)", "names.csv.gz",
         lambda: gzip.compress(b"a," * 80_000 + b"a\n1\n", 9, mtime=0)),
        ("CSV, 1e6 numeric columns (finding: a core busy for 15+ min)", "wide.csv",
         lambda: (",".join(f"c{i}" for i in range(n_wide)) + "\n" + "1," * (n_wide - 1) + "1\n").encode()),
        (".csv.gz, 200 MB of 1,1 rows (5e7 rows x 2)", "rows.csv.gz",
         lambda: _gzip_pieces(b"score,label\n", b"1,1\n" * (1 << 16), 199 * 4)),
        ("CSV, 2,000-column header over 30,000 one-digit lines", "short_rows.csv",
         lambda: (",".join(f"c{i}" for i in range(2000)) + "\n" + "1\n" * 30_000).encode()),
        ("Parquet, one 450 MB string (zstd)", "long_string.parquet", lambda: long_string_parquet(450 * 2 ** 20)),
        ('CSV, 64 kB of +"a (csv.Sniffer: 19 s before)', "quotes.csv", lambda: ('+"a' * 21845).encode()),
    ]


def legit(folder: Path) -> list[tuple[str, Path]]:
    """(what, path) of files that must load as before: the samples, 1e6 CSV rows, 1e7 Parquet rows."""
    from bench_cells import make_file
    from bench_load import make_csv

    from calibdash import samples

    files = [(f"sample {name}", samples.sample_path(name)) for name in sorted(samples.SAMPLES)]
    csv_path = folder / "million.csv"
    make_csv(1_000_000, csv_path)
    files.append(("CSV, 1e6 rows x 8 columns (bench_load.py)", csv_path))
    files.append(("Parquet, 1e7 rows x 4 columns (bench_cells.py)", Path(make_file(10_000_000, str(folder)))))
    return files


def _size(n: int) -> str:
    return f"{n / 2 ** 20:.1f} MB" if n >= 2 ** 20 else f"{n / 1024:.1f} kB" if n >= 1024 else f"{n} B"


def main() -> None:
    print(f"machine: {os.cpu_count()} cores, Python {sys.version.split()[0]}, load average "
          f"{os.getloadavg()[0]:.1f}")
    rows = []
    ok = True
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        for what, name, build in bombs():
            path = folder / name
            path.write_bytes(build())
            r = run_child(path)
            meets = r["refused"] and r["seconds"] < TARGET_SECONDS and r["mb"] < TARGET_MB
            ok &= meets
            rows.append((what, _size(path.stat().st_size), r, "yes" if meets else "NO"))
            path.unlink()
        for what, path in legit(folder):
            r = run_child(path)
            ok &= not r["refused"]
            rows.append((what, _size(path.stat().st_size), r, "loads" if not r["refused"] else "NO"))
    print()
    print(f"| file | on disk | outcome | seconds | MB above rest | < {TARGET_SECONDS:g} s, < {TARGET_MB} MB |")
    print("|---|---|---|---|---|---|")
    for what, size, r, meets in rows:
        print(f"| {what} | {size} | {r['outcome']} | {r['seconds']:.2f} | {r['mb']:.0f} | {meets} |")
    print()
    print("all bombs refused within the targets, all legit files loaded" if ok else "SOME TARGETS MISSED")


if __name__ == "__main__":
    if len(sys.argv) == 3 and sys.argv[1] == "--child":
        child(sys.argv[2])
    else:
        main()
