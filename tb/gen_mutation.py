"""Generator-level mutation testing: does a bug in the *Python generator* get noticed?
(docs/mutation.md, "Generator mutation"; ``make gen-mutation``, scripts/gen_mutation.py)

The netlist mutation of tb/mutation.py changes one configuration's Verilog, so it cannot see a
generator bug that shows only at other parameter values.  Here the mutants are of the generator
source itself -- ``hw/*.py`` and ``units/*/rtl.py`` -- made by Cosmic Ray's operators (an
arithmetic, comparison, boolean or unary operator replaced, a number changed, a ``True`` made
``False``, a loop run zero times, a ``break`` made ``continue``, ...), and each is judged by
the family's tests: a declared selection per file (:data:`GEN_TARGETS`: model tests and
RTL-against-model tests at several parameter values), run with ``pytest -x`` and a time limit.

Never in the checkout: the tests of the checkout may be running while a file is mutated, so
:func:`make_copy` exports a commit (``git archive``) into ``<work>/tree`` with its own virtual
environment -- the checkout's ``.venv`` site-packages for the third-party packages (a ``.pth``
line, which does not run that environment's editable finder), the copy installed editable on
top -- and checks that ``tcgen``, ``tcgen.hw``, ``tcgen.units`` and ``tcgen.synth`` import from
the copy.  The harness's build cache is keyed by the imported sources' hash, so a mutant's
Verilog is generated and compiled afresh (in the copy's build/sim, removed after each mutant).

Per target file: :func:`mutations` lists every (operator, occurrence) Cosmic Ray can apply;
:func:`sample` draws ``n`` of them with :data:`SEED` (deterministic for a given source);
:func:`judge` applies one on disk in the copy (``cosmic_ray.mutating.use_mutation``, which
restores the file), runs the tests: exit 0 = *survived*, a failure or running past the limit =
*killed*; a mutation that cannot be applied is an *error*.  A survivor is then triaged by hand
(:data:`TRIAGE`): *equivalent* (no test can tell; with the reason; it leaves the denominator)
or killed by a directed test added for it (listed in the target's ``tests``).
"""
from __future__ import annotations

import hashlib
import os
import random
import shutil
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

from mutation import _first_failure, _pytest

ROOT = Path(__file__).resolve().parent.parent
#: the seed of every sample (with the file's path: one stream per file)
SEED = 41
#: a mutant's tests may take this many times the original's (at least MIN_TIMEOUT_S): past
#: that it counts as killed (a hang), as in tb/mutation.py
TIMEOUT_FACTOR = 4.0
MIN_TIMEOUT_S = 60.0
#: Cosmic Ray operators not used: they need arguments (variable replacer/inserter)
SKIP_OPERATORS = ("core/VariableReplacer", "core/VariableInserter")
#: environment variables the copy's runs drop (bytecode goes to its own build/pycache; builds to
#: its own build/)
UNSET = ("PYTHONDONTWRITEBYTECODE", "TCGEN_BUILD_DIR")
#: the packages whose imports must resolve into the copy
PACKAGES = ("tcgen", "tcgen.hw", "tcgen.units", "tcgen.synth")

__all__ = ["GenTarget", "GenMutant", "GEN_TARGETS", "TRIAGE", "SEED", "make_copy",
           "mutations", "sample", "judge", "run_target", "GenMutationError"]


class GenMutationError(RuntimeError):
    """The copy cannot be made, imports from the wrong place, or a target's tests fail on
    the unmutated copy."""


@dataclass(frozen=True)
class GenTarget:
    """One source file and the tests that judge its mutants.

    ``path``: relative to the repository; ``role``: ``generator`` (builds RTL) or ``golden``
    (a reference model the RTL is checked against); ``tests``: pytest arguments (node ids or
    node-id prefixes), run in this order with ``-x``; ``n``: mutants sampled per run."""
    path: str
    role: str
    tests: tuple
    n: int = 4


@dataclass
class GenMutant:
    """One mutation: Cosmic Ray's ``operator`` at its ``occurrence`` in ``path``."""
    id: str
    path: str
    operator: str
    occurrence: int
    line: int                     # 1-based line of the mutated node
    diff: str = ""                # unified diff of the mutation
    status: str = ""              # killed | survived | equivalent | error
    detail: str = ""
    seconds: float = 0.0
    was: str = ""                 # a recheck's earlier verdict ("survived": killed later)

    def to_dict(self) -> dict:
        return dict(self.__dict__)


