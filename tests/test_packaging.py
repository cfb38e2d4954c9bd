"""calibdash as an installed library: build the wheel, install it in a fresh virtualenv, use it from elsewhere.

Slower than the unit tests (about 10 s, marked ``packaging``; deselect with ``-m "not packaging"``) but
offline: the wheel is built with the test venv's setuptools (``--no-build-isolation``; tests/requirements.txt
pins it) from a copy of the source tree, so no build/ or egg-info lands in the checkout, and is installed with
``--no-deps`` into a new virtualenv that reaches numpy, pandas... through a ``.pth`` line pointing at this
venv's site-packages. Nothing is downloaded.
"""
from __future__ import annotations

import os
import shutil
import site
import subprocess
import sys
import sysconfig
import textwrap
import venv
import zipfile
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
pytestmark = pytest.mark.packaging

_NOT_SOURCE = shutil.ignore_patterns(".git", ".venv", "__pycache__", "*.pyc", "test-results", ".pytest_cache",
                                     "*.egg-info", "build", "dist")


def _run(cmd, cwd, env=None, timeout=120) -> subprocess.CompletedProcess:
    proc = subprocess.run([str(c) for c in cmd], cwd=cwd, env=env, capture_output=True, text=True, timeout=timeout)
    assert proc.returncode == 0, f"{cmd} failed ({proc.returncode}):\n{proc.stdout}\n{proc.stderr}"
    return proc


def _clean_env(**extra) -> dict:
    """The environment minus anything that would put the checkout on sys.path."""
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "PYTHONHOME", "VIRTUAL_ENV")}
    env.update(extra)
    return env


@pytest.fixture(scope="module")
def wheel(tmp_path_factory) -> Path:
    """The wheel built from a copy of the checkout as it is now."""
    try:
        import setuptools
    except ImportError:
        pytest.fail("setuptools is missing from the test venv: pip install -r tests/requirements.txt")
    if tuple(int(x) for x in setuptools.__version__.split(".")[:2]) < (70, 1):   # pyproject's build-system
        pytest.fail(f"setuptools {setuptools.__version__} cannot build the wheel offline: "
                    "pip install -r tests/requirements.txt")
    tmp = tmp_path_factory.mktemp("build")
    src = tmp / "src"
    shutil.copytree(REPO, src, ignore=_NOT_SOURCE)
    out = tmp / "wheels"
    _run([sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation", "--no-index",
          "--disable-pip-version-check", "--quiet", "--wheel-dir", out, src], cwd=tmp, env=_clean_env())
    wheels = list(out.glob("calibdash-*.whl"))
    assert len(wheels) == 1, wheels
    return wheels[0]


