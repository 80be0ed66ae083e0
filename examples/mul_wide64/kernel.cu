// Wide multiply: the full 64-bit product of two 32-bit values (signed and unsigned), stored
// as low word then high word.  nvcc keeps the product in a 64-bit register (mul.wide),
// so the loader has to lower 64-bit data, not only 64-bit addresses.
extern "C" __global__ void mul_wide64(const int *a, const int *b, int *out)
{
    int t = threadIdx.x;
    int x = a[t];
    int y = b[t];
    long long p = (long long)x * (long long)y;
    unsigned long long q = (unsigned long long)(unsigned)x * (unsigned)y;
    int *o = out + 4 * t;
    o[0] = (int)(unsigned)p;
    o[1] = (int)(p >> 32);
    o[2] = (int)(unsigned)q;
    o[3] = (int)(q >> 32);
}
