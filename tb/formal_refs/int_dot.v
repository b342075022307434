// Reference for tcgen's `int_dot`: y = c + sum_k a[k] * b[k] modulo 2^ACC, a naive sum of
// products (one $mul per pair, added in order), operands two's complement when SIGNED.
// a[k] is bits [k*AW +: AW] of a (b likewise).
module ref_int_dot #(parameter K = 4, parameter AW = 8, parameter BW = 8, parameter ACC = 32,
                     parameter SIGNED = 1) (
  input  [K*AW-1:0] a,
  input  [K*BW-1:0] b,
  input  [ACC-1:0]  c,
  output reg [ACC-1:0] y
);
  integer k;
  reg signed [AW:0] ak;
  reg signed [BW:0] bk;
  reg signed [AW+BW+1:0] prod;
  reg [ACC+AW+BW+1:0] prod_ext;
  always @* begin
    y = c;
    for (k = 0; k < K; k = k + 1) begin
      ak = SIGNED ? {a[k*AW+AW-1], a[k*AW +: AW]} : {1'b0, a[k*AW +: AW]};
      bk = SIGNED ? {b[k*BW+BW-1], b[k*BW +: BW]} : {1'b0, b[k*BW +: BW]};
      prod = ak * bk;
      prod_ext = {{(ACC){prod[AW+BW+1]}}, prod};
      y = y + prod_ext[ACC-1:0];
    end
  end
endmodule
