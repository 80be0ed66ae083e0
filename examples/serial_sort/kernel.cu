// One thread sorts a[0..n) in place by insertion: a data-dependent inner loop that stops on
// either of two conditions, loads and stores to the same buffer, and a count of the moves.
// For a one-lane, one-warp QwenGPU (grid 1, block 1).
extern "C" __global__ void serial_sort(int *a, int n, int *moves)
{
    int count = 0;
#pragma unroll 1
    for (int i = 1; i < n; i++) {
        int x = a[i];
        int j = i;
#pragma unroll 1
        while (j > 0 && a[j - 1] > x) {
            a[j] = a[j - 1];
            j--;
            count++;
        }
        a[j] = x;
    }
    moves[0] = count;
}
