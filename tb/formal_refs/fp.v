// References for tcgen's fp_add and fp_mul on small formats (FP8 E4M3 and E5M2; FP16 for the
// adder), written from the format definitions (IEEE 754; OCP FP8 for E4M3) without any of
// tcgen's RTL or model: the exact result as an integer, then one straightforward rounding.
//
// Parameters: E exponent bits, M fraction bits, IEEE = 1 for IEEE-style formats (E5M2:
// infinities, NaN = exponent all ones and a non-zero fraction) or 0 for OCP E4M3 (no
// infinities, NaN = S.1111.111 only, largest finite 448), RTZ = 1 round toward zero, else to
// nearest even.  Results: NaN canonical (IEEE: 0.11111.10...; E4M3: 0.1111.111); overflow goes
// to +-inf (RNE, IEEE), to NaN (RNE, E4M3) or to +-max finite (RTZ); an exact zero sum is -0
// only for (-0) + (-0).  No flush-to-zero.

// y = (-1)^sign * mag * 2^-F * u, u = 2^(1 - bias - M) the smallest subnormal, rounded.
// Bits of mag above the leading one's position - M (or below F, whichever is higher) are
// dropped: q the kept bits, r the dropped ones; the encoding of the magnitude is then
// ((sh - F) << M) + q (+1 to round up), which also covers subnormals, the carry into the
// next binade and the step from the largest subnormal to the smallest normal.
module ref_fp_round #(parameter E = 4, parameter M = 3, parameter IEEE = 1,
                      parameter RTZ = 0, parameter W = 32, parameter F = 0) (
  input  [W-1:0] mag,
  input  sign,
  output reg [E+M:0] y
);
  localparam [E+M-1:0] MAXF = IEEE ? ((((1 << E) - 2) << M) | ((1 << M) - 1))
                                   : ((((1 << E) - 1) << M) | ((1 << M) - 2));
  localparam [E+M-1:0] INF = ((1 << E) - 1) << M;
  integer i, p, sh;
  reg [W-1:0] q, r, half;
  reg up;
  reg [W+1:0] enc;
  always @* begin
    p = 0;
    for (i = 0; i < W; i = i + 1)
      if (mag[i]) p = i;
    sh = (p > M + F) ? p - M : F;       // never negative (no signed compare to trust)
    q = mag >> sh;
    r = mag - (q << sh);
    half = (sh == 0) ? 0 : (1 << (sh - 1));
    up = !RTZ && sh > 0 && (r > half || (r == half && q[0]));
    enc = ((sh - F) << M) + q + up;
    if (enc > MAXF) begin
      if (RTZ) y = {sign, MAXF};
      else if (IEEE) y = {sign, INF};
      else y = {1'b0, {(E + M){1'b1}}};
    end else
      y = {sign, enc[E+M-1:0]};
  end
endmodule

// a + b: both operands as exact integers in units of u (v = significand << (exponent - 1)),
// added or subtracted (larger minus smaller), then rounded.
module ref_fp_add #(parameter E = 4, parameter M = 3, parameter IEEE = 1,
                    parameter RTZ = 0) (
  input  [E+M:0] a,
  input  [E+M:0] b,
  output reg [E+M:0] y
);
  localparam W = M + 1 + (1 << E);
  localparam [E+M:0] NAN = IEEE ? ({(E + 1){1'b1}} << (M - 1)) & {1'b0, {(E + M){1'b1}}}
                                : {1'b0, {(E + M){1'b1}}};
  wire sa = a[E+M], sb = b[E+M];
  wire [E-1:0] ea = a[E+M-1:M], eb = b[E+M-1:M];
  wire [M-1:0] fa = a[M-1:0], fb = b[M-1:0];
  wire nan_a = IEEE ? (&ea && |fa) : (&ea && &fa);
  wire nan_b = IEEE ? (&eb && |fb) : (&eb && &fb);
  wire inf_a = IEEE && &ea && !(|fa);
  wire inf_b = IEEE && &eb && !(|fb);
  wire [W-1:0] va = (ea == 0) ? fa : ({1'b1, fa} << (ea - 1));
  wire [W-1:0] vb = (eb == 0) ? fb : ({1'b1, fb} << (eb - 1));
  reg [W-1:0] s;
  reg sign;
  always @* begin
    if (sa == sb) begin s = va + vb; sign = sa; end
    else if (va >= vb) begin s = va - vb; sign = sa; end
    else begin s = vb - va; sign = sb; end
    if (s == 0) sign = sa & sb;
  end
  wire [E+M:0] r;
  ref_fp_round #(.E(E), .M(M), .IEEE(IEEE), .RTZ(RTZ), .W(W), .F(0))
    rnd (.mag(s), .sign(sign), .y(r));
  always @* begin
    if (nan_a || nan_b || (inf_a && inf_b && sa != sb)) y = NAN;
    else if (inf_a) y = a;
    else if (inf_b) y = b;
    else y = r;
  end
endmodule

// a * b: the exact significand product shifted by the exponents, in units of u * 2^-F with
// F = bias + M - 1 (so the shift is never negative), then rounded.
module ref_fp_mul #(parameter E = 4, parameter M = 3, parameter IEEE = 1,
                    parameter RTZ = 0) (
  input  [E+M:0] a,
  input  [E+M:0] b,
  output reg [E+M:0] y
);
  localparam W = 2 * M + 2 + 2 * (1 << E);
  localparam F = (1 << (E - 1)) - 1 + M - 1;
  localparam [E+M:0] NAN = IEEE ? ({(E + 1){1'b1}} << (M - 1)) & {1'b0, {(E + M){1'b1}}}
                                : {1'b0, {(E + M){1'b1}}};
  localparam [E+M-1:0] INF = ((1 << E) - 1) << M;
  wire sa = a[E+M], sb = b[E+M];
  wire [E-1:0] ea = a[E+M-1:M], eb = b[E+M-1:M];
  wire [M-1:0] fa = a[M-1:0], fb = b[M-1:0];
  wire nan_a = IEEE ? (&ea && |fa) : (&ea && &fa);
  wire nan_b = IEEE ? (&eb && |fb) : (&eb && &fb);
  wire inf_a = IEEE && &ea && !(|fa);
  wire inf_b = IEEE && &eb && !(|fb);
  wire zero_a = a[E+M-1:0] == 0, zero_b = b[E+M-1:0] == 0;
  wire [M:0] siga = {ea != 0, fa}, sigb = {eb != 0, fb};
  wire [E:0] xa = (ea == 0) ? 1 : ea, xb = (eb == 0) ? 1 : eb;
  wire [W-1:0] prod = siga * sigb;
  wire [W-1:0] mag = prod << (xa + xb - 2);
  wire [E+M:0] r;
  ref_fp_round #(.E(E), .M(M), .IEEE(IEEE), .RTZ(RTZ), .W(W), .F(F))
    rnd (.mag(mag), .sign(sa ^ sb), .y(r));
  always @* begin
    if (nan_a || nan_b || (inf_a && zero_b) || (inf_b && zero_a)) y = NAN;
    else if (inf_a || inf_b) y = {sa ^ sb, INF};
    else y = r;
  end
endmodule
