"""Run the tensor-core probes on a GPU (issue 40; docs/silicon.md).

    python3 scripts/silicon/run_probes.py --out DIR [--ops a,b] [--tiles-scale 1.0]

On the device machine (CuPy, nvcc, cuobjdump there).  For every op of `ops.OPS`:
1. one CUDA kernel with the op's PTX inline, built alone with nvcc for sm_90a (an op the
   compiler refuses is recorded with the compiler's message and skipped); the SASS matrix
   opcodes read back with cuobjdump;
2. the fragment check: random small integers whose products and sums are exact, packed by the
   op's PTX-ISA fragment maps, must come back as A·B + C exactly; and a negative control (A's
   registers 0 and 1 swapped) must not.  Sparse ops try every metadata layout reading
   (`ops.META_LAYOUTS`) and keep the one that is exact;
3. every case class of cases.py: the outputs in matrix form, saved compressed, with the inputs'
   SHA-256 (the comparison regenerates the inputs and checks it).

Writes DIR/silicon_NN.npz (outputs, split under 15 MB a file) and DIR/silicon_meta.json
(versions, SASS opcodes, fragment checks, digests, compile refusals).
"""
from __future__ import annotations

import argparse
import concurrent.futures as cf
import json
import os
import re
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
import cases  # noqa: E402
import ops as O  # noqa: E402

KERNEL = r"""
#include <stdint.h>
extern "C" __global__ void __launch_bounds__(256)
k_{name}(const uint32_t* __restrict__ A, const uint32_t* __restrict__ B,
         const uint32_t* __restrict__ C, const uint32_t* __restrict__ E,
         uint32_t* __restrict__ D, int tiles, int steps)
{{
    const int lane = threadIdx.x & 31;
    const int warp = (blockIdx.x * blockDim.x + threadIdx.x) >> 5;
    const int nwarps = (gridDim.x * blockDim.x) >> 5;
    for (int t = warp; t < tiles; t += nwarps) {{
        uint32_t d[{rc}];
        #pragma unroll
        for (int i = 0; i < {rc}; ++i) d[i] = C[((size_t)t * 32 + lane) * {rc} + i];
        for (int s = 0; s < steps; ++s) {{
            const size_t base = ((size_t)t * steps + s) * 32 + lane;
            uint32_t a[{ra}], b[{rb}];
            #pragma unroll
            for (int i = 0; i < {ra}; ++i) a[i] = A[base * {ra} + i];
            #pragma unroll
            for (int i = 0; i < {rb}; ++i) b[i] = B[base * {rb} + i];
            const uint32_t e = E[base];
            (void)e;
            asm volatile("{ptx} {{{dregs}}}, {{{aregs}}}, {{{bregs}}}, {{{dregs}}}{meta};\n"
                         : {douts} : {ains});
        }}
        #pragma unroll
        for (int i = 0; i < {rc}; ++i) D[((size_t)t * 32 + lane) * {rc} + i] = d[i];
    }}
}}
"""


WG_KERNEL = r"""
#include <stdint.h>
extern "C" __global__ void __launch_bounds__(128)
k_{name}(const uint32_t* __restrict__ A, const uint32_t* __restrict__ B,
         const uint32_t* __restrict__ C, const uint32_t* __restrict__ E,
         uint32_t* __restrict__ D, int tiles, int steps)
{{
    // one warpgroup per tile; B's shared-memory image ({bwords} words a step) from B;
    // E[0] and E[1] carry the descriptor's leading and stride byte offsets
    // 4 KB, zero beyond the image: a descriptor reading that steps past the image stays inside
    __shared__ __align__(1024) uint32_t sB[1024];
    for (int i = threadIdx.x; i < 1024; i += 128) sB[i] = 0;
    const int tid = threadIdx.x;
    const uint64_t lbo = E[0], sbo = E[1];
    const uint32_t saddr = (uint32_t)__cvta_generic_to_shared(sB);
    const uint64_t desc = ((uint64_t)((saddr & 0x3FFFF) >> 4)) | (((lbo >> 4) & 0x3FFF) << 16)
                        | (((sbo >> 4) & 0x3FFF) << 32);
    for (int t = blockIdx.x; t < tiles; t += gridDim.x) {{
        uint32_t d[{rc}];
        #pragma unroll
        for (int i = 0; i < {rc}; ++i) d[i] = C[((size_t)t * 128 + tid) * {rc} + i];
        for (int s = 0; s < steps; ++s) {{
            const size_t base = ((size_t)t * steps + s);
            for (int i = tid; i < {bwords}; i += 128) sB[i] = B[base * {bwords} + i];
            asm volatile("fence.proxy.async.shared::cta;\n" ::: "memory");
            __syncthreads();
            uint32_t a[{ra}];
            #pragma unroll
            for (int i = 0; i < {ra}; ++i) a[i] = A[(base * 128 + tid) * {ra} + i];
            asm volatile("wgmma.fence.sync.aligned;\n" ::: "memory");
            asm volatile("{{\n.reg .pred p;\nsetp.ne.b32 p, %{pn}, 0;\n"
                         "{ptx} {{{dregs}}}, {{{aregs}}}, %{dn}, p, 1, 1{trans};\n}}\n"
                         : {douts} : {ains}, "l"(desc), "r"(1) : "memory");
            asm volatile("wgmma.commit_group.sync.aligned;\n" ::: "memory");
            asm volatile("wgmma.wait_group.sync.aligned 0;\n" ::: "memory");
            __syncthreads();
        }}
        #pragma unroll
        for (int i = 0; i < {rc}; ++i) D[((size_t)t * 128 + tid) * {rc} + i] = d[i];
    }}
}}
"""


