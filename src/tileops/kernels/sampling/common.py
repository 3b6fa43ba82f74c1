"""What the sampling family's kernels share: the checks a launchable makes before it hands
pointers to C (public launchables, Op.kernel_for), the CPU launch, and RowsKernel, the
one implementation of each op (C on the CPU; on a GPU the CUDA C of cuda_sampling).

Every sampling kernel reads rows of V elements ([B, V], contiguous) and writes per-row
results; its builds depend on the dtypes and (CUDA) on V, the device and its
architecture, never on B: a row's bits do not depend on what else is in the batch."""
from __future__ import annotations

import torch

from ... import _C
from ..._dtypes import DTYPE
from ...errors import InputTypeError, InputValueError
from ..base import Kernel, checked, launch_argument_error, overlaps


def where(device_index: int) -> str:
    return "cpu" if device_index < 0 else f"cuda:{device_index}"


class Guard:
    """Checks of one launch, naming the kernel and its build in every message."""

    def __init__(self, head: str, device_index: int):
        self.head, self.device = head, device_index
        self.where = where(device_index)

    def tensor(self, name, t, dtype, shape, optional=False):
        """t: a contiguous tensor of `dtype` and `shape` on the build's device, not lazily
        negated (None where optional)."""
        if t is None and optional:
            return
        if isinstance(t, torch.Tensor) and t.dtype is not dtype:
            raise InputTypeError(f"{self.head}: argument '{name}': expected dtype {dtype}, got {t.dtype}")
        if not (isinstance(t, torch.Tensor) and t.get_device() == self.device and t.is_contiguous()
                and not t.is_neg() and tuple(t.shape) == tuple(shape)):
            raise launch_argument_error(self.head, name, t, f"a contiguous {dtype} tensor {list(shape)} on "
                                                            f"{self.where}{' or None' if optional else ''}")

    def rows(self, name, t, dtypes, V=None):
        """t: a contiguous [B, V] tensor (V >= 1; any V where None) of one of `dtypes`;
        returns (B, V)."""
        if isinstance(t, torch.Tensor) and t.dtype not in dtypes:
            raise InputTypeError(f"{self.head}: argument '{name}': expected dtype {' | '.join(map(str, dtypes))}, "
                                 f"got {t.dtype}")
        if not (isinstance(t, torch.Tensor) and t.dim() == 2 and t.shape[1] >= 1 and V in (None, t.shape[1])):
            raise launch_argument_error(self.head, name, t, f"a contiguous tensor [B, {V or 'V >= 1'}] on {self.where}")
        self.tensor(name, t, t.dtype, t.shape)
        return tuple(t.shape)

    def present(self, name, t, want):
        """t is given (a tensor) when want is True, None when False (either for None)."""
        if want is not None and (t is not None) != want:
            raise launch_argument_error(self.head, name, t, "a tensor (this build reads it)" if want
                                        else "None (this build is for calls without it)")

    def apart(self, name, out, others):
        """out shares no byte with any of `others`."""
        if overlaps(out, tuple(o for o in others if o is not None)):
            raise InputValueError(f"{self.head}: argument '{name}': it overlaps an input in memory")


def dtype_name(code: int) -> str:
    return str(DTYPE[code]).replace("torch.", "")


def cpu_kernel(name: str):
    """(handle, launch) of a C table entry."""
    return _C.cpu_kernel(name)[0], _C.cpu_launch


def ptr(t) -> int:
    """A tensor's data pointer, 0 for None."""
    return 0 if t is None else t.data_ptr()


def guarded(check, launch):
    """The public launchable: check, then launch (Op._kernel_for takes .unchecked)."""
    return checked(check, launch)


class RowsKernel(Kernel):
    """The one implementation of a sampling op: a C table entry on the CPU, a CUDA C kernel
    (cuda_sampling.build_<op>) on a GPU. A subclass names `data` (the input whose rows
    give V), its identity types, `cpu_entry(call)` and `cuda_entry(call, **common)` (the
    CUDA identity's shared fields: device, V, arch, vec), `guard(build, device_index)`
    (the launchable's checks) and `launch_cpu(build)` (the CPU launch)."""
    data = "logits"
    cpu_build = cuda_build = None       # identity types
    cuda_builder = ""                   # the name of cuda_sampling's build function

    @classmethod
    def entry_for(cls, call):
        if call.device.type == "cpu":
            return cls.cpu_entry(call)
        from . import cuda_sampling
        dev = call.device.index or 0
        return cls.cuda_entry(call, device=dev, V=int(call.inputs[cls.data].shape[1]), arch=cuda_sampling.arch(dev),
                              vec=bool(call.aligned16))

    @classmethod
    def build(cls, identity):
        if isinstance(identity, cls.cpu_build):
            return guarded(cls.guard(identity, -1), cls.launch_cpu(identity))
        from . import cuda_sampling
        return guarded(cls.guard(identity, identity.device), getattr(cuda_sampling, cls.cuda_builder)(identity))
