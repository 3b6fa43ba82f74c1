/* dev/cuda/rope_persistent_lab.cu: a lab variant of RopeFwdOp's kernel (not shipped; the
 * launch rules never select it). Appended by dev/time_rope.py --persistent to the shipped
 * csrc/ops/positional/rope.cu as spliced for NVRTC, so it uses that file's rp_* helpers and
 * defines, with the same argument format.
 *
 * Why (session 12, Nsight at 4096 tokens): the shipped kernel runs at 47 % of DRAM peak with
 * its warps on long scoreboard: a block rotates one token and exits, each token waiting on
 * its position, then its cos/sin row, with its q and k loads in flight meanwhile, and too few
 * bytes are in flight per SM. Here a block stays resident and walks tokens t, t + stride, ...
 * (stride = gridDim.x x tokens per block) as a two-stage pipeline: while it rotates and
 * stores token t it has already issued token t + stride's q / k loads and cos / sin loads
 * (whose position was loaded an iteration before), and the position of t + 2 stride. Each
 * thread keeps one work item (unit u of head slot s) for every token it walks, so the block
 * is TT = UPH x S threads a token (S = ceil((H + Hk) / HB) slots), TPB = ntid / TT tokens.
 * The arithmetic per element is rp_store's: the op's bits.
 *
 * Launch: block >= TT threads (a multiple of TT, rounded up to 32 with idle threads past
 * TPB x TT), grid.x any >= 1 (a few blocks an SM), grid.y 1. */

extern "C" __global__ void TILEOPS_BOUNDS
tileops_rope_persist(const void *q, const void *k, const void *positions, const float *cache, void *q_out,
                     void *k_out, long long T, long long H, long long Hk, long long P, long long q_st, long long q_sh,
                     long long k_st, long long k_sh, long long qo_st, long long qo_sh, long long ko_st,
                     long long ko_sh) {
    TILEOPS_PDL_PROLOGUE();
    const int uq = RP_ROT_UNITS + (q_out != q ? RP_PASS_UNITS : 0);
    const int uk = k ? RP_ROT_UNITS + (k_out != k ? RP_PASS_UNITS : 0) : 0;
    const int uph = uq > uk ? uq : uk;
    const int nh = (int)H + (k ? (int)Hk : 0);
    const int slots = (nh + TILEOPS_HB - 1) / TILEOPS_HB;
    const int tt = uph * slots;
    const int tpb = (int)tileops_ntid() / tt;
    const int lt = (int)tileops_tid() / tt, j = (int)tileops_tid() - lt * tt;
    if (lt >= tpb)
        return;
    const int u = j % uph, s = j / uph, cnt = rp_count(u), h0 = s * TILEOPS_HB;
    const long long stride = (long long)tileops_nctaid() * tpb;
    long long t = (long long)tileops_ctaid() * tpb + lt;
    if (t >= T)
        return;

#define RPP_POS(tok) ((tok) < T ? (TILEOPS_POS64 ? ((const long long *)positions)[tok] \
                                                : (long long)((const int *)positions)[tok]) : 0)
    /* the loads of token `tok` into (va, vb) and of position p's cos / sin into (cs, sn) */
#define RPP_LOAD_X(tok, va, vb)                                                                   \
    do {                                                                                          \
        _Pragma("unroll") for (int i = 0; i < TILEOPS_HB; i++) {                                  \
            const int h = h0 + i;                                                                 \
            if (h < H && u < uq)                                                                  \
                rp_load((const char *)q + ((tok) * q_st + h * q_sh) * TILEOPS_E, u, cnt, &va[i],  \
                        &vb[TILEOPS_NEOX ? i : 0]);                                               \
            else if (h >= H && h < nh && u < uk)                                                  \
                rp_load((const char *)k + ((tok) * k_st + (h - H) * k_sh) * TILEOPS_E, u, cnt,    \
                        &va[i], &vb[TILEOPS_NEOX ? i : 0]);                                       \
        }                                                                                         \
    } while (0)
#define RPP_LOAD_CS(p, cs, sn)                                                                     \
    do {                                                                                          \
        const int valid_ = (p) >= 0 && (p) < P;                                                   \
        rp_load_cs(cache + (valid_ ? (p) : 0) * (long long)TILEOPS_RD, u, cnt, valid_, cs, sn);   \
    } while (0)

    struct tileops_v4 va[TILEOPS_HB], vb[TILEOPS_NEOX ? TILEOPS_HB : 1];
    float cs[8], sn[8];
    {
        const long long p = RPP_POS(t);
        RPP_LOAD_X(t, va, vb);
        RPP_LOAD_CS(p, cs, sn);
    }
    long long p_next = RPP_POS(t + stride);
    for (; t < T; t += stride) {
        const long long tn = t + stride;
        struct tileops_v4 na[TILEOPS_HB], nb[TILEOPS_NEOX ? TILEOPS_HB : 1];
        float ncs[8], nsn[8];
        if (tn < T) {   /* the next token's loads, in flight while this one is stored */
            RPP_LOAD_X(tn, na, nb);
            RPP_LOAD_CS(p_next, ncs, nsn);
        }
        const long long p_after = RPP_POS(tn + stride);
#pragma unroll
        for (int i = 0; i < TILEOPS_HB; i++) {
            const int h = h0 + i;
            if (h < H && u < uq)
                rp_store((char *)q_out + (t * qo_st + h * qo_sh) * TILEOPS_E, u, cnt, va[i],
                         vb[TILEOPS_NEOX ? i : 0], cs, sn);
            else if (h >= H && h < nh && u < uk)
                rp_store((char *)k_out + (t * ko_st + (h - H) * ko_sh) * TILEOPS_E, u, cnt, va[i],
                         vb[TILEOPS_NEOX ? i : 0], cs, sn);
        }
        if (tn >= T)
            break;
#pragma unroll
        for (int i = 0; i < TILEOPS_HB; i++) {
            va[i] = na[i];
            vb[TILEOPS_NEOX ? i : 0] = nb[TILEOPS_NEOX ? i : 0];
        }
#pragma unroll
        for (int l = 0; l < 8; l++) {
            cs[l] = ncs[l];
            sn[l] = nsn[l];
        }
        p_next = p_after;
    }
#undef RPP_POS
#undef RPP_LOAD_X
#undef RPP_LOAD_CS
}
