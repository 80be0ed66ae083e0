// Data-dependent early returns: negative inputs leave out[] untouched, zero writes a marker.
extern "C" __global__ void early_return(const int *in, int *out, int *count)
{
    int t = threadIdx.x;
    int v = in[t];
    if (v < 0)
        return;
    if (v == 0) {
        out[t] = -1;
        return;
    }
    out[t] = v * v - t;
    count[t] = count[t] + 1;
}
