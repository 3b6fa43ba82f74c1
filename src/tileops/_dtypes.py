"""torch dtypes <-> the C core's dtype codes (csrc/include/tileops/dtype.h).

The codes are read from the binding (_C.DTYPE_CODES, names as torch spells them), never
copied by hand, so a code added in C reaches Python without an edit here."""
import torch

from . import _C

FLOAT32, FLOAT16, BFLOAT16 = _C.FLOAT32, _C.FLOAT16, _C.BFLOAT16

CODE = {getattr(torch, name): code for name, code in _C.DTYPE_CODES.items()}
DTYPE = {code: dtype for dtype, code in CODE.items()}

# Names the manifest may use in dtype rules.
BY_NAME = {
    "float32": torch.float32, "float16": torch.float16, "bfloat16": torch.bfloat16,
    "float64": torch.float64, "int8": torch.int8, "int16": torch.int16, "int32": torch.int32,
    "int64": torch.int64, "uint8": torch.uint8, "bool": torch.bool,
}
