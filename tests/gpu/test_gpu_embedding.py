"""EmbeddingFwdOp on a GPU beyond the generic driver: the vector and scalar builds equal
torch's gather bit for bit, and an id out of range gives a NaN row (nothing read outside
the table), the other rows exact. Skipped without CUDA (tests/gpu/conftest.py)."""
import pytest
import torch

from tileops.embedding import EmbeddingFwdOp


@pytest.mark.parametrize("dtype", [torch.float32, torch.float16, torch.bfloat16])
@pytest.mark.parametrize("H", [4096, 3584, 7, 4097])
def test_rows_equal_torch_bit_for_bit(dtype, H):
    weight = torch.randn(1000, H, device="cuda").to(dtype)
    ids = torch.randint(0, 1000, (257,), device="cuda")
    y = EmbeddingFwdOp()(ids, weight)
    torch.cuda.synchronize()
    assert torch.equal(y, weight[ids])


def test_an_id_out_of_range_gives_a_nan_row():
    weight = torch.randn(16, 64, device="cuda", dtype=torch.float16)
    ids = torch.tensor([3, 16, -2, 2**40, 5], device="cuda")
    y = EmbeddingFwdOp()(ids, weight)
    torch.cuda.synchronize()
    assert y[1:4].isnan().all()
    assert torch.equal(y[0], weight[3]) and torch.equal(y[4], weight[5])


@pytest.mark.parametrize("first, captured", [(8, 4096), (4096, 8)])
def test_a_capture_takes_the_build_there_is(first, captured):
    """Each of the two builds (one group per thread below 2^20 groups of y, UNROLL above) is
    compiled on the first call that takes it; a call captured into a CUDA graph, where
    nothing may be compiled, takes the other build when its own is not there (the same
    bits). fp16 rows of 4096: 512 groups, so 4096 ids take the UNROLL build, 8 the other."""
    op = EmbeddingFwdOp()
    weight = torch.randn(64, 4096, device="cuda", dtype=torch.float16)
    op(torch.randint(0, 64, (first,), device="cuda"), weight)       # builds one of the two
    ids = torch.randint(0, 64, (captured,), device="cuda")
    s = torch.cuda.Stream()
    s.wait_stream(torch.cuda.current_stream())
    g = torch.cuda.CUDAGraph()
    with torch.cuda.graph(g, stream=s):
        y = op(ids, weight)
    for _ in range(2):
        ids.copy_(torch.randint(0, 64, (captured,), device="cuda"))
        g.replay()
        torch.cuda.synchronize()
        assert torch.equal(y, weight[ids])
