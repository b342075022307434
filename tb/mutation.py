"""Mutation testing of the RTL: how well do the tests notice a wrong circuit? (docs/mutation.md)

A *mutant* is the generated Verilog of one unit configuration with one small fault put in by
Yosys's ``mutate`` (a bit of a cell's input or output inverted, tied to 0 or 1, or replaced by
a neighbouring bit).  The family's own regression tests -- a chosen subset of its real pytest
tests, the smallest configurations they exercise -- are run on each mutant through the harness
hook (``TCGEN_MUTANT``, tcgen/verify/harness.py): a failing test *kills* the mutant; if every test
passes it *survives*.  A survivor is then given to the formal checks (:func:`_prove`: the mutated
submodule instance alone and within its enclosing ones, the whole netlist with its registers
everted, the whole netlist by k-induction from reset): proved equal, it is an *equivalent
mutant* (no test can kill it; it leaves the denominator); otherwise the counterexample is the
input a new directed test needs::

    from mutation import FAMILIES, run_family
    res = run_family("hw", FAMILIES["hw"], work=Path("build/mutation"), jobs=1)
    res["kill_rate"]            # killed / (generated - equivalent)

Per target (one unit configuration, the tests that use it), in ``work/<family>/<unit>/``:

1. a *recording* run of the tests on the original design (``TCGEN_MUTATION_RECORD``) finds the
   configurations they generate and checks that they pass; the target's configuration is the
   first one of its unit (or the one matching ``Target.params``);
2. Yosys (through :func:`tcgen.synth.tools.run`) reads its Verilog, ``hierarchy; proc;
   flatten; opt_clean`` and lists ``n`` mutations with ``mutate -list n+1 -seed SEED -none``
   (an even sample over the design's cells, wires and bits; deterministic for a given Verilog
   and seed); each mutation's id is ``<unit>-<6 hex digits>`` of a hash of its ``mutate``
   line;
3. per mutation, the same Yosys script plus the ``mutate -mode ...`` line writes the mutant
   (``write_verilog -noattr``) and a sidecar naming its configuration; the ``none`` mutation
   (the flattened original) must pass the tests, or the target is broken;
4. ``pytest -x -q -n 0 <tests>`` runs with ``TCGEN_MUTANT`` set: exit status 0 = survived,
   anything else (a failed test, an error, running past the time limit) = killed.  A mutant the
   tests never simulated (no ``.used`` file) is a tooling error, not a survivor.

Errors: :class:`MutationError` (a target whose tests fail on the original, never generate its
unit, or fail on the unmutated flattened netlist); Yosys failures are
:class:`~tcgen.synth.tools.ToolError`.
"""
from __future__ import annotations

import hashlib
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path

from tcgen.verify.harness import INSTANCE, verilog_modules
from tcgen.synth import tools
from tcgen.synth.formal import Design, prove_from_reset, prove_same_structure

ROOT = Path(__file__).resolve().parent.parent
#: the fixed seed of every ``mutate -list`` (the sample is a function of the Verilog and this)
SEED = 16
#: a mutant's test run may take this many times the original's (at least MIN_TIMEOUT_S) before
#: it counts as killed (a hang the tests would notice as a timeout)
TIMEOUT_FACTOR = 4.0
MIN_TIMEOUT_S = 60.0
#: solver seconds for the equivalence proof of one combinational survivor
PROOF_TIMEOUT_S = 120.0
#: k-induction steps of a clocked survivor's proof from reset (:func:`_prove`, step 4)
RESET_DEPTH = 12

__all__ = ["Target", "Mutant", "FAMILIES", "SEED", "MutationError", "prepare", "mutants",
           "make_mutant", "judge", "run_family", "recheck_family", "mutant_id",
           "verilog_sha256"]


class MutationError(RuntimeError):
    """A target that cannot be judged (its tests fail on the original design, never generate
    its unit, or fail on the flattened unmutated netlist)."""


@dataclass(frozen=True)
class Target:
    """One unit configuration of a family and the real tests that exercise it.

    ``tests``: pytest node ids (run in this order with ``-x``); ``n``: mutations sampled;
    ``params``: a subset of the params naming the configuration among those the tests
    generate (default: the first one of ``unit``); ``prove``: try to prove survivors
    equivalent (False for designs whose proofs run past the time budget: their survivors
    stay *unresolved*)."""
    family: str
    unit: str
    tests: tuple
    n: int
    params: dict = field(default_factory=dict)
    prove: bool = True

    @property
    def key(self) -> str:
        return self.unit + "".join(f"-{k}{v}" for k, v in sorted(self.params.items()))


