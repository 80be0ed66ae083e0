// C = A + B over a matrix of 4 rows and 8 words a row (its pitch), of which the first 7
// columns are the matrix: a 2-D grid of 2 x 2 blocks of 4 x 2 threads, one thread an
// element (dim3 in CUDA; "grid": [2, 2], "block": [4, 2] in the launch).  The threads of
// column 7 are outside the matrix and store nothing.
extern "C" __global__ void matrix_add_2d(const int *a, const int *b, int *c, int width,
                                         int height, int pitch)
{
    int col = blockIdx.x * blockDim.x + threadIdx.x;
    int row = blockIdx.y * blockDim.y + threadIdx.y;
    if (col < width && row < height) {
        int i = row * pitch + col;
        c[i] = a[i] + b[i];
    }
}
