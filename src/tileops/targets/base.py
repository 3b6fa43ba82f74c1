"""The Target interface."""
from __future__ import annotations

import torch


class Target:
    name: str = ""
    # True when what the target builds depends only on what the op's own memo key covers
    # (the in-tree kernels' build identities); builders that see whole input specs do not.
    honours_memo_key: bool = False

    def claims(self, device: torch.device) -> bool:
        """Whether detection should pick this target for tensors on `device`."""
        return False

    def serves(self, op_cls) -> bool:
        """Whether this target has an implementation of the op class."""
        return False

    def kernel_for(self, op, name: str, call):
        """The launchable for interface `name` of `op` at `call` (builds on a miss)."""
        raise NotImplementedError

    def __repr__(self):
        return f"<tileops target {self.name}>"
