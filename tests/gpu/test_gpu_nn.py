"""tileops.nn, the Hugging Face numerics modes and the patcher on a GPU. The cast modes
against Hugging Face's formulas as torch computes them on the GPU (RoPE bit for bit; the
norm and SiLU up to the float32 sum order and exp: the intermediate Hugging Face rounds
moved by one unit, rarely, and nothing else); a
patched tiny Llama and Qwen2 against Hugging Face's (tests/nn/test_hf_patch.py's check,
on cuda; skipped without transformers); 32 layers compiled region by region, one compile.
Skipped without CUDA (tests/gpu/conftest.py)."""
import os
import sys

import pytest
import torch
import torch.nn.functional as F

import tileops.functional as TF

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "nn"))
DEV = "cuda"


def _neighbours(a):
    """`a` (16-bit floats) and the values one unit below and above it (by the bit pattern;
    zero's negative neighbour is -0's successor, the smallest negative subnormal)."""
    bits = a.view(torch.int16)
    up, down = (bits + 1).view(a.dtype), (bits - 1).view(a.dtype)
    down = torch.where(a == 0, -up, down)
    return a, up, down


def _one_rounding_off(got, rounded, other):
    """Hugging Face's formulas round an intermediate to the 16-bit dtype, then multiply by
    `other` (rounded again). A float32 sum or exp in another order can move that
    intermediate by one unit and no more: `got` must be the product of `other` with the
    intermediate or one of its two neighbours, element by element, and differ from Hugging
    Face's own result in a small share of the elements. Returns (share, every element
    explained)."""
    want = other * rounded
    ok = torch.zeros_like(got, dtype=torch.bool)
    for c in _neighbours(rounded):
        ok |= got == other * c
    return float((got != want).float().mean()), bool(ok.all())


@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.float16])
@pytest.mark.parametrize("h", [64, 4096, 3584, 40000])
def test_rms_norm_cast_before_weight_is_hugging_faces(dtype, h):
    g = torch.Generator().manual_seed(h)
    x = torch.randn(257, h, generator=g).to(DEV, dtype)
    w = (torch.randn(h, generator=g) * 0.3 + 1).to(DEV, dtype)

    def hf_normed(v):                          # LlamaRMSNorm before its weight multiply
        vf = v.float()
        return (vf * torch.rsqrt(vf.pow(2).mean(-1, keepdim=True) + 1e-6)).to(dtype)
    share, explained = _one_rounding_off(TF.rms_norm(x, w, 1e-6, cast_before_weight=True), hf_normed(x), w)
    assert share <= 1e-3 and explained, (share, explained)
    r = torch.randn(257, h, generator=g).to(DEV, dtype)
    y, s = TF.fused_add_rms_norm(x, r, w, 1e-6, cast_before_weight=True)
    assert torch.equal(s, x + r)
    share, explained = _one_rounding_off(y, hf_normed(x + r), w)
    assert share <= 1e-3 and explained, (share, explained)
    plain, _ = _one_rounding_off(TF.rms_norm(x + r, w, 1e-6), hf_normed(x + r), w)
    assert plain > 0.05     # without the mode: F.rms_norm's single rounding, a quarter of the elements


@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.float16])
def test_silu_and_mul_cast_before_mul_is_torch_eagers(dtype):
    x = (torch.randn(300, 2 * 1408) * 3).to(DEV, dtype)
    share, explained = _one_rounding_off(TF.silu_and_mul(x, cast_before_mul=True), F.silu(x[:, :1408]),
                                         x[:, 1408:])
    assert share <= 1e-3 and explained, (share, explained)


@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.float16])
def test_rope_cast_cos_sin_is_hugging_faces_bit_for_bit(dtype):
    from tileops.reference.positional import rope_cos_sin_cache
    T, H, D = 77, 8, 128
    cache = rope_cos_sin_cache(base=500000.0, rotary_dim=D, max_position=4096).to(DEV)
    q, k = torch.randn(T, H, D).to(DEV, dtype), torch.randn(T, 2, D).to(DEV, dtype)
    pos = torch.randint(0, 4096, (T,), device=DEV)
    cos = torch.cat((cache[pos, :D // 2],) * 2, -1).to(dtype)[:, None]
    sin = torch.cat((cache[pos, D // 2:],) * 2, -1).to(dtype)[:, None]

    def hf(x):
        return x * cos + torch.cat((-x[..., D // 2:], x[..., :D // 2]), -1) * sin
    got_q, got_k = TF.rope(q, k, pos, cache, D, D, cast_cos_sin=True)
    assert torch.equal(got_q, hf(q)) and torch.equal(got_k, hf(k))


@pytest.mark.parametrize("kind", ["llama", "qwen2"])
@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.float16])
def test_patched_tiny_models_match_hugging_face_on_the_gpu(kind, dtype):
    pytest.importorskip("transformers", reason="transformers is not installed on this machine (carry its wheel)")
    from test_hf_patch import check_patch_matches_hugging_face
    check_patch_matches_hugging_face(kind, dtype, device=DEV)


def test_32_layers_compiled_region_by_region_compile_once_on_the_gpu():
    from test_modules import _model, compile_regions
    cnt = compile_regions(_model().to(DEV, torch.bfloat16), torch.randn(5, 32, device=DEV, dtype=torch.bfloat16))
    assert cnt.frame_count == 1
