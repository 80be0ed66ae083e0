"""Model of byte_stores/kernel.cu: bytes[t] = (v*3 + t) mod 256, halves[t] = (short)(v -
1000 t), little-endian within the words; the other bytes keep their initial value."""
from _int32 import run_grid, to_signed, to_unsigned


def store_part(buffer, index: int, size: int, value: int) -> None:
    """Write the `size`-byte little-endian element `index` of a word buffer."""
    per_word = 4 // size
    word, part = divmod(index, per_word)
    shift, mask = 8 * size * part, (1 << (8 * size)) - 1
    old = to_unsigned(buffer[word])
    buffer[word] = to_signed((old & ~(mask << shift)) | ((value & mask) << shift))


def byte_stores(th, in_, bytes_, halves):
    t = th.threadIdx
    v = in_[t]
    store_part(bytes_, t, 1, v * 3 + t)
    store_part(halves, t, 2, v - 1000 * t)


def model(launch):
    return run_grid(launch, byte_stores)