@dataclass
class Mutant:
    """One mutation of a target: ``line`` is the ``mutate`` command that makes it."""
    id: str
    family: str
    unit: str
    params: dict
    line: str
    src: str                       # the generated Verilog line(s) it changes: "unit.v:210"
    code: str = ""                 # that line's text
    status: str = ""               # killed | survived | equivalent | error
    detail: str = ""               # why: the failing test, the proof, the counterexample
    seconds: float = 0.0
    proof_s: float | None = None

    def to_dict(self) -> dict:
        return dict(self.__dict__)


def _t(family, unit, tests, n, prove=True, **params) -> Target:
    return Target(family, unit, tuple(tests), n, params, prove)


_FP = "tb/test_fp_rtl.py::"
_INT = "tb/test_int_rtl.py::"
_PACQ = "tb/test_pacq_rtl.py::"
_BMMA = "tb/test_bmma_rtl.py::"
_LUT = "tb/test_lut_rtl.py::"
_LUTA = "tb/test_lut_array.py::"
_SP = "tb/test_sparse_rtl.py::"
_WI = "tb/test_winograd_rtl.py::"
_WL = "tb/test_winograd_linebuf.py::"

#: per family: the targets (smallest configurations the family's tests exercise) and the tests
#: run on their mutants.  Directed tests added for survivors are appended to a target's list.
FAMILIES: dict[str, tuple[Target, ...]] = {
    "hw": (
        _t("hw", "fp_add", [_FP + "test_fp8_exhaustive[fp8_e4m3-fp_add-rne]"], 20),
        _t("hw", "fp_mul", [_FP + "test_fp8_exhaustive[fp8_e4m3-fp_mul-rne]"], 20),
        _t("hw", "int_mul", [_INT + "test_int_mul_8x8_exhaustive[True-True]"], 12),
        _t("hw", "popcount", [_INT + "test_popcount_exhaustive[8]"], 8),
        _t("hw", "lzc", [_INT + "test_lzc_16_exhaustive"], 8),
    ),
    "pacq": (
        _t("pacq", "pacq_mul", [_PACQ + "test_pacq_mul_matches_model[default]"], 28),
        _t("pacq", "int_dequant", [_PACQ + "test_int_dequant_every_code[both]"], 10),
        _t("pacq", "dp4_pacq", [_PACQ + "test_dp4_matches_model[dp4_pacq-D=1-mode=exact-"
                                        "acc=fp32-tiles4]",
                                _PACQ + "test_dp4_pacq_fp32_cancellation_and_alignment[D=1-"
                                        "mode=exact-acc=fp32]",
                                _PACQ + "test_dp4_pacq_special_pairs[D=1-mode=exact-acc=fp32]"],
           26),          # whole-unit proofs: 7-10 s each since the miter is hashed
    ),
    "bmma": (
        _t("bmma", "bmma_array", [_BMMA + "test_bmma_array_fold_random_with_stalls[2]",
                                  _BMMA + "test_bmma_array_carries_through_every_accumulator_"
                                          "bit[2]"], 36),     # proofs 10-25 s (hashed)
        _t("bmma", "bnn_epilogue", [_BMMA + "test_bnn_epilogue[5-0-False]",
                                      _BMMA + "test_bnn_epilogue_full_range_ties",
                                      "tb/test_bmma_mutant_kills.py::"
                                      "test_bnn_epilogue_carry_terms_off_ties"], 28),
    ),
    "lut": (
        _t("lut", "lut_dp4", [_LUT + "test_lut_dp4_matches_model[entry=int11-acc=int32-"
                                     "w_bits=3]"], 20),
        _t("lut", "lut_precompute", [_LUT + "test_lut_precompute_matches_model[act=int8-"
                                            "network=gray]"], 16),
        _t("lut", "lut_array", [_LUTA + "test_lut_array_back_to_back_and_stalls[m=2-n=3-"
                                        "entry=int11-acc=int32-w_bits=3]"], 28),
    ),
    "sparse": (
        _t("sparse", "octet_sparse", [_SP + "test_zero_rows_padding_and_offsets",
                                      _SP + "test_fp_specials[octet_sparse]",
                                      _SP + "test_stalls_and_reset[octet_sparse-kw0-"
                                            "backpressure]",
                                      _SP + "test_lane_products_every_length[octet_sparse]",
                                      _SP + "test_tree_cancellation_every_shift[octet_sparse]"],
           32, prove=False),        # whole-unit proofs ~2 min each: steps 1 and 2 only
        _t("sparse", "octet_dense", [_SP + "test_stalls_and_reset[octet_dense-kw2-"
                                           "reset_mid_operation]",
                                     # (test_fp_specials[octet_dense] builds it without
                                     # ping-pong: another configuration, so not listed)
                                     _SP + "test_paper_cycles[dense-True]",
                                     _SP + "test_lane_products_every_length[octet_dense]",
                                     _SP + "test_tree_cancellation_every_shift[octet_dense]"],
           32, prove=False),
    ),
    "winograd": (
        _t("winograd", "wino_itf", [_WI + "test_itf_int_extremes_and_random[2-4]"], 16),
        _t("winograd", "wino_otf", [_WI + "test_otf_int_extremes_and_random[bits0-2]",
                                    _WI + "test_otf_crop_masks[2]"], 16),
        _t("winograd", "wino_linebuf", [_WL + "test_rtl_maps_back_to_back[m2-modeint-"
                                              "data_bits5-H3-W5]",
                                        _WL + "test_rtl_reset_at_band_ends_then_fresh_maps"],
           32),
    ),
}


