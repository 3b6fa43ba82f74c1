"""RMSNormFwdOp's CUDA C kernels on a real GPU: correctness of the three kernels over odd
shapes and every dtype, alignment, batch invariance, streams, CUDA graphs, the capture rule,
torch.compile with cudagraphs, the disk cache across processes, and no synchronisation. (The
lab's experiment builds -- tuning defines, 2-block cluster, TMA bulk copies -- are tested bit
for bit against these kernels in dev/tests/test_lab_rms_norm.py.)"""
import json
import os
import subprocess
import sys

import pytest
import torch

from helpers import compile_keeping_graphs
from rms_norm_reference import DTYPES, TOL, reference
from tileops import NotReadyDuringCaptureError
from tileops.norm import RMSNormFwdOp

DEV = "cuda"


def run_poisoned(op, x, w):
    """Fills the caching allocator's next block with NaN first, so an unwritten output shows."""
    p = torch.full_like(x, float("nan"))
    del p
    y = op(x, w)
    torch.cuda.synchronize()
    assert not torch.isnan(y).any(), "output elements left unwritten"
    return y


def _variant_of(op):
    names = {identity.kernel_name for _, identity in op._kernels}
    assert len(names) == 1, names
    return names.pop()


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("rows,n", [(1, 1), (3, 7), (5, 127), (2, 4095), (2048, 4096), (3, 4097), (37, 8192),
                                    (4, 16384), (3, 12345), (2, 40000), (2, 65536), (2, 131071), (1, 300000)])
@pytest.mark.parametrize("with_weight", [True, False])
def test_kernels_match_float64_reference(dtype, rows, n, with_weight):
    torch.manual_seed(n)
    x = torch.randn(rows, n, device=DEV, dtype=dtype) * 2
    w = torch.randn(n, device=DEV, dtype=dtype) if with_weight else None
    op = RMSNormFwdOp((n,))
    y = run_poisoned(op, x, w)
    torch.testing.assert_close(y, reference(x, (n,), w), **TOL[dtype])


@pytest.mark.parametrize("dtype", [torch.float16, torch.float32])
@pytest.mark.parametrize("n,kernel", [(4096, "tileops_rms_norm"), (32768, "tileops_rms_norm"),
                                      (40000, "tileops_rms_norm_on_chip"),
                                      (131072, "tileops_rms_norm_streaming")])
def test_each_kernel_type_is_selected_for_its_row_lengths(dtype, n, kernel):
    op = RMSNormFwdOp((n,))
    x = torch.randn(3, n, device=DEV, dtype=dtype)
    y = run_poisoned(op, x, None)
    torch.testing.assert_close(y, reference(x, (n,), None), **TOL[dtype])
    assert _variant_of(op) == kernel


@pytest.mark.parametrize("dtype", DTYPES)
def test_misaligned_views_take_the_scalar_path_and_are_correct(dtype):
    n, rows = 4096, 9
    buf = torch.randn(rows * n + 1, device=DEV, dtype=dtype)
    x = buf[1:].view(rows, n)               # contiguous, but 16-byte misaligned
    assert x.data_ptr() % 16 != 0
    w = torch.randn(n + 1, device=DEV, dtype=dtype)[1:]
    op = RMSNormFwdOp((n,))
    y = run_poisoned(op, x, w)
    torch.testing.assert_close(y, reference(x, (n,), w), **TOL[dtype])
    assert any(identity.vec == 1 for _, identity in op._kernels), "expected the unvectorised build"


@pytest.mark.parametrize("n", [4096, 40000, 131072])
def test_batch_invariance_bit_for_bit(n):
    torch.manual_seed(0)
    x = torch.randn(300, n, device=DEV, dtype=torch.bfloat16)
    op = RMSNormFwdOp((n,))
    full = op(x)
    for r in (0, 1, 150, 299):
        assert torch.equal(op(x[r:r + 1].clone()), full[r:r + 1])
    assert torch.equal(op(x[:7].clone()), full[:7])


def test_runs_on_torchs_current_stream():
    op = RMSNormFwdOp((4096,))
    s = torch.cuda.Stream()
    x = torch.randn(512, 4096, device=DEV, dtype=torch.float16)
    op(x)  # warm-up
    torch.cuda.synchronize()
    with torch.cuda.stream(s):
        x2 = x * 3          # queued on s
        y = op(x2)          # must be ordered after it on s
    s.synchronize()
    torch.testing.assert_close(y, reference(x * 3, (4096,), None), **TOL[torch.float16])


