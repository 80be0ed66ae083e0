// Divergence inside a warp: three paths, each storing to its own buffer, then a join
// where every lane stores again.
extern "C" __global__ void divergent_if(const int *in, int *pos, int *neg, int *path)
{
    int t = threadIdx.x;
    int x = in[t];
    int p;
    if (x > 0) {
        if (x & 1) {
            pos[t] = 3 * x + 1;
            p = 1;
        } else {
            pos[t] = x >> 1;
            p = 2;
        }
    } else {
        neg[t] = x - 100;
        p = 3;
    }
    path[t] = p * 10 + t;
}
