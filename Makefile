# tcgen — the two commands of the README, plus a few conveniences.
SHELL := /bin/bash
PY := .venv/bin/python
JOBS ?= auto

.PHONY: setup run test test-slow lint clean

setup:
	@bash scripts/setup.sh

## make run: generate Verilog for every unit, lint it, and measure PPA (reports/ppa_summary.md)
run: setup
	$(PY) scripts/main_job.py

## make test: the whole regression (golden models, cocotb RTL-vs-model, CLI, PPA sanity)
test: setup
	$(PY) -m pytest -n $(JOBS) -q tb

## make test-slow: the long sweeps marked `slow` (results go to reports/)
test-slow: setup
	$(PY) -m pytest -n $(JOBS) -q -m slow tb

lint: setup
	$(PY) scripts/main_job.py --no-ppa

clean:
	rm -rf build
