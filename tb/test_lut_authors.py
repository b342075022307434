"""scripts/lut_authors.py (issue 39 §3, "Design"): the DW_fp_add stand-in and the reading of the
LUT Tensor Core authors' RTL.

- The stand-in adder (scripts/lut_authors_dw_fp_add.sv around tcgen's FTZ FP16 adder) equals
  the numpy model the script uses for DesignWare's non-IEEE mode, on every edge pair and
  random pairs (Icarus; no checkout needed).
- With a checkout of github.com/Hamerlate/lut_tensor_core named by ``LUT_TENSOR_CORE`` (else
  skipped): their array, elaborated by read_slang at a small shape (M1N2K4) for B_BIT 2 and 1,
  equals the script's numpy model of it, and differs from tcgen's lut_array only where the
  model says so (the exponent-field scaling, the FTZ accumulation)."""
from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "scripts"))

import lut_authors as la                                                    # noqa: E402
from tcgen.verify.stimulus import edge_values                               # noqa: E402
from tcgen.generate import verilog                                          # noqa: E402
from tcgen.registry import get_unit                                         # noqa: E402

needs_iverilog = pytest.mark.skipif(shutil.which("iverilog") is None,
                                    reason="iverilog not installed")
CHECKOUT = os.environ.get("LUT_TENSOR_CORE")
needs_checkout = pytest.mark.skipif(
    not CHECKOUT or not (Path(CHECKOUT) / la.RTL).is_file(),
    reason="LUT_TENSOR_CORE does not name a checkout of Hamerlate/lut_tensor_core")


@needs_iverilog
def test_dw_stand_in_equals_its_model(tmp_path):
    edges = np.asarray(edge_values("fp16"), dtype=np.uint64)
    ea, eb = np.meshgrid(edges, edges)
    rng = np.random.default_rng(39)
    ra = rng.integers(0, 1 << 16, 20_000, dtype=np.uint64)
    rb = rng.integers(0, 1 << 16, 20_000, dtype=np.uint64)
    a = np.concatenate([ea.ravel(), ra])
    b = np.concatenate([eb.ravel(), rb])
    (tmp_path / "add.v").write_text(verilog("fp_add", get_unit("fp_add").params(
        fmt="fp16", rounding="rne", ftz=True), top=la.ADDER_TOP))
    (tmp_path / "stim.hex").write_text("".join(f"{int(x):04x}{int(y):04x}\n"
                                               for x, y in zip(a, b)))
    (tmp_path / "tb.sv").write_text(f"""module tb;
  reg [31:0] mem [0:{len(a) - 1}];
  reg [15:0] a, b; wire [15:0] z; wire [7:0] status;
  integer i, f;
  DW_fp_add #(10, 5, 0) dut (.a(a), .b(b), .rnd(3'b000), .z(z), .status(status));
  initial begin
    $readmemh("stim.hex", mem);
    f = $fopen("out.hex", "w");
    for (i = 0; i < {len(a)}; i = i + 1) begin
      {{a, b}} = mem[i]; #1; $fwrite(f, "%h\\n", z);
    end
    $fclose(f); $finish;
  end
endmodule
""")
    subprocess.run(["iverilog", "-g2012", "-o", "sim.vvp", "tb.sv", str(la.SHIM), "add.v"],
                   cwd=tmp_path, check=True, capture_output=True)
    subprocess.run(["vvp", "-n", "sim.vvp"], cwd=tmp_path, check=True, capture_output=True)
    z = np.array([int(h, 16) for h in (tmp_path / "out.hex").read_text().split()],
                 dtype=np.uint64)
    want = la.dw_add(a, b)
    bad = np.nonzero(z != want)[0]
    assert len(bad) == 0, [(hex(int(a[i])), hex(int(b[i])), hex(int(z[i])), hex(int(want[i])))
                           for i in bad[:5]]
    # DesignWare's non-IEEE conventions, spot-checked on the model
    assert la.dw_add([0x7E00], [0x3C00])[0] == 0x7C00          # NaN input read as +Inf
    assert la.dw_add([0x7C00], [0xFC00])[0] == 0x7C00          # Inf - Inf: no NaN out
    assert la.dw_add([0x0001], [0x0000])[0] == 0x0000          # subnormal input is zero
    assert la.dw_add([0x0400], [0x8001])[0] == 0x0400          # ... on either side
    assert la.dw_add([0x0600], [0x8400])[0] == 0x0000          # subnormal result flushed


def test_their_port_mapping_puts_the_sign_on_weight_zero():
    ops = {"lut": np.arange(8, dtype=np.uint64).reshape(1, 1, 8),
           "sign": np.array([[[1, 0]], [[0, 1]]]).reshape(1, 2, 2),
           "idx": np.array([[5, 2], [3, 6]]).reshape(1, 2, 2),
           "c": np.zeros((1, 1, 2), dtype=np.uint64)}
    pv = la.their_ports(ops, 0, 2)
    n, w = 2, 2

    def code(kk, j):
        return (pv["b_tile"] >> ((kk * n + j) * w)) & 0b11
    # column 0: planes (sign 1, idx 5 = 0b101) and (sign 0, idx 3 = 0b011)
    assert code(0, 0) == 0b01                       # weight 0 carries the sign, plane 0 first
    assert code(1, 0) == 0b11 and code(2, 0) == 0b10 and code(3, 0) == 0b01
    assert pv["a_lut"] == sum(e << (16 * e) for e in range(8))


@needs_iverilog
@needs_checkout
@pytest.mark.parametrize("w_bits", [2, 1])
def test_authors_rtl_equals_its_model(w_bits, monkeypatch, tmp_path):
    monkeypatch.setattr(la, "BUILD", tmp_path)
    res = la.numerics(Path(CHECKOUT), w_bits, 200, 39, m=1, n=2, k=4)
    for name, s in res.items():
        assert s["rtl_vs_their_model_mismatches"] == 0, name
        assert s["outputs"] == 400
    # every difference from ours is explained: the exponent-field scaling (then ours with
    # scale=rtl equals theirs) or the FTZ / NaN-as-Inf accumulation (then it does not)
    clean = res["clean tables, C = +0"]
    assert clean["differ"] <= clean["outputs"] // 100
