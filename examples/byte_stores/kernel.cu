// Bytes and halfwords written by neighbouring threads into the same words: each thread stores
// one char and one short, and lanes of a warp share every word they write.
extern "C" __global__ void byte_stores(const int *in, unsigned char *bytes, short *halves)
{
    int t = threadIdx.x;
    int v = in[t];
    bytes[t] = (unsigned char)(v * 3 + t);
    halves[t] = (short)(v - 1000 * t);
}
