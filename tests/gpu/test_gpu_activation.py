"""The gated activations on a GPU beyond the generic driver: a small call of the erf GELU
takes the element build (cuda_gated.ELEMS_OPS, ELEMS_MAX outputs: a thread per element, a
third of the code), whose bits must be the group build's, so a row's result never depends
on how many rows share the call; a capture before the element build was made takes the
group build; the op's arithmetic (divisions as a times MUFU.RCP of b, no zero correction
of the sigmoid's exp) gives the bits of the build as first written (-DTILEOPS_GATED_PLAIN=1:
div.full, the erf GELU's t = 1 / (1 + k |a|) by div.full too). Skipped without CUDA (tests/gpu/conftest.py)."""
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


def _by_plain(op, x, cast, elems):
    """y = act(a) * b by the op's build (the group build, or with elems the element build)
    with -DTILEOPS_GATED_PLAIN=1: the arithmetic as first written (div.full.f32, the
    sigmoid's exp with its zero correction)"""
    from tileops import _C, runtime
    from tileops._dtypes import CODE
    rows, n = x.shape[0], x.shape[1] // 2
    y = torch.empty(rows, n, dtype=x.dtype, device=x.device)
    vec = 16 // x.element_size() if all(p % 16 == 0 for p in (x.data_ptr(), y.data_ptr())) and \
        (n * x.element_size()) % 16 == 0 else 1
    source, kernel, opts, threads, unroll = cuda_gated.specialisation(op, CODE[x.dtype], n, vec, cast=cast,
                                                                       elems=elems)
    h = runtime.build(x.device.index or 0, source, kernel, tuple(opts) + ("-DTILEOPS_GATED_PLAIN=1",),
                      cuda_gated.ARG_FORMAT, pdl=True)
    per = threads if elems else threads * unroll
    units = rows * n if elems else rows * cuda_gated.groups(CODE[x.dtype], n)
    _C.cuda_launch(h, -(-units // per), 1, 1, threads, 1, 1, 0, torch.cuda.current_stream().cuda_stream,
                   x.data_ptr(), y.data_ptr(), rows)
    torch.cuda.synchronize()
    return y


@pytest.mark.parametrize("op", sorted(OPS))
@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16, torch.float32])
@pytest.mark.parametrize("cast", [False, True])
def test_the_rewritten_arithmetic_gives_the_plain_builds_bits(op, dtype, cast):
    """The op's divisions (1 + e in [1, 2], the erf GELU's 1 + k |a| in [1, 6.9]) take a
    times MUFU.RCP of b, which is div.full.f32's value for a divisor inside [2^-126, 2^126];
    the sigmoid's exp drops a zero correction: the same bits as the plain build
    (-DTILEOPS_GATED_PLAIN=1), over
    wide inputs (|a| up to 60, the erf GELU's clamp at 20 and the sigmoid's at +-20 on both
    sides; |a| near 13.2, where the erf GELU's exp(-z^2) R(t) nears the subnormal range;
    float32 subnormals), zeros, infinities and NaN, the group build (rows past the element
    build's limit) and the element build (one row)."""
    n = 14336
    x = (torch.randn(20, 2 * n, device="cuda") * torch.logspace(-3, 1.3, 2 * n, device="cuda")).to(dtype)
    x[0, :6] = torch.tensor([0.0, -0.0, float("inf"), float("-inf"), float("nan"), -60.0])
    x[1, :n] = torch.linspace(-13.6, -12.8, n)   # the erf GELU's tail, float32 outputs near 2^-126
    x[2, :8] = torch.tensor([1e-20, -1e-20, 3e-39, -3e-39, 1e-44, -1e-44, 2.0 ** -126, -(2.0 ** -126)])
    f = OPS[op](cast_before_mul=cast)
    bits = {4: torch.int32, 2: torch.int16}[x.element_size()]
    got = f(x)
    torch.cuda.synchronize()
    assert torch.equal(got.view(bits), _by_plain(op, x, cast, False).view(bits)), (op, dtype, cast)
    one = f(x[:1])
    torch.cuda.synchronize()
    want = _by_plain(op, x[:1].contiguous(), cast, cuda_gated.elems_for(op, 1, n))
    assert torch.equal(one.view(bits), want.view(bits)), (op, dtype, cast, "one row")


@pytest.mark.parametrize("op", sorted(OPS))
@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16, torch.float32])
def test_a_call_of_the_wide_build_gives_the_128_thread_builds_bits(op, dtype):
    """A call of cuda_gated.WIDE_MIN_GROUPS groups or more launches the wide build (blocks of
    WIDE_THREADS); every row's bits are the 128-thread group build's, and one row of it
    (the group or element build) gives that row's bits too: the block size never shows."""
    n = 14336
    from tileops._dtypes import CODE
    ng = cuda_gated.groups(CODE[dtype], n)
    rows = -(-cuda_gated.WIDE_MIN_GROUPS // ng) + 3
    assert cuda_gated.wide_for(rows, ng) and not cuda_gated.wide_for(rows // 2, ng)
    x = (torch.randn(rows, 2 * n, device="cuda") * 4).to(dtype)
    x[5, :4] = torch.tensor([float("inf"), float("-inf"), float("nan"), -0.0])
    f = OPS[op]()
    bits = {4: torch.int32, 2: torch.int16}[x.element_size()]
    got = f(x)
    torch.cuda.synchronize()
    assert torch.equal(got.view(bits), _by_plain(op, x, False, False).view(bits)), (op, dtype)
    for r in (0, 5, rows - 1):
        one = f(x[r:r + 1])
        assert torch.equal(one.view(bits), got[r:r + 1].view(bits)), (op, dtype, r)
