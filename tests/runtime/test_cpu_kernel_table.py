"""The CPU kernel table through the binding: cpu_kernel / cpu_kernels / cpu_launch, the
argument conversion cpu_launch shares with cuda_launch, and the constants _C publishes so
Python never copies them by hand. Tests _C directly (no op, no kernel class)."""
import pytest
import torch

from tileops import _C, _dtypes
from tileops.errors import InputValueError

RMS_NORM_FORMAT = "pppqqqqfii"  # (x, weight, y, rows, n, x_row_stride, y_row_stride, eps, dtype, variant)


def rms_norm_args(x, y, eps=1e-6, variant=0):
    rows, n = x.shape
    return (x.data_ptr(), 0, y.data_ptr(), rows, n, n, n, eps, _dtypes.CODE[x.dtype], variant)


def test_lookup_gives_handle_and_format():
    handle, fmt = _C.cpu_kernel("rms_norm")
    assert isinstance(handle, int) and handle >= 0 and fmt == RMS_NORM_FORMAT
    ref_handle, ref_fmt = _C.cpu_kernel("rms_norm_reference")
    assert ref_handle != handle and ref_fmt == RMS_NORM_FORMAT
    names = _C.cpu_kernels()
    assert isinstance(names, tuple) and len(set(names)) == len(names)
    assert names[handle] == "rms_norm" and names[ref_handle] == "rms_norm_reference"
    assert all(_C.cpu_kernel(name)[0] == i for i, name in enumerate(names))


def test_unknown_name_is_a_clear_error():
    with pytest.raises(InputValueError, match=r"no CPU kernel named 'no_such_kernel'.*rms_norm"):
        _C.cpu_kernel("no_such_kernel")
    with pytest.raises(ValueError):        # InputValueError is a ValueError too
        _C.cpu_kernel("")
    with pytest.raises(TypeError):
        _C.cpu_kernel(3)


def test_launch_runs_the_kernel_and_matches_the_reference():
    x = torch.randn(5, 33)
    y = torch.full_like(x, float("nan"))
    r = torch.full_like(x, float("nan"))
    _C.cpu_launch(_C.cpu_kernel("rms_norm")[0], *rms_norm_args(x, y))
    _C.cpu_launch(_C.cpu_kernel("rms_norm_reference")[0], *rms_norm_args(x, r))
    torch.testing.assert_close(y, r)
    torch.testing.assert_close(y, x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + 1e-6))


def test_wrong_argument_count_is_a_type_error():
    h = _C.cpu_kernel("rms_norm")[0]
    x = torch.randn(2, 8)
    args = rms_norm_args(x, x.clone())
    with pytest.raises(TypeError, match=r"'rms_norm' takes 10 arguments.*got 9"):
        _C.cpu_launch(h, *args[:-1])
    with pytest.raises(TypeError, match="got 11"):
        _C.cpu_launch(h, *args, 0)
    with pytest.raises(TypeError):
        _C.cpu_launch()


def test_bad_handle_is_an_error_not_a_crash():
    with pytest.raises(ValueError, match="handle"):
        _C.cpu_launch(len(_C.cpu_kernels()))
    with pytest.raises(ValueError, match="handle"):
        _C.cpu_launch(-1)
    with pytest.raises(OverflowError):
        _C.cpu_launch(2**40)


@pytest.mark.parametrize("index,value", [(8, 2**31), (8, -2**31 - 1), (9, 2**40)])
def test_out_of_range_int32_is_an_overflow_error_naming_the_argument(index, value):
    h = _C.cpu_kernel("rms_norm")[0]
    x = torch.randn(2, 8)
    args = list(rms_norm_args(x, x.clone()))
    args[index] = value
    with pytest.raises(OverflowError, match=rf"kernel argument {index} \(format 'i'\)"):
        _C.cpu_launch(h, *args)


