# The README's two commands: `make demo` and `make test`. Everything installs itself.
SHELL := /bin/bash
PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python
# One cache for make and the CLI: servers, venvs and wheels go where `repogen serve` puts them
# ($REPOGEN_CACHE_DIR, else ~/.cache/repogen: repogen.server.provision.install.default_cache_dir).
CACHE_DIR = $(shell $(PY) -c 'from repogen.server.provision.install import default_cache_dir as d; print(d())')

.PHONY: install lint format test unit integration demo proto golden clean check-pythons standin

# constraints.txt pins what the golden repositories' payloads depend on (numpy, cloudpickle): tests/golden.
$(VENV)/.installed: pyproject.toml constraints.txt
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip uninstall --quiet --yes repogen 2>/dev/null || true  # the distribution's name before triton-repogen
	rm -rf repogen.egg-info  # its stale metadata, which `python -m ...` in the checkout would still find
	$(PY) -m pip install --quiet -e '.[dev]' -c constraints.txt
	touch $@

install: $(VENV)/.installed

lint: install
	$(VENV)/bin/ruff check .
	$(VENV)/bin/ruff format --check .
	$(VENV)/bin/mypy repogen
	$(VENV)/bin/lint-imports --no-cache

format: install
	$(VENV)/bin/ruff check --fix .
	$(VENV)/bin/ruff format .

# The documentation site (mkdocs.yml, pages under docs/): `make docs` serves it on 127.0.0.1:8000 and rebuilds on
# every save; `make docs-build` builds it into build/site with --strict, as `make test` does, so a broken link or
# anchor, a page left out of the nav, or an API reference to a missing name fails. NO_MKDOCS_2_WARNING quiets
# mkdocs-material's banner about its successor, which is no warning about these docs.
.PHONY: docs docs-build
MKDOCS := NO_MKDOCS_2_WARNING=1 $(VENV)/bin/mkdocs
DOCS_ADDR ?= 127.0.0.1:8000

docs: install
	$(MKDOCS) serve --strict --dev-addr $(DOCS_ADDR)

docs-build: install
	$(MKDOCS) build --strict --clean

# A serving pairing is <tritonserver release>+<Python its backend stub runs>, what one NGC container
# runs: 2.39/2.41/2.51 + 3.10 are NGC 23.10/23.12/24.10, 2.51 + 3.12 stands in for 24.11+ (README,
# "Testing"). `make test` runs lint, everything on FULL_PAIRING, then the smoke subset on each
# SMOKE_PAIRING, and prints a summary; `make test-releases` runs the smoke pairings only.
.PHONY: test-releases
FULL_PAIRING ?= 2.51.0+3.10
SMOKE_PAIRINGS ?= 2.39.0+3.10 2.41.0+3.10 2.51.0+3.12
# The smoke subset is the tests marked `smoke` (pytestmark in each file); SMOKE_ARGS narrows or replaces it.
SMOKE_ARGS ?= -m smoke
# After the full run, a smoke pairing with the full pairing's Python changes only the release: test_portability_served
# serves there the 3.13 build alone, the full run having served every builder's on that Python (~1 min each).
SAME_PYTHON_ARGS ?= -k "not built-by or built-by-3.13"
FULL_PYTHON := $(lastword $(subst +, ,$(FULL_PAIRING)))
# The containers' Pythons (servers) plus 3.13 (builds): a missing one fails here, before any test runs.
REQUIRED_PYTHONS ?= 3.10 3.12 3.13
# --durations: every run says where its time goes (the slowest tests per pairing, before pytest's closing line).
PYTEST_ARGS ?= -q -ra --durations=15

check-pythons: install
	$(PY) -m repogen.server.provision.pythons $(REQUIRED_PYTHONS)

# Stand-ins for NGC's tritonserver images on the local Docker engine (repogen/testing/standin.py): Debian
# bookworm minbase, the container's CPython, numpy 1.26.4 and the PyPI wheel's tritonserver. Needs a running
# engine, debootstrap and root; each is rebuilt only when what it is built from changed. The container tests
# (tests/containers) build the ones they use; STANDINS="24.10" for some.
STANDINS ?=
standin: install
	$(PY) -m repogen.testing.standin $(STANDINS)

# $(1): pairing=scope words (scope `all` or `smoke`): tests/pairings.sh runs them (an `all` one alone, then the
# smoke ones together) and sums them up; the recipe fails if any pairing failed.
define run_pairings
	@PY=$(PY) PYTEST_ARGS='$(PYTEST_ARGS)' SMOKE_ARGS='$(SMOKE_ARGS)' SAME_PYTHON_ARGS='$(SAME_PYTHON_ARGS)' \
		FULL_PAIRING=$(FULL_PAIRING) bash tests/pairings.sh $(1)
endef

test: check-pythons lint docs-build frameworks gpu-rehearsal
	$(call run_pairings,$(FULL_PAIRING)=all $(addsuffix =smoke,$(SMOKE_PAIRINGS)))

test-releases: check-pythons
	$(call run_pairings,$(addsuffix =smoke,$(SMOKE_PAIRINGS)))

unit: install frameworks
	$(PY) -m pytest -q -m "not integration"

