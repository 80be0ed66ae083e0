// One thread: a multiply-add and an absolute difference of three numbers read from memory.
// Small enough to run inside a compiled model on a CPU in minutes (the README's main job);
// written for a one-lane, one-warp QwenGPU (grid 1, block 1).
extern "C" __global__ void serial_mad(const int *in, int *out)
{
    int a = in[0], x = in[1], b = in[2];
    out[0] = a * x + b;
    out[1] = a > b ? a - b : b - a;
}