def wg_bwords(op):
    return op.k * op.n * op.extra["elem_bytes"] // 4


def kernel_source(op):
    if op.name.startswith("wg_"):
        rc, ra = op.regs_c, op.regs_a
        return WG_KERNEL.format(
            name=op.name, rc=rc, ra=ra, bwords=wg_bwords(op), ptx=op.ptx,
            dregs=", ".join(f"%{i}" for i in range(rc)),
            aregs=", ".join(f"%{rc + i}" for i in range(ra)), dn=rc + ra, pn=rc + ra + 1,
            trans=", 0" if op.a in ("fp16", "bf16") else "",
            douts=", ".join(f'"+r"(d[{i}])' for i in range(rc)),
            ains=", ".join(f'"r"(a[{i}])' for i in range(ra)))
    rc, ra, rb = op.regs_c, op.regs_a, op.regs_b
    dregs = ", ".join(f"%{i}" for i in range(rc))
    aregs = ", ".join(f"%{rc + i}" for i in range(ra))
    bregs = ", ".join(f"%{rc + ra + i}" for i in range(rb))
    meta = f", %{rc + ra + rb}, {op.selector:#x}" if op.sparse else ""
    douts = ", ".join(f'"+r"(d[{i}])' for i in range(rc))
    ins = [f'"r"(a[{i}])' for i in range(ra)] + [f'"r"(b[{i}])' for i in range(rb)]
    if op.sparse:
        ins.append('"r"(e)')
    return KERNEL.format(name=op.name, rc=rc, ra=ra, rb=rb, ptx=op.ptx, dregs=dregs,
                         aregs=aregs, bregs=bregs, meta=meta, douts=douts, ains=", ".join(ins))


def build(op, work: Path):
    src = work / f"{op.name}.cu"
    src.write_text(kernel_source(op))
    cubin = work / f"{op.name}.cubin"
    cmd = ["nvcc", "-cubin", "-O3", "-gencode=arch=compute_90a,code=sm_90a", "-o", str(cubin),
           str(src)]
    p = subprocess.run(cmd, capture_output=True, text=True)
    if p.returncode != 0:
        return op.name, None, (p.stderr or p.stdout).strip(), ""
    sass = subprocess.run(["cuobjdump", "-sass", str(cubin)], capture_output=True, text=True).stdout
    return op.name, cubin, "", sass


def sass_opcodes(sass: str):
    found = set()
    for line in sass.splitlines():
        m = re.search(r"/\*[0-9a-f]{4}\*/\s+(?:@!?U?P\w+\s+)?([A-Z][A-Z0-9_.]+)", line)
        if m and re.search(r"MMA|GMMA|BMMA|IMMA|HMMA|QMMA", m.group(1)):
            found.add(m.group(1))
    return sorted(found)


# ----------------------------------------------------------------------------------------------