def verilog_sha256(unit: str, params: dict) -> str:
    """SHA-256 of the Verilog a target's mutants are made from: ``tcgen.generate.verilog`` of
    the unit at ``params``, exactly the text the harness writes (``verilog_file``) and
    :func:`prepare` copies.  Recorded per target in reports/mutation.json; a row whose hash
    differs from today's was measured on Verilog the generator no longer emits (stale)."""
    from tcgen.generate import verilog
    from tcgen.registry import get_unit
    text = verilog(unit, get_unit(unit).params(**params), top=unit)
    return hashlib.sha256(text.encode()).hexdigest()


def mutant_id(unit: str, line: str) -> str:
    """The short stable id of a mutation: the unit and 6 hex digits of its ``mutate`` line."""
    return f"{unit}-{hashlib.sha256(line.encode()).hexdigest()[:6]}"


def _pytest(tests, env_extra: dict, timeout: float, log: Path, *, cwd: Path = ROOT,
            python: str = sys.executable, unset=()) -> tuple[int | None, float]:
    """Run ``pytest -x`` on ``tests``; (exit status or None after ``timeout``, seconds).
    ``cwd``/``python``: another checkout and its interpreter (tb/gen_mutation.py's copy);
    ``unset``: environment variables to drop."""
    # no functional coverage from mutants (tcgen/verify/coverage.py): it would count a wrong
    # circuit's runs, and sampling costs time
    env = {**os.environ, "TCGEN_COVERAGE": "0", **env_extra}
    for k in ("PYTEST_XDIST_WORKER", *unset):
        env.pop(k, None)
    cmd = [python, "-m", "pytest", "-x", "-q", "-n", "0", "-p", "no:cacheprovider", *tests]
    t0 = time.monotonic()
    with open(log, "w") as out:
        proc = subprocess.Popen(cmd, cwd=cwd, env=env, stdout=out, stderr=subprocess.STDOUT,
                                stdin=subprocess.DEVNULL, start_new_session=True)
        try:
            rc = proc.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
            rc = None
        except BaseException:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
            raise
    return rc, time.monotonic() - t0


def _first_failure(log: Path) -> str:
    """The failing test and the first line of its reason, from a pytest log."""
    text = log.read_text(errors="replace") if log.exists() else ""
    for line in text.splitlines():
        if re.match(r"(FAILED|ERROR) tb/", line):
            return line.split(" - SystemEx")[0][:200]
    return "failed (see log)"


def _script(unit: str, extra: list[str], pre=()) -> str:
    """The unit as the mutations see it (``pre``: commands between ``proc`` and ``flatten``,
    e.g. choosing a submodule as the top), then ``extra``."""
    return "\n".join([f"read_verilog {unit}.v", f"hierarchy -check -top {unit}", "proc",
                      *pre, "flatten", "opt_clean", *extra]) + "\n"


