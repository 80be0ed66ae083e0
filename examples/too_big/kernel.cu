// Deliberately too big for 15 registers: 20 values are loaded, their sum is formed, and then
// every value is needed again.  `out` may alias `x`, so no load can move below a store and
// all 20 values (plus the sum and the pointers) are live at the first store.
extern "C" __global__ void too_big(const int *x, int *out)
{
    int v0 = x[0], v1 = x[1], v2 = x[2], v3 = x[3], v4 = x[4];
    int v5 = x[5], v6 = x[6], v7 = x[7], v8 = x[8], v9 = x[9];
    int v10 = x[10], v11 = x[11], v12 = x[12], v13 = x[13], v14 = x[14];
    int v15 = x[15], v16 = x[16], v17 = x[17], v18 = x[18], v19 = x[19];
    int s = v0 + v1 + v2 + v3 + v4 + v5 + v6 + v7 + v8 + v9
          + v10 + v11 + v12 + v13 + v14 + v15 + v16 + v17 + v18 + v19;
    out[0] = v0 * s; out[1] = v1 * s; out[2] = v2 * s; out[3] = v3 * s; out[4] = v4 * s;
    out[5] = v5 * s; out[6] = v6 * s; out[7] = v7 * s; out[8] = v8 * s; out[9] = v9 * s;
    out[10] = v10 * s; out[11] = v11 * s; out[12] = v12 * s; out[13] = v13 * s; out[14] = v14 * s;
    out[15] = v15 * s; out[16] = v16 * s; out[17] = v17 * s; out[18] = v18 * s; out[19] = v19 * s;
}
