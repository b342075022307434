"""Mutation testing of the RTL: how well do the tests notice a wrong circuit? (docs/mutation.md)

A *mutant* is the generated Verilog of one unit configuration with one small fault put in by
Yosys's ``mutate`` (a bit of a cell's input or output inverted, tied to 0 or 1, or replaced by
a neighbouring bit).  The family's own regression tests -- a chosen subset of its real pytest
tests, the smallest configurations they exercise -- are run on each mutant through the harness
hook (``TCGEN_MUTANT``, tb/harness.py): a failing test *kills* the mutant; if every test passes
it *survives*.  A survivor is then given to :func:`tcgen.synth.formal.prove_equivalent`
against the unmutated netlist (a clocked unit's with its registers cut into inputs and outputs,
:data:`_CUT`): proved equal, it is an *equivalent mutant* (no test can kill it; it leaves the
denominator); otherwise the counterexample is the input a new directed test needs::

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

from tcgen.synth import tools
from tcgen.synth.formal import Design, prove_equivalent

ROOT = Path(__file__).resolve().parent.parent
#: the fixed seed of every ``mutate -list`` (the sample is a function of the Verilog and this)
SEED = 16
#: a mutant's test run may take this many times the original's (at least MIN_TIMEOUT_S) before
#: it counts as killed (a hang the tests would notice as a timeout)
TIMEOUT_FACTOR = 4.0
MIN_TIMEOUT_S = 60.0
#: solver seconds for the equivalence proof of one combinational survivor
PROOF_TIMEOUT_S = 120.0

__all__ = ["Target", "Mutant", "FAMILIES", "SEED", "MutationError", "prepare", "mutants",
           "make_mutant", "judge", "run_family", "recheck_family", "mutant_id"]


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
                                        "acc=fp32-tiles4]"], 26,
           prove=False),                        # the cut proof of one mutant: > 5 min
    ),
    "bmma": (
        _t("bmma", "bmma_array", [_BMMA + "test_bmma_array_fold_random_with_stalls[2]"], 36,
           prove=False),                        # a cut proof ran out its 420 s
        _t("bmma", "bnn_epilogue", [_BMMA + "test_bnn_epilogue[5-0-False]",
                                      _BMMA + "test_bnn_epilogue_full_range_ties"], 28),
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
                                            "backpressure]"], 32,
           prove=False),
        _t("sparse", "octet_dense", [_SP + "test_stalls_and_reset[octet_dense-kw2-"
                                           "reset_mid_operation]",
                                     _SP + "test_fp_specials[octet_dense]",
                                     _SP + "test_paper_cycles[dense-True]"], 32,
           prove=False),
    ),
    "winograd": (
        _t("winograd", "wino_itf", [_WI + "test_itf_int_extremes_and_random[2-4]"], 16),
        _t("winograd", "wino_otf", [_WI + "test_otf_int_extremes_and_random[bits0-2]",
                                    _WI + "test_otf_crop_masks[2]"], 16),
        _t("winograd", "wino_linebuf", [_WL + "test_rtl_maps_back_to_back[m2-modeint-"
                                              "data_bits5-H3-W5]"], 32),
    ),
}


def mutant_id(unit: str, line: str) -> str:
    """The short stable id of a mutation: the unit and 6 hex digits of its ``mutate`` line."""
    return f"{unit}-{hashlib.sha256(line.encode()).hexdigest()[:6]}"


def _pytest(tests, env_extra: dict, timeout: float, log: Path) -> tuple[int | None, float]:
    """Run ``pytest -x`` on ``tests``; (exit status or None after ``timeout``, seconds)."""
    # no functional coverage from mutants (tb/coverage.py): it would count a wrong circuit's
    # runs, and sampling costs time
    env = {**os.environ, "TCGEN_COVERAGE": "0", **env_extra}
    env.pop("PYTEST_XDIST_WORKER", None)
    cmd = [sys.executable, "-m", "pytest", "-x", "-q", "-n", "0", "-p", "no:cacheprovider",
           *tests]
    t0 = time.monotonic()
    with open(log, "w") as out:
        proc = subprocess.Popen(cmd, cwd=ROOT, env=env, stdout=out, stderr=subprocess.STDOUT,
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


def _script(unit: str, extra: list[str]) -> str:
    return "\n".join([f"read_verilog {unit}.v", f"hierarchy -check -top {unit}", "proc",
                      "flatten", "opt_clean", *extra]) + "\n"


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
    from harness import verilog_file
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
        if prove and target.prove and m.line != "mutate -mode none":
            _prove(m, path, work)
        elif prove and m.line != "mutate -mode none":
            m.detail = "unresolved: every test passed; no proof tried (design too large)"
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


#: a clocked unit's registers cut into inputs (their outputs) and outputs (their next state):
#: equal cut netlists have equal next-state and output functions for every register value, so
#: the designs are sequentially equivalent from any common state (sufficient, not necessary)
_CUT = ["memory", "async2sync", "dffunmap", "expose -evert-dff t:$*dff*", "autoname",
        "opt_clean"]
CUT_METHOD = ("registers cut into inputs and outputs (Yosys expose -evert-dff), then miter "
              "-equiv, sat -prove-asserts: equal next-state and output functions")


def _cut(work: Path, unit: str, line: str | None, name: str) -> Path:
    """The unit (with mutation ``line``) with its registers cut, as ``work/<name>.v``."""
    out = work / f"{name}.v"
    if not out.exists():
        (work / f"{name}.ys").write_text(_script(unit, ([line] if line else []) + _CUT +
                                                 [f"write_verilog -noattr {name}.v"]))
        tools.run("yosys", ["-q", "-s", f"{name}.ys"], cwd=work, log=work / f"{name}.log",
                  what=f"cutting the registers of {unit}")
    return out


def _prove(m: Mutant, path: Path, work: Path):
    """A survivor: equivalent if proved equal to the original; else the counterexample.
    Combinational units: :func:`~tcgen.synth.formal.prove_equivalent` on the two netlists
    (every input); clocked ones: the same on both with their registers cut (:data:`_CUT`)."""
    sequential = "posedge" in path.read_text()
    try:
        if sequential:
            gold = Design(_cut(work, m.unit, None, "original_cut"), top=m.unit)
            shutil.copyfile(work / f"{m.unit}.v", path.parent / f"{m.unit}.v")
            gate = Design(_cut(path.parent, m.unit, m.line, "mutant_cut"), top=m.unit)
        else:
            gold, gate = Design(_flat(work, m.unit), top=m.unit), Design(path, top=m.unit)
        r = prove_equivalent(gold, gate, timeout=PROOF_TIMEOUT_S)
    except (tools.FlowInputError, tools.ToolError) as e:
        m.detail = f"no proof: {_relative(str(e))[:200]}"
        return
    m.proof_s = r.seconds
    how = CUT_METHOD if sequential else r.method
    if r.proved:
        m.status = "equivalent"
        m.detail = f"proved equivalent to the original ({how}; {r.seconds:.1f} s)"
    elif r.status == "counterexample" and sequential:
        m.detail = ("unresolved, sequential: the cut netlists differ for some register values "
                    "(perhaps unreachable ones): " + r.describe().split(": ", 2)[-1][:200])
    elif r.status == "counterexample":
        m.detail = "not equivalent; the tests miss " + r.describe().split(": ", 1)[-1][:300]
    else:
        m.detail = (f"proof {r.status} after {r.seconds:.0f} s"
                    + (" (unresolved, sequential)" if sequential else ""))


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
            "n_requested": target.n, "original_s": prep["seconds"],
            "wall_s": round(time.monotonic() - t0, 1), "mutants": [m.to_dict() for m in done]}


def run_family(family: str, targets, work: Path, jobs: int = 1, prove: bool = True,
               log=print) -> dict:
    """Every target of a family; per-family counts and kill rate (equivalent mutants are left
    out of the denominator; tooling errors are counted apart)."""
    t0 = time.monotonic()
    results = [run_target(t, work, jobs, prove, log) for t in targets]
    return _count(family, results, time.monotonic() - t0)


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