def prepare(target: Target, work: Path) -> dict:
    """Step 1: run the target's tests on the original design, recording its configuration;
    copy that configuration's Verilog to ``work/<unit>.v``.  Returns {params, seconds}."""
    work.mkdir(parents=True, exist_ok=True)
    record = work / "record.jsonl"
    record.unlink(missing_ok=True)
    rc, secs = _pytest(target.tests, {"TCGEN_MUTATION_RECORD": str(record)}, 3600,
                       work / "original.log")
    if rc != 0:
        raise MutationError(f"{target.key}: the tests fail on the original design "
                            f"({_first_failure(work / 'original.log')})")
    seen = [json.loads(x) for x in record.read_text().splitlines()] if record.exists() else []
    configs = [c["params"] for c in seen if c["unit"] == target.unit and
               all(c["params"].get(k) == v for k, v in target.params.items())]
    if not configs:
        raise MutationError(f"{target.key}: the tests never generate {target.unit}"
                            + (f" with {target.params}" if target.params else ""))
    params = configs[0]
    from tcgen.verify.harness import verilog_file
    from tcgen.registry import get_unit
    src = verilog_file(target.unit, get_unit(target.unit).params(**params))
    shutil.copyfile(src, work / f"{target.unit}.v")
    return {"params": params, "seconds": round(secs, 2)}


def mutants(target: Target, params: dict, work: Path) -> list[Mutant]:
    """Step 2: the ``none`` mutation and ``target.n`` sampled ones (deterministic)."""
    unit = target.unit
    listing = f"mutate -list {target.n + 1} -seed {SEED} -none -o mutations.ys"
    (work / "list.ys").write_text(_script(unit, [listing]))
    tools.run("yosys", ["-q", "-s", "list.ys"], cwd=work, log=work / "list.log",
              what=f"listing mutations of {unit}")
    lines = [x.strip() for x in (work / "mutations.ys").read_text().splitlines() if x.strip()]
    code = (work / f"{unit}.v").read_text().splitlines()
    out = []
    for line in lines:
        srcs = re.findall(r"-src (\S+)", line)
        # the cell's own location is the last -src; strip column ranges: "unit.v:210"
        src = srcs[-1].split(".", 1)[0] + ".v:" + srcs[-1].rsplit(":", 1)[1].split(".")[0] \
            if srcs else ""
        text = ""
        m = re.match(r".*:(\d+)$", src)
        if m and 0 < int(m.group(1)) <= len(code):
            text = code[int(m.group(1)) - 1].strip()
        out.append(Mutant(mutant_id(unit, line), target.family, unit, params, line, src, text))
    return out


def make_mutant(m: Mutant, work: Path) -> Path:
    """Step 3: write the mutant's Verilog and its sidecar; returns the ``.v`` path."""
    d = work / m.id
    if d.exists():
        shutil.rmtree(d)
    d.mkdir(parents=True)
    shutil.copyfile(work / f"{m.unit}.v", d / f"{m.unit}.v")
    (d / "apply.ys").write_text(_script(m.unit, [m.line, "opt_clean",
                                                 "write_verilog -noattr mutant.v"]))
    tools.run("yosys", ["-q", "-s", "apply.ys"], cwd=d, log=d / "yosys.log",
              what=f"applying mutation {m.id}")
    (d / "mutant.json").write_text(json.dumps({"unit": m.unit, "params": m.params,
                                               "id": m.id, "line": m.line}, indent=1))
    return d / "mutant.v"


def _relative(text: str) -> str:
    """A tool's message with the repository's path made relative (reports hold no machine
    paths)."""
    return text.replace(f"{ROOT}/", "")


def judge(m: Mutant, target: Target, work: Path, timeout: float, prove: bool = True,
          keep: bool = False) -> Mutant:
    """Step 4: run the tests on the mutant; prove a combinational survivor equivalent."""
    t0 = time.monotonic()
    try:
        path = make_mutant(m, work)
    except tools.ToolError as e:
        m.status, m.detail = "error", _relative(str(e))
        return m
    rc, _ = _pytest(target.tests, {"TCGEN_MUTANT": str(path)}, timeout,
                    path.parent / "pytest.log")
    used = path.with_suffix(".used").exists()
    if rc is None:
        m.status, m.detail = "killed", f"the tests ran past {timeout:.0f} s (a hang)"
    elif not used:
        m.status, m.detail = "error", "the tests never simulated the mutant"
    elif not any((path.parent / "mutant-sim").glob("*/.built")):
        m.status, m.detail = "error", "the mutant did not compile (see pytest.log)"
    elif rc != 0:
        m.status, m.detail = "killed", _first_failure(path.parent / "pytest.log")
    else:
        m.status, m.detail = "survived", "every test passed"
        if prove and m.line != "mutate -mode none":
            _prove(m, path, work, whole=target.prove)
    m.seconds = round(time.monotonic() - t0, 2)
    if not keep and m.status == "killed":
        shutil.rmtree(path.parent, ignore_errors=True)
    else:
        shutil.rmtree(path.parent / "mutant-sim", ignore_errors=True)
    return m


