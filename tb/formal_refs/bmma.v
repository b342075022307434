// References for the bmma family's datapath (one fold cycle of bmma_array): an output channel
// nxt = (take_c ? c : acc) + popcount(a OP b) modulo 2^W, and a ROWS x COLS tile of them.
// OP: 0 = XOR (Turing), 1 = AND; the _sel variants take OP from the op input (1 = AND).
module ref_bmma_channel #(parameter KC = 8, parameter W = 8, parameter OP = 0) (
  input  [KC-1:0] a,
  input  [KC-1:0] b,
  input  take_c,
  input  [W-1:0] c,
  input  [W-1:0] acc,
  output reg [W-1:0] nxt
);
  integer t;
  always @* begin
    nxt = take_c ? c : acc;
    for (t = 0; t < KC; t = t + 1)
      nxt = nxt + (OP ? (a[t] & b[t]) : (a[t] ^ b[t]));
  end
endmodule

module ref_bmma_channel_sel #(parameter KC = 8, parameter W = 8) (
  input  [KC-1:0] a,
  input  [KC-1:0] b,
  input  op,
  input  take_c,
  input  [W-1:0] c,
  input  [W-1:0] acc,
  output reg [W-1:0] nxt
);
  integer t;
  always @* begin
    nxt = take_c ? c : acc;
    for (t = 0; t < KC; t = t + 1)
      nxt = nxt + (op ? (a[t] & b[t]) : (a[t] ^ b[t]));
  end
endmodule

// The tile: row i of A is a[i*KC +: KC], column j of B is b[j*KC +: KC]; accumulators
// (c, acc, nxt) row-major, channel (i, j) at [(i*COLS + j)*W +: W].
module ref_bmma_tile #(parameter ROWS = 2, parameter COLS = 2, parameter KC = 4,
                       parameter W = 8) (
  input  [ROWS*KC-1:0] a,
  input  [COLS*KC-1:0] b,
  input  op,
  input  take_c,
  input  [ROWS*COLS*W-1:0] c,
  input  [ROWS*COLS*W-1:0] acc,
  output reg [ROWS*COLS*W-1:0] nxt
);
  integer i, j, t;
  reg [W-1:0] s;
  always @* begin
    nxt = 0;
    for (i = 0; i < ROWS; i = i + 1)
      for (j = 0; j < COLS; j = j + 1) begin
        s = take_c ? c[(i*COLS+j)*W +: W] : acc[(i*COLS+j)*W +: W];
        for (t = 0; t < KC; t = t + 1)
          s = s + (op ? (a[i*KC+t] & b[j*KC+t]) : (a[i*KC+t] ^ b[j*KC+t]));
        nxt[(i*COLS+j)*W +: W] = s;
      end
  end
endmodule

// The INT8 MAC array's channel (its baseline): nxt = base + sum_t a_t * b_t, signed INT8
// pairs (a_t = a[8t +: 8]), one $mul each.
module ref_int8_mac_channel #(parameter CHUNK = 1, parameter W = 32) (
  input  [CHUNK*8-1:0] a,
  input  [CHUNK*8-1:0] b,
  input  take_c,
  input  [W-1:0] c,
  input  [W-1:0] acc,
  output reg [W-1:0] nxt
);
  integer t;
  reg signed [W+15:0] p;        // the product, sign-extended past W
  always @* begin
    nxt = take_c ? c : acc;
    for (t = 0; t < CHUNK; t = t + 1) begin
      p = $signed(a[8*t +: 8]) * $signed(b[8*t +: 8]);
      nxt = nxt + p[W-1:0];
    end
  end
endmodule