_FP = "tb/test_fp_rtl.py::"
_INT = "tb/test_int_rtl.py::"

#: the files mutated and the tests judging each (fast: a model check plus RTL-vs-model runs at
#: several parameter values; ~10-60 s on the unmutated copy).  Tests added to kill a survivor
#: are appended (tb/test_gen_mutation_kills.py).
_KILL = "tb/test_gen_mutation_kills.py::"

GEN_TARGETS: tuple[GenTarget, ...] = (
    GenTarget("hw/fparith.py", "generator", (
        _FP + "test_fp8_exhaustive", _FP + "test_ftz", _FP + "test_fp16_specials_and_directed",
        _FP + "test_convert_to_fp32_exhaustive", _KILL + "test_fp_mul_auto_multiplier")),
    GenTarget("hw/intarith.py", "generator", (
        _INT + "test_popcount_exhaustive", _INT + "test_lzc_16_exhaustive",
        _INT + "test_int_mul_8x8_exhaustive", _INT + "test_barrel_shift",
        _INT + "test_csa_tree_random", _INT + "test_int_mul_odd_shapes",
        _KILL + "test_prefix_add_every_topology_and_width",
        _INT + "test_int_mul_gkl_exhaustive")),
    GenTarget("hw/dot.py", "generator", (
        _FP + "test_dp4", _FP + "test_dp4_split",
        _KILL + "test_dp4_rounded_product_needs_an_exact_widening_for_parsed_values")),
    GenTarget("hw/fused.py", "generator", (
        "tb/test_fused.py::test_rtl_configs", "tb/test_fused.py::test_rtl_defaults",
        "tb/test_silicon.py::test_rtl_matches_silicon",
        _KILL + "test_fused_product_dedup_key_names_its_formats")),
    GenTarget("hw/mma.py", "generator", (
        "tb/test_silicon.py::test_mma_unit_model_matches_silicon",
        "tb/test_silicon.py::test_mma_unit_rtl_on_silicon_tiles")),
    GenTarget("hw/layout.py", "generator", (
        "tb/test_layout.py", "tb/test_silicon.py::test_mma_unit_model_matches_silicon",
        _KILL + "test_layout_zero_width_fields_and_scalar_array_values")),
    GenTarget("hw/pipeline.py", "generator", (
        _FP + "test_pipelined_back_to_back", _FP + "test_convert_pipelined",
        "tb/test_pipelining.py::test_register_depths_of_a_small_pipeline",
        _KILL + "test_cut_points_of_a_unit_without_a_pipeline_field")),
    GenTarget("hw/dedup.py", "generator", (
        "tb/test_dedup.py::test_one_module_definition_per_distinct_module",
        "tb/test_dedup.py::test_shared_emits_one_module_and_flat_mode_none",
        "tb/test_dedup.py::test_content_key_is_canonical_and_checked",
        "tb/test_dedup.py::test_connect_checks_port_and_width",
        "tb/test_dedup.py::test_dedup_verilog_is_byte_identical_across_runs",
        "tb/test_dedup.py::test_dedup_equals_flat")),
    GenTarget("hw/generate.py", "generator", (
        _INT + "test_popcount_exhaustive", _FP + "test_fp8_exhaustive",
        "tb/test_dedup.py::test_dedup_verilog_is_byte_identical_across_runs",
        "tb/test_dedup.py::test_block_verilog_is_lint_clean",
        _KILL + "test_variable_bit_select_is_emitted_widened_and_lint_clean")),
    GenTarget("hw/library.py", "generator", (
        _INT + "test_popcount_model", _INT + "test_int_mul_model_matches_python",
        _INT + "test_popcount_exhaustive", _INT + "test_lzc_16_exhaustive",
        _FP + "test_fp8_exhaustive", _FP + "test_dp4", _INT + "test_barrel_shift",
        "tb/test_silicon.py::test_mma_unit_model_matches_silicon",
        _KILL + "test_mma_sm90_ops_and_workload")),
    GenTarget("hw/numeric.py", "golden", (
        "tb/test_numeric.py::test_fp8_exhaustive_vs_fractions",
        "tb/test_numeric.py::test_wide_formats_vs_fractions",
        "tb/test_numeric.py::test_sticky_adder_directed_vs_fractions",
        "tb/test_numeric.py::test_format_constants", _FP + "test_fp8_exhaustive",
        "tb/test_numeric.py::test_scale_pow2_exhaustive_vs_fractions")),
    GenTarget("units/bmma/rtl.py", "generator", tuple(
        "tb/test_bmma_rtl.py::" + t for t in (
            "test_bmma_array_default_directed", "test_bmma_array_fold_random_with_stalls",
            "test_bmma_array_carries_through_every_accumulator_bit",
            "test_bmma_array_long_chains_and_narrow_accumulator",
            "test_bmma_array_reset_mid_operation", "test_bmma_array_single_op_builds",
            "test_bnn_epilogue", "test_bnn_epilogue_full_range_ties",
            "test_int8_mac_array"))),
    GenTarget("units/lut/rtl.py", "generator", (
        "tb/test_lut_rtl.py",
        "tb/test_lut_array.py::test_lut_array_back_to_back_and_stalls",
        "tb/test_lut_array.py::test_mac_array_matches_model",
        "tb/test_lut_baselines.py::test_baseline_matches_model",
        _KILL + "test_serial_arrays_register_internal_operands")),
    GenTarget("units/pacq/rtl.py", "generator", tuple(
        "tb/test_pacq_rtl.py::" + t for t in (
            "test_pacq_mul_matches_model", "test_int_dequant_every_code",
            "test_dequant_mul_matches_model", "test_fp16_mul_matches_model",
            "test_dp4_pacq_fp32_cancellation_and_alignment", "test_dp4_pacq_special_pairs",
            "test_numerics_configs_on_rtl")) + (
        _KILL + "test_pacq_wbits_given_as_an_int_builds_the_same_rtl",)),
    # PacQ's parallel FP-INT multiplier core, moved out of units/pacq/rtl.py (c01ef68) after
    # the first sampled run: not sampled yet
    GenTarget("hw/fpint.py", "generator", tuple(
        "tb/test_pacq_rtl.py::" + t for t in (
            "test_pacq_mul_matches_model", "test_int_dequant_every_code",
            "test_dequant_mul_matches_model", "test_numerics_configs_on_rtl")) + (
        _KILL + "test_pacq_wbits_given_as_an_int_builds_the_same_rtl",
        _KILL + "test_parallel_int_mul_joined_lanes")),
    GenTarget("units/sparse/rtl.py", "generator", tuple(
        "tb/test_sparse_rtl.py::" + t for t in (
            "test_zero_rows_padding_and_offsets", "test_fp_specials",
            "test_lane_products_every_length", "test_tree_cancellation_every_shift",
            "test_split_kmodes", "test_pipelined_dp", "test_fused_numerics"))),
    GenTarget("units/winograd/rtl.py", "generator", tuple(
        "tb/test_winograd_rtl.py::" + t for t in (
            "test_itf_int_extremes_and_random", "test_otf_int_extremes_and_random",
            "test_otf_crop_masks", "test_ftf_int_extremes_and_random", "test_itf_random_fp",
            "test_otf_random_fp", "test_ftf_random_fp", "test_int_extremes_no_wrap"))),
)