def test_cuda_graph_capture_after_warm_up_and_replay_with_new_data():
    op = RMSNormFwdOp((4096,))
    x = torch.randn(64, 4096, device=DEV, dtype=torch.float16)
    w = torch.randn(4096, device=DEV, dtype=torch.float16)
    s = torch.cuda.Stream()
    s.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(s):
        op(x, w)            # warm-up at this shape builds the kernel
    torch.cuda.current_stream().wait_stream(s)
    g = torch.cuda.CUDAGraph()
    with torch.cuda.graph(g):
        y = op(x, w)
    for _ in range(3):
        x.copy_(torch.randn_like(x))
        g.replay()
        torch.cuda.synchronize()
        torch.testing.assert_close(y, reference(x, (4096,), w), **TOL[torch.float16])


def test_capture_without_warm_up_raises_the_clear_error_and_capture_ends_cleanly():
    op = RMSNormFwdOp((2048 + 13,))
    x = torch.randn(8, 2048 + 13, device=DEV, dtype=torch.bfloat16)
    g = torch.cuda.CUDAGraph()
    with pytest.raises(NotReadyDuringCaptureError) as ei:
        with torch.cuda.graph(g):
            op(x)
    msg = str(ei.value)
    assert "RMSNormFwdOp" in msg and "2061" in msg and "call the op once at this shape before capture" in msg
    torch.cuda.synchronize()
    y = op(x)              # after capture: builds and runs
    torch.testing.assert_close(y, reference(x, (2061,), None), **TOL[torch.bfloat16])
    assert op.target is not None


def test_reduce_overhead_mode_runs_without_skipping_cudagraphs():
    from torch._dynamo.utils import counters
    torch._dynamo.reset()
    counters.clear()
    op = RMSNormFwdOp((4096,))
    f = torch.compile(lambda x, w: op(x, w) * 2, mode="reduce-overhead", fullgraph=True)
    x = torch.randn(32, 4096, device=DEV, dtype=torch.float16)
    w = torch.randn(4096, device=DEV, dtype=torch.float16)
    for _ in range(4):
        y = f(x, w)
    torch.cuda.synchronize()
    torch.testing.assert_close(y, reference(x, (4096,), w) * 2, atol=4e-3, rtol=4e-3)
    assert counters["inductor"]["cudagraph_skips"] == 0, dict(counters["inductor"])


def test_steady_calls_never_synchronize():
    op = RMSNormFwdOp((4096,))
    x = torch.randn(16, 4096, device=DEV, dtype=torch.float16)
    op(x)
    torch.cuda.synchronize()
    torch.cuda.set_sync_debug_mode("error")
    try:
        for _ in range(10):
            op(x)
    finally:
        torch.cuda.set_sync_debug_mode(0)


def test_compiled_fullgraph_on_gpu_has_one_node_and_matches():
    torch._dynamo.reset()
    op = RMSNormFwdOp((4096,))
    x = torch.randn(2048, 4096, device=DEV, dtype=torch.float16)
    w = torch.randn(4096, device=DEV, dtype=torch.float16)
    f, graphs = compile_keeping_graphs(op)
    y = f(x, w)
    torch.testing.assert_close(y, op(x, w))
    calls = [n for g in graphs for n in g.graph.nodes if n.op == "call_function"]
    assert [str(n.target) for n in calls] == ["tileops.norm_rms_norm_fwd.default"]


def test_aten_and_builtin_give_the_same_graph_and_agree_on_gpu():
    codes, ys = {}, {}
    x = torch.randn(64, 4096, device=DEV, dtype=torch.bfloat16)
    w = torch.randn(4096, device=DEV, dtype=torch.bfloat16)
    for target in ("builtin", "aten"):
        torch._dynamo.reset()
        graphs = []
        op = RMSNormFwdOp((4096,), target=target)
        ys[target] = torch.compile(op, fullgraph=True, backend=lambda gm, ex: graphs.append(gm) or gm.forward)(x, w)
        codes[target] = graphs[0].code.replace(op._key, "<key>")
    assert codes["builtin"] == codes["aten"]
    torch.testing.assert_close(ys["builtin"], ys["aten"], **TOL[torch.bfloat16])


