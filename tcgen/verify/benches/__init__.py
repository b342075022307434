"""cocotb test modules run by tb.harness (one process per simulation)."""
