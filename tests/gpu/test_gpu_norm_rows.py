"""The norm family's row kernels (csrc/ops/norm/norm_rows.cuh through each op's .cu) on a
real GPU, launched through src/tileops/kernels/norm/cuda_rows.build: every op, dtype, odd
row lengths (register and long-row kernels), row counts 0..300, with and without weight
and bias, against a float64 torch computation; residual_out bit for bit against the fp32
add rounded once; in place == out of place and a row alone == the same row in a batch, bit
for bit; the scalar path (misaligned or forced) == the vector path bit for bit; the plain
RMSNorm == rms_norm.cu's register kernel at the same threads per row, bit for bit. Skipped
without CUDA (tests/gpu/conftest.py)."""
import pytest
import torch

from tileops import _C, runtime
from tileops.kernels.norm import cuda_rows as R

DEV = "cuda"
DTYPES = {0: torch.float32, 1: torch.float16, 2: torch.bfloat16}
TOL = {0: dict(atol=2e-5, rtol=2e-5), 1: dict(atol=2e-3, rtol=2e-3), 2: dict(atol=1.6e-2, rtol=1.6e-2)}
NS = (1, 7, 100, 256, 1000, 3584, 4096, 4097, 12345, 40000)   # 256 / 3584 / 4096: every thread the same count
ROWS = (0, 1, 5, 300)
RESIDUAL = ("fused_add_rms_norm", "fused_add_layer_norm")
MEAN = ("layer_norm", "fused_add_layer_norm")
EPS = {"layer_norm": 1e-5, "fused_add_layer_norm": 1e-5}


_builds = {}


def build(op, dt, n, w, b, vec):
    key = (op, dt, n, w, b, vec)
    if key not in _builds:
        _builds[key] = R.build(0, op, dt, n, w, b, vec, EPS.get(op, 1e-6))
    return _builds[key]


def inputs(op, dt, rows, n, w, b, seed):
    g = torch.Generator(device="cpu").manual_seed(seed)
    dtype = DTYPES[dt]

    def rnd(*shape, scale=1.0, shift=0.0):
        return (torch.randn(*shape, generator=g) * scale + shift).to(device=DEV, dtype=dtype)
    # an offset mean, so LayerNorm's centring matters; the residual of the same size
    x = rnd(rows, n, scale=2.0, shift=0.5)
    r = rnd(rows, n, scale=2.0) if op in RESIDUAL else None
    wt = rnd(n, scale=0.5, shift=1.0 if op != "gemma_rms_norm" else 0.0) if w else None
    bs = rnd(n, scale=0.5) if b else None
    return x, r, wt, bs


def run(op, dt, n, w, b, vec, x, r, wt, bs, y=None, ro=None):
    """Launches into fresh NaN-poisoned outputs (or the given ones); returns (y, residual_out)."""
    y = torch.full_like(x, float("nan")) if y is None else y
    if op in RESIDUAL and ro is None:
        ro = torch.full_like(x, float("nan"))
    build(op, dt, n, w, b, vec)(x, r, wt, bs, y, ro)
    torch.cuda.synchronize()
    return y, ro


def reference(op, x, r, wt, bs):
    """(y, h) in float64 from h, h being x + r in fp32 rounded once to the dtype (exact)."""
    h = (x.float() + r.float()).to(x.dtype) if r is not None else x
    hd = h.double()
    mean = hd.mean(dim=-1, keepdim=True) if op in MEAN else 0.0
    d = hd - mean
    y = d * torch.rsqrt(d.pow(2).mean(dim=-1, keepdim=True) + EPS.get(op, 1e-6))
    if wt is not None:
        y = y * (wt.double() + (1.0 if op == "gemma_rms_norm" else 0.0))
    if bs is not None:
        y = y + bs.double()
    return y, h


def bits(t):
    return t.view(torch.int32 if t.element_size() == 4 else torch.int16)


def same_bits(a, b):
    return torch.equal(bits(a), bits(b))


@pytest.mark.parametrize("op", R.ops())
@pytest.mark.parametrize("dt", (0, 1, 2))
@pytest.mark.parametrize("n", NS)
def test_matches_float64_and_residual_out_is_the_rounded_add(op, dt, n):
    vec = R.vec_for(dt, n, True)
    for w, b in R.weight_bias_choices(op):
        for rows in ROWS:
            x, r, wt, bs = inputs(op, dt, rows, n, w, b, seed=n * 7 + rows)
            y, ro = run(op, dt, n, w, b, vec, x, r, wt, bs)
            ref, h = reference(op, x, r, wt, bs)
            assert not torch.isnan(y).any(), f"unwritten y: rows={rows} w={w} b={b}"
            torch.testing.assert_close(y.double(), ref, **TOL[dt], msg=lambda m: f"rows={rows} w={w} b={b}: {m}")
            if op in RESIDUAL:
                assert same_bits(ro, h), f"residual_out != round(x + residual): rows={rows}"


