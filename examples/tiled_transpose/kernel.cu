// A 4x8 matrix transposed through a shared tile: each block of 16 threads takes two rows,
// writes them into the tile, waits, and reads the tile back column by column.
#define ROWS 4
#define COLS 8

extern "C" __global__ void tiled_transpose(const int *in, int *out)
{
    __shared__ int tile[2][COLS];
    int t = threadIdx.x;
    int row0 = blockIdx.x * 2;
    tile[t / COLS][t % COLS] = in[(row0 + t / COLS) * COLS + t % COLS];
    __syncthreads();
    int c = t / 2, r = t % 2;
    out[c * ROWS + row0 + r] = tile[r][c];
}
