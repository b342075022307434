# tcgen — the two commands of the README, plus a few conveniences.
SHELL := /bin/bash
PY := .venv/bin/python
JOBS ?= auto

.PHONY: setup run test test-slow test-sims formal coverage mutation gen-mutation peers lut-authors lint lint-imports clean

setup:
	@bash scripts/setup.sh

## make run: generate Verilog for every unit, lint it, and measure PPA (build/ppa_summary/;
## REPORTS=1 rewrites the report of record, reports/ppa_summary.*, instead)
run: setup
	$(PY) scripts/main_job.py $(if $(REPORTS),--reports)

## make test: the layer contract (import-linter), then the whole regression (golden models,
## cocotb RTL-vs-model, CLI, packaging, PPA sanity)
## Bytecode goes to build/pycache even where PYTHONDONTWRITEBYTECODE is set: every simulation
## and CLI subprocess imports tcgen (an editable install), and compiling it each time cost
## ~0.1 s per process (~500 of them), plus cocotb's assertion rewriting of tb/.
test: setup
	bash scripts/lint_imports.sh
	env -u PYTHONDONTWRITEBYTECODE PYTHONPYCACHEPREFIX=$(CURDIR)/build/pycache \
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

## make formal: every formal proof (make test's and the slow ones: equivalence, dedup == flat, pipelining, stream protocol)
## -> reports/formal.md (docs/formal.md)
formal: setup
	$(PY) scripts/formal_report.py

## make coverage: the coverage-bearing cocotb tests (make test's), then every run's functional
## coverage merged -> reports/coverage.md (docs/coverage.md); fails listing any unhit bin
coverage: setup
	JOBS=$(JOBS) $(PY) scripts/coverage_report.py --command "make coverage" --run

## make mutation: mutants of every family's RTL (Yosys mutate) judged by the family's tests
## -> reports/mutation.md (docs/mutation.md; ~1 h, MUTATION_JOBS=1 workers, log build/mutation.log)
MUTATION_JOBS ?= 1
mutation: setup
	@mkdir -p build
	set -o pipefail; $(PY) scripts/mutation_report.py -j $(MUTATION_JOBS) 2>&1 | tee build/mutation.log

## make gen-mutation: mutants of the generator's Python source (hw/*.py, units/*/rtl.py; Cosmic
## Ray) in a copy of the checkout (build/gen-mutation/tree, own venv), each judged by its file's
## tests -> reports/gen_mutation.md (docs/mutation.md).  GEN_MUTATION_N mutants per file (the
## sampled run, ~1 h); GEN_MUTATION_N=all: every mutant (days); log build/gen-mutation.log
GEN_MUTATION_N ?= 4
gen-mutation: setup
	@mkdir -p build
	set -o pipefail; $(PY) scripts/gen_mutation.py $(if $(filter all,$(GEN_MUTATION_N)),--all,-n $(GEN_MUTATION_N)) 2>&1 | tee build/gen-mutation.log

## make peers HARDFLOAT=dir CVFPU=dir COMMON_CELLS=dir: tcgen's FP adders and multipliers
## against Berkeley HardFloat and CVFPU/FPnew, equivalence first, then PPA on osu018,
## nangate45, sky130hd -> reports/peers.md (docs/peers.md; the peers' checkouts are yours)
## make peers: the energy columns with noise bands (issue 43): the defaults, the peers and
## the glitch-aware multipliers each under PEERS_NOISE perturbations, PEERS_JOBS at a time
PEERS_NOISE ?= 4
PEERS_JOBS ?= 2
PEERS_BANDED ?= tcgen mult=array tree=tdm,tcgen mult=array tree=tdm rshift=wide,tcgen mult=array tree=tdm gate=subnormal,tcgen tree=tdm gate=subnormal,tcgen tree=tdm rinc=compound cpa=brent_kung
peers: setup
	@test -n "$(HARDFLOAT)" -a -n "$(CVFPU)" -a -n "$(COMMON_CELLS)" || \
	  { echo "make peers: set HARDFLOAT=, CVFPU= and COMMON_CELLS= to the peers' checkouts" >&2; exit 2; }
	$(PY) scripts/peers.py --hardfloat $(HARDFLOAT) --cvfpu $(CVFPU) --common-cells $(COMMON_CELLS) \
	  --noise $(PEERS_NOISE) --noise-variants "$(PEERS_BANDED)" -j $(PEERS_JOBS)

## make lut-authors LUT_TENSOR_CORE=dir: the LUT Tensor Core authors' released array
## (github.com/Hamerlate/lut_tensor_core, sv_lut_array/) against tcgen's lut_array in one flow,
## numerics first -> reports/lut_authors.md (docs/peers.md; the checkout is yours: no licence,
## so none of it is vendored). Flat syntheses of 8-22 min each.
lut-authors: setup
	@test -n "$(LUT_TENSOR_CORE)" || \
	  { echo "make lut-authors: set LUT_TENSOR_CORE= to a checkout of Hamerlate/lut_tensor_core" >&2; exit 2; }
	$(PY) scripts/lut_authors.py --checkout $(LUT_TENSOR_CORE)

lint: setup
	$(PY) scripts/main_job.py --no-ppa

clean:
	rm -rf build
