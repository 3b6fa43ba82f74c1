"""torch dtypes <-> the C core's dtype codes (csrc/include/tileops/dtype.h)."""
import torch

FLOAT32, FLOAT16, BFLOAT16 = 0, 1, 2

CODE = {torch.float32: FLOAT32, torch.float16: FLOAT16, torch.bfloat16: BFLOAT16}
DTYPE = {code: dtype for dtype, code in CODE.items()}

# Names the manifest may use in dtype rules.
BY_NAME = {
    "float32": torch.float32, "float16": torch.float16, "bfloat16": torch.bfloat16,
    "float64": torch.float64, "int8": torch.int8, "int16": torch.int16, "int32": torch.int32,
    "int64": torch.int64, "uint8": torch.uint8, "bool": torch.bool,
}
