"""The lab's experiment builds (dev/cuda/rms_norm_lab.cu) bit for bit against the shipped
kernels (csrc/ops/norm/rms_norm.cu): the tuning defines (cache policies, register cap,
prefetching), the register kernel as a 2-block cluster per row, and the TMA bulk-copy
kernel. On a GPU machine: `python3 -m pytest -q dev/tests` (tests/gpu/run_on_device.sh
experiments runs it); skipped without CUDA (dev/tests/conftest.py)."""
import pytest
import torch

from lab import LAB_SOURCE
from rms_norm_reference import TOL, reference
from test_gpu_rms_norm import DEV, _direct_build, _direct_run

BULK_KERNEL = "tileops_rms_norm_bulk"   # the lab's TILEOPS_KERNEL=3, built only when named


def _lab_build(kernel, n, dtype, threads, rt=None, vec=None, has_weight=True, **defines):
    """_direct_build from the lab source; the bulk kernel (no code in the shipped kernel
    table) is the register kernel's defines with TILEOPS_KERNEL=3."""
    if kernel != BULK_KERNEL:
        return _direct_build(kernel, n, dtype, threads, rt, vec, has_weight, source=LAB_SOURCE, **defines)
    from tileops import runtime
    from tileops._dtypes import CODE
    from tileops.kernels.norm.rms_norm import CUDA_ARG_FORMAT, cuda_options
    opts = [o if not o.startswith("-DTILEOPS_KERNEL=") else "-DTILEOPS_KERNEL=3"
            for o in cuda_options("tileops_rms_norm", CODE[dtype], n, has_weight, vec or 16 // dtype.itemsize, threads)]
    opts += [f"-D{k}={v}" for k, v in defines.items()]
    return runtime.build(0, LAB_SOURCE, kernel, opts, CUDA_ARG_FORMAT)


@pytest.mark.parametrize("defines,grid", [
    ({}, 37), ({"TILEOPS_LD_POLICY": 1}, 37), ({"TILEOPS_LD_POLICY": 2}, 37), ({"TILEOPS_LD_POLICY": 3}, 37),
    ({"TILEOPS_LD_POLICY": 4}, 37), ({"TILEOPS_LD_POLICY": 5}, 37), ({"TILEOPS_LD_POLICY": 6}, 37),
    ({"TILEOPS_ST_POLICY": 1}, 37), ({"TILEOPS_ST_POLICY": 2}, 37), ({"TILEOPS_ST_POLICY": 3}, 37),
    ({"TILEOPS_MIN_BLOCKS": 8}, 37), ({"TILEOPS_PREFETCH": 1}, 5), ({"TILEOPS_PREFETCH": 1}, 1),
    ({"TILEOPS_PREFETCH": 1, "TILEOPS_LD_POLICY": 4}, 3)])
def test_tuning_defines_keep_the_result_bit_for_bit(defines, grid):
    """Cache policies, the register cap and prefetching (with grids smaller than the row
    count) change how bytes move, never the arithmetic: the lab build with them has the
    same bits as the shipped build."""
    torch.manual_seed(1)
    n, dtype = 4096, torch.float16
    x = torch.randn(37, n, device=DEV, dtype=dtype)
    w = torch.randn(n, device=DEV, dtype=dtype)
    base = _direct_run(_direct_build("tileops_rms_norm", n, dtype, 128, 128), x, w, 128, 37)
    torch.testing.assert_close(base, reference(x, (n,), w), **TOL[dtype])
    y = _direct_run(_lab_build("tileops_rms_norm", n, dtype, 128, 128, **defines), x, w, 128, grid)
    assert torch.equal(y, base)


@pytest.mark.parametrize("dtype,n,threads,vec,row_counts,defines", [
    (torch.float16, 8192, 256, None, (1, 3, 2048), {}),
    (torch.float16, 8192, 128, None, (1, 3, 2048), {"TILEOPS_PREFETCH": 1}),
    (torch.bfloat16, 16384, 256, None, (1, 3, 2048), {}),
    (torch.bfloat16, 16384, 512, None, (1, 3, 2048), {"TILEOPS_MIN_BLOCKS": 2}),
    (torch.bfloat16, 16384, 128, None, (1, 3, 2048), {}),
    (torch.float16, 8200, 256, None, (1, 3, 2048), {}),      # NG = 1025: a partial last step
    (torch.float16, 8200, 256, 1, (1, 3, 2048), {}),         # scalar path
    (torch.bfloat16, 8195, 256, 1, (1, 3, 2048), {}),        # a 3-element tail group, scalar path
    (torch.bfloat16, 8195, 256, None, (1,), {}),             # the tail on the vector path (one row)
    (torch.float32, 12345, 256, 1, (1, 3, 2048), {})])
def test_cluster_build_equals_the_one_block_build_bit_for_bit(dtype, n, threads, vec, row_counts, defines):
    """TILEOPS_CLUSTER=2: a row over a cluster of 2 blocks of `threads` (grid.x = 2 * rows)
    sums in the same order as the one-block build with 2 x threads per row, so its output
    has the same bits; and a row's result does not depend on the row count or the grid."""
    torch.manual_seed(3)
    x_all = torch.randn(max(row_counts), n, device=DEV, dtype=dtype) * 2
    w = torch.randn(n, device=DEV, dtype=dtype)
    rt = 2 * threads
    cluster = _lab_build("tileops_rms_norm", n, dtype, threads, threads, vec, TILEOPS_CLUSTER=2, **defines)
    one_block = _direct_build("tileops_rms_norm", n, dtype, rt, rt, vec)
    outs = {}
    for rows in row_counts:
        x = x_all[:rows].clone()
        y = _direct_run(cluster, x, w, threads, 2 * rows)     # poisoned with NaN first
        assert torch.equal(y, _direct_run(one_block, x, w, rt, rows))
        torch.testing.assert_close(y, reference(x, (n,), w), **TOL[dtype])
        outs[rows] = y
        if rows > 1:   # fewer clusters than rows: each cluster strides over several rows
            for grid in (2, 14):
                assert torch.equal(_direct_run(cluster, x, w, threads, grid), y)
    for rows in row_counts:   # batch invariance
        assert torch.equal(outs[rows], outs[max(row_counts)][:rows])


@pytest.mark.parametrize("dtype,n,threads", [(torch.float16, 8192, 512), (torch.bfloat16, 16384, 1024),
                                             (torch.float32, 4096, 256)])
@pytest.mark.parametrize("stages", [2, 3])
@pytest.mark.parametrize("with_weight", [True, False])
def test_bulk_build_equals_the_register_build_bit_for_bit(dtype, n, threads, stages, with_weight):
    """tileops_rms_norm_bulk (TMA bulk copies into a ring of TILEOPS_STAGES row buffers,
    persistent grid) sums in the register kernel's order for RT = THREADS: the same bits as
    that build, whatever the grid: 2 blocks (each loops over many rows, reusing each stage
    several times; with 1 row one block has none) or min(rows, sm_count); and rows 0..2
    have the same bits at every row count (batch invariance)."""
    from tileops import runtime
    torch.manual_seed(4)
    row_counts = (1, 3, 5, 2048)
    x_all = torch.randn(max(row_counts), n, device=DEV, dtype=dtype) * 2
    w = torch.randn(n, device=DEV, dtype=dtype)
    sm = runtime.device_attributes(0)["sm_count"]
    bulk = _lab_build(BULK_KERNEL, n, dtype, threads, has_weight=with_weight, TILEOPS_STAGES=stages)
    register = _direct_build("tileops_rms_norm", n, dtype, threads, threads, has_weight=with_weight)
    shared = stages * n * dtype.itemsize   # STAGES row buffers (N * E: whole 16-byte groups)
    outs = {}
    for rows in row_counts:
        x = x_all[:rows].clone()
        ref = _direct_run(register, x, w, threads, rows)       # poisoned with NaN first
        torch.testing.assert_close(ref, reference(x, (n,), w if with_weight else None), **TOL[dtype])
        for grid in sorted({2, min(rows, sm)}):
            y = _direct_run(bulk, x, w, threads, grid, shared)
            assert torch.equal(y, ref), f"rows={rows} grid={grid}"
        outs[rows] = y
    for rows in row_counts:   # batch invariance
        k = min(rows, 3)
        assert torch.equal(outs[rows][:k], outs[max(row_counts)][:k])
