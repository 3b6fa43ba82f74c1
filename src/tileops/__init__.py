"""tileops: operators for PyTorch inference.

Each op runs a C kernel on CPU tensors and a CUDA C kernel (compiled at run time by NVRTC)
on NVIDIA GPUs, and appears under torch.compile as exactly one opaque node, generated from
the op's manifest entry.

    from tileops.norm import RMSNormFwdOp
    op = RMSNormFwdOp(normalized_shape=(4096,))
    y = op(x, weight)
"""
__version__ = "0.1.0"

from . import _C  # noqa: E402
from .errors import (BuildError, InputError, ManifestError, NotReadyDuringCaptureError,  # noqa: E402
                     TargetError, TileOpsError)
from .errors import STATUS_CLASSES as _STATUS_CLASSES  # noqa: E402

_C.set_error_classes(_STATUS_CLASSES)
_C.cpu_num_threads()  # reads TILEOPS_NUM_THREADS now: a value it cannot honour is said at import
_C.cpu_simd_level()   # reads TILEOPS_CPU_SIMD now, the same
from .errors import warn_core_notes as _warn_core_notes  # noqa: E402
_warn_core_notes()
from . import _settings  # noqa: E402
_settings.configure_logging()   # TILEOPS_LOG_LEVEL
_settings.check_switches()      # TILEOPS_PDL, TILEOPS_CPU_HUGEPAGES
_settings.configure_threads()   # the CPU pool follows torch.get_num_threads() unless TILEOPS_NUM_THREADS

from .targets import set_default_target, load_failures  # noqa: E402
from .ops import Op  # noqa: E402


def patch(model, **kw):
    """Swaps tileops into a transformers Llama or Qwen2 model in place (tileops.nn.hf.patch:
    norms, the post-attention residual add, the gated MLP activation, RoPE); unpatch(model)
    undoes it. The checkpoint format (state_dict) is unchanged."""
    from .nn import hf
    return hf.patch(model, **kw)


def patch_llama(model, **kw):
    """patch() for a transformers Llama model."""
    from .nn import hf
    return hf.patch_llama(model, **kw)


def patch_qwen2(model, **kw):
    """patch() for a transformers Qwen2 model."""
    from .nn import hf
    return hf.patch_qwen2(model, **kw)


def unpatch(model):
    """Undoes patch(model)."""
    from .nn import hf
    return hf.unpatch(model)


def all_op_classes() -> "dict[str, type[Op]]":
    """Every implemented op class of the package manifest, by name (imports them)."""
    from .ops import implemented, load
    return {name: load(name) for name in sorted(implemented())}


# Every implemented op's operators are registered by `import tileops`: a program saved with
# torch.export or packaged by AOTInductor names them, and is loaded where perhaps nothing
# else imports the op's family.
all_op_classes()


__all__ = ["Op", "TileOpsError", "InputError", "ManifestError", "TargetError", "BuildError",
           "NotReadyDuringCaptureError", "set_default_target", "load_failures", "all_op_classes",
           "patch", "patch_llama", "patch_qwen2", "unpatch", "__version__"]
