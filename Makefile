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

demo: install
	$(PY) examples/quickstart/demo.py

proto: install
	$(PY) -m repogen.proto.generate

# Regenerate the golden repositories that tests/unit/test_golden.py compares builds against.
golden: install
	rm -rf tests/golden/quickstart
	$(PY) -m repogen build examples/quickstart/app.py:models -o tests/golden/quickstart

clean:
	rm -rf build .pytest_cache .mypy_cache .ruff_cache
