// A 3-D launch: a grid of 2 x 1 x 2 blocks of 3 x 1 x 2 threads (6 threads a block: two
// warps, the second with two lanes) covering a 6 x 1 x 4 volume, one thread a cell.  Each
// thread writes its global (x, y, z) as one number and scales its cell by its thread's z and
// block's x.
extern "C" __global__ void grid_3d(const int *in, int *where, int *scaled)
{
    int x = blockIdx.x * blockDim.x + threadIdx.x;
    int y = blockIdx.y * blockDim.y + threadIdx.y;
    int z = blockIdx.z * blockDim.z + threadIdx.z;
    int width = gridDim.x * blockDim.x, depth = gridDim.y * blockDim.y;
    int cell = (z * depth + y) * width + x;
    where[cell] = x + 10 * y + 100 * z;
    scaled[cell] = in[cell] * (int)(threadIdx.z + 1) + (int)(blockIdx.x * blockDim.z);
}
