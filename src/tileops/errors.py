"""One hierarchy of errors, rooted at TileOpsError.

Bad input is also a TypeError or ValueError, as torch users expect; the C core's status
codes map onto these classes (the binding raises them directly, see _C.set_error_classes).
What the core was asked for and could not honour (a setting it clamped or ignored, a disk
cache folder it refused) is not an error: it becomes one TileOpsWarning (warn_core_notes)."""
import warnings


class TileOpsError(Exception):
    """Root of every error tileops raises."""


class InputError(TileOpsError):
    """A call's arguments break the op's signature (dtype, shape, device, type)."""


class InputTypeError(InputError, TypeError):
    """Wrong dtype or Python type of an argument."""


class InputValueError(InputError, ValueError):
    """Wrong shape, device or value of an argument."""


class ManifestError(TileOpsError, ValueError):
    """A manifest entry is malformed, or an op class disagrees with its entry."""


class TargetError(TileOpsError):
    """No target (or more than one) can serve an instance; a target failed to load."""


class KernelSelectionError(TargetError):
    """No implementation, or more than one, accepts a call."""


class BuildError(TileOpsError):
    """A kernel could not be built; for NVRTC failures the message holds the full log."""


class LibraryError(BuildError):
    """libcuda or libnvrtc is missing, or lacks a symbol."""


class DeviceError(TileOpsError):
    """A driver call failed."""


class NotReadyDuringCaptureError(TileOpsError):
    """A kernel had to be built while its stream is being captured into a CUDA graph."""


class BackwardError(TileOpsError, RuntimeError):
    """A backward reached a tileops node: ops serve inference only (forward and backward
    are separate ops)."""


class CacheError(TileOpsError):
    """A disk-cache entry is missing, truncated or corrupt."""


class TileOpsWarning(UserWarning):
    """A setting tileops could not honour as given (TILEOPS_NVRTC, TILEOPS_NUM_THREADS, the
    disk cache folder); the message says what was asked and what is done instead."""


def warn_core_notes(stacklevel: int = 2) -> None:
    """Turns the C core's pending notes into warnings: each note is given once per process
    (the core drops repeats), so each becomes one TileOpsWarning."""
    from . import _C
    for note in _C.take_notes():
        warnings.warn(note, TileOpsWarning, stacklevel=stacklevel + 1)


# Index = C status code (csrc/include/tileops/status.h); None = success.
STATUS_CLASSES = (
    None,                        # TILEOPS_OK
    InputValueError,             # TILEOPS_ERR_INVALID_ARGUMENT
    TargetError,                 # TILEOPS_ERR_UNSUPPORTED
    MemoryError,                 # TILEOPS_ERR_OUT_OF_MEMORY
    LibraryError,                # TILEOPS_ERR_LIBRARY
    BuildError,                  # TILEOPS_ERR_COMPILE
    DeviceError,                 # TILEOPS_ERR_CUDA
    CacheError,                  # TILEOPS_ERR_CACHE
    NotReadyDuringCaptureError,  # TILEOPS_ERR_CAPTURING
    TileOpsError,                # TILEOPS_ERR_INTERNAL
)