def _flat(work: Path, unit: str) -> Path:
    """The unmutated netlist through the same Yosys script (the proof's reference)."""
    out = work / "original_flat.v"
    if not out.exists():
        (work / "flat.ys").write_text(_script(unit, ["write_verilog -noattr original_flat.v"]))
        tools.run("yosys", ["-q", "-s", "flat.ys"], cwd=work, log=work / "flat.log",
                  what=f"flattening {unit}")
    return out


#: a cell of a flattened submodule: ``-cell $flatten\dp3.\mul3.<its name in the submodule>``
_FLAT_CELL = re.compile(r"-cell \$flatten((?:\\[^\s.\\]+\.)+)(\S+)")


def _submodule(text: str, top: str, path: list[str]) -> str | None:
    """The module reached from ``top`` through the instance names ``path`` (an instance is a
    ``<module> <instance> (`` at the start of a line, as Amaranth writes them), or None."""
    bodies = verilog_modules(text)
    mod = top
    for inst in path:
        found = [t for t, i in INSTANCE.findall(bodies.get(mod, "")) if i == inst
                 and t in bodies]
        if len(found) != 1:
            return None
        mod = found[0]
    return mod


def _levels(m: Mutant, work: Path) -> list[tuple[str, str, str, str]]:
    """For a mutation of a cell inside flattened submodule instances: from the innermost
    instance outwards (below the top), (module, instance path, the cell's name in that module
    once its own submodules are flattened, the ``mutate`` line on that module alone)."""
    hit = _FLAT_CELL.search(m.line)
    if not hit:
        return []
    path = [p.lstrip("\\") for p in hit.group(1).split(".") if p]
    text = (work / f"{m.unit}.v").read_text()
    base = re.sub(r" -(wire|wirebit|src) \S+", "", m.line)
    out = []
    for depth in range(len(path), 0, -1):
        sub = _submodule(text, m.unit, path[:depth])
        if sub is None:
            break
        rest = path[depth:]
        cell = ("$flatten" + "".join(f"\\{x}." for x in rest) if rest else "") + hit.group(2)
        line = base.replace(f"-module {m.unit} ", f"-module {sub} ", 1).replace(
            hit.group(0), f"-cell {cell}", 1)
        out.append((sub, ".".join(path[:depth]), cell, line))
    return out


def _netlist(work: Path, unit: str, name: str, what: str, *, pre=(), top: str | None = None,
             cell: str | None = None, line: str | None = None) -> Path:
    """``work/<name>.v``: :func:`_script` with ``pre``, and mutation ``line`` applied to
    ``cell`` of module ``top`` (which must exist: an unapplied mutation would prove
    nothing)."""
    extra = [f"select -assert-count 1 {top}/{cell}", line] if line else []
    (work / f"{name}.ys").write_text(_script(unit, extra + [
        "opt_clean", f"write_verilog -noattr {name}.v"], pre=pre))
    tools.run("yosys", ["-q", "-s", f"{name}.ys"], cwd=work, log=work / f"{name}.log",
              what=what)
    return work / f"{name}.v"


def _local_netlist(work: Path, unit: str, sub: str, cell: str | None, line: str | None,
                   name: str) -> Path:
    """``sub`` as the whole design elaborates it (``proc`` on the unit, so cell names agree
    with the flattened unit's), alone, its own submodules flattened, with mutation ``line``."""
    return _netlist(work, unit, name, f"extracting {sub} from {unit}",
                    pre=[f"hierarchy -top {sub}"], top=sub, cell=cell, line=line)


SAME_METHOD = ("miter of the outputs and next states, structurally hashed (opt_merge "
               "-share_all), sat -prove-asserts")


def _same(gold: Design, gate: Design):
    """Mutant vs original: :func:`~tcgen.synth.formal.prove_same_structure` without its
    induction fallback -- a combinational miter of the outputs and (registers everted) the
    next states, structurally hashed first, so the logic the two share merges and only the
    mutated cone is left to the solver; for clocked designs sufficient (equal next states for
    *every* register value), not necessary."""
    return prove_same_structure(gold, gate, depth=None, timeout=PROOF_TIMEOUT_S)


