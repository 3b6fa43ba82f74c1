"""The gated activations on a GPU beyond the generic driver: a small call of the erf GELU
takes the element build (cuda_gated.ELEMS_OPS, ELEMS_MAX outputs: a thread per element, a
third of the code), whose bits must be the group build's, so a row's result never depends
on how many rows share the call; a capture before the element build was made takes the
group build. Skipped without CUDA (tests/gpu/conftest.py)."""
import pytest
import torch

from tileops.activation import GeluAndMulFwdOp, GeluTanhAndMulFwdOp, SiluAndMulFwdOp
from tileops.kernels.activation import cuda_gated

OPS = {"gelu_and_mul": GeluAndMulFwdOp, "gelu_tanh_and_mul": GeluTanhAndMulFwdOp, "silu_and_mul": SiluAndMulFwdOp}


@pytest.mark.parametrize("op", sorted(OPS))
@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16, torch.float32])
@pytest.mark.parametrize("n", [14336, 18944, 7])
@pytest.mark.parametrize("cast", [False, True])
def test_a_rows_bits_do_not_depend_on_the_row_count(op, dtype, n, cast):
    """Rows 0-2 alone and in a call of 3 rows (and 40, past ELEMS_MAX at the real widths);
    bits compared as integers: the infinities give NaNs, which torch.equal calls unequal."""
    x = (3 * torch.randn(40, 2 * n, device="cuda")).to(dtype)
    x[0, :4] = torch.tensor([0.0, -0.0, float("inf"), float("-inf")])
    f = OPS[op](cast_before_mul=cast)
    bits = {4: torch.int32, 2: torch.int16}[x.element_size()]
    many, few = f(x).view(bits), f(x[:3]).view(bits)
    for r in range(3):
        alone = f(x[r:r + 1]).view(bits)
        torch.cuda.synchronize()
        assert torch.equal(alone, few[r:r + 1]) and torch.equal(alone, many[r:r + 1]), (op, r)
    assert cuda_gated.elems_for(op, 1, n) == (op in cuda_gated.ELEMS_OPS)
    assert not cuda_gated.elems_for(op, 40, n) or n == 7


def test_the_element_build_is_built_on_the_first_one_row_call_and_a_capture_takes_the_group_build():
    from tileops import runtime
    n = 4104   # a half width no other test uses: neither build exists before this test
    x = torch.randn(1, 2 * n, device="cuda", dtype=torch.float16)
    f = GeluAndMulFwdOp()
    f(torch.randn(17, 2 * n, device="cuda", dtype=torch.float16))   # past ELEMS_MAX: the group build only
    assert not cuda_gated.elems_for("gelu_and_mul", 17, n) and cuda_gated.elems_for("gelu_and_mul", 1, n)
    before = runtime.stats()
    s = torch.cuda.Stream()
    s.wait_stream(torch.cuda.current_stream())
    g = torch.cuda.CUDAGraph()
    with torch.cuda.graph(g, stream=s):
        y = f(x)
    g.replay()
    torch.cuda.synchronize()
    expected = f(torch.cat([x] * 17))[:1]
    assert torch.equal(y, expected)
    after_capture = runtime.stats()
    f(x)   # outside a capture the small call makes the element build
    torch.cuda.synchronize()
    after = runtime.stats()
    key = "modules_loaded"   # a compile or a disk-cache hit: either loads a module
    assert after_capture[key] == before[key] and after[key] == after_capture[key] + 1, (before, after_capture, after)
