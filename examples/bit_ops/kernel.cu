// Shifts, xor and rotates on unsigned words.  Each thread writes five results.
extern "C" __global__ void bit_ops(const unsigned *x, const unsigned *k, unsigned *out)
{
    unsigned t = threadIdx.x;
    unsigned v = x[t];
    unsigned s = k[t] & 31u;
    unsigned *o = out + 5 * t;
    o[0] = v << 5;
    o[1] = v >> 3;
    o[2] = v ^ 0x5a5a5a5au ^ (v >> 16);
    o[3] = (v << s) | (v >> ((32u - s) & 31u));   // rotate left by s (s == 0 gives v)
    o[4] = (v >> 7) | (v << 25);                   // rotate right by 7
}
