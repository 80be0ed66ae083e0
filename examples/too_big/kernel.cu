// Deliberately too big for QwenGPU: 40 values are loaded, their sum is formed, and then
// every value is needed again.  `out` may alias `x`, so no load can move below a store and
// all 40 values (plus the sum and the pointer) are live at the first store: 42 registers.
// Spilling the ones that do not fit in the 15 registers needs 28 words of local memory a
// thread, more than the 16 (LOCAL_WORDS) a thread has.
extern "C" __global__ void too_big(const int *x, int *out)
{
    int v0 = x[0], v1 = x[1], v2 = x[2], v3 = x[3], v4 = x[4];
    int v5 = x[5], v6 = x[6], v7 = x[7], v8 = x[8], v9 = x[9];
    int v10 = x[10], v11 = x[11], v12 = x[12], v13 = x[13], v14 = x[14];
    int v15 = x[15], v16 = x[16], v17 = x[17], v18 = x[18], v19 = x[19];
    int v20 = x[20], v21 = x[21], v22 = x[22], v23 = x[23], v24 = x[24];
    int v25 = x[25], v26 = x[26], v27 = x[27], v28 = x[28], v29 = x[29];
    int v30 = x[30], v31 = x[31], v32 = x[32], v33 = x[33], v34 = x[34];
    int v35 = x[35], v36 = x[36], v37 = x[37], v38 = x[38], v39 = x[39];
    int s = v0 + v1 + v2 + v3 + v4 + v5 + v6 + v7 + v8 + v9
          + v10 + v11 + v12 + v13 + v14 + v15 + v16 + v17 + v18 + v19
          + v20 + v21 + v22 + v23 + v24 + v25 + v26 + v27 + v28 + v29
          + v30 + v31 + v32 + v33 + v34 + v35 + v36 + v37 + v38 + v39;
    out[0] = v0 * s; out[1] = v1 * s; out[2] = v2 * s; out[3] = v3 * s; out[4] = v4 * s;
    out[5] = v5 * s; out[6] = v6 * s; out[7] = v7 * s; out[8] = v8 * s; out[9] = v9 * s;
    out[10] = v10 * s; out[11] = v11 * s; out[12] = v12 * s; out[13] = v13 * s; out[14] = v14 * s;
    out[15] = v15 * s; out[16] = v16 * s; out[17] = v17 * s; out[18] = v18 * s; out[19] = v19 * s;
    out[20] = v20 * s; out[21] = v21 * s; out[22] = v22 * s; out[23] = v23 * s; out[24] = v24 * s;
    out[25] = v25 * s; out[26] = v26 * s; out[27] = v27 * s; out[28] = v28 * s; out[29] = v29 * s;
    out[30] = v30 * s; out[31] = v31 * s; out[32] = v32 * s; out[33] = v33 * s; out[34] = v34 * s;
    out[35] = v35 * s; out[36] = v36 * s; out[37] = v37 * s; out[38] = v38 * s; out[39] = v39 * s;
}