def test_int64_and_pointer_ranges():
    h = _C.cpu_kernel("rms_norm")[0]
    x = torch.randn(2, 8)
    args = list(rms_norm_args(x, x.clone()))
    for index, value, kind in [(3, 2**63, "q"), (0, -1, "p"), (2, 2**64, "p")]:
        bad = list(args)
        bad[index] = value
        with pytest.raises(OverflowError, match=rf"kernel argument {index} \(format '{kind}'\)"):
            _C.cpu_launch(h, *bad)
    bad = list(args)
    bad[4] = "8"
    with pytest.raises(TypeError, match=r"kernel argument 4 \(format 'q'\)"):
        _C.cpu_launch(h, *bad)
    bad = list(args)
    bad[7] = "eps"
    with pytest.raises(TypeError, match=r"kernel argument 7 \(format 'f'\)"):
        _C.cpu_launch(h, *bad)


def test_kernel_errors_raise_the_registered_class():
    h = _C.cpu_kernel("rms_norm")[0]
    with pytest.raises(InputValueError, match="rms_norm: n must be >= 1"):
        _C.cpu_launch(h, 0, 0, 0, 4, 0, 0, 0, 1e-6, 0, 0)
    x = torch.randn(2, 8)
    with pytest.raises(InputValueError, match="dtype"):   # an integer dtype: not a float kernel's
        _C.cpu_launch(h, x.data_ptr(), 0, x.data_ptr(), 2, 8, 8, 8, 1e-6, _C.DTYPE_CODES["int32"], 0)


def test_cuda_launch_shares_the_conversion():
    """cuda_launch converts its kernel arguments with the same code: a bad handle is caught
    before any argument is read, and a handle that does not fit a C int is an OverflowError."""
    with pytest.raises(ValueError, match="handle"):
        _C.cuda_launch(12345, 1, 1, 1, 1, 1, 1, 0, 0)
    with pytest.raises(OverflowError):
        _C.cuda_launch(2**40, 1, 1, 1, 1, 1, 1, 0, 0)


def test_constants():
    assert _C.DTYPE_CODES == {"float32": 0, "float16": 1, "bfloat16": 2, "int32": 3,
                              "int64": 4, "uint8": 5, "bool": 6}
    assert (_C.FLOAT32, _C.FLOAT16, _C.BFLOAT16) == (0, 1, 2)
    assert _C.ARG_FORMAT_CHARS == "pqifd"
    assert _C.MAX_KERNEL_ARGS == 24
    from tileops.errors import STATUS_CLASSES
    assert _C.STATUS_COUNT == len(STATUS_CLASSES)


def test_dtypes_module_is_built_from_the_binding():
    assert set(_dtypes.CODE) == {getattr(torch, name) for name in _C.DTYPE_CODES}
    for name, code in _C.DTYPE_CODES.items():
        assert _dtypes.CODE[getattr(torch, name)] == code
        assert _dtypes.DTYPE[code] == getattr(torch, name)
        assert _dtypes.BY_NAME[name] == getattr(torch, name)
    assert (_dtypes.FLOAT32, _dtypes.FLOAT16, _dtypes.BFLOAT16) == (0, 1, 2)


def test_kernel_errors_carry_the_argument_the_core_named():
    """A failure the core pins on one kernel argument (tileops_fail_arg) reaches Python as
    the exception's `argument`; one about no single argument carries none, even right after
    one that did (the thread-local argument is cleared by every tileops_fail)."""
    h = _C.cpu_kernel("embedding")[0]
    ids, w, y = torch.tensor([0, 5]), torch.randn(4, 8), torch.empty(2, 8)
    args = [ids.data_ptr(), w.data_ptr(), y.data_ptr(), 2, 4, 8, _dtypes.CODE[torch.float32], _dtypes.CODE[torch.int64]]
    with pytest.raises(InputValueError, match=r"ids\[1\] = 5 is outside \[0, 4\)") as bad_id:
        _C.cpu_launch(h, *args)
    assert bad_id.value.argument == "ids"
    with pytest.raises(InputValueError, match="n >= 0") as bad_size:
        _C.cpu_launch(h, *args[:3], -1, *args[4:])
    assert not hasattr(bad_size.value, "argument")
    with pytest.raises(InputValueError, match="must be non-NULL") as null_y:
        _C.cpu_launch(h, *args[:2], 0, *args[3:])
    assert null_y.value.argument == "y"
