// Grayscale of packed RGBA pixels (byte 0 red, 1 green, 2 blue, 3 alpha).  nvcc computes
// 77 r + 150 g + 29 b with one dp4a and packs the bytes with prmt; the gray pixel keeps the
// alpha, and __byte_perm reorders each pixel's bytes by a run-time code (a prmt whose
// selector is a register: four nibbles of `order`, chosen by the thread).
extern "C" __global__ void grayscale(const uchar4 *rgba, unsigned *gray, unsigned *swizzled,
                                     unsigned order)
{
    int t = threadIdx.x;
    uchar4 p = rgba[t];
    unsigned y = (77 * p.x + 150 * p.y + 29 * p.z) >> 8;
    unsigned word = *(const unsigned *)&rgba[t];
    gray[t] = y | (y << 8) | (y << 16) | (word & 0xFF000000u);
    swizzled[t] = __byte_perm(word, gray[t], order >> (4 * (t & 3)));
}