@pytest.mark.parametrize("op", MEAN)
@pytest.mark.parametrize("dt", (0, 1, 2))
@pytest.mark.parametrize("n", (256, 3584, 4096, 4097, 40000))
def test_layer_norm_centres_rows_far_from_zero(op, dt, n):
    """Rows of mean 1000 and spread 1: the variance is of the deviations from the mean, so
    y still matches float64 (E[h^2] - E[h]^2 in fp32 would lose it to cancellation: ~1e6
    against ~1, errors of O(1) in y). float32 rows within 1e-3: their fp32 mean carries
    ~1000 x 2^-24 an addition, ~1e-4 in y at a spread of 0.29 (1.3e-4 measured, H100,
    session 48, the shipped kernel and the one-reduction candidate alike; 2e-5 failed)."""
    w, b = R.weight_bias_choices(op)[0]
    x, r, wt, bs = inputs(op, dt, 9, n, w, b, seed=n + dt)
    x = (x.float() - 0.5 + 1000.0).to(x.dtype)
    r = None if r is None else (r.float() * 0.25).to(r.dtype)
    y, _ = run(op, dt, n, w, b, R.vec_for(dt, n, True), x, r, wt, bs)
    ref, _ = reference(op, x, r, wt, bs)
    torch.testing.assert_close(y.double(), ref, **(dict(atol=1e-3, rtol=1e-3) if dt == 0 else TOL[dt]))


@pytest.mark.parametrize("op", R.ops())
@pytest.mark.parametrize("dt", (0, 1, 2))
@pytest.mark.parametrize("n", (7, 4096, 12345, 40000))
def test_in_place_equals_out_of_place_bit_for_bit(op, dt, n):
    w, b = R.weight_bias_choices(op)[0]
    vec = R.vec_for(dt, n, True)
    x, r, wt, bs = inputs(op, dt, 37, n, w, b, seed=11)
    y, ro = run(op, dt, n, w, b, vec, x, r, wt, bs)
    xi = x.clone()
    ri = r.clone() if r is not None else None
    yi, roi = run(op, dt, n, w, b, vec, xi, ri, wt, bs, y=xi, ro=ri)   # y is x, residual_out is residual
    assert yi.data_ptr() == xi.data_ptr() and same_bits(yi, y)
    if r is not None:
        assert roi.data_ptr() == ri.data_ptr() and same_bits(roi, ro)


@pytest.mark.parametrize("op", R.ops())
@pytest.mark.parametrize("dt", (0, 1, 2))
@pytest.mark.parametrize("n", (100, 3584, 4097, 12345, 40000))
def test_a_row_alone_equals_the_same_row_in_a_batch_bit_for_bit(op, dt, n):
    w, b = R.weight_bias_choices(op)[0]
    vec = R.vec_for(dt, n, True)
    x, r, wt, bs = inputs(op, dt, 300, n, w, b, seed=5)
    y, ro = run(op, dt, n, w, b, vec, x, r, wt, bs)
    for k in (0, 131, 299):
        y1, ro1 = run(op, dt, n, w, b, vec, x[k:k + 1].clone(), None if r is None else r[k:k + 1].clone(), wt, bs)
        assert same_bits(y1[0], y[k]), f"row {k}"
        if r is not None:
            assert same_bits(ro1[0], ro[k])


@pytest.mark.parametrize("op", R.ops())
@pytest.mark.parametrize("dt", (0, 1, 2))
@pytest.mark.parametrize("n", (4096, 40000))
def test_scalar_path_equals_vector_path_and_serves_misaligned_views(op, dt, n):
    """TILEOPS_VEC=1 loads the same groups element by element: the same bits; it is what a
    view one element off a 16-byte boundary gets."""
    w, b = R.weight_bias_choices(op)[0]
    g = 16 // DTYPES[dt].itemsize
    x, r, wt, bs = inputs(op, dt, 5, n, w, b, seed=3)
    yv, rov = run(op, dt, n, w, b, g, x, r, wt, bs)
    ys, ros = run(op, dt, n, w, b, 1, x, r, wt, bs)
    assert same_bits(ys, yv) and (r is None or same_bits(ros, rov))

    def off(t):   # the same values one element past a 16-byte boundary
        if t is None:
            return None
        buf = torch.empty(t.numel() + 1, dtype=t.dtype, device=DEV)
        v = buf[1:].view(t.shape)
        v.copy_(t)
        return v
    assert R.vec_for(dt, n, False) == 1
    ym, rom = run(op, dt, n, w, b, 1, off(x), off(r), off(wt), off(bs), y=off(torch.full_like(x, float("nan"))),
                  ro=off(torch.full_like(x, float("nan"))) if r is not None else None)
    assert same_bits(ym, yv) and (r is None or same_bits(rom, rov))


