"""The launches of the cooperative fuzz: a case (kernel and launch), the shape of a launch
and of its arrays, and the choice of one that fits the machine's memory
(`cooperative_generator.py` writes the kernels).

A launch has 1 to 3 blocks; a block at most 8 warps' worth of threads in all the blocks
(`MAX_WARPS`, 4 lanes each), sometimes a single warp (where atomics' old values are read),
whole warps or not.  Its memory is the buffers `in`, `out` (rows a thread), `atomics` (4
words) and `bytes` (a byte or halfword a thread), and each block's shared window: one word a
thread (`fuzz_words`), a power of two of counters (`fuzz_counts`) and two bytes a thread
(`fuzz_bytes`); all of it within the 126 words, rows and then the block made smaller where
it does not fit.
"""

from __future__ import annotations

import random
from dataclasses import dataclass

KERNEL = "fuzz"
LANES = 4
MAX_WARPS = 8
MEMORY_WORDS = 126
GLOBAL_ATOMIC_WORDS = 4
# atom.OP and the types PTX allows it (ISA, "atom"): .b32 for the bitwise ones, exch, cas
ATOMIC_TYPES = {"add": ["u32", "s32"], "min": ["u32", "s32"], "max": ["u32", "s32"],
                "inc": ["u32"], "dec": ["u32"], "and": ["b32"], "or": ["b32"],
                "xor": ["b32"], "exch": ["b32"], "cas": ["b32"]}
COMMUTING = ["add", "min", "max", "and", "or", "xor"]


@dataclass
class CooperativeCase:
    """A kernel and a launch of it: what both sides of the differential test run."""

    seed: int
    ptx: str
    grid: int
    block: int
    buffers: dict[str, list[int]]
    args: list

    def launch_json(self, source: str) -> dict:
        """A launch file's contents (docs/launch.md) for this case, with `source` the .ptx."""
        return {"source": source, "kernel": KERNEL, "grid": self.grid, "block": self.block,
                "buffers": self.buffers, "args": self.args}


@dataclass
class Shape:
    """The launch and the sizes of the kernel's arrays."""

    grid: int
    block: int
    row_in: int
    row_out: int
    counters: int                    # words of fuzz_counts, a power of two <= block
    byte_words: int                  # words of fuzz_bytes: 2 bytes a thread
    global_store_bytes: int          # 1 or 2: the kernel's st.global.u8 or .u16
    global_op: tuple[str, str]       # the one atomic of a multi-warp kernel on `atomics`

    @property
    def warps(self) -> int:          # warps a block
        return -(-self.block // LANES)

    @property
    def threads(self) -> int:
        return self.grid * self.block

    @property
    def single_warp(self) -> bool:
        return self.grid == 1 and self.block <= LANES

    @property
    def whole_warps(self) -> bool:
        return self.block % LANES == 0

    def memory_words(self) -> int:
        shared = self.block + self.counters + self.byte_words
        return self.grid * shared + self.threads * (self.row_in + self.row_out) + \
            GLOBAL_ATOMIC_WORDS + -(-self.threads * self.global_store_bytes // 4)


def random_shape(rng: random.Random) -> Shape:
    grid = rng.choice([1, 1, 1, 2, 2, 3])
    if rng.random() < 0.3:
        block = rng.randint(1, LANES) if grid == 1 else LANES * rng.randint(1, 2)
    else:
        limit = LANES * (MAX_WARPS // grid)
        block = rng.choice([LANES * rng.randint(1, limit // LANES), rng.randint(1, limit)])
    while True:
        counters = 1 << (min(block, 8).bit_length() - 1)
        shape = Shape(grid, block, rng.randint(1, 2), rng.randint(1, 3), counters,
                      -(-block // 2), rng.choice([1, 2]),
                      (op := rng.choice(COMMUTING), rng.choice(ATOMIC_TYPES[op])))
        for rows in [(shape.row_in, shape.row_out), (1, shape.row_out), (1, 1)]:
            shape.row_in, shape.row_out = rows
            if shape.memory_words() <= MEMORY_WORDS:
                return shape
        block -= 1 if block % LANES or block <= LANES else LANES
