"""A real PostgreSQL server for the run catalog's tests, started from Debian's packages (``make test`` installs
them) in a temporary folder and stopped at the end; each test gets its own database."""
from __future__ import annotations

import glob
import itertools
import os
import shutil
import socket
import subprocess
import tempfile
from pathlib import Path

import pytest

from tests.conftest import IN_CI

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


@pytest.fixture
def postgres_url(postgres_server):
    """A new empty database on the test server."""
    import psycopg
    name = f"runs_{os.getpid()}_{next(_databases)}"
    with psycopg.connect(f"{postgres_server}/postgres", autocommit=True) as conn:
        conn.execute(f"CREATE DATABASE {name}")
    return f"{postgres_server}/{name}"
