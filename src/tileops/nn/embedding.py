"""Embedding: rows of a [num_embeddings, embedding_dim] table gathered by token id
(torch.nn.Embedding's arguments and state: `weight`)."""
from __future__ import annotations

import torch

from ..ops.embedding.embedding import EmbeddingFwdOp
from ._base import OpModule


class Embedding(OpModule):
    """y = weight[ids] for ids of any shape (int32 or int64). `padding_idx` only zeroes that
    row at initialisation, as torch.nn.Embedding does in inference (no gradient here).
    An id outside [0, num_embeddings) raises on the CPU; on a GPU its row comes out NaN."""

    op_class = EmbeddingFwdOp
    op_params = ()

    def __init__(self, num_embeddings, embedding_dim, padding_idx=None, *, device=None, dtype=None, target=None):
        super().__init__()
        if padding_idx is not None:
            if not isinstance(padding_idx, int) or not -num_embeddings <= padding_idx < num_embeddings:
                from ..errors import InputValueError
                raise InputValueError(f"Embedding: argument 'padding_idx': expected an int in [-{num_embeddings}, "
                                      f"{num_embeddings}) (num_embeddings rows), got {padding_idx!r}")
            if padding_idx < 0:
                padding_idx += num_embeddings
        self.num_embeddings = num_embeddings
        self.embedding_dim = embedding_dim
        self.padding_idx = padding_idx
        self.weight = torch.nn.Parameter(torch.empty(num_embeddings, embedding_dim, device=device, dtype=dtype))
        torch.nn.init.normal_(self.weight)
        if padding_idx is not None:
            with torch.no_grad():
                self.weight[padding_idx].zero_()
        self.target = target

    def forward(self, ids, *, out=None):
        return self._op(ids, self.weight, out=out)

    def extra_repr(self):
        return f"{self.num_embeddings}, {self.embedding_dim}" + (
            f", padding_idx={self.padding_idx}" if self.padding_idx is not None else "")
