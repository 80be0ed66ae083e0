// Integer arithmetic kernels for the PTX loader's tests (one thread per element).
// The PTX next to this file is what `nvcc -ptx -arch=sm_80 -O3 arith.cu` makes of it.

extern "C" __global__ void vadd(const int *a, const int *b, int *c, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) c[i] = a[i] + b[i];
}

// min/max, __mulhi, signed shift and division/remainder by constants (mul.hi sequences).
extern "C" __global__ void mix(int *x, unsigned *y)
{
    int i = threadIdx.x;
    int v = x[i];
    unsigned u = y[i];
    x[i] = min(v, 7) + max(v, -3) + __mulhi(v, 12345) + (v >> 3) + (v / 8) + v % 3;
    y[i] = __umulhi(u, 777) + (u >> 5) + u / 7 + u % 10 + min(u, 9u) + (unsigned)((v & 0xff) >> 2);
}

// Shifts by a variable amount: C shifts, masked shifts, and a rotate (shf.l.wrap).
extern "C" __global__ void shifts(unsigned *x, unsigned s)
{
    int i = threadIdx.x;
    unsigned v = x[i];
    unsigned r = (v << (s & 31)) | (v >> ((32 - s) & 31));
    x[i] = (v << (s & 31)) ^ (v >> (s & 31)) ^ (unsigned)((int)v >> (s & 31)) ^ r;
    x[i + 8] = (v << 7) | (v >> 25);
    x[i + 16] = (v >> 16) | (v << 16);
}

// Comparisons turned into values, predicate logic, and selects.
extern "C" __global__ void logic(int *x, int lo, int hi)
{
    int i = threadIdx.x;
    int v = x[i];
    bool inside = (v >= lo) & (v <= hi);
    bool three = !(v != 3);
    int a = (v > 3) + !v + ((v < 10) ^ (v > -10));
    int b = inside && !three ? 1 : (three ? 2 : 3);
    unsigned u = (unsigned)v;
    x[i] = a * 16 + b + (int)(~u + (u == 0) - (int)(u != 7)) * 256;
    x[i + 8] = (v > lo) ? v - lo : lo - v;
    x[i + 16] = (int)max(min(u, 100u), 5u) + max(min(v, 100), -5) * 1000;
}

// Bit fields and byte shuffles (bfi, prmt).
extern "C" __global__ void bytes(unsigned *x)
{
    int i = threadIdx.x;
    unsigned v = x[i];
    int s = (int)v;
    unsigned char b0 = v, b1 = v >> 8;
    x[i] = ((v >> 3) & 0x1f) | (((v >> 11) & 0x7) << 20);
    x[i + 8] = (unsigned)((s << 5) >> 27);
    x[i + 16] = (v & 0xff) | ((v >> 16 & 0xff) << 8) | ((v >> 8 & 0xff) << 16) | ((v >> 24) << 24);
    x[i + 24] = (unsigned)(unsigned char)(b0 + b1) | ((unsigned)(unsigned char)(b0 * b1) << 8);
}

// Division and remainder by a variable (a loop of 32 steps on QwenGPU), signed and unsigned.
extern "C" __global__ void divide(int *x, unsigned *y, int d, unsigned e)
{
    int i = threadIdx.x;
    int v = x[i];
    unsigned u = y[i];
    x[i] = v / d;
    x[i + 8] = v % d;
    y[i] = u / e + (u % e) * 1000;
}

// Bit counting: __popc, __clz, __brev, __ffs (bfind on the reversed word).
extern "C" __global__ void bit_count(int *x)
{
    int i = threadIdx.x;
    int v = x[i];
    x[i + 8] = __popc(v);
    x[i + 16] = __clz(v);
    x[i + 24] = __brev(v);
    x[i + 32] = __ffs(v);
}
