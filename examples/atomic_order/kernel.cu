// Every atomic of CUDA's integer set on a few words, each thread keeping the word it found.
// Within a warp QwenGPU applies them lane by lane (docs/isa.md, "Serial instructions"), so
// with one warp the words a thread finds are known: a ticket counter, and the old values of
// the others.
extern "C" __global__ void atomic_order(int *words, unsigned *counters, int *found)
{
    int t = threadIdx.x;
    found[t * 8 + 0] = atomicAdd(&words[0], t + 1);
    found[t * 8 + 1] = atomicExch(&words[1], 10 * t);
    found[t * 8 + 2] = atomicMin(&words[2], 3 - 2 * t);
    found[t * 8 + 3] = atomicMax(&words[3], t * t - 3);
    found[t * 8 + 4] = atomicCAS(&words[4], 2 * t, 2 * t + 2);
    found[t * 8 + 5] = atomicAnd(&words[5], ~(1 << t)) ^ atomicOr(&words[6], 1 << (2 * t));
    found[t * 8 + 6] = (int)atomicInc(&counters[0], 2);
    found[t * 8 + 7] = (int)atomicDec(&counters[1], 5) + atomicXor(&words[7], t + 5);
}
