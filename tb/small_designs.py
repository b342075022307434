"""Small hand-written designs the flow's tests synthesize (not tcgen units)."""

#: a registered accumulator with a synchronous reset and a little combinational logic beside
#: it: flip-flops, a reset, an adder and XORs on one small netlist
ACC = """module acc(input clk, input rst, input [15:0] a, input [1:0] op, output [11:0] q,
                 output [3:0] flags);
  reg [11:0] r;
  always @(posedge clk) if (rst) r <= 0; else r <= op[0] ? r + a[11:0] : r ^ a[15:4];
  assign q = r;
  assign flags = {^r, &r[3:0], |a, op[1]};
endmodule
"""
