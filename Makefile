# Two entry points for a fresh machine (each installs what it needs):
#   make run    start the dashboard on the built-in sample
#   make test   run the whole test suite (unit, AppTest, end-to-end in headless Chromium)
PYTHON ?= python3
VENV   ?= .venv
PY     := $(VENV)/bin/python
PORT   ?= 8501

.PHONY: run test bench chromium java postgresql clean

$(VENV)/.runtime: requirements.txt
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --disable-pip-version-check -r requirements.txt
	touch $@

$(VENV)/.testing: $(VENV)/.runtime tests/requirements.txt tests/requirements-spark.txt
	$(PY) -m pip install --quiet --disable-pip-version-check -r tests/requirements.txt -r tests/requirements-spark.txt
	touch $@

# A Java runtime for the Spark engine's tests (pyspark runs on the JVM); only when none is on the PATH.
java:
	@command -v java >/dev/null 2>&1 || { \
	  SUDO=$$( [ "$$(id -u)" = 0 ] || echo sudo ); \
	  $$SUDO apt-get update -qq && $$SUDO apt-get install -y -qq openjdk-17-jre-headless >/dev/null; }

# Debian's Chromium for the browser tests (never Playwright's own download).
chromium:
	@command -v chromium >/dev/null 2>&1 || { \
	  SUDO=$$( [ "$$(id -u)" = 0 ] || echo sudo ); \
	  $$SUDO apt-get update -qq && $$SUDO apt-get install -y -qq chromium >/dev/null; }

# PostgreSQL for the run catalog's tests (a team server's catalog): the tests start their own server from it.
postgresql:
	@ls /usr/lib/postgresql/*/bin/initdb >/dev/null 2>&1 || { \
	  SUDO=$$( [ "$$(id -u)" = 0 ] || echo sudo ); \
	  $$SUDO apt-get update -qq && $$SUDO apt-get install -y -qq postgresql >/dev/null; }

# The dashboard needs Chromium only for PNG/SVG downloads of figures: try to install it, carry on without.
run: $(VENV)/.runtime
	-@$(MAKE) --no-print-directory chromium
	$(PY) -m streamlit run app.py --server.port $(PORT)

test: $(VENV)/.testing chromium java postgresql
	$(PY) -m pytest -n 2 --dist loadfile -q -p no:cacheprovider

bench: $(VENV)/.testing
	for f in bench/bench_*.py; do echo "== $$f"; $(PY) $$f || exit 1; done

clean:
	rm -rf $(VENV) test-results .pytest_cache
