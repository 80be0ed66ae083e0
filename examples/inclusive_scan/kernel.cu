// An inclusive prefix sum of 16 values in one block (Hillis-Steele): each round adds the
// value `offset` places back, reading from one shared buffer and writing the other.
extern "C" __global__ void inclusive_scan(const int *in, int *out)
{
    __shared__ int buffer[2][16];
    int t = threadIdx.x;
    int from = 0;
    buffer[0][t] = in[t];
    __syncthreads();
    for (int offset = 1; offset < blockDim.x; offset *= 2) {
        int value = buffer[from][t];
        if (t >= offset)
            value += buffer[from][t - offset];
        buffer[1 - from][t] = value;
        from = 1 - from;
        __syncthreads();
    }
    out[t] = buffer[from][t];
}
