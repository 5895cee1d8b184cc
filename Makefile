# The README's two commands: `make demo` and `make test`. Everything installs itself.
PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python
export REPOGEN_CACHE_DIR ?= $(CURDIR)/.cache

.PHONY: install lint format test unit integration demo proto golden clean

$(VENV)/.installed: pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet -e '.[dev]'
	touch $@

install: $(VENV)/.installed

lint: install
	$(VENV)/bin/ruff check .
	$(VENV)/bin/ruff format --check .
	$(VENV)/bin/mypy repogen

format: install
	$(VENV)/bin/ruff check --fix .
	$(VENV)/bin/ruff format .

test: lint
	$(PY) -m pytest -q -ra

unit: install
	$(PY) -m pytest -q -m "not integration"

integration: install
	$(PY) -m pytest -q -m integration

# `make test` runs everything on tritonserver 2.51.0; this runs the smoke subset (quickstart, user
# code, bad traffic, release differences) on each older release the wheels still ship.
.PHONY: test-releases
SMOKE_RELEASES ?= 2.39.0 2.41.0
SMOKE_TESTS ?= tests/integration/test_quickstart.py tests/integration/test_user_code.py \
	tests/integration/test_bad_traffic.py tests/integration/test_releases.py

test-releases: install
	set -e; for release in $(SMOKE_RELEASES); do \
		echo "== smoke tests on tritonserver $$release"; \
		REPOGEN_TRITON_VERSION=$$release $(PY) -m pytest -q -ra $(SMOKE_TESTS); \
	done

demo: install
	$(PY) examples/quickstart/demo.py

proto: install
	$(PY) -m repogen.proto.generate

# Regenerate the golden repositories that tests/unit/test_golden.py compares builds against.
golden: install
	rm -rf tests/golden/quickstart
	$(PY) -m repogen build examples/quickstart/app.py:models -o tests/golden/quickstart
	rm -rf tests/golden/quickstart/*/*/cloudpickle  # third-party: checked through the manifest's hashes

clean:
	rm -rf build .pytest_cache .mypy_cache .ruff_cache

# `make bench` (issue 7): repogen vs hand-written model.py vs PyTriton 0.7 on one tritonserver 2.51.
# PyTriton (pins numpy<2) and matplotlib live in their own venv, never in repogen's dependencies.
# BENCH_ARGS=--quick for a ~1.5 min smoke run.
.PHONY: bench
BENCH_VENV := bench/.venv-pytriton
BENCH_ARGS ?=

$(BENCH_VENV)/.installed: | $(VENV)/.installed
	$$($(PY) -c 'import sys; print(sys._base_executable)') -m venv $(BENCH_VENV)
	$(BENCH_VENV)/bin/python -m pip install --quiet --disable-pip-version-check \
		--find-links $(REPOGEN_CACHE_DIR)/wheels 'nvidia-pytriton==0.7.0' matplotlib
	touch $@

bench: install $(BENCH_VENV)/.installed
	$(PY) bench/run.py $(BENCH_ARGS)
	$(PY) bench/report.py
	$(BENCH_VENV)/bin/python bench/chart.py
