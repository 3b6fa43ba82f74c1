"""Test-only ops declared by tests/manifest/toy.yaml: one per effect branch of the boundary.

Their kernels are torch operations behind the same Kernel interface as the in-tree ones, so
the ops go through everything real ops do (instance key, checks, target resolution inside
the node, kernel_for, the per-instance table). An op without params keeps Op's constructor,
which takes exactly the keyword-only `target=None`."""
import os

import torch

from tileops.kernels.base import Kernel, KernelInterface
from tileops.ops import Op

MANIFEST = os.path.join(os.path.dirname(os.path.abspath(__file__)), "manifest", "toy.yaml")
BUILDS = []  # (kernel, identity) of every build, to prove what was (not) built


class _TorchKernel(Kernel):
    devices = ("cpu", "cuda", "meta")

    @classmethod
    def entry_for(cls, call):
        first = next(s for s in call.inputs.values() if s is not None)
        return (cls.__name__, call.device.type, first.dtype)

    @classmethod
    def build(cls, identity):
        BUILDS.append((cls.__name__, identity))
        return cls.run


class ScaleKernel(_TorchKernel):
    interface = "scale"

    @staticmethod
    def run(x, y, factor):
        torch.mul(x, factor, out=y)


class AccumulateKernel(_TorchKernel):
    interface = "accumulate"

    @staticmethod
    def run(acc, x, total):
        total.add_(x)


class AddKernel(_TorchKernel):
    interface = "add"

    @staticmethod
    def run(a, b, y):
        torch.add(a, b, out=y)


class NormStatsKernel(_TorchKernel):
    interface = "norm_stats"

    @staticmethod
    def run(x, y, rstd):
        xf = x.float()
        r = torch.rsqrt(xf.pow(2).mean(-1) + 1e-6)
        y.copy_((xf * r[..., None]).to(x.dtype))
        if rstd is not None:
            rstd.copy_(r)


class SwapKernel(_TorchKernel):
    interface = "swap"

    @staticmethod
    def run(a, b):
        tmp = a.clone()
        a.copy_(b)
        b.copy_(tmp)


class CastKernel(_TorchKernel):
    interface = "cast"

    @staticmethod
    def run(x, y):
        y.copy_(x)


class ScaleRowsKernel(_TorchKernel):
    interface = "scale_rows"

    @staticmethod
    def run(x, y):
        torch.mul(x, torch.arange(1, x.shape[0] + 1, device=x.device, dtype=x.dtype).reshape(-1, *([1] * (x.ndim - 1))),
                  out=y)


class ToyScaleOp(Op, manifest=MANIFEST):
    kernel_types = {"scale": ScaleKernel}
    interfaces = {"scale": KernelInterface.of("scale", "scale")}

    def __init__(self, factor=2.0, *, target=None):
        super().__init__(target=target)
        self.factor = factor

    def forward(self, x, alpha=1.0, *, inplace=False):
        y = self.allocate(x, inplace=inplace)
        self.kernel_for("scale", x, y)(x, y, self.factor * alpha)
        return y


class ToyAccumulateOp(Op, manifest=MANIFEST):
    kernel_types = {"accumulate": AccumulateKernel}
    interfaces = {"accumulate": KernelInterface.of("accumulate", "accumulate")}

    def forward(self, acc, x):
        total = self.allocate(acc, x)
        self.kernel_for("accumulate", acc, x, total)(acc, x, total)
        return total


class ToyAddOp(Op, manifest=MANIFEST):
    kernel_types = {"add": AddKernel}
    interfaces = {"add": KernelInterface.of("add", "add")}

    def forward(self, a, b, *, out=None):
        y = self.allocate(a, b, out=out)
        self.kernel_for("add", a, b, y)(a, b, y)
        return y


class ToyNormStatsOp(Op, manifest=MANIFEST):
    kernel_types = {"norm_stats": NormStatsKernel}
    interfaces = {"norm_stats": KernelInterface.of("norm_stats", "norm_stats")}

    def forward(self, x, *, return_rstd=False):
        y, rstd = self.allocate(x, return_rstd=return_rstd)
        self.kernel_for("norm_stats", x, y, rstd)(x, y, rstd)
        return y, rstd


class ToySwapOp(Op, manifest=MANIFEST):
    kernel_types = {"swap": SwapKernel}
    interfaces = {"swap": KernelInterface.of("swap", "swap")}

    def forward(self, a, b):
        self.kernel_for("swap", a, b)(a, b)
        return ()


class ScaleRowsOp(Op, manifest=MANIFEST):
    kernel_types = {"scale_rows": ScaleRowsKernel}
    interfaces = {"scale_rows": KernelInterface.of("scale_rows", "scale_rows")}

    def forward(self, x):
        y = self.allocate(x)
        self.kernel_for("scale_rows", x, y)(x, y)
        return y


class ToyCastOp(Op, manifest=MANIFEST):
    """y = x in the dtype `out_dtype` names (None: x's own)."""
    kernel_types = {"cast": CastKernel}
    interfaces = {"cast": KernelInterface.of("cast", "cast")}

    def __init__(self, out_dtype=None, *, target=None):
        super().__init__(target=target)
        self.out_dtype = out_dtype

    def forward(self, x, *, out=None):
        y = self.allocate(x, out=out)
        self.kernel_for("cast", x, y)(x, y)
        return y


class ToyScaleAddOp(Op, manifest=MANIFEST):
    """A composite: dynamo traces this forward; its sub-ops are the graph's nodes."""

    def __init__(self, factor=2.0, *, target=None):
        super().__init__(target=target)
        self.factor = factor
        self.scale = ToyScaleOp(factor, target=target)
        self.add = ToyAddOp(target=target)

    def forward(self, x, b):
        return self.add(self.scale(x), b)


class ToyIotaOp(Op, manifest=MANIFEST):
    def __init__(self, n, *, target=None):
        super().__init__(target=target)
        self.n = int(n)

    def forward(self, *, device=None):
        return torch.arange(self.n, dtype=torch.float32, device=device)


TOY_CLASSES = {c.__name__: c for c in (ToyScaleOp, ToyAccumulateOp, ToyAddOp, ToyNormStatsOp, ToySwapOp,
                                       ScaleRowsOp, ToyCastOp, ToyScaleAddOp, ToyIotaOp)}
