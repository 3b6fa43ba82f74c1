"""EmbeddingFwdOp beyond the generic driver: ids of any shape and both integer dtypes
against nn.Embedding, an id out of range on the CPU (a clear error naming the index and
value, nothing written), and the launchable kernel_for returns checking what C relies on."""
import pytest
import torch

from tileops.embedding import EmbeddingFwdOp
from tileops.errors import InputTypeError, InputValueError


@pytest.mark.parametrize("dtype", [torch.float32, torch.float16, torch.bfloat16])
@pytest.mark.parametrize("id_dtype", [torch.int32, torch.int64])
def test_matches_nn_embedding_for_ids_of_any_shape(dtype, id_dtype):
    emb = torch.nn.Embedding(50, 24).to(dtype)
    ids = torch.randint(0, 50, (2, 3, 5), generator=torch.Generator().manual_seed(0)).to(id_dtype)
    with torch.no_grad():
        want = emb(ids.long())
    got = EmbeddingFwdOp()(ids, emb.weight.detach())
    assert got.shape == (2, 3, 5, 24) and torch.equal(got, want)


def test_an_id_out_of_range_is_an_error_that_writes_nothing_on_the_cpu():
    weight = torch.randn(10, 8)
    out = torch.full((4, 8), 7.0)
    for bad in (10, -1):
        ids = torch.tensor([1, 2, bad, 3])
        with pytest.raises(InputValueError, match=rf"EmbeddingFwdOp.*'ids'.*ids\[2\] = {bad} is outside \[0, 10\)"):
            EmbeddingFwdOp()(ids, weight, out=out)
        assert torch.equal(out, torch.full((4, 8), 7.0))


def test_the_launchable_checks_what_the_kernel_relies_on():
    op = EmbeddingFwdOp()
    ids, weight = torch.tensor([0, 3, 1]), torch.randn(4, 6)
    y = torch.empty(3, 6)
    launch = op.kernel_for("embedding", ids, weight, y)
    launch(ids, weight, y)
    assert torch.equal(y, weight[ids])
    with pytest.raises(InputValueError, match="'y'"):
        launch(ids, weight, torch.empty(2, 6))
    with pytest.raises(InputValueError, match="'weight'"):
        launch(ids, torch.randn(4, 5), y)
    with pytest.raises(InputValueError, match="'ids'"):
        launch(ids.int(), weight, y)
    with pytest.raises(InputTypeError, match="'ids'"):
        launch("ids", weight, y)
    buf = torch.randn(4 * 6 + 18)
    with pytest.raises(InputValueError, match="overlaps"):
        launch(ids, buf[:24].view(4, 6), buf[6:24].view(3, 6))
