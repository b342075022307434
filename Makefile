# tcgen — the two commands of the README, plus a few conveniences.
SHELL := /bin/bash
PY := .venv/bin/python
JOBS ?= auto

.PHONY: setup run test test-slow test-sims formal lint lint-imports clean

setup:
	@bash scripts/setup.sh

## make run: generate Verilog for every unit, lint it, and measure PPA (reports/ppa_summary.md)
run: setup
	$(PY) scripts/main_job.py

## make test: the layer contract (import-linter), then the whole regression (golden models,
## cocotb RTL-vs-model, CLI, packaging, PPA sanity)
test: setup
	bash scripts/lint_imports.sh
	$(PY) -m pytest -n $(JOBS) --dist worksteal -q --durations=15 tb

## make lint-imports: only the layer contract of docs/architecture.md (.importlinter)
lint-imports: setup
	bash scripts/lint_imports.sh

## make test-slow: the long sweeps marked `slow` (results go to reports/)
test-slow: setup
	$(PY) -m pytest -n $(JOBS) --dist worksteal -q -m slow tb

## make test-sims: the whole regression once per simulator (SIM=icarus, SIM=verilator)
## -> reports/sim_regression.md
test-sims: setup
	$(PY) scripts/sim_regression.py

## make formal: every combinational equivalence proof (make test's and the slow ones)
## -> reports/formal.md (docs/formal.md)
formal: setup
	$(PY) scripts/formal_report.py

lint: setup
	$(PY) scripts/main_job.py --no-ppa

clean:
	rm -rf build