@pytest.fixture(scope="module")
def installed(wheel, tmp_path_factory) -> dict:
    """A new virtualenv with the wheel installed (no dependencies of its own) and the paths involved."""
    tmp = tmp_path_factory.mktemp("venv")
    env_dir = tmp / "venv"
    venv.create(env_dir, with_pip=False, symlinks=os.name != "nt")
    bindir = env_dir / ("Scripts" if os.name == "nt" else "bin")
    python = bindir / ("python.exe" if os.name == "nt" else "python")
    purelib = Path(_run([python, "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
                        cwd=tmp).stdout.strip())
    # numpy, scipy, pandas, scikit-learn... from this venv: a .pth line appends its site-packages to sys.path
    # (after the new venv's own, so the installed calibdash wins over anything found there).
    deps = [p for p in site.getsitepackages() if Path(p).is_dir()] or [sysconfig.get_paths()["purelib"]]
    (purelib / "_calibdash_test_deps.pth").write_text("".join(f"{p}\n" for p in deps))
    # pip of this venv installs into the new one (pip >= 22.3); --no-deps --no-index: nothing downloaded
    _run([sys.executable, "-m", "pip", "--python", python, "install", "--no-deps", "--no-index",
          "--disable-pip-version-check", "--quiet", wheel], cwd=tmp, env=_clean_env())
    work = tmp / "elsewhere"                 # neither the checkout nor the venv: nothing to import by accident
    work.mkdir()
    return {"python": python, "bindir": bindir, "purelib": purelib, "work": work,
            "env": _clean_env(XDG_CACHE_HOME=str(tmp / "cache")), "cache": tmp / "cache"}


def test_wheel_holds_only_the_library(wheel):
    names = zipfile.ZipFile(wheel).namelist()
    tops = {n.split("/")[0] for n in names}
    assert tops == {"calibdash", wheel.name.split("-py3")[0] + ".dist-info"}, tops
    assert not [n for n in names if n.split("/")[0] in ("pages", "bench", "tests", "sample_data", "app.py")]
    assert not [n for n in names if n.endswith((".csv", ".pyc"))]            # the samples are generated, not shipped
    for must in ("calibdash/__init__.py", "calibdash/__main__.py", "calibdash/cli/__init__.py",
                 "calibdash/samples/__init__.py", "calibdash/samples/make.py", "calibdash/calibrators/bbq.py",
                 "calibdash/io/schemas/__init__.py", "calibdash/io/schemas/common.json",
                 *(f"calibdash/io/schemas/{c}.json" for c in ("evaluate", "groups", "drift", "benchmark"))):
        assert must in names, must
    meta = zipfile.ZipFile(wheel).read(next(n for n in names if n.endswith(".dist-info/METADATA"))).decode()
    requires = {line.split(":", 1)[1].strip().split(">=")[0].split(";")[0].strip(): line
                for line in meta.splitlines() if line.startswith("Requires-Dist:")}
    for dep in ("numpy", "scipy", "pandas", "scikit-learn", "pyarrow"):        # runtime: lower bounds, no extra
        assert ">=" in requires[dep] and "extra ==" not in requires[dep], requires[dep]
    for dep in ("streamlit", "plotly", "kaleido"):                              # the dashboard's, only in [app]
        assert 'extra == "app"' in requires[dep], requires[dep]
    assert 'extra == "spark"' in requires["pyspark"] and 'extra == "test"' in requires["pytest"]
    assert not [line for line in requires.values() if "==" in line.split(";")[0]]     # no pins
    entry = zipfile.ZipFile(wheel).read(next(n for n in names if n.endswith(".dist-info/entry_points.txt"))).decode()
    assert "calibdash = calibdash.cli:main" in entry


def test_installed_package_is_imported_and_loads_samples(installed):
    code = textwrap.dedent("""
        import sys, json, calibdash, calibdash.samples as s
        ss = s.load_sample("circles_svm")
        print(json.dumps({"file": calibdash.__file__, "sample_dir": str(s.SAMPLE_DIR), "path": str(s.sample_path("circles_svm")),
                          "rows": ss.n_rows, "score": ss.score, "version": calibdash.__version__}))
    """)
    out = _run([installed["python"], "-c", code], cwd=installed["work"], env=installed["env"]).stdout
    got = __import__("json").loads(out.strip().splitlines()[-1])
    assert Path(got["file"]).resolve().is_relative_to(installed["purelib"].resolve()), got["file"]
    assert not Path(got["file"]).resolve().is_relative_to(REPO)
    assert got["sample_dir"] == "None"                       # no sample_data/ next to an installed package
    assert Path(got["path"]).is_relative_to(installed["cache"] / "calibdash" / "samples"), got["path"]
    assert Path(got["path"]).is_file()
    assert got["rows"] == 2000 and got["score"] == "linear_svm" and got["version"] == "0.1.0"


def test_installed_package_reads_its_json_schemas(installed):
    """The --json schemas are package data: the installed package reads them (importlib.resources)."""
    code = ("import json, calibdash.io.schemas as s; "
            "print(json.dumps({c: s.load(c)['$id'] for c in s.COMMANDS}))")
    out = _run([installed["python"], "-c", code], cwd=installed["work"], env=installed["env"]).stdout
    assert __import__("json").loads(out.strip().splitlines()[-1]) == {
        c: f"urn:calibdash:schema:{c}" for c in ("evaluate", "groups", "drift", "benchmark")}


def test_console_script_and_python_m(installed):
    script = installed["bindir"] / ("calibdash.exe" if os.name == "nt" else "calibdash")
    assert script.is_file()
    out = _run([script, "methods"], cwd=installed["work"], env=installed["env"]).stdout
    assert "bbq" in out and "platt" in out
    out = _run([installed["python"], "-m", "calibdash", "methods"], cwd=installed["work"], env=installed["env"]).stdout
    assert "bbq" in out


def test_library_and_cli_import_without_the_app_extra():
    """`import calibdash` (and its command line, and the samples) must work with the runtime dependencies only."""
    code = ("import sys, calibdash, calibdash.cli, calibdash.samples, calibdash.samples.make; "
            "print(sorted({m.split('.')[0] for m in sys.modules} & {'streamlit', 'plotly', 'kaleido', 'pyspark', 'duckdb'}))")
    out = _run([sys.executable, "-c", code], cwd=REPO, env=_clean_env()).stdout
    assert out.strip() == "[]", out
