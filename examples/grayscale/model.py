"""Model of grayscale/kernel.cu: y = (77 r + 150 g + 29 b) >> 8 of each RGBA pixel, the gray
pixel (y, y, y, alpha), and __byte_perm(pixel, gray, order >> 4 (t & 3)): result byte i is
byte (s >> 4i) & 7 of the eight bytes {gray, pixel} (the pixel's are 0..3)."""
from _int32 import run_grid, shr_u, to_unsigned


def byte_perm(x, y, s):
    eight = to_unsigned(x) | to_unsigned(y) << 32
    return sum(((eight >> (8 * ((s >> (4 * i)) & 7))) & 0xFF) << (8 * i) for i in range(4))


def grayscale(th, rgba, gray, swizzled, order):
    t = th.threadIdx
    word = to_unsigned(rgba[t])
    r, g, b = word & 0xFF, (word >> 8) & 0xFF, (word >> 16) & 0xFF
    y = (77 * r + 150 * g + 29 * b) >> 8
    gray[t] = y | (y << 8) | (y << 16) | (word & 0xFF000000)
    swizzled[t] = byte_perm(word, gray[t], shr_u(order, 4 * (t & 3)))


def model(launch):
    return run_grid(launch, grayscale)
