// Device functions nvcc keeps as calls (__noinline__), each inlined by the loader: chains,
// several call sites, two return paths, pointers, structs, bytes, 64-bit values, no result.
struct Pair { int a, b; };

__device__ __noinline__ int add3(int a) { return a + 3; }

__device__ __noinline__ int twice_add3(int a) { return 2 * add3(a) + add3(a ^ 5); }

__device__ __noinline__ int clamp_abs(int a)
{
    if (a < 0) return -a;
    if (a > 100) return 100;
    return a * 2;
}

__device__ __noinline__ void put(int *p, int i, int v) { p[i] = v; }

__device__ __noinline__ Pair swap_add(Pair p, int k)
{
    Pair q;
    q.a = p.b + k;
    q.b = p.a - k;
    return q;
}

__device__ __noinline__ int widen(char c, short s, unsigned char u) { return c * 1000 + s + u; }

__device__ __noinline__ long long wide(long long x, int y) { return x * y + (x >> 3); }

__device__ __noinline__ int first_negative(const int *p, int n)
{
    for (int k = 0; k < n; k++)
        if (p[k] < 0) return k;        // a return inside the loop
    return -1;
}

extern "C" __global__ void chain(int *x, int *out)
{
    int t = threadIdx.x;
    int v = x[t];
    out[t] = twice_add3(v) + clamp_abs(v - 10);
    put(out, t + 8, clamp_abs(v));
}

extern "C" __global__ void shapes(const int *x, int *out)
{
    int t = threadIdx.x;
    Pair p = {x[t], x[t + 4]};
    Pair q = swap_add(p, t);
    out[t] = q.a;
    out[t + 4] = q.b;
    out[t + 8] = widen((char)x[t], (short)x[t + 4], (unsigned char)x[t]);
    long long w = wide(((long long)x[t] << 20) | t, x[t + 4]);
    out[t + 12] = (int)w;
    out[t + 16] = (int)(w >> 32);
}

extern "C" __global__ void search(const int *rows, int *found)
{
    int t = threadIdx.x;
    found[t] = first_negative(rows + 4 * t, 4);
}
