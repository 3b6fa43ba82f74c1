"""A line-by-line emulation, in numpy, of the CUDA kernels of PagedDecodeAttentionFwdOp
(csrc/ops/attention/paged_decode_attention.cu), for checking their index arithmetic on a
machine without a GPU: the copies into each warp's swizzled ring of shared memory (a
cp.async lands at once here: the worst case for a slot refilled too early), ldmatrix (and
.trans) by the lane addresses the kernel computes, mma.m16n8k16, movmatrix, the shuffles
of the online softmax, the fold of the warps, the CTA's running fold or the workspace
partials and the merge kernel, each with the PTX ISA's documented fragment layouts:

  ldmatrix .x4: lanes 8i .. 8i + 7 give the row addresses of matrix i; lane T receives
    matrix i's elements (row T / 4, columns 2 (T % 4), + 1) in register i; with .trans,
    (row 2 (T % 4), column T / 4) and (row 2 (T % 4) + 1, column T / 4).
  mma.m16n8k16.row.col: g = T / 4, t = T % 4; a0 = A[g][2t, 2t+1], a1 = A[g+8][2t, 2t+1],
    a2 = A[g][2t+8, 2t+9], a3 = A[g+8][2t+8, 2t+9]; b0 = B[2t, 2t+1][g],
    b1 = B[2t+8, 2t+9][g]; c0, c1 = C[g][2t, 2t+1], c2, c3 = C[g+8][2t, 2t+1].
  movmatrix.trans: lane T holds row T / 4, columns 2 (T % 4), + 1 of an 8x8 matrix, and
    gets the same of its transpose.

Run: python dev/emulate_paged_decode_attention.py (tests/runtime/
test_paged_decode_attention_emulation.py runs it on small cases against the reference).
The arithmetic is float32 (mma accumulation in float64 then rounded: not bitwise the
GPU's); what it checks is that every element lands where the kernel means it to."""
from __future__ import annotations

import math

import numpy as np

NW, TILE, TPW = 4, 16, 4
CH = NW * TPW * TILE