# torch's CPU build in .venv, for the unit tests of the runtime's framework paths (tests/unit/runtime/test_frameworks.py),
# and transformers with pillow for PyTriton's Hugging Face examples (tests/integration/test_pytriton_hf_examples.py).
# 2.13.0 is the CPU build these machines keep on disk (PIP_FIND_LINKS); elsewhere pip downloads that release.
TORCH ?= torch==2.13.0
.PHONY: frameworks
frameworks: install
	$(PY) -c 'import torch' 2>/dev/null || $(PY) -m pip install --quiet '$(TORCH)' -c constraints.txt
	$(PY) -m pip install --quiet -r tests/apps/pytriton_hf/requirements.txt -c constraints.txt

# The GPU suite (tests/gpu) on a machine with an NVIDIA GPU. REPOGEN_GPU_SERVER_VENV names the server's Python: a
# venv of Python 3.12 whose numpy is 1.26.4 (as NGC's), with torch, cupy and onnxruntime (docs/gpu.md). On the GPU
# machine `bash tests/gpu/device.sh` does everything, from what `make gpu-kit` packs here into .gpu-kit/.
# `make gpu-rehearsal` runs device.sh here, without a GPU, in an environment made like the GPU machine's, up to the
# GPU checks (tests/gpu/rehearsal.sh): `make test` runs it, so the kit and the run cannot rot between GPU loans.
.PHONY: test-gpu gpu-kit gpu-rehearsal
test-gpu: install
	@[ -n "$$REPOGEN_GPU_SERVER_VENV" ] || { echo "set REPOGEN_GPU_SERVER_VENV (docs/gpu.md)"; exit 2; }
	$(PY) -m pytest $(PYTEST_ARGS) tests/gpu

gpu-kit: install
	$(PY) tests/gpu/kit.py

gpu-rehearsal: install
	bash tests/gpu/rehearsal.sh

integration: install
	$(PY) -m pytest -q -m integration

# `make mutation` (issue 57, item 3; not part of `make test`, whose unit tests it relies on): mutmut (pyproject.toml's
# [tool.mutmut]) mutates runtime/transfers.py, Torch's device methods in runtime/frameworks.py, runtime/devices.py
# (what an instance does with its GPU beyond a batch's tensors) and ir/placement.py's transfer decisions, and runs
# the unit tests on the emulated GPU against each mutant; `mutmut results` then lists the survivors, each of which
# tests/mutation/survivors.md must name with why it cannot change behaviour.
MUTMUT ?= mutmut==3.8.1
MUTANTS ?= "repogen.runtime.transfers.*" "repogen.runtime.frameworks.xǁTorchǁ*" "repogen.runtime.devices.*" \
	"repogen.ir.placement.x_settle_transfers*" "repogen.ir.placement.x__settled*"
.PHONY: mutation
mutation: install frameworks
	$(PY) -c 'import mutmut' 2>/dev/null || $(PY) -m pip install --quiet '$(MUTMUT)' -c constraints.txt
	rm -rf mutants
	# one thread for torch: a forked test process must not inherit a thread pool it cannot use (it hangs)
	OMP_NUM_THREADS=1 MKL_NUM_THREADS=1 $(VENV)/bin/mutmut run --max-children 2 $(MUTANTS)
	$(VENV)/bin/mutmut results

demo: install
	$(PY) examples/quickstart/demo.py

proto: install
	$(PY) -m repogen.triton.proto.generate

# Regenerate the golden repositories that tests/unit/golden/test_golden.py compares builds against: every
# tests/golden/<family>/expected from its app.py (FAMILIES="bls tensors" for some), and the hashes of
# the vendored code, recorded once in tests/golden/_vendored.json (tests/golden/README.md).
FAMILIES ?=
golden: install
	$(PY) tests/golden/regenerate.py $(FAMILIES)

clean:
	rm -rf build .pytest_cache .mypy_cache .ruff_cache

# `make bench-gpu-work` (part of `make bench`; CPU only, no server): one execute's Python work on a GPU instance,
# counted by callgrind on the emulated GPU, generated model against NVIDIA's idiom and a best-practice hand
# (bench/gpu_work.py; valgrind and a C compiler). ~6 minutes on two cores.
.PHONY: bench-gpu-work
bench-gpu-work: install frameworks
	$(PY) bench/gpu_work.py --out bench/results/$$(date +%F)-gpu-work.json

# `make bench`: repogen vs hand-written model.py vs PyTriton 0.7 on one tritonserver 2.51 (models on
# Python 3.10), every point measured with perf_analyzer. perf_analyzer installs itself into the cache
# on first use (repogen.server.provision.perf_analyzer: libcudart from PyPI; libb64 from the system, else
# `apt-get download libb64-0d`, no install; without apt it stops and says `apt-get install libb64-0d`).
# PyTriton (pins numpy<2) and matplotlib live in their own venv, never in repogen's dependencies.
# BENCH_ARGS=--quick for a smoke run.
.PHONY: bench
BENCH_VENV := bench/.venv-pytriton
BENCH_ARGS ?=

$(BENCH_VENV)/.installed: | $(VENV)/.installed
	$$($(PY) -c 'import sys; print(sys._base_executable)') -m venv $(BENCH_VENV)
	$(BENCH_VENV)/bin/python -m pip install --quiet --disable-pip-version-check \
		--find-links $(CACHE_DIR)/wheels 'nvidia-pytriton==0.7.0' matplotlib
	touch $@

bench: install frameworks $(BENCH_VENV)/.installed
	$(PY) -c 'from repogen.server.provision.perf_analyzer import ensure_perf_analyzer as e; print("perf_analyzer:", e().binary)'
	$(PY) bench/run.py $(BENCH_ARGS)
	$(MAKE) bench-gpu-work
	$(PY) bench/report.py
	$(BENCH_VENV)/bin/python bench/chart.py