def _prove_local(m: Mutant, path: Path, work: Path) -> bool:
    """Step 1 of :func:`_prove`: a mutation inside a submodule instance, proved on that
    submodule alone (mutated vs not), then on each enclosing instance in turn while the
    proof finds a difference (more context: inputs the submodule never gets there).  Sound
    for the whole design, which uses the instance and is otherwise unchanged.  True if
    settled (equivalent); else ``m.detail`` says what the outermost proof found."""
    levels = _levels(m, work)
    if not levels:
        return False
    d = path.parent
    shutil.copyfile(work / f"{m.unit}.v", d / f"{m.unit}.v")
    spent = 0.0
    for i, (sub, inst, cell, line) in enumerate(levels):
        try:
            gold = _local_netlist(d, m.unit, sub, None, None, f"local{i}_original")
            gate = _local_netlist(d, m.unit, sub, cell, line, f"local{i}_mutant")
            r = _same(Design(gold, top=sub), Design(gate, top=sub))
        except (tools.FlowInputError, tools.ToolError) as e:
            m.detail = f"no proof on instance {inst} ({sub}): {_relative(str(e))[:160]}"
            return False
        spent += r.seconds
        m.proof_s = round(spent, 3)
        if r.proved:
            m.status = "equivalent"
            m.detail = (f"proved equivalent on instance {inst} ({sub}) alone, mutated vs "
                        f"original ({SAME_METHOD}; {r.seconds:.1f} s)")
            return True
        if r.status != "counterexample":
            m.detail = f"instance {inst} ({sub}): proof {r.status} after {r.seconds:.0f} s"
            return False
        m.detail = (f"instance {inst} ({sub}) alone differs (the tests never drive it so): "
                    + r.describe().split(": ", 2)[-1][:240])
    return False


def _prove_top(m: Mutant, path: Path, work: Path) -> bool:
    """Step 2 of :func:`_prove`: a mutation of the top module's own logic, proved on the top
    module with its submodule instances cut out (``expose -evert``: an instance's outputs
    become inputs, free and shared by the two sides; its inputs become outputs, compared).
    Sound: whatever the instances compute, the two sides agree.  True if settled."""
    if _FLAT_CELL.search(m.line):
        return False
    bodies = verilog_modules((work / f"{m.unit}.v").read_text())
    subs = sorted({t for t, _ in INSTANCE.findall(bodies.get(m.unit, "")) if t in bodies})
    cell = re.search(r"-cell (\S+)", m.line)
    if not subs or not cell:
        return False
    d = path.parent
    shutil.copyfile(work / f"{m.unit}.v", d / f"{m.unit}.v")
    evert = "expose -evert -sep : " + " ".join(f"{m.unit}/t:{t}" for t in subs)
    sides = []
    for name, line in (("top_original", None), ("top_mutant", m.line)):
        try:
            v = _netlist(d, m.unit, name, f"cutting the instances out of {m.unit}",
                         pre=[evert, f"hierarchy -top {m.unit}"], top=m.unit,
                         cell=cell.group(1), line=line)
        except tools.ToolError:
            return False                    # e.g. a cell proc names differently: step 3
        sides.append(Design(v, top=m.unit))
    try:
        r = _same(*sides)
    except (tools.FlowInputError, tools.ToolError):
        return False
    m.proof_s = round((m.proof_s or 0) + r.seconds, 3)
    if r.proved:
        m.status = "equivalent"
        m.detail = (f"proved equivalent on the top module with its instances of "
                    f"{', '.join(subs)} cut out ({SAME_METHOD}; {r.seconds:.1f} s)")
        return True
    return False