#: the hand triage of survivors, by mutant id: ("equivalent", why) -- no test can tell it from
#: the original -- or ("killed-by", test node id) for a survivor a directed test now kills
TRIAGE: dict[str, tuple[str, str]] = {
    "fparith-8a83f5": ("equivalent", "`fmt.bias - 1` -> `fmt.bias ^ 1` in the product's "
                       "exponent: FloatFormat.bias is 2**(exp_bits-1) - 1 by definition, odd "
                       "for every exp_bits >= 2 (7, 15, 127), and for odd b, b ^ 1 == b - 1"),
    "fparith-7a7065": ("killed-by", _KILL + "test_fp_mul_auto_multiplier"),
    "intarith-584ac8": ("killed-by", _KILL + "test_prefix_add_every_topology_and_width"),
    "intarith-2c610b": ("killed-by", _INT + "test_int_mul_gkl_exhaustive"),
    "dot-036f33": ("killed-by", _KILL + "test_dp4_rounded_product_needs_an_exact_widening_"
                   "for_parsed_values"),
    "fused-8169d1": ("killed-by", "tb/test_silicon.py::test_rtl_matches_silicon"),
    "fused-1d6105": ("killed-by", _KILL + "test_fused_product_dedup_key_names_its_formats"),
    "mma-171c94": ("equivalent", "`p.block.fmt == \"tf32\"` -> `>= \"tf32\"`: no other "
                   "operand format name sorts at or above \"tf32\" (the choices fp16, bf16, "
                   "fp8_e4m3, fp8_e5m2 all begin with b or f), so both are true for tf32 "
                   "alone"),
    "layout-5679d2": ("killed-by", _KILL + "test_layout_zero_width_fields_and_scalar_array_"
                      "values"),
    "layout-1e7f59": ("killed-by", _KILL + "test_layout_zero_width_fields_and_scalar_array_"
                      "values"),
    "pipeline-244de6": ("killed-by", _KILL + "test_cut_points_of_a_unit_without_a_pipeline_"
                        "field"),
    "pipeline-cc022d": ("killed-by", _KILL + "test_cut_points_of_a_unit_without_a_pipeline_"
                        "field"),
    "dedup-0c3465": ("equivalent", "a return annotation (`Emission | None` -> `Emission & "
                     "None`) under `from __future__ import annotations`: a string never "
                     "evaluated (nothing calls typing.get_type_hints on it)"),
    "generate-bc1f7f": ("killed-by", _KILL + "test_variable_bit_select_is_emitted_widened_"
                        "and_lint_clean"),
    "library-02b8e3": ("killed-by", "tb/test_silicon.py::test_mma_unit_model_matches_silicon"),
    "library-7d8843": ("killed-by", _INT + "test_barrel_shift"),
    "library-f4d439": ("killed-by", _KILL + "test_mma_sm90_ops_and_workload"),
    "library-09e75e": ("killed-by", _KILL + "test_mma_sm90_ops_and_workload"),
    "lut_rtl-85f6a0": ("killed-by", "tb/test_lut_array.py::test_mac_array_matches_model"),
    "lut_rtl-a6bd35": ("killed-by", _KILL + "test_serial_arrays_register_internal_operands"),
    "pacq_rtl-c6fcbd": ("killed-by", _KILL + "test_pacq_wbits_given_as_an_int_builds_the_"
                        "same_rtl"),
    "sparse_rtl-656262": ("equivalent", "`full.bit_select(rb, 1) & may` -> `... // may`: "
                          "both operands are 1 bit, and Amaranth defines x // 0 == 0 (and "
                          "x // 1 == x), so the quotient is the AND (checked in Amaranth's "
                          "simulator on all four inputs; the RTL runs agree)"),
    "sparse_rtl-86b9f8": ("killed-by", "tb/test_sparse_rtl.py::test_fused_numerics"),
    "winograd_rtl-3abadf": ("equivalent", "`kind == \"shl\"` -> `kind >= \"shl\"` in the "
                            "integer ops, after add and sub returned: the network ops are add, "
                            "sub, shl, half, neg (units/winograd/model.py), and of those only "
                            "sub (already handled) sorts above shl"),
    "fpint-27afcc": ("killed-by", _KILL + "test_parallel_int_mul_joined_lanes"),
    "fpint-bcf9e5": ("killed-by", _KILL + "test_parallel_int_mul_joined_lanes"),
    "numeric-17f98c": ("killed-by", "tb/test_numeric.py::test_scale_pow2_exhaustive_vs_"
                       "fractions"),
}


