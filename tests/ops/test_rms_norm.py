"""RMSNormFwdOp on the CPU: every kernel type, every dtype, odd and non-contiguous shapes,
against a float64 torch reference."""
import pytest
import torch

from tileops import _C
from tileops._dtypes import CODE
from tileops.kernels.norm.rms_norm import (RMSNormKernel, RMSNormOnChipKernel,
                                           RMSNormStreamingKernel)
from rms_norm_reference import DTYPES, TOL, reference
from tileops.norm import RMSNormFwdOp


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("shape", [(1, 1), (3, 1), (1, 7), (5, 127), (2, 3, 4095), (4, 4096), (3, 4097), (0, 64), (33, 8192)])
@pytest.mark.parametrize("with_weight", [True, False])
def test_matches_float64_reference(dtype, shape, with_weight):
    n = shape[-1]
    x = torch.randn(shape, dtype=dtype) * 3
    w = torch.randn(n, dtype=dtype) if with_weight else None
    op = RMSNormFwdOp((n,))
    y = op(x, w)
    assert y.shape == x.shape and y.dtype == dtype and y.is_contiguous()
    torch.testing.assert_close(y, reference(x, (n,), w, None), **TOL[dtype])


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("variant", [0, 1, 2])
@pytest.mark.parametrize("n", [1, 3, 17, 4095, 4096, 4097])
def test_each_c_variant_against_the_c_reference(dtype, variant, n):
    rows = 9
    x = torch.randn(rows, n, dtype=dtype)
    w = torch.randn(n, dtype=dtype)
    y = torch.full((rows, n), float("nan"), dtype=dtype)
    r = torch.full((rows, n), float("nan"), dtype=dtype)
    _C.cpu_launch(_C.cpu_kernel("rms_norm")[0], x.data_ptr(), w.data_ptr(), y.data_ptr(), rows, n, n, n, 1e-6, CODE[dtype], variant)
    _C.cpu_launch(_C.cpu_kernel("rms_norm_reference")[0], x.data_ptr(), w.data_ptr(), r.data_ptr(), rows, n, n, n, 1e-6, CODE[dtype], 0)
    assert not torch.isnan(y).any(), "unwritten outputs"
    torch.testing.assert_close(y, r, **TOL[dtype])


def test_strided_rows_do_not_touch_the_padding():
    rows, n, stride = 7, 100, 131
    xbuf = torch.randn(rows, stride)
    ybuf = torch.full((rows, stride), 123.0)
    _C.cpu_launch(_C.cpu_kernel("rms_norm")[0], xbuf.data_ptr(), 0, ybuf.data_ptr(), rows, n, stride, stride, 1e-6, 0, 0)
    assert torch.all(ybuf[:, n:] == 123.0)
    torch.testing.assert_close(ybuf[:, :n], reference(xbuf[:, :n], (n,), None, 1e-6))


@pytest.mark.parametrize("n,kernel", [(4096, RMSNormKernel), (40000, RMSNormOnChipKernel), (300000, RMSNormStreamingKernel)])
def test_each_kernel_type_serves_its_row_lengths(n, kernel):
    op = RMSNormFwdOp((n,))
    x = torch.randn(2, n)
    y = op(x)
    torch.testing.assert_close(y, reference(x, (n,), None, None), atol=1e-5, rtol=1e-5)
    built = list(op._kernels)
    assert len(built) == 1
    expected_variant = {RMSNormKernel: 0, RMSNormOnChipKernel: 1, RMSNormStreamingKernel: 2}[kernel]
    assert built[0][0] is kernel and built[0][1].variant == expected_variant


def test_multi_dim_normalized_shape_and_eps():
    x = torch.randn(3, 5, 6, 7)
    w = torch.randn(6, 7)
    op = RMSNormFwdOp((6, 7), eps=0.5)
    torch.testing.assert_close(op(x, w), reference(x, (6, 7), w, 0.5), atol=1e-5, rtol=1e-5)
    torch.testing.assert_close(op(x, w), torch.nn.functional.rms_norm(x, (6, 7), w, eps=0.5), atol=1e-5, rtol=1e-5)


def test_non_contiguous_input_and_weight():
    x = torch.randn(64, 10).t()
    w = torch.randn(128)[::2]
    op = RMSNormFwdOp(64)
    torch.testing.assert_close(op(x, w), reference(x, (64,), w, None), atol=1e-5, rtol=1e-5)