def _prove(m: Mutant, path: Path, work: Path, whole: bool = True):
    """A survivor: equivalent if proved equal to the original; else what the proofs found.

    1. A mutation inside a submodule instance: that submodule alone, then its enclosing
       instances (:func:`_prove_local`).
    2. A mutation of the top module's own logic: the top with its instances cut out
       (:func:`_prove_top`).
    3. ``whole``: the whole unit's flat netlists (:func:`_same`: combinational units for
       every input; clocked ones for every register value).
    4. A clocked unit whose netlists differ for some register values (perhaps unreachable
       ones): :func:`~tcgen.synth.formal.prove_from_reset` (k-induction from the initial
       state, :data:`RESET_DEPTH` steps).
    ``whole=False`` (designs too large for 3 and 4): a survivor that steps 1 and 2 do not
    settle stays unresolved."""
    if _prove_local(m, path, work) or _prove_top(m, path, work):
        return
    local = m.detail if m.detail != "every test passed" else ""
    if not whole:
        m.detail = "unresolved: every test passed; " + (
            local or "no proof tried (design too large)")
        return
    sequential = "posedge" in path.read_text()
    try:
        r = _same(Design(_flat(work, m.unit), top=m.unit), Design(path, top=m.unit))
    except (tools.FlowInputError, tools.ToolError) as e:
        if sequential and isinstance(e, tools.FlowInputError):   # e.g. a register gone
            _prove_reset(m, path, work, _relative(str(e))[:160])
        else:
            m.detail = f"no proof: {_relative(str(e))[:200]}"
        return
    m.proof_s = round((m.proof_s or 0) + r.seconds, 3)
    if r.proved:
        m.status = "equivalent"
        m.detail = f"proved equivalent to the original ({SAME_METHOD}; {r.seconds:.1f} s)"
    elif r.status == "counterexample" and sequential:
        _prove_reset(m, path, work, r.describe().split(": ", 2)[-1][:160])
    elif r.status == "counterexample":
        m.detail = "not equivalent; the tests miss " + r.describe().split(": ", 1)[-1][:300]
    else:
        m.detail = (f"proof {r.status} after {r.seconds:.0f} s"
                    + (" (unresolved, sequential)" if sequential else ""))


def _prove_reset(m: Mutant, path: Path, work: Path, cut: str):
    """Step 4 of :func:`_prove`: the flat netlists from their initial state."""
    try:
        r = prove_from_reset(Design(_flat(work, m.unit), top=m.unit), Design(path, top=m.unit),
                             depth=RESET_DEPTH, timeout=PROOF_TIMEOUT_S)
    except (tools.FlowInputError, tools.ToolError) as e:
        m.detail = (f"unresolved, sequential: the cut netlists differ ({cut[:100]}); no proof "
                    f"from reset: {_relative(str(e))[:120]}")
        return
    m.proof_s = round((m.proof_s or 0) + r.seconds, 3)
    if r.proved:
        m.status = "equivalent"
        m.detail = (f"proved equivalent from reset (k-induction, length {r.depth}; the cut "
                    f"netlists differ only in unreachable states; {r.seconds:.1f} s)")
    elif r.status == "counterexample":
        m.detail = (f"not equivalent: outputs differ within {RESET_DEPTH} cycles of reset "
                    f"(sat -tempinduct base case); the tests miss that input sequence")
    elif r.status == "unproven":
        m.detail = (f"unresolved, sequential: no difference within {RESET_DEPTH} cycles of "
                    f"reset, induction not closed; the cut netlists differ for "
                    f"{cut[:120]}")
    else:
        m.detail = f"unresolved, sequential: proof from reset {r.status} after {r.seconds:.0f} s"


def run_target(target: Target, work: Path, jobs: int = 1, prove: bool = True,
               log=print) -> dict:
    """Prepare, list and judge every mutation of one target; returns its results."""
    t0 = time.monotonic()
    work = work / target.family / target.key
    prep = prepare(target, work)
    ms = mutants(target, prep["params"], work)
    timeout = max(MIN_TIMEOUT_S, TIMEOUT_FACTOR * prep["seconds"])
    none, rest = ms[0], ms[1:]
    judge(none, target, work, timeout, prove=False, keep=True)
    if none.status != "survived":
        raise MutationError(f"{target.key}: the tests fail on the unmutated flattened netlist "
                            f"({none.status}: {none.detail})")
    log(f"[mutation] {target.family}/{target.key}: {len(rest)} mutants, original "
        f"{prep['seconds']:.1f} s, timeout {timeout:.0f} s")

    def one(m):
        judge(m, target, work, timeout, prove=prove)
        log(f"[mutation]   {m.id}: {m.status} ({m.seconds:.1f} s) {m.detail[:120]}")
        return m
    with ThreadPoolExecutor(max_workers=max(1, jobs)) as ex:
        done = list(ex.map(one, rest))
    return {"unit": target.unit, "params": prep["params"], "tests": list(target.tests),
            "verilog_sha256": hashlib.sha256((work / f"{target.unit}.v").read_bytes())
            .hexdigest(),
            "date": time.strftime("%Y-%m-%d"),
            "n_requested": target.n, "original_s": prep["seconds"],
            "wall_s": round(time.monotonic() - t0, 1), "mutants": [m.to_dict() for m in done]}


