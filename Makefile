# spark_quarantine: every target sets itself up on a fresh clone.
PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed
RUNTIME_STAMP := $(VENV)/.runtime-installed
# The pair make demo and make test install (the oldest supported); make matrix tests the newest.
PAIR := -c .ci/pairs/oldest.txt
BENCH_STAMP := $(VENV)/.bench-installed
SOURCES := setup.cfg pyproject.toml .ci/pairs/oldest.txt

.DEFAULT_GOAL := help

.PHONY: help demo report-screenshot test matrix reliability lint format docs bench bench-quick clean

help: ## List the targets.
	@grep -E '^[a-z-]+:.*## ' $(MAKEFILE_LIST) | awk -F':.*## ' '{printf "  make %-12s %s\n", $$1, $$2}'

# The runtime only (the library, pyspark and delta-spark): what make demo needs. pip's own
# progress is shown; pyspark is a ~400 MB download on a fresh machine.
$(RUNTIME_STAMP): $(SOURCES)
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	@echo "Installing spark_quarantine with pyspark and delta-spark into $(VENV) (pyspark is ~400 MB the first time) ..."
	$(PY) -m pip install --quiet --upgrade pip setuptools wheel
	$(PY) -m pip install --progress-bar on -e '.[local,report]' $(PAIR)
	touch $(RUNTIME_STAMP)

# Everything make test, lint and docs need, on top of the runtime.
$(STAMP): $(RUNTIME_STAMP)
	@echo "Installing the test and lint tools into $(VENV) ..."
	$(PY) -m pip install --progress-bar on -e '.[local,report,connect,dev]' $(PAIR)
	touch $(STAMP)

demo: $(RUNTIME_STAMP) ## Run the demo pipeline on an embedded local Spark + Delta warehouse; ends with its report.
	$(PY) -m spark_quarantine._demo --warehouse .demo-warehouse --report .demo-warehouse/report.html

report-screenshot: $(STAMP) $(CHROMIUM) ## Regenerate docs/_static/report.png: the demo's report in headless Chromium.
	$(PY) -m spark_quarantine._demo --warehouse .demo-warehouse --report .demo-warehouse/report.html
	$(PY) -m tests.browser .demo-warehouse/report.html docs/_static/report.png

# The report's browser tests use Debian's Chromium; installed once when the machine lacks it.
CHROMIUM := /usr/bin/chromium
$(CHROMIUM):
	@echo "Installing Debian's chromium for the report's browser tests ..."
	apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium > /dev/null

test: $(STAMP) $(CHROMIUM) ## Run the whole test suite on real Spark + Delta, then the Spark Connect suites.
	$(PY) -m pytest
	SQ_CONNECT=1 $(PY) -m pytest tests/connect
	SQ_CONNECT=serverless $(PY) -m pytest tests/connect

matrix: $(STAMP) ## The newest supported Spark + Delta pair: install the wheel beside it, run the smoke subset.
	bash .ci/matrix .ci/pairs/newest.txt

reliability: $(STAMP) ## Run tests/reliability/ with a longer fault-model budget; regenerate docs/reliability.md.
	SQ_FAULT_ALL=1 SQ_FAULT_EXAMPLES=$${SQ_FAULT_EXAMPLES:-12} SQ_FAULT_STEPS=$${SQ_FAULT_STEPS:-14} $(PY) -m pytest tests/reliability

lint: $(STAMP) ## ruff (lint and format check) and mypy on the package.
	$(VENV)/bin/ruff check spark_quarantine tests benchmarks examples
	$(VENV)/bin/ruff format --check spark_quarantine tests benchmarks examples
	$(VENV)/bin/mypy spark_quarantine

format: $(STAMP) ## Apply ruff's formatting and safe fixes.
	$(VENV)/bin/ruff format spark_quarantine tests benchmarks
	$(VENV)/bin/ruff check --fix spark_quarantine tests benchmarks

docs: $(STAMP) ## Build the Sphinx docs, warnings as errors.
	$(VENV)/bin/sphinx-build -W --keep-going -q -b html docs docs/_build/html

$(BENCH_STAMP): $(STAMP)
	$(PY) -m pip install --quiet -e '.[dev,bench]'
	touch $(BENCH_STAMP)

bench: $(BENCH_STAMP) $(PEERS_STAMP) ## Every scenario against hand-written Spark (and the peers); results in benchmarks/results/.
	$(PY) -m benchmarks.run --scenarios all

bench-quick: $(BENCH_STAMP) ## 1M-row smoke benchmark of the split scenario (a few minutes).
	$(PY) -m benchmarks.run --quick

clean: ## Remove the venv, build output and the demo warehouse.
	rm -rf $(VENV) .venv-* .demo-warehouse docs/_build build *.egg-info .pytest_cache .mypy_cache .ruff_cache

# make peers-venv: Spark Expectations and DQX for the peers benchmark, in their own venv (never .venv).
PEERS_VENV := .venv-peers
PEERS_STAMP := $(PEERS_VENV)/.installed
.PHONY: peers-venv

$(PEERS_STAMP): $(SOURCES) benchmarks/peers_requirements.txt
	test -x $(PEERS_VENV)/bin/python || python3.11 -m venv $(PEERS_VENV)
	$(PEERS_VENV)/bin/pip install -q -c .ci/pairs/oldest.txt -e '.[local,bench]' -r benchmarks/peers_requirements.txt
	touch $(PEERS_STAMP)

peers-venv: $(PEERS_STAMP) ## The venv with Spark Expectations and DQX that the peers benchmark runs in.
