"""Model of tiled_transpose/kernel.cu: out (8 x 4) is in (4 x 8) transposed."""
from _int32 import run_blocks


def tiled_transpose(block, in_, out, rows=4, cols=8):
    for r in range(2 * block.blockIdx, 2 * block.blockIdx + 2):
        for c in range(cols):
            out[c * rows + r] = in_[r * cols + c]


def model(launch):
    return run_blocks(launch, tiled_transpose)
