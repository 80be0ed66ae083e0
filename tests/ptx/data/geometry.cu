// Launches of 2 and 3 dimensions: every special register the loader computes from the
// machine's flat thread and block indices, and the ordinary indexing of a 2-D kernel.

// Thread i (its global index, x fastest) writes what CUDA says of it, four words.
extern "C" __global__ void specials(int *out)
{
    int g = (blockIdx.z * gridDim.y + blockIdx.y) * gridDim.x + blockIdx.x;
    int t = (threadIdx.z * blockDim.y + threadIdx.y) * blockDim.x + threadIdx.x;
    int i = g * (blockDim.x * blockDim.y * blockDim.z) + t;
    out[4 * i] = threadIdx.x + 10 * threadIdx.y + 100 * threadIdx.z;
    out[4 * i + 1] = blockIdx.x + 10 * blockIdx.y + 100 * blockIdx.z;
    out[4 * i + 2] = blockDim.x + 10 * blockDim.y + 100 * blockDim.z;
    out[4 * i + 3] = gridDim.x + 10 * gridDim.y + 100 * gridDim.z;
}

// The warp registers PTX has for them (inline assembly: CUDA has no names for them).
extern "C" __global__ void warp_registers(int *out)
{
    unsigned lane, warp, warps;
    asm("mov.u32 %0, %%laneid;" : "=r"(lane));
    asm("mov.u32 %0, %%warpid;" : "=r"(warp));
    asm("mov.u32 %0, %%nwarpid;" : "=r"(warps));
    int t = (threadIdx.z * blockDim.y + threadIdx.y) * blockDim.x + threadIdx.x;
    int i = ((blockIdx.y * gridDim.x + blockIdx.x) * blockDim.x * blockDim.y * blockDim.z) + t;
    out[i] = lane + 10 * warp + 100 * warps;
}

// A 2-D kernel as people write it: out[row][col] = in[row][col] * 2 + row, inside bounds.
extern "C" __global__ void scale_rows(const int *in, int *out, int width, int height)
{
    int col = blockIdx.x * blockDim.x + threadIdx.x;
    int row = blockIdx.y * blockDim.y + threadIdx.y;
    if (col < width && row < height)
        out[row * width + col] = in[row * width + col] * 2 + row;
}

// The same, indexed by threadIdx alone: a kernel that only fits one block shape.
extern "C" __global__ void tile(int *out)
{
    out[threadIdx.y * blockDim.x + threadIdx.x] = threadIdx.x * 10 + threadIdx.y;
}

// No special register at all: any shape runs it.
extern "C" __global__ void no_specials(int *out, int v)
{
    out[0] = v;
}