class Device:
    def __init__(self):
        import cupy as cp
        self.cp = cp
        self.mods = {}

    def load(self, name, cubin):
        self.mods[name] = self.cp.RawModule(path=str(cubin)).get_function(f"k_{name}")

    def run(self, op, regs_a, regs_b, regs_c, regs_e):
        """regs_a [T, S, 32, ra] ... -> D regs [T, 32, rc] (uint32)"""
        cp = self.cp
        T, S = regs_a.shape[:2]
        if op.name.startswith("wg_"):
            dA = cp.asarray(np.ascontiguousarray(regs_a, dtype=np.uint32))
            dB = cp.asarray(np.ascontiguousarray(regs_b, dtype=np.uint32))
            dC = cp.asarray(np.ascontiguousarray(regs_c, dtype=np.uint32))
            dE = cp.asarray(np.ascontiguousarray(regs_e, dtype=np.uint32))
            dD = cp.full((T, 128, op.regs_c), 0xDEADBEEF, dtype=cp.uint32)
            self.mods[op.name]((min(T, 4096),), (128,), (dA, dB, dC, dE, dD, np.int32(T), np.int32(S)))
            cp.cuda.runtime.deviceSynchronize()
            return cp.asnumpy(dD)
        dA = cp.asarray(np.ascontiguousarray(regs_a, dtype=np.uint32))
        dB = cp.asarray(np.ascontiguousarray(regs_b, dtype=np.uint32))
        dC = cp.asarray(np.ascontiguousarray(regs_c, dtype=np.uint32))
        dE = cp.asarray(np.ascontiguousarray(regs_e, dtype=np.uint32))
        dD = cp.full((T, 32, op.regs_c), 0xDEADBEEF, dtype=cp.uint32)     # poisoned
        grid = min(1024, (T * 32 + 255) // 256)
        self.mods[op.name]((grid,), (256,), (dA, dB, dC, dE, dD, np.int32(T), np.int32(S)))
        cp.cuda.runtime.deviceSynchronize()
        return cp.asnumpy(dD)


def to_regs(op, inp, meta_layout=None):
    """matrix-form inputs -> register arrays for the kernel"""
    A, B, C = inp["A"], inp["B"], inp["C"]
    T, S = A.shape[:2]
    if op.name.startswith("wg_"):
        # meta_layout: (lbo, sbo) of the descriptor; the image puts K's core matrices 128 B apart
        lbo, sbo = meta_layout or (128, 256)
        ra = O.pack(A.reshape(T * S, op.m, op.k), op.extra["A"], op.bits_a)
        img = O.wgmma_b_image(B.reshape(T * S, op.k, op.n), op.extra["core_k"],
                              op.extra["elem_bytes"], 128)
        rc = O.pack(C, op.extra["C"], op.bits_c)
        e = np.array([lbo, sbo], dtype=np.uint32)
        return ra.reshape(T, S, 128, -1), img.reshape(T, S, -1), rc, e
    fa, fb, fc = op.extra["A"], op.extra["B"], op.extra["C"]
    if op.sparse:
        comp = O.compress_24(A.reshape(T * S, op.m, op.k), inp["keep"].reshape(T * S, op.m, op.k // 4, 2))
        ra = O.pack(comp, fa, op.bits_a)
        re_ = O.pack_meta(inp["keep"].reshape(T * S, op.m, op.k // 4, 2), op, meta_layout)
    else:
        ra = O.pack(A.reshape(T * S, op.m, op.k), fa, op.bits_a)
        re_ = np.zeros((T * S, 32), dtype=np.uint32)
    rb = O.pack(B.reshape(T * S, op.k, op.n), fb, op.bits_b)
    rc = O.pack(C, fc, op.bits_c)
    return (ra.reshape(T, S, 32, -1), rb.reshape(T, S, 32, -1), rc, re_.reshape(T, S, 32))


# -- the fragment check: small integers, exact arithmetic ----------------------------------------

def _code_table(f):
    """value -> encoding for the integers -8..8 that the format holds exactly"""
    e, m, kind, bias, emf = cases.fmt_info(f)
    table = {0: 0}
    for v in range(1, 9):
        ex = v.bit_length() - 1
        frac = v - (1 << ex)                       # v = 2^ex · (1 + frac / 2^ex)
        if ex > m and frac & ((1 << (ex - m)) - 1):
            continue                               # not exact
        man = frac << (m - ex) if ex <= m else frac >> (ex - m)
        code = ((ex + bias) << m) | man
        table[v] = code
        table[-v] = code | (1 << (e + m))
    return table


def small_int_inputs(op, T=64):
    r = cases.Raw("fragcheck", op.name)
    sa, sb, sc = (T, 1, op.m, op.k), (T, 1, op.k, op.n), (T, op.m, op.n)
    if op.a == "b1":
        Av, Bv = r.ints(0, 1, sa), r.ints(0, 1, sb)
        Cv = r.ints(-50, 50, sc)
        inp = {"A": Av.astype(np.uint64), "B": Bv.astype(np.uint64),
               "C": Cv.astype(np.int64).astype(np.uint64) & np.uint64(0xFFFFFFFF)}
        return inp, (Av, Bv, Cv)
    lim = 3 if "e5m2" in (op.a, op.b) else 4
    Av, Bv = r.ints(-lim, lim, sa), r.ints(-lim, lim, sb)
    Cv = r.ints(-20, 20, sc)
    if op.sparse:
        keep = cases.sparse_keep(r, (T, 1, op.m, op.k // 4))
        Av = cases.prune(Av.astype(np.uint64) + np.uint64(1 << 20), keep).astype(np.int64)
        Av = np.where(Av != 0, Av - (1 << 20), 0)
    if op.a == "s8":
        enc = lambda v, f: v.astype(np.int64).astype(np.uint64) & np.uint64(0xFF)  # noqa: E731
    else:
        def enc(v, f):
            t = _code_table(f)
            return np.vectorize(lambda x: t[int(x)])(v).astype(np.uint64)
    A, B = enc(Av, op.a), enc(Bv, op.b)
    if op.c == "s32":
        C = Cv.astype(np.int64).astype(np.uint64) & np.uint64(0xFFFFFFFF)
    elif op.c == "fp16":
        C = Cv.astype(np.float16).view(np.uint16).astype(np.uint64)
    else:
        C = Cv.astype(np.float32).view(np.uint32).astype(np.uint64)
    inp = {"A": A, "B": B, "C": C}
    if op.sparse:
        inp["keep"] = keep
    return inp, (Av, Bv, Cv)


def expected_small(op, vals):
    Av, Bv, Cv = vals
    if op.a == "b1":
        if op.ptx.endswith("xor.popc"):
            p = (Av[:, 0, :, :, None] ^ Bv[:, 0, None, :, :]).sum(axis=2)
        else:
            p = (Av[:, 0, :, :, None] & Bv[:, 0, None, :, :]).sum(axis=2)
        return p + Cv
    return np.einsum("tmk,tkn->tmn", Av[:, 0], Bv[:, 0]) + Cv


def decode_out(op, D):
    if op.c == "s32":
        return D.astype(np.uint32).view(np.int32).astype(np.int64)
    if op.c == "fp16":
        return D.astype(np.uint16).view(np.float16).astype(np.float64)
    return D.astype(np.uint32).view(np.float32).astype(np.float64)


# wgmma B descriptor readings: which offset field steps along K (the image puts K's core
# matrices 128 bytes apart; N has one 8-row group here)
WG_DESCRIPTORS = {"lbo128": (128, 256), "sbo128": (256, 128)}


def frag_check(dev, op):
    inp, vals = small_int_inputs(op)
    want = expected_small(op, vals)
    layouts = O.META_LAYOUTS if op.sparse else (None,)
    if op.name.startswith("wg_"):
        layouts = WG_DESCRIPTORS
    result = {"layouts": {}}
    for lay in layouts:
        regs = to_regs(op, inp, layouts[lay] if isinstance(layouts, dict) else lay)
        D = O.unpack(dev.run(op, *regs), op.extra["C"], op.bits_c, (op.m, op.n))
        got = decode_out(op, D)
        result["layouts"][str(lay)] = int((got != want).sum())
    good = [k for k, v in result["layouts"].items() if v == 0]
    result["chosen"] = good[0] if good else None
    # negative control: A's registers 0 and 1 swapped must give a wrong product
    lay = None if not op.sparse else (result["chosen"] or O.META_LAYOUTS[0])
    if op.name.startswith("wg_"):
        lay = WG_DESCRIPTORS[result["chosen"] or "lbo128"]
    regs = list(to_regs(op, inp, lay))
    ra = regs[0].copy()
    ra[..., [0, 1]] = ra[..., [1, 0]]
    regs[0] = ra
    D = O.unpack(dev.run(op, *regs), op.extra["C"], op.bits_c, (op.m, op.n))
    result["negative_control_mismatches"] = int((decode_out(op, D) != want).sum())
    result["outputs"] = int(want.size)
    return result


# ----------------------------------------------------------------------------------------------

def run_op(dev, op, name, cubin, err, sass, meta, arrays):
    rec = meta["ops"].setdefault(name, {"ptx": op.ptx})
    if cubin is None:
        rec["refused"] = err
        print(f"{name}: REFUSED by the compiler: {err.splitlines()[0] if err else ''}", flush=True)
        return
    rec["sass"] = sass_opcodes(sass)
    dev.load(name, cubin)
    fc = frag_check(dev, op)
    rec["fragment_check"] = fc
    print(f"{name}: sass {rec['sass']} fragment check {fc}", flush=True)
    if fc["chosen"] is None and (op.sparse or op.name.startswith("wg_")) or \
            (not op.sparse and not op.name.startswith("wg_") and fc["layouts"]["None"]):
        rec["skipped"] = "fragment check failed"
        return
    layout = fc["chosen"] if op.sparse else None
    if op.name.startswith("wg_"):
        layout = WG_DESCRIPTORS[fc["chosen"]]
    rec["cases"] = {}
    for cls, T in cases.classes(op):
        inp = cases.case(op, cls)
        regs = to_regs(op, inp, layout)
        D = O.unpack(dev.run(op, *regs), op.extra["C"], op.bits_c, (op.m, op.n))
        dtype = np.uint16 if op.c == "fp16" else np.uint32
        arrays[f"{name}/{cls}"] = D.astype(dtype)
        rec["cases"][cls] = {"tiles": int(inp["A"].shape[0]), "steps": int(inp["A"].shape[1]),
                             "outputs": int(D.size), "inputs_sha256": cases.digest(inp),
                             "poison_left": int((D == 0xDEADBEEF).sum()) if dtype == np.uint32 else None}
    print(f"{name}: {sum(c['outputs'] for c in rec['cases'].values())} outputs", flush=True)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", required=True)
    ap.add_argument("--ops", default="")
    ap.add_argument("--sass-only", action="store_true",
                    help="build every kernel and write DIR/sass.txt (the full disassembly); run nothing")
    args = ap.parse_args(argv)
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    chosen = [O.BY_NAME[n] for n in args.ops.split(",")] if args.ops else O.OPS
    meta = {"date": time.strftime("%Y-%m-%d %H:%M:%S %Z"), "ops": {}, "env": {}}
    for key, cmd in [("nvidia_smi", ["nvidia-smi", "--query-gpu=name,driver_version,clocks.max.sm",
                                     "--format=csv,noheader"]),
                     ("nvcc", ["nvcc", "--version"]),
                     ("cuobjdump", ["cuobjdump", "--version"])]:
        try:
            meta["env"][key] = subprocess.run(cmd, capture_output=True, text=True).stdout.strip()
        except OSError as e:
            meta["env"][key] = f"unavailable: {e}"
    import cupy as cp
    meta["env"]["cuda_runtime"] = cp.cuda.runtime.runtimeGetVersion()
    meta["env"]["cuda_driver"] = cp.cuda.runtime.driverGetVersion()
    meta["env"]["cupy"] = cp.__version__
    meta["env"]["numpy"] = np.__version__
    meta["env"]["device"] = cp.cuda.runtime.getDeviceProperties(0)["name"].decode()

    work = Path(tempfile.mkdtemp(prefix="probes-"))
    t0 = time.time()
    with cf.ThreadPoolExecutor(max_workers=os.cpu_count() or 4) as ex:
        built = list(ex.map(lambda op: build(op, work), chosen))
    print(f"built {len(built)} kernels in {time.time() - t0:.1f} s", flush=True)
    with open(out / "sass.txt", "w") as f:
        for name, cubin, err, sass in built:
            f.write(f"==== {name}\n{sass if cubin else 'REFUSED: ' + err}\n")
    if args.sass_only:
        return
    dev = Device()
    arrays = {}
    order = sorted(range(len(chosen)), key=lambda i: chosen[i].name.startswith("wg_"))
    for i in order:
        (name, cubin, err, sass), op = built[i], chosen[i]
        try:
            run_op(dev, op, name, cubin, err, sass, meta, arrays)
        except Exception as e:       # a fault kills the CUDA context: keep what was measured
            meta["ops"][name]["error"] = f"{type(e).__name__}: {e}"
            print(f"{name}: ERROR {type(e).__name__}: {e}", flush=True)
            if "CUDA" in type(e).__name__ or "cuda" in str(type(e)).lower():
                meta["stopped_after"] = name
                break
    # outputs, split into files under 15 MB (compressed): each array's compressed size once,
    # then first-fit in key order
    import io
    files, cur, n = [], {}, 0
    for key in sorted(arrays):
        buf = io.BytesIO()
        np.savez_compressed(buf, x=arrays[key])
        size = buf.tell()
        if cur and n + size > 15_000_000:
            files.append(cur)
            cur, n = {}, 0
        cur[key], n = arrays[key], n + size
    if cur:
        files.append(cur)
    for i, f in enumerate(files):
        np.savez_compressed(out / f"silicon_{i:02d}.npz", **f)
        for key in f:
            meta["ops"][key.split("/")[0]].setdefault("file", {})[key.split("/")[1]] = f"silicon_{i:02d}.npz"
    meta["seconds"] = round(time.time() - t0, 1)
    (out / "silicon_meta.json").write_text(json.dumps(meta, indent=1, sort_keys=True))
    print(f"done in {meta['seconds']} s; {len(files)} output files", flush=True)


if __name__ == "__main__":
    main()
