// Reference for tcgen's `int_mul`: p = a * b with Yosys's own multiplier ($mul), operands
// sign- or zero-extended by one bit so that one signed multiply covers every signedness.
module ref_int_mul #(parameter AW = 8, parameter BW = 8, parameter AS = 0, parameter BS = 0) (
  input  [AW-1:0] a,
  input  [BW-1:0] b,
  output [AW+BW-1:0] p
);
  wire signed [AW:0] ax = AS ? {a[AW-1], a} : {1'b0, a};
  wire signed [BW:0] bx = BS ? {b[BW-1], b} : {1'b0, b};
  wire signed [AW+BW+1:0] full = ax * bx;
  assign p = full[AW+BW-1:0];
endmodule
