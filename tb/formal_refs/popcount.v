// Reference for tcgen's `popcount`: the number of ones in x, summed by a ripple chain of
// adders (count = ((x[0] + x[1]) + x[2]) + ...), written without any of tcgen's RTL.
module ref_popcount #(parameter N = 8, parameter W = 4) (
  input  [N-1:0] x,
  output reg [W-1:0] count
);
  integer i;
  always @* begin
    count = 0;
    for (i = 0; i < N; i = i + 1)
      count = count + x[i];
  end
endmodule
