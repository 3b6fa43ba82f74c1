"""The launchable the gated activation ops' kernel_for returns checks what the C and CUDA
kernels rely on (x rows of 2n, y rows of n, as many, contiguous, of the build's dtype and
device, not lazily negated, y apart from x) and raises a clear error otherwise."""
import pytest
import torch

from tileops.activation import GeluAndMulFwdOp, GeluTanhAndMulFwdOp, SiluAndMulFwdOp
from tileops.errors import InputTypeError, InputValueError


@pytest.mark.parametrize("cls", [SiluAndMulFwdOp, GeluAndMulFwdOp, GeluTanhAndMulFwdOp])
def test_the_launchable_checks_what_the_kernel_relies_on(cls):
    op = cls()
    x = torch.randn(5, 16)
    y = torch.empty(5, 8)
    (iface,) = cls.interfaces
    launch = op.kernel_for(iface, x, y)
    launch(x, y)
    torch.testing.assert_close(y, op(x))
    cases = [
        (InputValueError, "'y'", (x, torch.empty(4, 8))),                        # too few rows
        (InputValueError, "'x'", (torch.randn(16, 5).t(), y)),                   # not contiguous
        (InputValueError, "'x'", (torch.randn(5, 18), torch.empty(5, 9))),       # rows of another build
        (InputTypeError, "'x'", (x.double(), y)),
        (InputTypeError, "'y'", (x, "y")),
        (InputValueError, "'x'", (torch._neg_view(x), y)),
    ]
    for exc, arg, args in cases:
        with pytest.raises(exc, match=arg):
            launch(*args)
    buf = torch.randn(5 * 16 + 8)
    with pytest.raises(InputValueError, match="overlaps"):
        launch(buf[:80].view(5, 16), buf[40:80].view(5, 8))