SCRIPT = r"""
import json, torch
from tileops import runtime
from tileops.norm import RMSNormFwdOp
for n in (4096, 40000, 131072):
    op = RMSNormFwdOp((n,))
    op(torch.randn(4, n, device="cuda", dtype=torch.float16))
torch.cuda.synchronize()
print("STATS " + json.dumps(runtime.stats()))
"""


def _stats_of_fresh_process(cache_dir):
    env = dict(os.environ, TILEOPS_CACHE_DIR=str(cache_dir))
    r = subprocess.run([sys.executable, "-c", SCRIPT], capture_output=True, text=True, env=env, timeout=300)
    assert r.returncode == 0, r.stderr[-3000:]
    line = next(ln for ln in r.stdout.splitlines() if ln.startswith("STATS "))
    return json.loads(line[6:])


def test_disk_cache_second_process_compiles_nothing(tmp_path):
    first = _stats_of_fresh_process(tmp_path)
    assert first["nvrtc_compiles"] == 3
    second = _stats_of_fresh_process(tmp_path)
    assert second["nvrtc_compiles"] == 0 and second["disk_hits"] == 3


def test_corrupt_disk_entry_is_rebuilt_not_trusted(tmp_path):
    _stats_of_fresh_process(tmp_path)
    entries = [os.path.join(d, f) for d, _, fs in os.walk(tmp_path) for f in fs if f.endswith(".cubin")]
    assert entries
    for p in entries:
        data = bytearray(open(p, "rb").read())
        data[len(data) // 2] ^= 0x5A
        open(p, "wb").write(bytes(data))
    third = _stats_of_fresh_process(tmp_path)
    assert third["nvrtc_compiles"] == 3 and third["disk_rejects"] == 3


THREADS_SCRIPT = r"""
import json, threading, torch
from tileops import runtime
from tileops.norm import RMSNormFwdOp
from rms_norm_reference import reference, TOL
shared = RMSNormFwdOp((4096,))
cases = [(torch.float16, 4096), (torch.bfloat16, 4096), (torch.float16, 8192)]
inputs = [(torch.randn(33, n, device="cuda", dtype=dt), torch.randn(n, device="cuda", dtype=dt)) for dt, n in cases]
torch.cuda.synchronize()
start, errors, outs = threading.Barrier(12), [], {}
def work(i):
    try:
        dt, n = cases[i % 3]
        x, w = inputs[i % 3]
        op = shared if n == 4096 and i % 2 == 0 else RMSNormFwdOp((n,))
        start.wait()
        y = op(x, w)
        torch.cuda.current_stream().synchronize()
        torch.testing.assert_close(y, reference(x, (n,), w), **TOL[dt])
        outs[i] = y
    except BaseException as e:
        errors.append(f"{i}: {type(e).__name__}: {e}")
ts = [threading.Thread(target=work, args=(i,)) for i in range(12)]
[t.start() for t in ts]
[t.join() for t in ts]
same = all(torch.equal(outs[i], outs[i % 3]) for i in outs)
print("RESULT " + json.dumps({"errors": errors, "same": same, "stats": runtime.stats()}))
"""


def test_threads_racing_on_first_calls_compile_each_kernel_once(tmp_path):
    """12 threads make their first calls at once (3 kernels; a shared instance and
    instances of their own) in a fresh process with an empty disk cache: every result is
    right and equal across threads, and each kernel is compiled exactly once."""
    env = dict(os.environ, TILEOPS_CACHE_DIR=str(tmp_path),
               PYTHONPATH=os.pathsep.join([os.path.join(os.path.dirname(__file__), ".."),
                                           os.environ.get("PYTHONPATH", "")]))
    r = subprocess.run([sys.executable, "-c", THREADS_SCRIPT], capture_output=True, text=True, env=env,
                       timeout=300)
    assert r.returncode == 0, r.stderr[-3000:]
    res = json.loads(next(ln for ln in r.stdout.splitlines() if ln.startswith("RESULT "))[7:])
    assert res["errors"] == []
    assert res["same"]
    assert res["stats"]["nvrtc_compiles"] == 3


@pytest.mark.skipif(torch.cuda.device_count() < 2, reason="needs a second GPU (run on nvidia-h200-x2)")
def test_second_card_while_current_device_is_zero():
    torch.cuda.set_device(0)
    op = RMSNormFwdOp((4096,))
    x = torch.randn(64, 4096, device="cuda:1", dtype=torch.float16)
    w = torch.randn(4096, device="cuda:1", dtype=torch.float16)
    y = op(x, w)
    assert y.device == torch.device("cuda:1")
    torch.cuda.synchronize(1)
    torch.testing.assert_close(y, reference(x, (4096,), w), **TOL[torch.float16])
    x0 = x.to("cuda:0")
    y0 = op(x0, w.to("cuda:0"))       # the same instance on card 0: its own module
    torch.testing.assert_close(y0.to("cuda:1"), y, **TOL[torch.float16])
    with torch.cuda.device(1):
        y1 = op(x, w)
    torch.testing.assert_close(y1, y)


@pytest.mark.parametrize("shape,ns", [((5, 0), (0,)), ((0, 4096), (4096,))])
def test_empty_inputs_on_gpu(shape, ns):
    x = torch.randn(shape, device=DEV, dtype=torch.float16)
    y = RMSNormFwdOp(ns)(x)
    assert y.shape == x.shape and y.device == x.device


def _direct_build(kernel, n, dtype, threads, rt=None, vec=None, has_weight=True, source=None, **defines):
    """Builds one kernel with explicit defines (as dev/sweep_norm.py does), from the
    shipped csrc/ops/norm/rms_norm.cu unless `source` names another (the lab, by path);
    vec: TILEOPS_VEC, the vector path (16 / element size) unless given."""
    from tileops import runtime
    from tileops._dtypes import CODE
    from tileops.kernels.norm.rms_norm import CUDA_ARG_FORMAT, CUDA_SOURCE, cuda_options
    opts = list(cuda_options(kernel, CODE[dtype], n, has_weight, vec or 16 // dtype.itemsize, threads))
    opts += [f"-DTILEOPS_ROW_THREADS={rt}"] if rt else []
    opts += [f"-D{k}={v}" for k, v in defines.items()]
    return runtime.build(0, source or CUDA_SOURCE, kernel, opts, CUDA_ARG_FORMAT)


def _direct_run(handle, x, w, threads, grid, shared=0):
    from tileops import _C, runtime
    rows, n = x.shape
    y = torch.full_like(x, float("nan"))
    _C.cuda_launch(handle, grid, 1, 1, threads, 1, 1, shared, runtime.current_stream(0),
                   x.data_ptr(), w.data_ptr(), y.data_ptr(), rows, n, n, float(torch.finfo(x.dtype).eps))
    torch.cuda.synchronize()
    assert not torch.isnan(y).any(), "output elements left unwritten"
    return y


@pytest.mark.parametrize("kernel,threads,rt", [("tileops_rms_norm", 192, 96), ("tileops_rms_norm", 96, 96),
                                               ("tileops_rms_norm_on_chip", 384, None),
                                               ("tileops_rms_norm_on_chip", 96, None),
                                               ("tileops_rms_norm_streaming", 416, None)])
def test_rows_spanning_a_non_power_of_two_number_of_warps(kernel, threads, rt):
    """The cross-warp butterfly over 3 or 12 or 13 per-warp sums gives every thread the total."""
    torch.manual_seed(2)
    n, dtype = 3000, torch.float32
    x = torch.randn(11, n, device=DEV, dtype=dtype)
    w = torch.randn(n, device=DEV, dtype=dtype)
    groups = -(-n // 4)
    shared = groups * 16 if kernel == "tileops_rms_norm_on_chip" else 0
    rpb = threads // rt if rt else 1
    y = _direct_run(_direct_build(kernel, n, dtype, threads, rt), x, w, threads, -(-11 // rpb), shared)
    torch.testing.assert_close(y, reference(x, (n,), w), **TOL[dtype])


@pytest.mark.parametrize("ns,shape", [((64,), (3, 64)), ((2, 32), (2, 32)), ((2, 32), (5, 2, 32)), ((64,), (0, 64))])
def test_output_is_a_new_contiguous_tensor_of_xs_shape_on_gpu(ns, shape):
    x = torch.randn(shape, device=DEV, dtype=torch.float16)
    w = torch.randn(ns, device=DEV, dtype=torch.float16)
    y = RMSNormFwdOp(ns)(x, w)
    assert y.shape == x.shape and y.stride() == torch.empty(shape).stride() and y.device == x.device
    n = 1
    for d in ns:
        n *= d
    torch.testing.assert_close(y, reference(x.reshape(-1, n), (n,), w.reshape(n)).reshape(shape), **TOL[torch.float16])
