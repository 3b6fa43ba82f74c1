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
