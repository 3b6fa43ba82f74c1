"""MergeAttnStatesFwdOp: two partial attention states (o, lse) merged into one."""
from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:   # annotations only
    import torch
    from torch import Tensor

from ...kernels.attention.merge_attn_states import MergeAttnStatesInterface, MergeAttnStatesKernel
from ..op import Op


class MergeAttnStatesFwdOp(Op):
    """The attention output and logsumexp over the union of two sets of keys, from each
    set's (o, lse), as vLLM's ``merge_attn_states`` and FlashInfer's ``merge_state`` do
    (cascade / shared-prefix attention, chunked prefill, split-KV decoding).

    Call ``op(o_a, lse_a, o_b, lse_b, *, out=None)``: o_a and o_b [T, H, D] of one dtype
    (float32, float16, bfloat16), lse_a and lse_b float32 [T, H] holding natural-log
    logsumexp values (vLLM's convention; FlashInfer's lse is base 2: multiply it by ln 2
    first; vLLM's own lse is [H, T]: pass ``lse.t()``, copied to contiguous). Returns
    (o, lse): o of o_a's dtype (or `out` filled; out may be o_a or o_b itself), lse float32
    [T, H]. With m = max(lse_a, lse_b), wa = e^(lse_a - m), wb = e^(lse_b - m):
    o = (wa o_a + wb o_b) / (wa + wb), lse = m + ln(wa + wb), in float32, o rounded once.
    Edges, as vLLM's kernel: an lse of -inf or +inf marks an empty partial (FlashAttention
    gives +inf to a query row that saw no key); one side empty gives the other side's o
    and lse exactly (the empty side's o may hold anything); both empty give o = 0 and
    lse = -inf; a NaN lse gives that row's o and lse NaN.
    """

    kernel_types = {"merge_attn_states": MergeAttnStatesKernel}
    interfaces = {"merge_attn_states": MergeAttnStatesInterface}

    def forward(self, o_a: Tensor, lse_a: Tensor, o_b: Tensor, lse_b: Tensor, *,
                out: Tensor | None = None) -> tuple[Tensor, Tensor]:
        o, lse = self.allocate(o_a, lse_a, o_b, lse_b, out=out)
        self._kernel_for("merge_attn_states", o_a, lse_a, o_b, lse_b, o, lse)(o_a, lse_a, o_b, lse_b, o, lse)
        return o, lse
