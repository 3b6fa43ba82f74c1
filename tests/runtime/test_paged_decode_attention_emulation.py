"""The CUDA kernels of PagedDecodeAttentionFwdOp, emulated in numpy line by line with the
PTX ISA's fragment layouts (dev/emulate_paged_decode_attention.py: the swizzled ring of
each warp, ldmatrix / ldmatrix.trans by the kernel's lane addresses, mma.m16n8k16,
movmatrix, the softmax shuffles, the warps' fold, the CTA's running fold, the workspace
partials and the merge kernel), against the float64 reference: every element lands where
the kernel means it to, on a machine without a GPU. Cases: several chunks with and
without the split, a 5-token block and 48 channels (segments left unswizzled), a group of
7 (padded heads), 20 heads (two slices, two n-tiles), length 0, a bad block id (NaN for
that sequence only)."""
import math
import os

import numpy as np
import pytest
import torch
from helpers import load_script

from tileops.reference.attention import paged_decode_attention as reference

emu = load_script(os.path.join(os.path.dirname(__file__), "..", "..", "dev", "emulate_paged_decode_attention.py"),
                  "emulate_paged_decode_attention")


def _inputs(H, Hkv, D, BS, lens, dtype, seed=0):
    rng = np.random.default_rng(seed)
    N = sum(-(-n // BS) for n in lens) + 2
    q = rng.standard_normal((len(lens), H, D)).astype(dtype)
    kc = rng.standard_normal((N, BS, Hkv, D)).astype(dtype)
    vc = rng.standard_normal((N, BS, Hkv, D)).astype(dtype)
    mb = max([-(-n // BS) for n in lens] + [1])
    bt = np.full((len(lens), mb), 2**31 - 1, dtype=np.int32)
    perm = rng.permutation(N)
    k = 0
    for i, n in enumerate(lens):
        nb = -(-n // BS)
        bt[i, :nb] = perm[k:k + nb]
        k += nb
    return q, kc, vc, bt, np.array(lens, dtype=np.int32)


def _close_to_reference(o, lse, q, kc, vc, bt, sl, D, BS, scale):
    ro, rl = reference(*(torch.from_numpy(t).double() for t in (q, kc, vc)), torch.from_numpy(bt),
                       torch.from_numpy(sl), head_size=D, block_size=BS, scale=scale)
    # p is rounded to float16 for P V, as on the GPU
    np.testing.assert_allclose(o, ro.numpy(), rtol=2e-3, atol=2e-3)
    np.testing.assert_allclose(lse, rl.numpy(), rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("H,Hkv,D,BS,lens,split,stages", [
    (8, 1, 32, 16, [300, 17], 1, 2),       # two chunks folded in the CTA; G 8, one n-tile
    (8, 1, 32, 16, [300, 17], 3, 3),       # the split: partials in the workspace, the merge kernel
    (7, 1, 48, 5, [40, 0], 1, 1),          # G 7 (a padded head), 6-segment rows, 5-token blocks, length 0
    (20, 1, 16, 16, [33], 1, 2),           # 20 heads: slices of 16 and 4, two n-tiles
    (4, 2, 64, 64, [520, 1], 2, 2),        # two KV heads, 64-token blocks, three chunks split in two
])
def test_the_emulated_kernels_match_the_reference(H, Hkv, D, BS, lens, split, stages):
    q, kc, vc, bt, sl = _inputs(H, Hkv, D, BS, lens, np.float16)
    scale = 1 / math.sqrt(D)
    o, lse = emu.run(q, kc, vc, bt, sl, scale, BS, split_s=split, stages=stages)
    _close_to_reference(o, lse, q, kc, vc, bt, sl, D, BS, scale)


@pytest.mark.parametrize("H,Hkv,D,BS,lens,split", [
    (8, 1, 32, 16, [1000, 17, 0], 1),      # two chunk groups: 4 chunks in 2 rounds, 1 chunk (group 1 idle)
    (8, 1, 32, 16, [1000, 300], 2),        # split: 2 chunks a CTA, one round; the other CTA's last round half
    (4, 2, 64, 64, [777, 1], 1),           # 3 chunks: the second round's group 1 has none
    (20, 1, 16, 16, [600], 1),             # 16-head slices: 16 fold threads a head, one channel each
    (8, 2, 128, 16, [600, 17], 1),         # Llama's group of 4: the fold over 4 heads (PDA_FH), 4 or 2
])                                         # channels a thread read at once (PDA_FVW)
def test_two_chunk_groups_give_the_one_group_kernels_values(H, Hkv, D, BS, lens, split):
    """A CTA of two chunk groups (8 warps, PDA_CG 2) streams two chunks a round and folds
    them in chunk order: the same values as one group, chunk after chunk."""
    q, kc, vc, bt, sl = _inputs(H, Hkv, D, BS, lens, np.float16)
    scale = 1 / math.sqrt(D)
    o, lse = emu.run(q, kc, vc, bt, sl, scale, BS, split_s=split, groups=2)
    o1, lse1 = emu.run(q, kc, vc, bt, sl, scale, BS, split_s=split, groups=1)
    np.testing.assert_array_equal(o, o1)
    np.testing.assert_array_equal(lse, lse1)
    _close_to_reference(o, lse, q, kc, vc, bt, sl, D, BS, scale)


def test_a_bad_block_id_gives_that_sequence_nan_in_both_launch_plans():
    q, kc, vc, bt, sl = _inputs(8, 2, 32, 16, [300, 40, 290], np.float16)
    bt[0, 7] = kc.shape[0]                 # inside sequence 0's second chunk
    good = emu.run(q[1:], kc, vc, bt[1:], sl[1:], 0.2, 16)
    for split in (1, 2):
        o, lse = emu.run(q, kc, vc, bt, sl, 0.2, 16, split_s=split)
        assert np.isnan(o[0]).all() and np.isnan(lse[0]).all()
        # (numpy's exp2 of a scalar and of an array may differ in the last bit: not bitwise here)
        np.testing.assert_allclose(o[1:], good[0], rtol=1e-6, atol=1e-7)
        np.testing.assert_allclose(lse[1:], good[1], rtol=1e-6, atol=1e-7)


@pytest.mark.parametrize("H,Hkv,D,BS,lens", [
    (8, 1, 32, 16, [1300, 530, 17]),       # 6, 3 and 1 chunks: superchunks of 2, a last one half full
    (4, 2, 64, 64, [1100, 1]),             # two KV heads, 64-token blocks: 5 chunks and 1
])
def test_superchunks_give_one_result_whatever_the_split(H, Hkv, D, BS, lens):
    """PDA_SC = 2 (the superchunk fold, kernels/attention/paged_decode_attention.py
    SUPERCHUNK): a sequence is the left fold of its superchunks, each the left fold of its
    chunks from empty. No split, a split of whole superchunks (each stored once), splits of
    other chunk counts (each chunk stored; the merge folds both levels) and two chunk groups
    give the same bits, and the float64 reference's values."""
    q, kc, vc, bt, sl = _inputs(H, Hkv, D, BS, lens, np.float16, seed=3)
    scale = 1 / math.sqrt(D)
    max_chunks = -(-bt.shape[1] * BS // 256)
    o, lse = emu.run(q, kc, vc, bt, sl, scale, BS, SC=2)
    _close_to_reference(o, lse, q, kc, vc, bt, sl, D, BS, scale)
    for split, cpc, groups in ((-(-max_chunks // 2), 2, 1), (max_chunks, 1, 1), (2, 3, 1), (1, None, 2),
                               (-(-max_chunks // 2), 2, 2)):
        o2, lse2 = emu.run(q, kc, vc, bt, sl, scale, BS, split_s=split, groups=groups, SC=2, cpc=cpc)
        np.testing.assert_array_equal(o2, o, err_msg=f"split {split} cpc {cpc} groups {groups}")
        np.testing.assert_array_equal(lse2, lse, err_msg=f"split {split} cpc {cpc} groups {groups}")


def test_a_sequence_of_one_superchunk_gets_the_plain_fold_s_bits():
    """kernels/attention/paged_decode_attention.py fold_of takes the plain build for a table
    of at most SUPERCHUNK chunks and the build of superchunks for a wider one: batch
    invariant because a sequence of at most SUPERCHUNK chunks gets the same bits from both
    (its one superchunk, folded from empty, is folded into an empty state, which gives it
    back exactly). Here with superchunks of 4: sequences of 4, 3, 1 and 0 chunks, unsplit,
    split per chunk and per two chunks, one or two chunk groups."""
    q, kc, vc, bt, sl = _inputs(8, 2, 32, 16, [1024, 530, 17, 0], np.float16, seed=5)
    scale = 1 / math.sqrt(32)
    o, lse = emu.run(q, kc, vc, bt, sl, scale, 16)
    for split, cpc, groups in ((1, None, 1), (4, 1, 1), (2, 2, 1), (1, None, 2), (2, 2, 2)):
        o2, lse2 = emu.run(q, kc, vc, bt, sl, scale, 16, split_s=split, groups=groups, SC=4, cpc=cpc)
        np.testing.assert_array_equal(o2, o, err_msg=f"split {split} cpc {cpc} groups {groups}")
        np.testing.assert_array_equal(lse2, lse, err_msg=f"split {split} cpc {cpc} groups {groups}")
