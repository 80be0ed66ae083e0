"""32-bit integer helpers for the example models, with CUDA C semantics, and the grid loop.

The models in `examples/*/model.py` are plain-Python readings of each `kernel.cu`: one
function per thread, run for every (blockIdx, threadIdx) of the launch (each a `Dim3`: an
int, its x, with `.x`, `.y`, `.z`, for launches of 2 and 3 dimensions).  They never use the
project's own code.  Conventions:

- an `int` variable of the kernel is a Python int in [-2**31, 2**31); an `unsigned` variable
  is a Python int in [0, 2**32).  `to_signed` / `to_unsigned` are the C conversions.
- signed `+ - *` in C is undefined on overflow, so `sadd`, `ssub`, `smul`, `sneg` raise
  `SignedOverflow` instead of wrapping: an example whose data overflowed signed arithmetic
  would be a broken example, not a test.  Unsigned arithmetic wraps (`uadd`, `usub`, `umul`).
- shifts follow C: the count must be in 0..31 (anything else is undefined in C and raises).
  `shl` works on the bits and returns them unsigned; `shr_s` is the arithmetic shift of an
  int, `shr_u` the logical shift of an unsigned.
- a pointer argument is a `Buffer`: indexing it reads a signed 32-bit word; storing wraps the
  value to 32 bits.  An index outside the buffer raises `AddressFault` (the examples only ever
  leave their buffer in `out_of_bounds`, which goes past all 126 words of memory).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

MASK32 = 0xFFFF_FFFF
INT_MIN = -(2**31)
INT_MAX = 2**31 - 1
UINT_MAX = 2**32 - 1


class SignedOverflow(ArithmeticError):
    """Signed 32-bit overflow: undefined behaviour in C, so the example's data is wrong."""


class AddressFault(IndexError):
    """A load or store outside its buffer."""


class UndefinedShift(ValueError):
    """A shift count outside 0..31 (undefined in C)."""


# --- conversions --------------------------------------------------------------------------

def wrap(x: int) -> int:
    """Reduce to 32 bits, as an unsigned value in [0, 2**32)."""
    return x & MASK32


to_unsigned = wrap


def to_signed(x: int) -> int:
    """Reduce to 32 bits, read as two's complement: [-2**31, 2**31)."""
    x &= MASK32
    return x - (1 << 32) if x & 0x8000_0000 else x


def _check_signed(x: int, what: str) -> int:
    if not INT_MIN <= x <= INT_MAX:
        raise SignedOverflow(f"signed overflow in {what}: {x}")
    return x


# --- arithmetic ---------------------------------------------------------------------------

def sadd(a: int, b: int) -> int:
    return _check_signed(a + b, "int +")


def ssub(a: int, b: int) -> int:
    return _check_signed(a - b, "int -")


def smul(a: int, b: int) -> int:
    return _check_signed(a * b, "int *")


def sneg(a: int) -> int:
    return _check_signed(-a, "int unary -")


def uadd(a: int, b: int) -> int:
    return wrap(a + b)


def usub(a: int, b: int) -> int:
    return wrap(a - b)


def umul(a: int, b: int) -> int:
    return wrap(a * b)


def sdiv(a: int, b: int) -> int:
    """C int division: truncates towards zero."""
    if b == 0:
        raise ZeroDivisionError("int division by zero")
    q = abs(a) // abs(b)
    q = q if (a >= 0) == (b >= 0) else -q
    return _check_signed(q, "int /")


def srem(a: int, b: int) -> int:
    """C int remainder: takes the sign of the dividend."""
    return a - sdiv(a, b) * b


def udiv(a: int, b: int) -> int:
    return wrap(a) // wrap(b)


def urem(a: int, b: int) -> int:
    return wrap(a) % wrap(b)


def mulhi_s(a: int, b: int) -> int:
    """__mulhi: high 32 bits of the 64-bit signed product."""
    return to_signed((to_signed(a) * to_signed(b)) >> 32)


def mulhi_u(a: int, b: int) -> int:
    """__umulhi: high 32 bits of the 64-bit unsigned product."""
    return (wrap(a) * wrap(b)) >> 32


def mul_wide_s(a: int, b: int) -> int:
    """(long long)a * b: the exact signed 64-bit product."""
    return to_signed(a) * to_signed(b)


def mul_wide_u(a: int, b: int) -> int:
    """(unsigned long long)a * b: the exact unsigned 64-bit product."""
    return wrap(a) * wrap(b)


def lo32(x: int) -> int:
    """(unsigned) of a 64-bit value: its low word."""
    return wrap(x)


def hi32(x: int) -> int:
    """(unsigned)(x >> 32) of a 64-bit value (arithmetic shift for signed x): its high word."""
    return wrap(x >> 32)


# --- shifts and bits ----------------------------------------------------------------------

def _count(k: int) -> int:
    if not 0 <= k <= 31:
        raise UndefinedShift(f"shift by {k}")
    return k


def shl(x: int, k: int) -> int:
    """x << k on a 32-bit word; returns the bits as unsigned (use to_signed for an int)."""
    return wrap(wrap(x) << _count(k))


def shr_u(x: int, k: int) -> int:
    """(unsigned)x >> k: logical shift."""
    return wrap(x) >> _count(k)


def shr_s(x: int, k: int) -> int:
    """(int)x >> k: arithmetic shift (nvcc's meaning of >> on a negative int)."""
    return to_signed(x) >> _count(k)


def rotl(x: int, k: int) -> int:
    """Rotate the 32-bit word left by k mod 32; unsigned result."""
    k &= 31
    x = wrap(x)
    return wrap((x << k) | (x >> (32 - k))) if k else x


