"""Model of spmv/kernel.cu: y[r] = sum of value[k] * x[column[k]] over row r's entries, in 64
bits (a long long is two words, low first)."""
from _int32 import lo32, hi32, mul_wide_s, run_grid, to_unsigned


def spmv(th, row_start, column, value, x, y, nonzeros, cols):
    r = th.blockIdx * th.blockDim + th.threadIdx
    begin, end = max(row_start[r], 0), min(row_start[r + 1], nonzeros)
    s = 0
    for k in range(begin, end):
        c = column[k]
        if to_unsigned(c) < to_unsigned(cols):
            s += mul_wide_s(value[k], x[c])
    assert -(1 << 63) <= s < 1 << 63
    y[2 * r], y[2 * r + 1] = lo32(s), hi32(s)


def model(launch):
    return run_grid(launch, spmv)
