"""The kernels of the positional tables, the ops without a call-time tensor input:
RopeCosSinCacheFwdOp, SinusoidalFwdOp (the C driver csrc/ops/positional/angle_table.c and
the CUDA C angle_table.cuh) and AlibiFwdOp (alibi.c, alibi.cu). A launchable takes the one
output the op allocated (float32, contiguous, the shape its params give) and fills it; the
params reach the C code as arguments (doubles as 'd': a Python float arrives exactly).

Identities: a CPU build is a C function, so the op's scalar arguments; a CUDA build adds
the device and the compile-time choice of its store width (`opts`: an 8-byte (sin, cos)
pair for an even sinusoidal width, four values per 16-byte store for an ALiBi row of a
multiple of 4), which needs the output 16-byte aligned (`call.aligned16`).

Launch rules (CUDA): angle tables, block.x threads over a row's pairs (rounded up to a
warp, at most 256), grid.x over the rows (at most 16384, grid-stride past it); ALiBi, one
row of a head per block (grid-stride past 2^31 - 1), block.x over the row (at most 256)."""
from __future__ import annotations

import torch

from ... import _C
from ...errors import InputValueError
from ..base import Kernel, KernelInterface, checked, identity_type, launch_argument_error

CpuBuild = identity_type("CpuTableBuild", "name args")
CudaBuild = identity_type("CudaTableBuild", "device name args opts")

ROPE_TYPES = {"default": 0, "linear": 1, "llama3": 2}
ANGLE_THREADS, ANGLE_BLOCKS = 256, 16384
ALIBI_THREADS, GRID_MAX = 256, 2**31 - 1


class TableKernel(Kernel):
    """One output from the params alone. A subclass names its C kernel (`name`, whose CUDA
    twin is tileops_<name> in positional/<name>.cu), the C argument format after the
    output pointer (`arg_format`), the op it serves (`op_name`, for messages), and
    defines `args(params)` (the scalar arguments), `shape(params)` (the output's) and
    `launch_shape(params, args, opts)` ((grid, threads) of the CUDA kernel)."""
    name = ""
    op_name = ""
    arg_format = ""

    @classmethod
    def cuda_opts(cls, params, aligned16: bool) -> tuple:
        return ()

    @classmethod
    def entry_for(cls, call):
        p = call.params
        args = cls.args(p)
        if call.device.type == "cpu":
            return CpuBuild(name=cls.name, args=args)
        return CudaBuild(device=call.device.index or 0, name=cls.name, args=args,
                         opts=cls.cuda_opts(p, call.aligned16))

    @classmethod
    def build(cls, identity):
        return cls._build_cpu(identity) if isinstance(identity, CpuBuild) else cls._build_cuda(identity)

    @classmethod
    def _guard(cls, shape, device_index: int):
        where = "cpu" if device_index < 0 else f"cuda:{device_index}"
        head = f"{cls.name} (launch of the build for {cls.op_name} of shape {shape}, on {where})"

        def check(out):
            if not (isinstance(out, torch.Tensor) and out.dtype is torch.float32 and tuple(out.shape) == shape
                    and out.get_device() == device_index and out.is_contiguous() and not out.is_neg()):
                raise launch_argument_error(head, "out", out, f"a contiguous float32 tensor {shape} on {where}")
        return check

    @classmethod
    def _build_cpu(cls, b):
        handle = _C.cpu_kernel(b.name)[0]
        run = _C.cpu_launch
        args, op_name = b.args, cls.op_name

        def unchecked(out):
            try:
                run(handle, out.data_ptr(), *args)
            except InputValueError as e:   # the op's rules make this unreachable; said plainly if not
                raise InputValueError(f"{op_name}: {e}") from None
        return checked(cls._guard(cls.shape_of(args), -1), unchecked)

    @classmethod
    def _build_cuda(cls, b):
        from ... import runtime
        fmt = "p" + cls.arg_format
        # --fmad=false: the double-precision angle and sincos round every operation as the C
        # kernels do (their fma()s are explicit in the shared source); contracting a * b + c
        # into an fma moved values up to 512 float32 ulps at 131072 x 128 (H200)
        handle = runtime.build(b.device, f"positional/{b.name}.cu", f"tileops_{b.name}", b.opts + ("--fmad=false",), fmt)
        grid, threads = cls.launch_shape(b.args, b.opts)
        launch_raw = _C.cuda_launch
        stream_of = torch._C._cuda_getCurrentRawStream
        device, args = b.device, b.args

        def unchecked(out):
            if out.numel():
                launch_raw(handle, grid, 1, 1, threads, 1, 1, 0, stream_of(device), out.data_ptr(), *args)
        return checked(cls._guard(cls.shape_of(args), b.device), unchecked)