class Config:
    def __init__(self, D, G, GS, BS, stages, dtype=np.float16):
        self.D, self.G, self.GS, self.BS, self.stages = D, G, GS, BS, stages
        self.dtype = dtype
        self.E = np.dtype(dtype).itemsize
        self.NT = (GS + 7) // 8
        self.GS8 = self.NT * 8
        self.KS = D // 16
        self.RB = D * self.E
        self.SEG = self.RB // 16
        self.TILE_BYTES = TILE * self.RB
        self.WARP_BYTES = stages * 2 * self.TILE_BYTES

    def fold_heads(self, threads):
        """PDA_FH: the heads the fold's `threads` cover (the CTA's heads rounded up to a power
        of two where each thread takes whole channels, else GS8)"""
        for fh in (1, 2, 4):
            if self.GS <= fh and self.D % (threads // fh) == 0:
                return fh
        return self.GS8


def swz(cfg, row, seg):
    if cfg.SEG >= 8:
        s = seg ^ (row & 7) if seg < (cfg.SEG & ~7) else seg
    elif cfg.SEG & (cfg.SEG - 1) == 0:
        s = seg ^ (row & (cfg.SEG - 1))
    else:
        s = seg
    return row * cfg.RB + (s << 4)


# ---- fragments <-> matrices -------------------------------------------------------------

def ldsm4(smem, addrs, trans=False, dtype=np.float16):
    """ldmatrix.x4 (.trans): addrs[32] byte offsets; returns regs[32][4][2] elements."""
    regs = np.zeros((32, 4, 2), dtype=dtype)
    for i in range(4):
        m = np.stack([smem[addrs[8 * i + r]:addrs[8 * i + r] + 16].view(dtype) for r in range(8)])  # 8x8
        for T in range(32):
            if not trans:
                regs[T, i] = m[T // 4, 2 * (T % 4):2 * (T % 4) + 2]
            else:
                regs[T, i] = (m[2 * (T % 4), T // 4], m[2 * (T % 4) + 1, T // 4])
    return regs


def a_matrix(a):
    A = np.zeros((16, 16), dtype=np.float64)
    for T in range(32):
        g, t = T // 4, T % 4
        A[g, 2 * t:2 * t + 2] = a[T, 0]
        A[g + 8, 2 * t:2 * t + 2] = a[T, 1]
        A[g, 2 * t + 8:2 * t + 10] = a[T, 2]
        A[g + 8, 2 * t + 8:2 * t + 10] = a[T, 3]
    return A


def b_matrix(b0, b1):
    B = np.zeros((16, 8), dtype=np.float64)
    for T in range(32):
        g, t = T // 4, T % 4
        B[2 * t:2 * t + 2, g] = b0[T]
        B[2 * t + 8:2 * t + 10, g] = b1[T]
    return B


def mma(c, a, b0, b1):
    """c[32][4] (float32) += A B."""
    C = np.zeros((16, 8), dtype=np.float64)
    for T in range(32):
        g, t = T // 4, T % 4
        C[g, 2 * t:2 * t + 2] = c[T, 0:2]
        C[g + 8, 2 * t:2 * t + 2] = c[T, 2:4]
    C = (C + a_matrix(a) @ b_matrix(b0, b1)).astype(np.float32)
    for T in range(32):
        g, t = T // 4, T % 4
        c[T, 0:2] = C[g, 2 * t:2 * t + 2]
        c[T, 2:4] = C[g + 8, 2 * t:2 * t + 2]


def movt(x):
    """movmatrix.trans: x[32][2] -> y[32][2]."""
    M = np.zeros((8, 8), dtype=x.dtype)
    for T in range(32):
        M[T // 4, 2 * (T % 4):2 * (T % 4) + 2] = x[T]
    y = np.zeros_like(x)
    for T in range(32):
        y[T] = (M[2 * (T % 4), T // 4], M[2 * (T % 4) + 1, T // 4])
    return y


def shfl_max(v):
    """max over the lanes of equal T % 4 (xor 4, 8, 16), NaN-ignoring like max.f32."""
    out = v.copy()
    for off in (4, 8, 16):
        out = np.fmax(out, out[np.arange(32) ^ off])
    return out


def shfl_sum(v):
    out = v.copy()
    for off in (4, 8, 16):
        out = (out + out[np.arange(32) ^ off]).astype(np.float32)
    return out


def merge(m, l, a, mb, lb, ab):
    mm = np.fmax(m, mb)
    sa = np.where(m == -np.inf, 0.0, np.exp2(m - mm)).astype(np.float32)
    sb = np.where(mb == -np.inf, 0.0, np.exp2(mb - mm)).astype(np.float32)
    return mm, (lb * sb + l * sa).astype(np.float32), (ab * sb + a * sa).astype(np.float32)


# ---- the main kernel, one CTA ----------------------------------------------------------------

def cta(cfg, q, kc, vc, bt, sl, b, kvh, z, y, cpc, split, scale_log2, o, lse, ws, max_chunks, groups=1, SC=1):
    D, G, GS, GS8, NT, KS = cfg.D, cfg.G, cfg.GS, cfg.GS8, cfg.NT, cfg.KS
    H, Hkv, N, MB = q.shape[1], kc.shape[2], kc.shape[0], bt.shape[1]
    hbase = kvh * G + z * GS
    length = int(sl[b])
    head_ok = lambda hl: hl < GS and z * GS + hl < G  # noqa: E731
    if length < 0 or length > MB * cfg.BS:
        if split:
            return
        for g in range(GS8):
            if head_ok(g):
                o[b, hbase + g] = np.nan
                lse[b, hbase + g] = np.nan
        return
    n_chunks = (length + CH - 1) // CH
    c_begin, c_end = 0, n_chunks
    if split:
        c_begin = y * cpc
        c_end = min(c_begin + cpc, n_chunks)
        if c_begin >= c_end:
            return
    kbytes = kc.reshape(-1).view(np.uint8)
    vbytes = vc.reshape(-1).view(np.uint8)
    row_stride = Hkv * cfg.RB
    NWT = NW * groups                     # warps of the CTA: `groups` chunk groups of NW
    smem = np.zeros(NWT * cfg.WARP_BYTES, dtype=np.uint8)
    fold = np.zeros((NWT, GS8 * (D + 2)), dtype=np.float32)
    # the running fold, in each fold thread's registers: every channel with its own copy of
    # its head's m and l (the head's threads compute the same)
    run_a = np.zeros(GS8 * D, dtype=np.float32)
    run_m = np.full(GS8 * D, -np.inf, dtype=np.float32)
    run_l = np.zeros(GS8 * D, dtype=np.float32)
    sup_a = np.zeros(GS8 * D, dtype=np.float32)      # the superchunk's state (PDA_SC > 1)
    sup_m = np.full(GS8 * D, -np.inf, dtype=np.float32)
    sup_l = np.zeros(GS8 * D, dtype=np.float32)
    lanes = np.arange(32)
    gq, t4 = lanes >> 2, lanes & 3

    # Q^T fragments per warp (the same for every warp)
    qf = np.zeros((NT, KS, 2, 32, 2), dtype=cfg.dtype)
    for nt in range(NT):
        for T in range(32):
            hl = nt * 8 + gq[T]
            if head_ok(hl):
                qrow = q[b, hbase + hl]
                for ks in range(KS):
                    qf[nt, ks, 0, T] = qrow[ks * 16 + 2 * t4[T]:ks * 16 + 2 * t4[T] + 2]
                    qf[nt, ks, 1, T] = qrow[ks * 16 + 8 + 2 * t4[T]:ks * 16 + 8 + 2 * t4[T] + 2]

    def tile_chunk(w, k):   # round k // TPW: chunks c_begin + round x groups + the warp's group
        return c_begin + (k // TPW) * groups + w // NW

    def tile_tok(w, k):
        return tile_chunk(w, k) * CH + (w % NW) * (TPW * TILE) + (k % TPW) * TILE

    def live(w, k):
        return tile_chunk(w, k) < c_end and tile_tok(w, k) < length

    bad = np.zeros((NWT, 32), dtype=bool)

    def issue(w, k):
        if not live(w, k):
            return
        tok0 = tile_tok(w, k)
        ring = w * cfg.WARP_BYTES
        kt = ring + (k % cfg.stages) * 2 * cfg.TILE_BYTES
        vt = kt + cfg.TILE_BYTES
        for j in range((TILE * cfg.SEG + 31) // 32):
            for lane in range(32):
                idx = lane + 32 * j
                if idx >= TILE * cfg.SEG:
                    continue
                row, seg = idx // cfg.SEG, idx % cfg.SEG
                tok = tok0 + row
                nbytes, off = 0, 0
                if cfg.BS % TILE == 0:
                    # a block holds whole tiles: one block id per tile (the kernel reads it a
                    # tile ahead, pda_tile_block); the rows past the length are zero-filled
                    blk = int(bt[b, tok0 // cfg.BS])
                    if not 0 <= blk < N:
                        bad[w, lane] = True
                    elif tok < length:
                        off = (blk * cfg.BS + tok0 % cfg.BS + row) * row_stride + kvh * cfg.RB + seg * 16
                        nbytes = 16
                elif tok < length:
                    blk = int(bt[b, tok // cfg.BS])
                    if 0 <= blk < N:
                        off = (blk * cfg.BS + tok % cfg.BS) * row_stride + kvh * cfg.RB + seg * 16
                        nbytes = 16
                    else:
                        bad[w, lane] = True
                dk, dv = kt + swz(cfg, row, seg), vt + swz(cfg, row, seg)
                smem[dk:dk + 16] = kbytes[off:off + 16] if nbytes else 0
                smem[dv:dv + 16] = vbytes[off:off + 16] if nbytes else 0

    wm = np.full((NWT, NT, 2, 32), -np.inf, dtype=np.float32)
    wl = np.zeros((NWT, NT, 2, 32), dtype=np.float32)
    acc = np.zeros((NWT, NT, KS, 32, 4), dtype=np.float32)
    nk = -(-(c_end - c_begin) // groups) * TPW
    for w in range(NWT):
        for k in range(cfg.stages - 1):
            if k < nk:
                issue(w, k)
    for k in range(nk):
        for w in range(NWT):
            if k + cfg.stages - 1 < nk:
                issue(w, k + cfg.stages - 1)
            tok0 = tile_tok(w, k)
            if not live(w, k):
                continue
            ring = w * cfg.WARP_BYTES
            kt = ring + (k % cfg.stages) * 2 * cfg.TILE_BYTES
            vt = kt + cfg.TILE_BYTES
            sc = np.zeros((NT, 32, 4), dtype=np.float32)
            for ks in range(KS):
                rr = (lanes & 7) + (lanes & 8)
                sg = 2 * ks + (lanes >> 4)
                a = ldsm4(smem, [kt + swz(cfg, int(rr[T]), int(sg[T])) for T in range(32)], dtype=cfg.dtype)
                for nt in range(NT):
                    mma(sc[nt], a, qf[nt, ks, 0], qf[nt, ks, 1])
            ok0 = tok0 + gq < length
            ok1 = tok0 + gq + 8 < length
            pv = np.zeros((NT, 32, 4), dtype=np.float32)
            for nt in range(NT):
                al = np.zeros((2, 32), dtype=np.float32)
                for j in range(2):
                    s0 = np.where(ok0, (sc[nt, :, j] * np.float32(scale_log2)).astype(np.float32), -np.inf)
                    s1 = np.where(ok1, (sc[nt, :, 2 + j] * np.float32(scale_log2)).astype(np.float32), -np.inf)
                    mx = shfl_max(np.fmax(s0, s1))
                    mn = np.fmax(wm[w, nt, j], mx)
                    al[j] = np.where(wm[w, nt, j] == -np.inf, 0.0, np.exp2(wm[w, nt, j] - mn))
                    pv[nt, :, j] = np.exp2(s0 - mn)
                    pv[nt, :, 2 + j] = np.exp2(s1 - mn)
                    wl[w, nt, j] = wl[w, nt, j] * al[j] + (pv[nt, :, j] + pv[nt, :, 2 + j])
                    wm[w, nt, j] = mn
                acc[w, nt, :, :, 0] *= al[0]
                acc[w, nt, :, :, 1] *= al[1]
                acc[w, nt, :, :, 2] *= al[0]
                acc[w, nt, :, :, 3] *= al[1]
            pb = np.zeros((NT, 2, 32, 2), dtype=cfg.dtype)
            for nt in range(NT):
                pb[nt, 0] = movt(np.stack([pv[nt, :, 0], pv[nt, :, 1]], axis=1).astype(cfg.dtype))
                pb[nt, 1] = movt(np.stack([pv[nt, :, 2], pv[nt, :, 3]], axis=1).astype(cfg.dtype))
            for md in range(KS):
                rr = (lanes & 7) + ((lanes >> 4) << 3)
                sg = 2 * md + ((lanes >> 3) & 1)
                a = ldsm4(smem, [vt + swz(cfg, int(rr[T]), int(sg[T])) for T in range(32)], trans=True,
                          dtype=cfg.dtype)
                for nt in range(NT):
                    mma(acc[w, nt, md], a, pb[nt, 0], pb[nt, 1])
        if k % TPW != TPW - 1:
            continue
        c_round = c_begin + (k // TPW) * groups
        for w in range(NWT):
            poisoned = bad[w].any()
            F = fold[w]
            for nt in range(NT):
                for T in range(32):
                    h0 = nt * 8 + 2 * t4[T]
                    for md in range(KS):
                        d0 = md * 16 + gq[T]
                        F[h0 * D + d0] = acc[w, nt, md, T, 0]
                        F[(h0 + 1) * D + d0] = acc[w, nt, md, T, 1]
                        F[h0 * D + d0 + 8] = acc[w, nt, md, T, 2]
                        F[(h0 + 1) * D + d0 + 8] = acc[w, nt, md, T, 3]
                acc[w, nt] = 0
                for j in range(2):
                    ltot = shfl_sum(wl[w, nt, j])
                    for T in range(32):
                        if gq[T] == 0:
                            F[GS8 * D + nt * 8 + 2 * t4[T] + j] = wm[w, nt, j, T]
                            F[GS8 * D + GS8 + nt * 8 + 2 * t4[T] + j] = np.nan if poisoned else ltot[T]
                    wm[w, nt, j] = -np.inf
                    wl[w, nt, j] = 0
        # thread tid folds channels PDA_CHAN(i) of head fg (the weights once per head), for
        # each group's chunk of the round in chunk order
        FH = cfg.fold_heads(128 * groups)
        TPH = 128 * groups // FH
        # PDA_SC > 1: chunks fold into their superchunk's state (from empty), which folds into
        # the running state (no split) or is stored whole (a split of whole superchunks) at
        # the superchunk's end; a split of other chunk counts stores each chunk's partial
        sup_store = split and SC > 1 and cpc % SC == 0
        for gi in range(groups):
            c = c_round + gi
            if c >= c_end:
                break
            F0 = fold[gi * NW:(gi + 1) * NW]
            seen = np.zeros(GS8 * D, dtype=int)
            for tid in range(128 * groups):
                fg, fu = tid // TPH, tid % TPH
                EPT = D // TPH
                vw = 4 if EPT % 4 == 0 else 2 if EPT % 2 == 0 else 1   # PDA_FVW, PDA_CHAN
                for i in range(EPT):
                    d = (i // vw) * (TPH * vw) + fu * vw + i % vw
                    e = fg * D + d
                    seen[e] += 1
                    cm, cl, ca = F0[0, GS8 * D + fg], F0[0, GS8 * D + GS8 + fg], F0[0, e]
                    for ww in range(1, NW):
                        cm, cl, ca = merge(cm, cl, ca, F0[ww, GS8 * D + fg], F0[ww, GS8 * D + GS8 + fg], F0[ww, e])
                    if SC > 1 and (not split or sup_store):
                        sup_m[e], sup_l[e], sup_a[e] = merge(sup_m[e], sup_l[e], sup_a[e], cm, cl, ca)
                        if c % SC == SC - 1 or c == n_chunks - 1:
                            if not split:
                                run_m[e], run_l[e], run_a[e] = merge(run_m[e], run_l[e], run_a[e], sup_m[e],
                                                                     sup_l[e], sup_a[e])
                            elif head_ok(fg):
                                base = ((b * H + hbase + fg) * max_chunks + c // SC) * (D + 2)
                                ws[base + d] = sup_a[e]
                                if fu == 0:
                                    ws[base + D] = sup_m[e]
                                    ws[base + D + 1] = sup_l[e]
                            sup_m[e], sup_l[e], sup_a[e] = -np.inf, 0.0, 0.0
                    elif not split:
                        run_m[e], run_l[e], run_a[e] = merge(run_m[e], run_l[e], run_a[e], cm, cl, ca)
                    elif head_ok(fg):
                        base = ((b * H + hbase + fg) * max_chunks + c) * (D + 2)
                        ws[base + d] = ca
                        if fu == 0:
                            ws[base + D] = cm
                            ws[base + D + 1] = cl
            assert (seen[:FH * D] == 1).all() and FH >= GS, "the fold's threads must cover every (head, channel) once"
    if split:
        return
    for e in range(GS8 * D):
        g, d = e // D, e % D
        if not head_ok(g):
            continue
        lv = run_l[e]
        o[b, hbase + g, d] = 0.0 if lv == 0 else run_a[e] / lv
        if d == 0:
            lse[b, hbase + g] = -np.inf if lv == 0 else (run_m[e] + np.log2(lv)) * math.log(2)


def merge_kernel(cfg, ws, sl, o, lse, H, MB, max_chunks, SC=1, cpc=1):
    """SC > 1: the partials are whole superchunks' (cpc a multiple of SC), folded in order,
    or chunks', folded into their superchunk's state from empty and each superchunk into
    the result at its end"""
    D = cfg.D
    two_level = SC > 1 and cpc % SC != 0
    for bh in range(o.shape[0] * H):
        b, h = bh // H, bh % H
        length = int(sl[b])
        if length < 0 or length > MB * cfg.BS:
            o[b, h] = np.nan
            lse[b, h] = np.nan
            continue
        n_chunks = (length + CH - 1) // CH
        m = np.full(D, -np.inf, dtype=np.float32)
        l_ = np.zeros(D, dtype=np.float32)
        a = np.zeros(D, dtype=np.float32)
        slots = n_chunks if SC == 1 or two_level else -(-n_chunks // SC)
        sm, sl_, sa = np.full(D, -np.inf, dtype=np.float32), np.zeros(D, dtype=np.float32), np.zeros(D, np.float32)
        for c in range(slots):
            P = ws[(bh * max_chunks + c) * (D + 2):(bh * max_chunks + c + 1) * (D + 2)]
            if not two_level:
                m, l_, a = merge(m, l_, a, P[D], P[D + 1], P[:D])
                continue
            sm, sl_, sa = merge(sm, sl_, sa, P[D], P[D + 1], P[:D])
            if c % SC == SC - 1 or c == n_chunks - 1:
                m, l_, a = merge(m, l_, a, sm, sl_, sa)
                sm, sl_, sa = np.full(D, -np.inf, dtype=np.float32), np.zeros(D, np.float32), np.zeros(D, np.float32)
        o[b, h] = np.where(l_ == 0, 0.0, a / np.where(l_ == 0, 1, l_))
        lse[b, h] = -np.inf if l_[0] == 0 else (m[0] + np.log2(l_[0])) * math.log(2)


def run(q, kc, vc, bt, sl, scale, BS, split_s=1, stages=2, groups=1, SC=1, cpc=None):
    """o, lse as the kernels compute them, with S = split_s CTAs along each sequence (cpc
    chunks each: by default the fewest that cover max_chunks), each CTA of `groups` chunk
    groups, superchunks of SC chunks (PDA_SC)."""
    B, H, D = q.shape
    Hkv = kc.shape[2]
    G = H // Hkv
    GS = min(G, 16 if D <= 128 else 8)
    cfg = Config(D, G, GS, BS, stages, q.dtype.type)
    zs = -(-G // GS)
    MB = bt.shape[1]
    max_chunks = -(-MB * BS // CH)
    if cpc is None:
        cpc = -(-max_chunks // split_s) if split_s > 1 else max_chunks
    split = split_s > 1
    o = np.full((B, H, D), 123.0, dtype=np.float32)
    lse = np.full((B, H), 123.0, dtype=np.float32)
    ws = np.full(B * H * max(max_chunks, 1) * (D + 2), np.nan, dtype=np.float32) if split else None
    for x in range(B * Hkv * zs):
        z, pair = x % zs, x // zs
        kvh, b = pair % Hkv, pair // Hkv
        for y in range(split_s):
            cta(cfg, q, kc, vc, bt, sl, b, kvh, z, y, cpc, split, scale * math.log2(math.e), o, lse, ws, max_chunks,
                groups, SC)
    if split:
        merge_kernel(cfg, ws, sl, o, lse, H, MB, max_chunks, SC, cpc)
    return o, lse


if __name__ == "__main__":
    import sys
    sys.path.insert(0, "src")
    import torch
    from tileops.reference.attention import paged_decode_attention as reference
    rng = np.random.default_rng(0)
    for (H, Hkv, D, BS, lens, S) in [(8, 1, 32, 16, [300, 17], 1), (8, 1, 32, 16, [300, 17], 2),
                                    (7, 1, 48, 5, [40, 0], 1), (20, 1, 16, 16, [33], 1)]:
        N = sum(-(-n // BS) for n in lens) + 2
        q = rng.standard_normal((len(lens), H, D)).astype(np.float16)
        kc = rng.standard_normal((N, BS, Hkv, D)).astype(np.float16)
        vc = rng.standard_normal((N, BS, Hkv, D)).astype(np.float16)
        mb = max(-(-n // BS) for n in lens)
        bt = np.full((len(lens), mb), 2**31 - 1, dtype=np.int32)
        perm = rng.permutation(N)
        k = 0
        for i, n in enumerate(lens):
            nb = -(-n // BS)
            bt[i, :nb] = perm[k:k + nb]
            k += nb
        sl = np.array(lens, dtype=np.int32)
        scale = 1 / math.sqrt(D)
        o, lse = run(q, kc, vc, bt, sl, scale, BS, split_s=S)
        ro, rl = reference(*(torch.from_numpy(t).double() for t in (q, kc, vc)), torch.from_numpy(bt),
                           torch.from_numpy(sl), head_size=D, block_size=BS, scale=scale)
        print(H, Hkv, D, BS, lens, S, "max |o - ref|", np.abs(o - ro.numpy()).max(), "max |lse - ref|",
              np.nanmax(np.abs(np.where(np.isinf(lse), 0, lse) - np.where(np.isinf(rl.numpy()), 0, rl.numpy()))))
