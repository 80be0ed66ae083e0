// Kernels that trap, each told in the kernel's own terms (docs/ptx.md "Traps").

// A long long read through an int pointer one word in: p + 1 is not a multiple of 8, and an
// 8-byte access must be (a GPU faults with "misaligned address").
extern "C" __global__ void misaligned_pair(const int *p, long long *out)
{
    out[threadIdx.x] = *(const long long *)(p + 1 + 2 * threadIdx.x);
}

// An index past 2^30 words: the address leaves 32 bits, and the trap names it, not the word
// the machine's check turned it into.
extern "C" __global__ void far_index(const int *p, int *out, long long i)
{
    out[threadIdx.x] = p[i + threadIdx.x];
}