def run_family(family: str, targets, work: Path, jobs: int = 1, prove: bool = True,
               log=print, only=None, previous: dict | None = None) -> dict:
    """Every target of a family; per-family counts and kill rate (equivalent mutants are left
    out of the denominator; tooling errors are counted apart).  ``only``: the units to run
    (e.g. those whose Verilog changed); every other target keeps its result from
    ``previous`` (the family's earlier result, required then)."""
    t0 = time.monotonic()
    if only is None:
        results = [run_target(t, work, jobs, prove, log) for t in targets]
        return _count(family, results, time.monotonic() - t0)
    if previous is None:
        raise MutationError(f"{family}: no earlier result to keep the other targets from")
    kept = {r["unit"]: r for r in previous["targets"]}
    results = []
    for t in targets:
        if t.unit in only:
            results.append(run_target(t, work, jobs, prove, log))
        elif t.unit in kept:
            results.append(kept[t.unit])
        else:
            raise MutationError(f"{t.key}: not in the earlier result; rerun the family")
    return _count(family, results, sum(r["wall_s"] for r in results))


def _count(family: str, results: list, wall_s: float) -> dict:
    ms = [m for r in results for m in r["mutants"]]
    count = {s: sum(m["status"] == s for m in ms) for s in
             ("killed", "survived", "equivalent", "error")}
    denom = len(ms) - count["equivalent"] - count["error"]
    return {"family": family, "generated": len(ms), **count,
            "kill_rate": round(count["killed"] / denom, 4) if denom else None,
            "wall_s": round(wall_s, 1), "targets": results}


def recheck_family(previous: dict, targets, work: Path, jobs: int = 1, prove: bool = True,
                   log=print, budget_s: float | None = None) -> dict:
    """Judge again only the survivors (and errors) of an earlier run of a family, with the
    targets' current tests (e.g. a directed test added to kill them) and proofs; the killed and
    equivalent mutants keep their verdicts.  The mutants are rebuilt from their ``mutate``
    lines on the Verilog copied by the earlier run (``work/<family>/<unit>/<unit>.v``).
    ``budget_s``: no proof is started after that many seconds (the survivor stays unproved)."""
    t0 = time.monotonic()
    jobs_ = []                                   # (Verilog size, index, target, dir, timeout)
    for i, r in enumerate(previous["targets"]):
        target = next((t for t in targets if t.unit == r["unit"]), None)
        if target is None:
            raise MutationError(f"{previous['family']}: no target for {r['unit']} any more")
        tw = work / target.family / target.key
        if not (tw / f"{target.unit}.v").exists():
            raise MutationError(f"{target.key}: {tw / (target.unit + '.v')} is gone; rerun "
                                f"the family")
        timeout = max(MIN_TIMEOUT_S, TIMEOUT_FACTOR * r["original_s"])
        jobs_.append(((tw / f"{target.unit}.v").stat().st_size, i, target, tw, timeout))
    redone: dict = {}
    for _, i, target, tw, timeout in sorted(jobs_, key=lambda j: j[:2]):   # small designs
        r = previous["targets"][i]                                           # (cheap proofs)
        todo = [Mutant(**m) for m in r["mutants"] if m["status"] in ("survived", "error")]

        def one(m, target=target, tw=tw, timeout=timeout):
            m.status, m.detail, m.proof_s = "", "", None
            late = budget_s is not None and time.monotonic() - t0 > budget_s
            judge(m, target, tw, timeout, prove=prove and not late)
            if late and m.status == "survived":
                m.detail = "every test passed; not proved (the run's time budget was spent)"
            log(f"[mutation]   {m.id}: {m.status} ({m.seconds:.1f} s) {m.detail[:120]}")
            return m
        with ThreadPoolExecutor(max_workers=max(1, jobs)) as ex:
            redone.update({m.id: m.to_dict() for m in ex.map(one, todo)})
    results = [{**r, "tests": list(next(t for t in targets if t.unit == r["unit"]).tests),
                "mutants": [redone.get(m["id"], m) for m in r["mutants"]]}
               for r in previous["targets"]]
    return _count(previous["family"], results,
                  previous["wall_s"] + time.monotonic() - t0)