@pytest.mark.parametrize("dt", (0, 1, 2))
@pytest.mark.parametrize("n", (7, 100, 4096, 8192, 12345))
@pytest.mark.parametrize("w", (True, False))
def test_plain_rms_norm_rows_equals_the_shipped_register_kernel_bit_for_bit(dt, n, w):
    """rms_norm_rows sums and scales as rms_norm.cu's tileops_rms_norm: built with the same
    threads per row (the same launch rule at these N), the outputs have the same bits."""
    vec = R.vec_for(dt, n, True)
    _, _, opts, threads, rpb, _, _ = R.specialisation("rms_norm_rows", dt, n, w, False, vec, 132)
    shipped_opts = [o for o in opts if not o.startswith("-DTILEOPS_HAS_BIAS")]
    h = runtime.build(0, "norm/rms_norm.cu", "tileops_rms_norm", shipped_opts, "pppqqqf")
    x, _, wt, _ = inputs("rms_norm_rows", dt, 300, n, w, False, seed=9)
    y, _ = run("rms_norm_rows", dt, n, w, False, vec, x, None, wt, None)
    ys = torch.full_like(x, float("nan"))
    _C.cuda_launch(h, -(-300 // rpb), 1, 1, threads, 1, 1, 0, runtime.current_stream(0), x.data_ptr(),
                   0 if wt is None else wt.data_ptr(), ys.data_ptr(), 300, n, n, 1e-6)
    torch.cuda.synchronize()
    assert same_bits(ys, y)


@pytest.mark.parametrize("op", R.ops())
@pytest.mark.parametrize("n,grid", [(100, 1), (3584, 5), (4097, 3), (40000, 2)])
def test_any_grid_gives_the_same_bits(op, n, grid):
    """Both kernels stride over rows: a grid smaller than the rule's (several rows per block,
    the last block iteration partly past the end) gives the same bits."""
    dt = 1
    w, b = R.weight_bias_choices(op)[0]
    vec = R.vec_for(dt, n, True)
    x, r, wt, bs = inputs(op, dt, 300, n, w, b, seed=13)
    y, ro = run(op, dt, n, w, b, vec, x, r, wt, bs)
    source, kernel, opts, threads, _, shared, _ = R.specialisation(op, dt, n, w, b, vec, 132)
    h = runtime.build(0, source, kernel, opts, R.ARG_FORMAT)
    yg = torch.full_like(x, float("nan"))
    rog = torch.full_like(x, float("nan")) if r is not None else None
    ptr = lambda t: 0 if t is None else t.data_ptr()   # noqa: E731
    _C.cuda_launch(h, grid, 1, 1, threads, 1, 1, shared, runtime.current_stream(0), ptr(x), ptr(r), ptr(wt), ptr(bs),
                   ptr(yg), ptr(rog), 300, EPS.get(op, 1e-6))
    torch.cuda.synchronize()
    assert same_bits(yg, y) and (r is None or same_bits(rog, ro))


@pytest.mark.parametrize("dt,n", [(1, 4096), (1, 6144), (2, 8192), (0, 4096), (1, 2048)])
def test_the_decode_build_gives_the_rule_builds_bits(dt, n):
    """LayerNorm's decode build (weight and bias staged in shared memory) computes the same
    bits as the rule's build, on the rows where the launch takes either (grid <= SMs / more)."""
    vec = R.vec_for(dt, n, True)
    source, kernel, opts, threads, rpb, shared, _ = R.specialisation("layer_norm", dt, n, True, True, vec, 132)
    decode = R.decode_options(opts, True, True, vec, rpb)
    ptr = lambda t: t.data_ptr()   # noqa: E731
    for rows in (1, 7, 200):
        x, _, wt, bs = inputs("layer_norm", dt, rows, n, True, True, seed=21)
        outs = []
        for o in (opts, decode):
            h = runtime.build(0, source, kernel, o, R.ARG_FORMAT)
            y = torch.full_like(x, float("nan"))
            _C.cuda_launch(h, -(-rows // rpb), 1, 1, threads, 1, 1, shared, runtime.current_stream(0), ptr(x), 0,
                           ptr(wt), ptr(bs), ptr(y), 0, rows, 1e-5)
            outs.append(y)
        torch.cuda.synchronize()
        assert same_bits(outs[0], outs[1]), rows
        yl, _ = run("layer_norm", dt, n, True, True, vec, x, None, wt, bs)   # cuda_rows.build's launch
        assert same_bits(yl, outs[0]), rows


def test_zero_rows_launch_nothing_and_graph_capture_replays():
    """rows == 0 is a no-op; a warmed-up build launches inside CUDA graph capture (current
    stream), and replays see new data."""
    op, dt, n = "fused_add_rms_norm", 1, 4096
    vec = R.vec_for(dt, n, True)
    x, r, wt, _ = inputs(op, dt, 0, n, True, False, seed=1)
    run(op, dt, n, True, False, vec, x, r, wt, None)
    x, r, wt, _ = inputs(op, dt, 8, n, True, False, seed=2)
    y, ro = torch.empty_like(x), torch.empty_like(x)
    launch = build(op, dt, n, True, False, vec)
    launch(x, r, wt, None, y, ro)
    torch.cuda.synchronize()
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        launch(x, r, wt, None, y, ro)
    x2, r2, _, _ = inputs(op, dt, 8, n, True, False, seed=3)
    x.copy_(x2)
    r.copy_(r2)
    graph.replay()
    torch.cuda.synchronize()
    ref, h = reference(op, x2, r2, wt, None)
    assert same_bits(ro, h)
    torch.testing.assert_close(y.double(), ref, **TOL[dt])