def _run(cmd, cwd, what, env=None) -> str:
    r = subprocess.run(cmd, cwd=cwd, env=env, capture_output=True, text=True)
    if r.returncode != 0:
        raise GenMutationError(f"{what} failed ({r.returncode}): "
                               f"{(r.stderr or r.stdout).strip()[-400:]}")
    return r.stdout


#: ``make_copy``'s ``rev`` for the working tree as it is (tracked and untracked, not ignored
#: files): to try a new test before it is committed
WORKTREE = "WORKTREE"


def make_copy(work: Path, rev: str = "HEAD") -> tuple[Path, Path]:
    """Export ``rev`` of the checkout (a commit, or :data:`WORKTREE`) into ``work/tree`` with
    its own virtual environment; returns (tree, its python).  The copy's ``tcgen`` packages
    import from the copy (checked)."""
    tree = work / "tree"
    if tree.exists():
        shutil.rmtree(tree)
    tree.mkdir(parents=True)
    if rev == WORKTREE:
        files = subprocess.run(["git", "ls-files", "-z", "-c", "-o", "--exclude-standard"],
                               cwd=ROOT, capture_output=True, check=True).stdout
        files = b"\0".join(f for f in files.split(b"\0") if f and (ROOT / f.decode()).exists())
        archive = subprocess.Popen(["tar", "-c", "--null", "-T", "-", "-f", "-"], cwd=ROOT,
                                   stdin=subprocess.PIPE, stdout=subprocess.PIPE)
        archive.stdin.write(files)
        archive.stdin.close()
    else:
        archive = subprocess.Popen(["git", "archive", "--format=tar", rev], cwd=ROOT,
                                   stdout=subprocess.PIPE)
    subprocess.run(["tar", "-x", "-C", str(tree)], stdin=archive.stdout, check=True)
    if archive.wait() != 0:
        raise GenMutationError(f"exporting {rev} failed")
    venv = tree / ".venv"
    _run([sys.executable, "-m", "venv", "--without-pip", str(venv)], tree, "making the venv")
    python = venv / "bin" / "python"
    site = Path(_run([str(python), "-c", "import sysconfig; print(sysconfig.get_paths()"
                      "['purelib'])"], tree, "finding site-packages").strip())
    ours = Path(_run([sys.executable, "-c", "import sysconfig; print(sysconfig.get_paths()"
                      "['purelib'])"], tree, "finding site-packages").strip())
    # a path line, not the checkout's editable .pth: third-party packages without its finder
    (site / "tcgen_checkout_packages.pth").write_text(f"{ours}\n")
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "VIRTUAL_ENV")}
    _run([str(python), "-m", "pip", "install", "-q", "--no-deps", "--no-build-isolation",
          "-e", str(tree)], tree, "installing the copy (pip install -e)", env=env)
    got = _run([str(python), "-c", "import importlib; print('\\n'.join(importlib.import_module"
                f"(p).__file__ for p in {PACKAGES!r}))"], tree, "importing tcgen in the copy",
               env=env).split()
    wrong = [f for f in got if not Path(f).resolve().is_relative_to(tree.resolve())]
    if wrong or len(got) != len(PACKAGES):
        raise GenMutationError(f"the copy imports tcgen from outside it: {wrong or got}")
    return tree, python


