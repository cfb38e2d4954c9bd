"""Shared test fixtures and paths."""
import glob
import itertools
import os
import shutil
import socket
import subprocess
import tempfile
import warnings
from pathlib import Path

import numpy as np
import pytest

REPO = Path(__file__).resolve().parents[1]
SHARED_DATA = REPO.parent / "shared" / "data"
#: CI sets CI=true and always has shared/ beside the clone: there a missing reference file is a failure.
IN_CI = os.environ.get("CI", "").strip().lower() in {"1", "true", "yes"}
#: Seconds one AppTest script run may take before AppTest gives up, for every AppTest.from_file/from_string.
#: A limit, never a measure: a page that runs 10 s alone runs minutes on two cores shared with other CPU-heavy work,
#: and a run cut short fails the test for the machine's load, not for the code. Work in tests is capped by sizes and
#: iteration counts instead.
APPTEST_TIMEOUT = 600


def shared_file(*parts) -> Path:
    """A file of the shared reference data (``../shared/data/...``).

    The reproduction tests that use it must not pass silently without their
    data: in CI (``CI=true``) a missing file fails the test; elsewhere the
    test is skipped, with a warning naming the file so the skip is seen.
    """
    path = SHARED_DATA.joinpath(*parts)
    if not path.exists():
        reason = f"reference data {path} is not available (shared/ must sit beside the repo)"
        if IN_CI:
            pytest.fail(f"{reason}; CI must run the reproduction tests", pytrace=False)
        warnings.warn(f"SKIPPED reproduction test: {reason}", stacklevel=2)
        pytest.skip(reason)
    return path


@pytest.fixture
def noisy():
    """5,000 scores whose true probability is score**2 (over-confident): (scores, labels)."""
    rng = np.random.default_rng(42)
    s = rng.uniform(size=5000)
    y = (rng.uniform(size=5000) < s ** 2).astype(int)
    return s, y


def start_spark(app: str, master: str = "local[1]", **conf):
    """A local SparkSession for a test module, or a skip where Spark cannot run.

    CI installs Java and pyspark (``make test``): there a Spark that does not start fails the tests. Elsewhere
    a machine without Java or pyspark skips them, saying why. Nothing here depends on how long Spark takes to
    start: a slow, loaded machine waits, it does not skip.
    """
    import shutil

    if shutil.which("java") is None and not os.environ.get("JAVA_HOME"):
        if IN_CI:
            pytest.fail("the Spark tests need Java; CI must run them", pytrace=False)
        pytest.skip("no Java runtime: Spark cannot be tested here")
    if IN_CI:
        import pyspark  # noqa: F401  (CI must have it)
    else:
        pytest.importorskip("pyspark")
    from pyspark.sql import SparkSession

    left = SparkSession.getActiveSession()
    if left is not None:        # another module's session: its conf and its workers' Python would be reused
        left.stop()
    builder = (SparkSession.builder.master(master).appName(app).config("spark.ui.enabled", "false")
               .config("spark.ui.showConsoleProgress", "false"))
    for key, value in conf.items():
        builder = builder.config(key, value)
    try:
        session = builder.getOrCreate()
    except Exception as exc:                      # e.g. a JVM that cannot start: skip, but never in CI
        if IN_CI:
            raise
        pytest.skip(f"Spark does not start here: {exc}")
    session.sparkContext.setLogLevel("ERROR")
    return session


def spark_with_workers(app: str, master: str = "local[2]", **conf):
    """A generator for a module fixture: :func:`start_spark` whose Python workers run this interpreter on this
    checkout (pandas UDFs import calibdash there), yielded, then stopped and the environment restored."""
    import sys

    saved = {k: os.environ.get(k) for k in ("PYSPARK_PYTHON", "PYTHONPATH")}
    os.environ["PYSPARK_PYTHON"] = sys.executable
    os.environ["PYTHONPATH"] = os.pathsep.join(filter(None, [str(REPO), saved["PYTHONPATH"]]))
    try:
        session = start_spark(app, master, **{"spark.executorEnv.PYTHONPATH": str(REPO), **conf})
        yield session
        session.stop()
    finally:
        for k, v in saved.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v


@pytest.fixture(autouse=True, scope="session")
def _workspace_folder(tmp_path_factory):
    """Saved runs of the tests (pages, command line, servers they start) go to a temporary workspace, never the
    user's own data directory; a test wanting its own sets CALIBDASH_WORKSPACE itself."""
    folder = tmp_path_factory.mktemp("workspace")
    saved = os.environ.get("CALIBDASH_WORKSPACE")
    os.environ["CALIBDASH_WORKSPACE"] = str(folder)
    yield folder
    if saved is None:
        os.environ.pop("CALIBDASH_WORKSPACE", None)
    else:
        os.environ["CALIBDASH_WORKSPACE"] = saved


# -- a real PostgreSQL server for the run catalog (Debian's packages; `make test` installs them) ----------------
_databases = itertools.count()


def _as_postgres(args: list[str]) -> list[str]:
    """PostgreSQL refuses to run as root: run its commands as the ``postgres`` user then."""
    return (["runuser", "-u", "postgres", "--"] + args) if os.geteuid() == 0 else args


@pytest.fixture(scope="session")
def postgres_server():
    found = sorted(glob.glob("/usr/lib/postgresql/*/bin/initdb"))
    if not found:
        if IN_CI:
            pytest.fail("the run catalog tests need PostgreSQL (make test installs it)", pytrace=False)
        pytest.skip("PostgreSQL is not installed (make test installs it)")
    pytest.importorskip("psycopg")
    bindir = Path(found[-1]).parent
    home = Path(tempfile.mkdtemp(prefix="calibdash-pg-"))
    if os.geteuid() == 0:
        shutil.chown(home, "postgres")
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    subprocess.run(_as_postgres([str(bindir / "initdb"), "-D", str(home / "data"), "-A", "trust", "-U", "calibdash",
                                 "--no-sync"]), check=True, capture_output=True)
    options = f"-p {port} -k {home} -c listen_addresses=127.0.0.1 -c fsync=off"
    subprocess.run(_as_postgres([str(bindir / "pg_ctl"), "-D", str(home / "data"), "-o", options, "-w", "-l",
                                 str(home / "log"), "start"]), check=True, capture_output=True)
    try:
        yield f"postgresql://calibdash@127.0.0.1:{port}"
    finally:
        subprocess.run(_as_postgres([str(bindir / "pg_ctl"), "-D", str(home / "data"), "-m", "immediate",
                                     "stop"]), capture_output=True)
        shutil.rmtree(home, ignore_errors=True)


def new_database(server: str) -> str:
    """A new empty database on the test server ``server``: its URL."""
    import psycopg
    name = f"runs_{os.getpid()}_{next(_databases)}"
    with psycopg.connect(f"{server}/postgres", autocommit=True) as conn:
        conn.execute(f"CREATE DATABASE {name}")
    return f"{server}/{name}"


@pytest.fixture
def postgres_url(postgres_server):
    """A new empty database on the test server."""
    return new_database(postgres_server)
