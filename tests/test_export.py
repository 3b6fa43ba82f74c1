"""torch.export of a module that calls an op: the exported graph holds the op's one node
with the instance key as a constant, runs like eager (dynamic batch included), and an
exported program whose instance is gone fails with the clear error, not a crash."""
import gc

import pytest
import torch

from tileops import TileOpsError
from tileops.norm import RMSNormFwdOp


class Block(torch.nn.Module):
    def __init__(self, n):
        super().__init__()
        self.norm = RMSNormFwdOp((n,))
        self.w = torch.nn.Parameter(torch.randn(n))

    def forward(self, x):
        return self.norm(x, self.w) * 2


def _calls(gm):
    return [n.target for n in gm.graph.nodes if n.op == "call_function"]


def test_export_has_the_one_node_with_the_key_and_matches_eager():
    torch.manual_seed(0)
    m = Block(64)
    x = torch.randn(8, 64)
    ep = torch.export.export(m, (x,))
    calls = _calls(ep.graph_module)
    assert torch.ops.tileops.norm_rms_norm_fwd.default in calls
    node = next(n for n in ep.graph_module.graph.nodes if n.target == torch.ops.tileops.norm_rms_norm_fwd.default)
    assert node.args[-1] == m.norm._key
    with torch.no_grad():
        torch.testing.assert_close(ep.module()(x), m(x), rtol=0, atol=0)


def test_export_with_a_dynamic_batch_runs_other_batch_sizes():
    torch.manual_seed(0)
    m = Block(64)
    ep = torch.export.export(m, (torch.randn(8, 64),),
                             dynamic_shapes={"x": {0: torch.export.Dim("batch", min=1, max=1024)}})
    for b in (1, 5, 300):
        x = torch.randn(b, 64)
        with torch.no_grad():
            torch.testing.assert_close(ep.module()(x), m(x), rtol=0, atol=0)


def test_exported_program_without_its_instance_raises_the_clear_error():
    m = Block(64)
    key = m.norm._key
    ep = torch.export.export(m, (torch.randn(8, 64),))
    run = ep.module()
    m.norm = None          # the exported graph refers to the instance by key only
    del m
    gc.collect()
    with pytest.raises(TileOpsError, match=f"no live instance with key '{key}'"):
        run(torch.randn(8, 64))
