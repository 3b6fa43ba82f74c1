"""Embedding lookup written with torch: F.embedding, what users compare with."""
import torch.nn.functional as F


def embedding(ids, weight):
    return F.embedding(ids, weight)
