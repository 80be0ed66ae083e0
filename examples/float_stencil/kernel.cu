// A 1-D three-point stencil on floats: out[i] = (in[i-1] + in[i]) + in[i+1], the neighbours
// outside [0, n) read as 0.0f; the sum in that order, each + rounded (binary32, to nearest even).
extern "C" __global__ void float_stencil(const float *in, float *out, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) {
        float left = i > 0 ? in[i - 1] : 0.0f;
        float right = i + 1 < n ? in[i + 1] : 0.0f;
        out[i] = (left + in[i]) + right;
    }
}