def test_batch_invariance_bit_for_bit():
    torch.manual_seed(1)
    x = torch.randn(257, 4096, dtype=torch.bfloat16)
    op = RMSNormFwdOp(4096)
    full = op(x)
    for r in (0, 1, 128, 256):
        assert torch.equal(op(x[r:r + 1]), full[r:r + 1])
    assert torch.equal(op(x[:3]), full[:3])


def test_thread_count_does_not_change_results():
    x = torch.randn(64, 4096)
    op = RMSNormFwdOp(4096)
    n0, follows = _C.cpu_num_threads(), _C.cpu_threads_followed()
    try:
        _C.cpu_set_num_threads(1)      # a count set by hand: the pool stops following torch's
        a = op(x)
        assert _C.cpu_num_threads() == 1
        _C.cpu_set_num_threads(3)
        b = op(x)
        assert _C.cpu_num_threads() == 3
    finally:
        _C.cpu_set_num_threads(n0)
        _C.cpu_follow_threads(follows)
    assert torch.equal(a, b)


def test_c_errors_become_exceptions_with_the_core_message():
    with pytest.raises(ValueError, match="rms_norm"):
        _C.cpu_launch(_C.cpu_kernel("rms_norm")[0], 0, 0, 0, 4, 0, 0, 0, 1e-6, 0, 0)
    with pytest.raises(ValueError, match="rms_norm"):
        x = torch.randn(2, 8)
        _C.cpu_launch(_C.cpu_kernel("rms_norm")[0], x.data_ptr(), 0, x.data_ptr(), 2, 8, 8, 8, 1e-6, 99, 0)


def test_concurrent_python_threads_share_the_pool_safely():
    """The GIL is released around CPU kernels: calls from several threads at once (the
    pool busy with one of them) must all be right."""
    import threading
    op = RMSNormFwdOp(4096)
    xs = [torch.randn(64, 4096) for _ in range(4)]
    expected = [reference(x, (4096,), None, None) for x in xs]
    errors = []

    def work(i):
        try:
            for _ in range(20):
                torch.testing.assert_close(op(xs[i]), expected[i], atol=1e-5, rtol=1e-5)
        except Exception as e:  # reported below, with the thread's index
            errors.append((i, e))
    threads = [threading.Thread(target=work, args=(i,)) for i in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors, errors


def test_forked_child_runs_the_kernels():
    """The pool is re-created in a child process (fork after the pool started)."""
    import os
    op = RMSNormFwdOp(4096)
    x = torch.randn(256, 4096)
    ref = op(x).clone()  # the pool has started in the parent
    pid = os.fork()
    if pid == 0:  # child: exit status says whether the result was right. Only small torch
        # ops here: torch's own OpenMP pool is not fork-safe (a large parallel op hangs).
        y = op(x)
        ok = torch.equal(y[:2], ref[:2]) and torch.equal(y[-2:], ref[-2:])
        os._exit(0 if ok else 1)
    _, status = os.waitpid(pid, 0)
    assert os.WIFEXITED(status) and os.WEXITSTATUS(status) == 0


@pytest.mark.parametrize("shape,ns", [((5, 0), (0,)), ((0, 7), (7,)), ((2, 0, 3), (0, 3))])
def test_empty_inputs(shape, ns):
    x = torch.randn(shape)
    w = torch.randn(ns)
    y = RMSNormFwdOp(ns)(x, w)
    assert y.shape == x.shape and y.numel() == 0
    torch.testing.assert_close(y, torch.nn.functional.rms_norm(x, ns, w))


@pytest.mark.parametrize("ns,shape", [((8,), (3, 8)), ((8,), (1, 8)), ((8,), (0, 8)), ((2, 4), (2, 4)),
                                      ((2, 4), (5, 2, 4)), ((8,), (8,)), ((8,), (2, 3, 8)), ((4, 2), (2, 4, 2))])
def test_output_is_a_new_contiguous_tensor_of_xs_shape(ns, shape):
    """The launch allocates (rows, n) outputs directly and anything else like empty_like:
    either way x's shape, torch.empty's strides, a tensor of its own."""
    x = torch.randn(shape)
    w = torch.randn(ns)
    y = RMSNormFwdOp(ns)(x, w)
    assert y.shape == x.shape and y.stride() == torch.empty(shape).stride() and y.dtype == x.dtype
    assert y.numel() == 0 or y.data_ptr() != x.data_ptr()
    torch.testing.assert_close(y, torch.nn.functional.rms_norm(x, ns, w, torch.finfo(x.dtype).eps))
