// Ternaries and boolean conditions that nvcc turns into setp / selp / predicate logic.
extern "C" __global__ void select_ternary(const int *a, const int *b, int *out)
{
    int t = threadIdx.x;
    int x = a[t];
    int y = b[t];
    int d = (x > y) ? x - y : y - x;
    d = (t & 1) ? d : -d;
    int both = (x > 0 && y > 0) ? 1 : 0;
    int either = (x == 0 || y == 0) ? 7 : 3;
    int *o = out + 4 * t;
    o[0] = d;
    o[1] = both;
    o[2] = either;
    o[3] = (x != y) ? ((x & 4) ? x : y) : 99;
}