def mutations(tree: Path, path: str) -> list[GenMutant]:
    """Every mutation Cosmic Ray's operators (less :data:`SKIP_OPERATORS`) can make of
    ``path`` (relative to ``tree``), in a fixed order (operator name, then occurrence)."""
    import cosmic_ray.plugins
    from cosmic_ray.ast import ast_nodes, get_ast_from_path
    tree_ast = get_ast_from_path(tree / path)
    nodes = list(ast_nodes(tree_ast))
    out = []
    for name in sorted(cosmic_ray.plugins.operator_names()):
        if name in SKIP_OPERATORS:
            continue
        op = cosmic_ray.plugins.get_operator(name)()
        occ = 0
        for node in nodes:
            for start, _end in op.mutation_positions(node):
                out.append(GenMutant("", path, name, occ, start[0]))
                occ += 1
    return out


def _diff(tree: Path, m: GenMutant) -> str | None:
    """The mutation as a unified diff (None if Cosmic Ray does not apply it)."""
    import difflib

    import cosmic_ray.plugins
    from cosmic_ray.mutating import mutate_code
    src = (tree / m.path).read_text()
    new = mutate_code(src, cosmic_ray.plugins.get_operator(m.operator)(), m.occurrence)
    if new is None:
        return None
    return "\n".join(difflib.unified_diff(src.splitlines(), new.splitlines(),
                                          f"a/{m.path}", f"b/{m.path}", lineterm="", n=1))


def mutant_id(m: GenMutant) -> str:
    """A short id stable under edits elsewhere in the file: the file's name (``fparith``;
    ``lut_rtl`` for units/lut/rtl.py) and 6 hex digits of the operator and the changed
    lines."""
    changed = [x for x in m.diff.splitlines() if x[:1] in "+-" and x[:3] not in ("+++", "---")]
    key = "|".join([m.path, m.operator, *changed])
    parts = Path(m.path).with_suffix("").parts
    stem = parts[-1] if parts[0] == "hw" else "_".join(parts[1:])      # fparith, lut_rtl
    return f"{stem}-{hashlib.sha256(key.encode()).hexdigest()[:6]}"


