"""Model of grid_3d/kernel.cu: every cell of a 6 x 1 x 4 volume, a thread each."""
from _int32 import run_grid, sadd, smul


def grid_3d(th, inp, where, scaled):
    x = th.blockIdx.x * th.blockDim.x + th.threadIdx.x
    y = th.blockIdx.y * th.blockDim.y + th.threadIdx.y
    z = th.blockIdx.z * th.blockDim.z + th.threadIdx.z
    width, depth = th.gridDim.x * th.blockDim.x, th.gridDim.y * th.blockDim.y
    cell = (z * depth + y) * width + x
    where[cell] = x + 10 * y + 100 * z
    scaled[cell] = sadd(smul(inp[cell], th.threadIdx.z + 1), th.blockIdx.x * th.blockDim.z)


def model(launch):
    return run_grid(launch, grid_3d)
