// Memory forms for the PTX loader's tests: bytes, structs, globals, vectors, 16-bit data.

extern "C" __global__ void chars(const unsigned char *in, int *out)
{
    int i = threadIdx.x;
    out[i] = in[i] + (signed char)in[i + 1] * 3;
}

struct Pair { int a; int b; };

extern "C" __global__ void struct_arg(int *x, Pair p)
{
    x[threadIdx.x] = p.a * threadIdx.x + p.b;
}

__device__ int table[4] = {1, 2, 3, 4};
__constant__ int ctable[4] = {5, 6, 7, 8};
__device__ int scratch[4];

extern "C" __global__ void tables(int *x)
{
    int i = threadIdx.x;
    scratch[i & 3] = x[i];
    x[i] = table[i & 3] + ctable[i & 3] * 10 + scratch[i & 3] * 100;
}

extern "C" __global__ void swap_pairs(int2 *p)
{
    int i = threadIdx.x;
    int2 a = p[i];
    p[i] = make_int2(a.y, a.x + a.y);
}

extern "C" __global__ void reverse4(int4 *p)
{
    int i = threadIdx.x;
    int4 a = p[i];
    p[i] = make_int4(a.w, a.z, a.y, a.x);
}

extern "C" __global__ void shorts(const short *s, const unsigned short *u, int *out)
{
    int i = threadIdx.x;
    short a = s[i];
    unsigned short b = u[i];
    short c = a * b + 3;
    out[i] = c > 5 ? c >> 1 : (b >> 2);
}
