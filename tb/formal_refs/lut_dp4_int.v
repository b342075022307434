// Reference for tcgen's `lut_dp4` with INT table entries: one plane step of the LUT unit as a
// naive multiply-accumulate, y = c +- lut[idx] * 2^plane modulo 2^ACC (minus when sign is
// set): the entry times the plane's weight 2^plane on Yosys's multiplier ($mul), negated,
// added.  lut[i] is bits [i*EW +: EW] of lut, a two's complement entry.
module ref_lut_dp4_int #(parameter K = 4, parameter EW = 8, parameter ACC = 24,
                         parameter PB = 1) (
  input  [(1 << (K-1))*EW-1:0] lut,
  input  sign,
  input  [K-2:0] idx,
  input  [PB-1:0] plane,
  input  [ACC-1:0] c,
  output [ACC-1:0] y
);
  localparam WW = (1 << PB) + 1;          // bits of the signed weight 2^plane, plane < 2^PB
  wire signed [EW-1:0] entry = lut[idx*EW +: EW];
  wire signed [WW-1:0] weight = 1 <<< plane;
  wire signed [ACC+EW+WW-1:0] product = entry * weight;
  wire signed [ACC+EW+WW-1:0] term = sign ? -product : product;
  assign y = c + term[ACC-1:0];
endmodule