def rotr(x: int, k: int) -> int:
    return rotl(x, (32 - (k & 31)) & 31)


def band(a: int, b: int) -> int:
    return wrap(a) & wrap(b)


def bor(a: int, b: int) -> int:
    return wrap(a) | wrap(b)


def bxor(a: int, b: int) -> int:
    return wrap(a) ^ wrap(b)


def bnot(a: int) -> int:
    return wrap(~a)


# --- memory and the grid ------------------------------------------------------------------

class Buffer:
    """A global-memory buffer of 32-bit words, seen through an `int *` / `unsigned *`."""

    def __init__(self, name: str, words: list[int]):
        self.name = name
        self.words = [to_signed(w) for w in words]

    def _index(self, i: int) -> int:
        if not isinstance(i, int) or not 0 <= i < len(self.words):
            raise AddressFault(f"{self.name}[{i}] is outside its {len(self.words)} words")
        return i

    def __getitem__(self, i: int) -> int:
        """The word as an int (use to_unsigned for an unsigned pointer)."""
        return self.words[self._index(i)]

    def __setitem__(self, i: int, value: int) -> None:
        self.words[self._index(i)] = to_signed(value)

    def __len__(self) -> int:
        return len(self.words)


class Dim3(int):
    """CUDA's uint3/dim3: `.x`, `.y`, `.z`; as an int it is its x, so that a 1-D model reads
    `th.threadIdx` and a 2-D one `th.threadIdx.y`."""

    def __new__(cls, x: int, y: int = 0, z: int = 0):
        value = super().__new__(cls, x)
        value.x, value.y, value.z = x, y, z
        return value

    def __repr__(self) -> str:
        return f"Dim3({self.x}, {self.y}, {self.z})"


@dataclass(frozen=True)
class Thread:
    """The special registers of one CUDA thread: threadIdx, blockIdx, blockDim, gridDim."""

    threadIdx: Dim3
    blockIdx: Dim3
    blockDim: Dim3
    gridDim: Dim3


def dims(value) -> Dim3:
    """A launch file's `grid`/`block` (a number, or a list of 1 to 3 numbers) as a Dim3."""
    if isinstance(value, int):
        return Dim3(value, 1, 1)
    padded = list(value) + [1] * (3 - len(value))
    return Dim3(*padded)


def points(shape: Dim3) -> list[Dim3]:
    """Every index of a shape, as CUDA lists them (z outermost, x innermost)."""
    return [Dim3(x, y, z) for z in range(shape.z) for y in range(shape.y)
            for x in range(shape.x)]


def _one_pass(launch: dict, thread_fn: Callable, order: str) -> dict:
    buffers = {name: Buffer(name, words) for name, words in launch["buffers"].items()}
    args = []
    for arg in launch["args"]:
        if isinstance(arg, str):
            args.append(buffers[arg])
        else:
            args.append(to_signed(arg))
    grid, block = dims(launch["grid"]), dims(launch["block"])
    threads = [(b, t) for b in points(grid) for t in points(block)]
    if order == "reverse":
        threads.reverse()
    for b, t in threads:
        thread_fn(Thread(t, b, block, grid), *args)
    return {name: buf.words for name, buf in buffers.items()}


def run_grid(launch: dict, thread_fn: Callable) -> dict:
    """Run `thread_fn(thread, *args)` for every thread of the launch; return the final
    buffers as {"buffers": {name: [int32...]}}.

    CUDA gives no order between threads, so the grid is run twice, threads in forward and in
    reverse order; the examples are race-free, so both must agree (a disagreement means the
    kernel has a race and is not a valid example)."""
    forward = _one_pass(launch, thread_fn, "forward")
    backward = _one_pass(launch, thread_fn, "reverse")
    if forward != backward:
        raise AssertionError("the result depends on thread order: the kernel has a race")
    return {"buffers": forward}


# --- blocks and warps: for kernels whose threads cooperate ------------------------------

WARP_SIZE = 4        # QwenGPU's warps (warpSize in CUDA, WARP_SZ in PTX)


@dataclass(frozen=True)
class Group:
    """A block (or a warp) of threads the model runs as one: `threads` are their threadIdx."""

    blockIdx: int
    blockDim: int
    gridDim: int
    threads: tuple[int, ...]

    @property
    def first(self) -> int:
        """The global index of the block's thread 0."""
        return self.blockIdx * self.blockDim


def _arguments(launch: dict) -> tuple[dict, list]:
    buffers = {name: Buffer(name, words) for name, words in launch["buffers"].items()}
    args = [buffers[arg] if isinstance(arg, str) else to_signed(arg) for arg in launch["args"]]
    return buffers, args


def run_blocks(launch: dict, block_fn: Callable) -> dict:
    """Run `block_fn(block, *args)` once a block: for kernels whose threads share memory and
    barriers, written as the block's phases (what holds between two __syncthreads)."""
    buffers, args = _arguments(launch)
    grid, block = launch["grid"], launch["block"]
    for b in range(grid):
        block_fn(Group(b, block, grid, tuple(range(block))), *args)
    return {"buffers": {name: buf.words for name, buf in buffers.items()}}


def run_warps(launch: dict, warp_fn: Callable) -> dict:
    """Run `warp_fn(warp, *args)` once a warp of WARP_SIZE threads (the last may be short):
    for kernels of shuffles, votes, and atomics whose order within a warp matters."""
    buffers, args = _arguments(launch)
    grid, block = launch["grid"], launch["block"]
    for b in range(grid):
        for first in range(0, block, WARP_SIZE):
            threads = tuple(range(first, min(first + WARP_SIZE, block)))
            warp_fn(Group(b, block, grid, threads), *args)
    return {"buffers": {name: buf.words for name, buf in buffers.items()}}
