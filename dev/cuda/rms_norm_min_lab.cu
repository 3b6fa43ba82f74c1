/* dev/cuda/rms_norm_min_lab.cu: the smallest RMSNorm kernel of the register kind, appended
 * to the shipped csrc/ops/norm/rms_norm.cu (its helpers and defines; lab.appended_source):
 * one row per block, no grid-stride loop, x and w loaded together at the top, one block
 * reduction, the same sums as tileops_rms_norm at RT = TILEOPS_THREADS (the same bits).
 * LAB_PDL=1 adds the shipped kernels' PDL prologue; LAB_W_NC=0 loads w with plain
 * ld.global. What it is for: the L2-cold gap of
 * 0.3-0.8 µs to Liger's Triton kernel at 32-256 rows (dev/NOTES.md, session 18), which no
 * launch shape closed; dev/time_norm_cold.py times it beside the shipped build. */
#ifndef LAB_PDL
#define LAB_PDL 0
#endif
#ifndef LAB_W_NC
#define LAB_W_NC 1 /* the weight through the non-coherent path, as the shipped kernels load it */
#endif
extern "C" __global__ void __launch_bounds__(TILEOPS_THREADS)
lab_rms_norm_min(const void *x, const void *w, void *y, long long rows, long long x_row_stride,
                 long long y_row_stride, float eps) {
#if LAB_PDL
    TILEOPS_PDL_PROLOGUE();
#endif
    __shared__ float red[TILEOPS_WARPS];
    const unsigned tid = tileops_tid();
    const long long row = tileops_ctaid();
    (void)rows;
    const char *xrow = tileops_row_in(x, row, x_row_stride);
    struct tileops_v4 xr[RK_VPT], wr[RK_VPT];
#pragma unroll
    for (int j = 0; j < RK_VPT; j++) {
        long long g = (long long)j * TILEOPS_THREADS + tid;
        xr[j] = g < TILEOPS_NG ? tileops_ld_group(xrow, g, 0) : tileops_zero4();
        wr[j] = g < TILEOPS_NG ? tileops_ld_group((const char *)w, g, LAB_W_NC) : tileops_zero4();
    }
    float acc = 0.0f;
#pragma unroll
    for (int j = 0; j < RK_VPT; j++)
        acc = tileops_sumsq(xr[j], acc);
    const float rstd = tileops_rstd(tileops_row_sum(acc, red, tid, TILEOPS_THREADS), eps);
    char *yrow = tileops_row_out(y, row, y_row_stride);
#pragma unroll
    for (int j = 0; j < RK_VPT; j++) {
        long long g = (long long)j * TILEOPS_THREADS + tid;
        if (g < TILEOPS_NG)
            tileops_write_group(yrow, w, g, xr[j], 1, wr[j], rstd, 0);
    }
}
