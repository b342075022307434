// DW_fp_add stand-in for the LUT Tensor Core authors' RTL (issue 39, section 3 "Design").
//
// The authors' fp_lut_array_b_cycle_stage1.sv (github.com/Hamerlate/lut_tensor_core) adds with
// Synopsys DesignWare's DW_fp_add #(SIG_WIDTH, EXP_WIDTH, IEEE_COMPLIANCE = 0), rnd = 3'b000,
// status unconnected.  DesignWare is not available to an open flow, so scripts/lut_authors.py
// elaborates their file against this module instead.  It is tcgen's own FP16 adder
// (`tcgen generate fp_add -p fmt=fp16 -p rounding=rne -p ftz=true`, emitted by the script as
// module lut_authors_fp16_add_ftz; verified in tb/test_fp_rtl.py) with DesignWare's
// non-IEEE conventions around it:
//
//   DW_fp_add, ieee_compliance = 0          this module
//   ------------------------------------    ---------------------------------------------------
//   denormal inputs read as zero            ftz=true: subnormal inputs are zeros of their sign
//   no denormal results (flushed to zero)   ftz=true: a result whose exponent field is 0 after
//                                           rounding becomes a zero of the result's sign
//   NaN inputs treated as infinities        an input with an all-ones exponent has its fraction
//                                           cleared here: it enters the adder as +-Inf
//   no NaN output                           the adder's only NaN left is Inf + (-Inf); it is
//                                           returned as +Inf (exponent all ones, fraction 0)
//   rnd = 3'b000: round to nearest even     rounding=rne (rnd is not read: the authors tie it
//                                           to 3'b000; other modes are not modelled)
//   overflow -> +-Inf under RNE             the same (IEEE overflow of tcgen's adder)
//   status[7:0] flags                       tied to 0 (the authors leave it unconnected)
//
// Where it may differ from DesignWare (not checkable without DesignWare's model; the script's
// numerics count how often each case occurs in the measured vectors):
//   - the sign of a flushed result and of an exact-cancellation zero (here: the IEEE sign under
//     RNE, +0 for x + (-x); a flushed tiny result keeps its sign);
//   - whether a result that rounds up to the smallest normal from just below it is flushed
//     (here: tininess after rounding -- it is kept; a sum of two normals that lands below the
//     smallest normal is exact, so in this adder the question only arises after DAZ);
//   - the sign of Inf - Inf (here +Inf).
// Only FP16 (sig_width 10, exp_width 5) is provided: any other parameters stop elaboration.
module DW_fp_add #(
  parameter integer sig_width = 23,
  parameter integer exp_width = 8,
  parameter integer ieee_compliance = 0
) (
  input  logic [sig_width+exp_width:0] a,
  input  logic [sig_width+exp_width:0] b,
  input  logic [2:0]                   rnd,
  output logic [sig_width+exp_width:0] z,
  output logic [7:0]                   status
);
  // other formats: an instance of a module that does not exist stops elaboration in every
  // tool (Icarus has no elaboration-time $error)
  if (sig_width != 10 || exp_width != 5 || ieee_compliance != 0) begin : unsupported
    lut_authors_dw_fp_add_supports_only_fp16_ieee_compliance_0 stop ();
  end

  localparam integer W = sig_width + exp_width + 1;
  localparam logic [exp_width-1:0] EXP_ONES = {exp_width{1'b1}};

  logic [W-1:0] a_i, b_i, y;
  // NaN inputs are infinities: an all-ones exponent field with its fraction cleared
  assign a_i = (a[W-2:sig_width] == EXP_ONES) ? {a[W-1], EXP_ONES, {sig_width{1'b0}}} : a;
  assign b_i = (b[W-2:sig_width] == EXP_ONES) ? {b[W-1], EXP_ONES, {sig_width{1'b0}}} : b;

  lut_authors_fp16_add_ftz add (.a(a_i), .b(b_i), .y(y));

  // no NaN output: Inf + (-Inf), the only NaN the adder can still make, returns +Inf
  assign z = (y[W-2:sig_width] == EXP_ONES && y[sig_width-1:0] != '0)
             ? {1'b0, EXP_ONES, {sig_width{1'b0}}} : y;
  assign status = 8'd0;
endmodule