def _warp_round(n: int, most: int) -> int:
    return max(32, min(most, -(-n // 32) * 32))


class RopeCosSinCacheInterface(KernelInterface):
    """launch(cos_sin_cache): fills it."""
    name = "rope_cos_sin_cache"
    implementations = ("rope_cos_sin_cache",)
    launchable = "launch(cos_sin_cache): writes vLLM's cos/sin cache of the op's params"


class RopeCosSinCacheKernel(TableKernel):
    """C (csrc/ops/positional/rope_cos_sin_cache.c) and CUDA C (rope_cos_sin_cache.cu);
    arguments (max_position, rotary_dim, base, rope_type code, factor, low_freq_factor,
    high_freq_factor, original_max_position_embeddings)."""
    interface = "rope_cos_sin_cache"
    name = "rope_cos_sin_cache"
    op_name = "RopeCosSinCacheFwdOp"
    arg_format = "qqdidddd"

    @staticmethod
    def args(p):
        return (int(p["max_position"]), int(p["rotary_dim"]), float(p["base"]), ROPE_TYPES[p["rope_type"]],
                float(p["factor"]), float(p["low_freq_factor"]), float(p["high_freq_factor"]),
                float(p["original_max_position_embeddings"]))

    @staticmethod
    def shape_of(args):
        return (args[0], args[1])

    @classmethod
    def cuda_opts(cls, params, aligned16):
        return ("-DTILEOPS_LAYOUT=0", "-DTILEOPS_PAIR2=0")

    @staticmethod
    def launch_shape(args, opts):
        rows, width = args[0], args[1]
        return min(rows, ANGLE_BLOCKS), _warp_round(width // 2, ANGLE_THREADS)


class SinusoidalInterface(KernelInterface):
    """launch(table): fills it."""
    name = "sinusoidal"
    implementations = ("sinusoidal",)
    launchable = "launch(table): writes the sinusoidal table of the op's params"


class SinusoidalKernel(TableKernel):
    """C (csrc/ops/positional/sinusoidal.c) and CUDA C (sinusoidal.cu); arguments (seq_len,
    dim, base)."""
    interface = "sinusoidal"
    name = "sinusoidal"
    op_name = "SinusoidalFwdOp"
    arg_format = "qqd"

    @staticmethod
    def args(p):
        return (int(p["seq_len"]), int(p["dim"]), float(p["base"]))

    @staticmethod
    def shape_of(args):
        return (args[0], args[1])

    @classmethod
    def cuda_opts(cls, params, aligned16):
        return ("-DTILEOPS_LAYOUT=1", f"-DTILEOPS_PAIR2={int(aligned16 and int(params['dim']) % 2 == 0)}")

    @staticmethod
    def launch_shape(args, opts):
        rows, width = args[0], args[1]
        return min(rows, ANGLE_BLOCKS), _warp_round((width + 1) // 2, ANGLE_THREADS)


class AlibiInterface(KernelInterface):
    """launch(bias): fills it."""
    name = "alibi"
    implementations = ("alibi",)
    launchable = "launch(bias): writes the ALiBi bias of the op's params"


class AlibiKernel(TableKernel):
    """C (csrc/ops/positional/alibi.c) and CUDA C (alibi.cu); arguments (num_heads,
    seq_len)."""
    interface = "alibi"
    name = "alibi"
    op_name = "AlibiFwdOp"
    arg_format = "qq"

    @staticmethod
    def args(p):
        return (int(p["num_heads"]), int(p["seq_len"]))

    @staticmethod
    def shape_of(args):
        return (args[0], args[1], args[1])

    @classmethod
    def cuda_opts(cls, params, aligned16):
        return (f"-DTILEOPS_VEC={4 if aligned16 and int(params['seq_len']) % 4 == 0 else 1}",)

    @staticmethod
    def launch_shape(args, opts):
        heads, seq = args
        vec = 4 if "-DTILEOPS_VEC=4" in opts else 1
        return min(heads * seq, GRID_MAX), _warp_round(-(-seq // vec), ALIBI_THREADS)