def sample(tree: Path, target: GenTarget, n: int | None = None,
           seed: int = SEED) -> list[GenMutant]:
    """``n`` (default ``target.n``) mutations of the target drawn with ``seed`` (the same
    source and seed give the same mutants), each with its diff and id."""
    every = mutations(tree, target.path)
    rng = random.Random(f"{seed}:{target.path}")
    k = min(len(every), target.n if n is None else n)
    picked = [every[i] for i in sorted(rng.sample(range(len(every)), k))]
    for m in picked:
        m.diff = _diff(tree, m) or ""
        m.id = mutant_id(m)
    return picked


def _pyc(tree: Path, path: str) -> Path:
    """Where the copy's runs cache ``path``'s bytecode (PYTHONPYCACHEPREFIX = tree/build/pycache)
    -- removed around every mutant: a same-size edit within a second would pass the stale
    check."""
    src = (tree / path).resolve()
    return (tree / "build" / "pycache" / src.parent.relative_to("/")
            / f"{src.stem}.{sys.implementation.cache_tag}.pyc")


def _env(tree: Path, python: Path) -> dict:
    return {"TCGEN_COVERAGE": "0", "PYTHONPYCACHEPREFIX": str(tree / "build" / "pycache"),
            "PATH": f"{python.parent}{os.pathsep}{os.environ.get('PATH', '')}",
            "VIRTUAL_ENV": str(python.parent.parent)}


def baseline(tree: Path, python: Path, target: GenTarget, log_dir: Path) -> float:
    """The target's tests on the unmutated copy (must pass); returns their seconds."""
    log_dir.mkdir(parents=True, exist_ok=True)
    rc, secs = _pytest(target.tests, _env(tree, python), 3600, log_dir / "original.log",
                       cwd=tree, python=str(python), unset=UNSET)
    if rc != 0:
        raise GenMutationError(f"{target.path}: the tests fail on the unmutated copy "
                               f"({_first_failure(log_dir / 'original.log')})")
    return secs


def judge(m: GenMutant, tree: Path, python: Path, tests, timeout: float,
          log_dir: Path) -> GenMutant:
    """Apply ``m`` in the copy, run ``tests``, restore; sets ``m.status`` and ``m.detail``."""
    import cosmic_ray.plugins
    from cosmic_ray.mutating import use_mutation
    t0 = time.monotonic()
    log_dir.mkdir(parents=True, exist_ok=True)
    log = log_dir / f"{m.id}.log"
    sim = tree / "build" / "sim"
    before = set(sim.glob("*/*")) if sim.exists() else set()
    pyc = _pyc(tree, m.path)
    pyc.unlink(missing_ok=True)
    try:
        op = cosmic_ray.plugins.get_operator(m.operator)()
        with use_mutation(tree / m.path, op, m.occurrence) as (_old, new):
            if new is None:
                m.status, m.detail = "error", "Cosmic Ray did not apply the mutation"
            else:
                rc, _ = _pytest(tests, _env(tree, python), timeout, log, cwd=tree,
                                python=str(python), unset=UNSET)
                if rc is None:
                    m.status, m.detail = "killed", f"the tests ran past {timeout:.0f} s"
                elif rc != 0:
                    m.status, m.detail = "killed", _first_failure(log)
                else:
                    m.status, m.detail = "survived", "every test passed"
    finally:
        pyc.unlink(missing_ok=True)
        for d in (set(sim.glob("*/*")) - before) if sim.exists() else ():
            shutil.rmtree(d, ignore_errors=True)       # the mutant's builds
    if m.status == "killed":
        log.unlink(missing_ok=True)
    m.seconds = round(time.monotonic() - t0, 2)
    return m


def triage(m: GenMutant) -> GenMutant:
    """A survivor's hand triage (:data:`TRIAGE`): equivalent ones leave the denominator."""
    t = TRIAGE.get(m.id)
    if m.status == "survived" and t and t[0] == "equivalent":
        m.status, m.detail = "equivalent", t[1]
    elif m.status == "survived":
        m.detail = "every test passed; needs a test"
    return m


