// One thread evaluates c[0] + c[1] x + ... + c[m-1] x^(m-1) at every x[k] by Horner's rule and
// writes the value over x[k]: two nested loops, the inner one counting down, mad.lo in
// unsigned arithmetic (wraps mod 2^32).  For a one-lane, one-warp QwenGPU (grid 1, block 1).
extern "C" __global__ void serial_horner(const unsigned *c, int m, unsigned *x, int count)
{
#pragma unroll 1
    for (int k = 0; k < count; k++) {
        unsigned v = x[k];
        unsigned h = 0;
#pragma unroll 1
        for (int j = m - 1; j >= 0; j--)
            h = h * v + c[j];
        x[k] = h;
    }
}
