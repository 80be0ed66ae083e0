// An integer hash: xor-shifts, multiplies by odd constants, a rotate and a signed clamp.
extern "C" __global__ void hash_mix(const unsigned *in, unsigned *h, int *clamped, int lim)
{
    int t = threadIdx.x;
    unsigned x = in[t] + (unsigned)t;
    x ^= x >> 16;
    x *= 0x45d9f3bu;
    x ^= x >> 16;
    x = (x << 13) | (x >> 19);
    h[t] = x;
    int s = (int)x;
    clamped[t] = max(-lim, min(s, lim));
}