def run_target(target: GenTarget, tree: Path, python: Path, work: Path, n: int | None = None,
               log=print) -> dict:
    """Sample, then judge every mutant of one target file; returns its results."""
    t0 = time.monotonic()
    logs = work / "logs" / target.path.replace("/", "_")
    secs = baseline(tree, python, target, logs)
    timeout = max(MIN_TIMEOUT_S, TIMEOUT_FACTOR * secs)
    ms = sample(tree, target, n)
    log(f"[gen-mutation] {target.path}: {len(ms)} mutants, original {secs:.1f} s, "
        f"timeout {timeout:.0f} s")
    for m in ms:
        if not m.diff:
            m.status, m.detail = "error", "Cosmic Ray did not apply the mutation"
        else:
            judge(m, tree, python, target.tests, timeout, logs)
        triage(m)
        log(f"[gen-mutation]   {m.id} ({m.operator} line {m.line}): {m.status} "
            f"({m.seconds:.1f} s) {m.detail[:100]}")
    return count(target, [m.to_dict() for m in ms], secs, time.monotonic() - t0)


def count(target: GenTarget, ms: list[dict], original_s: float, wall_s: float) -> dict:
    """Per-file counts; kill rate = killed / (generated - equivalent - errors)."""
    c = {s: sum(m["status"] == s for m in ms) for s in
         ("killed", "survived", "equivalent", "error")}
    denom = len(ms) - c["equivalent"] - c["error"]
    return {"path": target.path, "role": target.role, "tests": list(target.tests),
            "generated": len(ms), **c,
            "kill_rate": round(c["killed"] / denom, 4) if denom else None,
            "original_s": round(original_s, 2), "wall_s": round(wall_s, 1), "mutants": ms}


def _find(tree: Path, d: dict) -> GenMutant | None:
    """A recorded mutant in the copy's current source: the same operator and occurrence if
    its id still matches, else the occurrence of that operator whose id does."""
    every = [m for m in mutations(tree, d["path"]) if m.operator == d["operator"]]
    order = sorted(every, key=lambda m: (m.occurrence != d["occurrence"],
                                         abs(m.line - d["line"])))
    for m in order:
        m.diff = _diff(tree, m) or ""
        m.id = mutant_id(m)
        if m.id == d["id"]:
            return m
    return None


def recheck_target(target: GenTarget, previous: dict | None, tree: Path, python: Path,
                   work: Path, log=print) -> dict | None:
    """Judge again the survivors (and errors) of an earlier run of ``target`` with its
    current tests (a directed test added for them); the others keep their verdicts."""
    if not previous:
        log(f"[gen-mutation] {target.path}: not in the report; skipped")
        return None
    t0 = time.monotonic()
    logs = work / "logs" / target.path.replace("/", "_")
    todo = [d for d in previous["mutants"] if d["status"] in ("survived", "error")
            and TRIAGE.get(d["id"], ("",))[0] != "equivalent"]
    if not todo:                                # only triage to apply: no test run
        out = [{**d, "status": "equivalent", "detail": TRIAGE[d["id"]][1]}
               if d["status"] == "survived" else d for d in previous["mutants"]]
        return count(target, out, previous["original_s"], previous["wall_s"])
    secs = baseline(tree, python, target, logs)
    timeout = max(MIN_TIMEOUT_S, TIMEOUT_FACTOR * secs)
    out = []
    for d in previous["mutants"]:
        if d["status"] not in ("survived", "error"):
            out.append(d)
            continue
        if TRIAGE.get(d["id"], ("",))[0] == "equivalent":         # no test can kill it
            out.append({**d, "status": "equivalent", "detail": TRIAGE[d["id"]][1]})
            continue
        m = _find(tree, d)
        if m is None:
            out.append({**d, "status": "error",
                        "detail": "the mutation is not in the current source any more"})
            continue
        judge(m, tree, python, target.tests, timeout, logs)
        triage(m)
        m.was = d["status"] if m.status == "killed" else d.get("was", "")
        log(f"[gen-mutation]   {m.id}: {d['status']} -> {m.status} ({m.seconds:.1f} s) "
            f"{m.detail[:100]}")
        out.append(m.to_dict())
    return count(target, out, secs, previous["wall_s"] + time.monotonic() - t0)
