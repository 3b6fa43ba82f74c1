"""Guards on what reaches the kernels (issue 17, parts 3 to 5), for every implemented op of
the manifest, on the CPU (and CUDA where there is one; those items skip without it):

A. No public name computes without the checks: `op.forward` is the checked call, and the
   launchable `op.kernel_for` returns checks the extents, dtype, device, contiguity and
   presence of what it hands to C, raising a clear error instead of reading out of bounds.
B. The eager fast path declines tensors with a lazy flag (negative bit, ZeroTensor):
   results equal the reference on the materialised tensor, and the op's own forward (so
   the C kernels) never sees one, on either path. A lazy view a call writes is refused.
   Constructor params are typed (clear errors for "12", (4.7,), True, sizes < 0 or >=
   2**62, (), eps=True / NaN / inf).
C. Bad inputs through torch.ops.tileops.* (None, sparse, nested, a key of another op, a
   stale key) raise errors naming the op and the argument."""
import math

import pytest
import torch

import driver
from tileops import TileOpsError
from tileops.errors import InputError, InputTypeError, InputValueError

OPS = driver.op_classes()
DEVICES = ["cpu", "cuda"]


def _ops():
    """The ops with a compile boundary: the guards here are those of their tensor inputs
    (an op without tensor inputs has its own checks: tests/ops/test_positional_tables.py)."""
    return [pytest.param(c, id=n) for n, c in OPS.items() if c._boundary is not None]


def _row_ops():
    """The ops over rows of `normalized_shape` with x, y and a weight (the norm family):
    the tests that name those arguments and params."""
    return [pytest.param(c, id=n) for n, c in OPS.items()
            if {"normalized_shape", "eps"} <= {p.name for p in c._entry.params}
            and {"x", "weight"} <= {i.name for i in c._entry.inputs}]


def _first(cls):
    """The op's data input (its first input that is not an index input): the tensor the
    generic checks replace."""
    return driver.data_input(cls._entry).name


def _case(cls, device, dtype=torch.float32):
    driver.require_device(device)
    case, inputs = driver.small_case(cls, dtype=dtype, device=device)
    return cls(**case.params), inputs


def _ref(cls, op, inputs):
    """The reference in float64 on the materialised inputs, in the manifest's output order."""
    mat = {k: (None if v is None else v.resolve_neg().resolve_conj().clone()) for k, v in inputs.items()}
    return driver.ref_outputs(cls, op, mat, torch.float64)


def _assert_ref(cls, op, result, inputs, operator_branch=None):
    """The call's result (its outputs, then the inputs it writes in place, which `inputs`
    holds after the call) equals the reference's. operator_branch: the result is that
    branch's operator's (the outputs it allocates), not the op's; else the call was made
    with the call-time defaults (an optional output whose bool defaults to False is not
    returned). A write in place is compared with the reference run on the inputs as they
    are after the call: the same for a write of the same values again (a cache write)."""
    outs = cls._entry.outputs
    if operator_branch is not None:
        got = driver.operator_results(cls, operator_branch, result, inputs)
        keep = [o.name not in operator_branch.omitted for o in outs]
    else:
        defaults = {c.name: c.default for c in cls._entry.call_params}
        keep = [not (o.optional and not defaults.get(o.when)) for o in outs]
        got = driver.call_results(cls, result, inputs, sum(keep))
    ref = _ref(cls, op, inputs)
    want = tuple(r for k, r in zip(keep, ref[:len(outs)]) if k) + tuple(ref[len(outs):])
    assert len(got) == len(want)
    for g, r in zip(got, want):
        if r.is_floating_point():
            torch.testing.assert_close(g.double(), r, **driver.tol64(torch.float32))
        else:   # an index or a token: exactly
            assert torch.equal(g, r), (g, r)


def _raises(exc, fn, *words):
    with pytest.raises(exc) as e:
        fn()
    for w in words:
        assert w in str(e.value), (w, str(e.value))
    return e.value


def _iface(cls):
    (name, iface), = cls.interfaces.items()
    return name, iface


def _launch_tensors(cls, op, inputs):
    """The interface's tensors for a call: the inputs, then the outputs `allocate` gives."""
    name, iface = _iface(cls)
    outs = op.allocate(**inputs)
    outs = outs if isinstance(outs, tuple) else (outs,)
    by_name = dict(inputs)
    by_name.update({o.name: t for o, t in zip(cls._entry.outputs, outs)})
    return name, [by_name[t] for t in iface.tensors], list(iface.tensors)


# ---- A: forward is checked ---------------------------------------------------------------

@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("cls", _ops())
def test_forward_is_the_checked_call(cls, device):
    op, inputs = _case(cls, device)
    assert cls.forward is cls._call_boundary            # `op.forward(...)` is `op(...)`
    assert "_forward" in cls.__dict__                   # the op's computation, private
    _assert_ref(cls, op, op.forward(**inputs), inputs)
    first = _first(cls)
    _raises(InputTypeError, lambda: op.forward(**dict(inputs, **{first: "x"})), cls.__name__, f"'{first}'")


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("cls", _row_ops())
def test_forward_computes_odd_layouts_and_refuses_bad_rows(cls, device):
    op, inputs = _case(cls, device)
    x = inputs["x"]
    n = math.prod(op.normalized_shape)
    # an expanded x (stride 0) and a transposed x: computed on their values
    for bad_x in (x[:1].expand_as(x), x.transpose(-1, -2).contiguous().transpose(-1, -2)):
        args = dict(inputs, x=bad_x)
        if "residual" in args:
            args["residual"] = inputs["residual"][:1].expand_as(x)
        _assert_ref(cls, op, op.forward(**args), args)
    # a wrong last dimension, x smaller than one row, a 1-element weight: refused
    _raises(InputValueError, lambda: op.forward(**dict(inputs, x=torch.randn(*x.shape[:-1], x.shape[-1] + 1,
                                                                             device=device))), cls.__name__, "x.shape")
    small = torch.randn(max(n - 1, 1) if n > 1 else 0, device=device)
    args = dict(inputs, x=small)
    if "residual" in args:
        args["residual"] = small.clone()
    _raises(InputValueError, lambda: op.forward(**args), cls.__name__)
    _raises(InputValueError, lambda: op.forward(**dict(inputs, weight=torch.randn(1, device=device))),
            cls.__name__, "weight")


def test_forward_refuses_a_huge_row_with_a_small_weight():
    """The adversarial case: weight of 4 elements with n = 2**20 (was read out of bounds)."""
    cls = OPS["RMSNormFwdOp"]
    op = cls((2**20,))
    _raises(InputValueError, lambda: op.forward(torch.randn(1, 2**20), torch.randn(4)), "RMSNormFwdOp", "weight")


# ---- A: the launchable kernel_for returns checks what C relies on ----------------------------

@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("cls", _row_ops())
def test_kernel_for_launchable_checks_what_c_relies_on(cls, device):
    op, inputs = _case(cls, device)
    name, tensors, names = _launch_tensors(cls, op, inputs)
    launch = op.kernel_for(name, *tensors)
    launch(*tensors)                                    # the good call writes the outputs
    outs = tuple(tensors[len(cls._entry.inputs):])
    _assert_ref(cls, op, outs if len(outs) > 1 else outs[0], inputs)
    ix, iy = names.index("x"), names.index("y")
    x = tensors[ix]

    def bad(**repl):
        args = list(tensors)
        for k, v in repl.items():
            args[names.index(k)] = v
        return lambda: launch(*args)
    _raises(InputValueError, bad(x=x[:1].expand_as(x)), "'x'", "contiguous")          # expanded
    _raises(InputValueError, bad(x=x.transpose(-1, -2).contiguous().transpose(-1, -2)), "'x'", "contiguous")
    _raises(InputValueError, bad(x=x.reshape(-1)[:-1].contiguous()), "'x'")            # fewer elements
    _raises(InputValueError, bad(x=torch.randn(1, device=device), y=torch.empty(1, device=device)))  # < a row
    _raises(InputValueError, bad(weight=torch.randn(1, device=device)), "'weight'", "elements")
    _raises(InputTypeError, bad(x=x.double()), "'x'", "dtype")
    _raises(InputValueError, bad(x=torch._neg_view(x)), "'x'", "negated")
    _raises(InputValueError, bad(y=tensors[iy][:1]), "'x'")                              # y too small
    _raises(InputValueError, bad(x=None), "'x'", "None")
    _raises(InputTypeError, bad(x="x"), "'x'", "Tensor")
    if device == "cuda":
        _raises(InputValueError, bad(x=x.cpu()), "'x'", "cuda")
    else:
        _raises(InputValueError, bad(y=torch.empty(0)), "'x'")
    # an output partly overlapping an input
    buf = torch.randn(x.numel() + 1, dtype=x.dtype, device=device)
    _raises(InputValueError, bad(x=buf[:-1].view(x.shape), y=buf[1:].view(x.shape)), "overlaps")


# ---- B: the fast path declines lazy flags; C never sees one ---------------------------------

@pytest.fixture
def seen_by_forward(monkeypatch):
    """Records, for every call of an op's own forward, whether any tensor it got has the
    negative or conjugate bit or is a ZeroTensor."""
    seen = []
    for cls in OPS.values():
        orig = cls.__dict__["_forward"]

        def spy(self, *args, _orig=orig, **kw):
            ts = [a for a in list(args) + list(kw.values()) if isinstance(a, torch.Tensor)]
            seen.append(any(t.is_neg() or t.is_conj() or t._is_zerotensor() for t in ts))
            return _orig(self, *args, **kw)
        monkeypatch.setattr(cls, "_forward", spy)
    return seen


def _lazy_variants(inputs, device, cls):
    """(label, inputs) with one input replaced by a lazy tensor of the same values: the
    first input as a negated view and as conj().imag, each other floating input negated,
    a ZeroTensor weight; not an input every call writes (refused: see
    test_a_lazy_view_the_call_writes_is_refused)."""
    first = next(k for k, t in inputs.items() if t is not None and t.is_floating_point())
    x = inputs[first]
    always = set(driver.in_place_inputs(cls._entry))
    rest = [(k, t) for k, t in inputs.items() if k != first and k not in always]
    z = torch.complex(torch.randn_like(x), -x)           # z.conj().imag has x's values, negative bit set
    yield f"neg {first}", dict(inputs, **{first: torch._neg_view(-x)})
    yield f"conj().imag {first}", dict(inputs, **{first: z.conj().imag})
    for k, t in rest:
        if t is not None and t.is_floating_point():
            yield f"neg {k}", dict(inputs, **{k: torch._neg_view(-t)})
    if inputs.get("weight") is not None:
        yield "zero weight", dict(inputs, weight=torch._efficientzerotensor(inputs["weight"].shape, device=device,
                                                                             dtype=x.dtype))


def _plainest(cls):
    """The branch a plain call takes: no out, the fewest inputs written (none, but for an
    op that writes some on every call)."""
    return min((b for b in driver.branches_of(cls) if not b.uses_out), key=lambda b: len(b.written))


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("cls", _ops())
def test_lazy_flags_give_the_reference_on_both_paths(cls, device, seen_by_forward):
    op, inputs = _case(cls, device)
    for label, args in _lazy_variants(inputs, device, cls):
        assert any(t.is_neg() or t._is_zerotensor() for t in args.values() if t is not None), label
        _assert_ref(cls, op, op(**args), args)                       # eager: declines the fast path
        b = _plainest(cls)
        overload, oargs = driver.operator_args(cls, b, op, args)
        _assert_ref(cls, op, overload(*oargs), args, b)              # the operator, called directly
    assert seen_by_forward and not any(seen_by_forward), seen_by_forward


@pytest.mark.parametrize("cls", [c for c in _ops() if any(i.mutated for i in c.values[0]._entry.inputs)])
def test_a_lazy_view_the_call_writes_is_refused(cls):
    op, inputs = _case(cls, "cpu")
    b = next(b for b in driver.branches_of(cls) if b.written)
    for name in b.written:
        args = dict(inputs, **{name: torch._neg_view(inputs[name].clone())})
        kw = dict(b.values)
        _raises(InputValueError, lambda: op(**args, **kw), cls.__name__, f"'{name}'", "negated")
        overload, oargs = driver.operator_args(cls, b, op, args)
        _raises(InputValueError, lambda: overload(*oargs), cls.__name__, f"'{name}'", "negated")


@pytest.mark.parametrize("cls", _ops())
def test_a_complex_conjugate_is_refused_by_the_dtype_check(cls):
    op, inputs = _case(cls, "cpu")
    first = _first(cls)
    z = torch.complex(inputs[first], inputs[first]).conj()
    assert z.is_conj()
    _raises(InputTypeError, lambda: op(**dict(inputs, **{first: z})), cls.__name__, f"'{first}'", "dtype")


@pytest.mark.parametrize("cls", _ops())
def test_a_tensor_subclass_takes_the_operator_path_and_is_right(cls):
    class Tagged(torch.Tensor):
        pass
    op, inputs = _case(cls, "cpu")
    first = _first(cls)
    args = dict(inputs, **{first: inputs[first].as_subclass(Tagged)})
    _assert_ref(cls, op, op(**args), inputs)


# ---- B: constructor params ------------------------------------------------------------------

BAD_SHAPES = [("12", InputTypeError), ((4.7,), InputTypeError), (True, InputTypeError), (4.0, InputTypeError),
              (-3, InputValueError), ((4, -1), InputValueError), (2**70, InputValueError),
              ((), InputValueError), ([], InputValueError), (None, InputTypeError)]


@pytest.mark.parametrize("value,exc", BAD_SHAPES, ids=[repr(v) for v, _ in BAD_SHAPES])
@pytest.mark.parametrize("cls", _row_ops())
def test_bad_normalized_shape_is_refused_at_construction(cls, value, exc):
    _raises(exc, lambda: cls(value), cls.__name__, "normalized_shape")


@pytest.mark.parametrize("value,exc", [(True, InputTypeError), (float("nan"), InputValueError),
                                       (float("inf"), InputValueError), ("1e-5", InputTypeError),
                                       (torch.tensor(1e-5), InputTypeError)],
                         ids=["True", "nan", "inf", "str", "tensor"])
@pytest.mark.parametrize("cls", _row_ops())
def test_bad_eps_is_refused_at_construction_and_assignment(cls, value, exc):
    _raises(exc, lambda: cls(4, eps=value), cls.__name__, "eps")
    op = cls(4)
    _raises(exc, lambda: setattr(op, "eps", value), cls.__name__, "eps")


@pytest.mark.parametrize("cls", _row_ops())
def test_normalized_shape_conversions_and_a_negative_eps_as_torch_takes_them(cls):
    import numpy as np
    assert cls(np.int64(4)).normalized_shape == (4,)
    assert cls(torch.Size([2, 3])).normalized_shape == (2, 3)
    op, inputs = _case(cls, "cpu")
    op.eps = -1e-9          # torch takes a negative eps too; the result is the reference's
    _assert_ref(cls, op, op(**inputs), inputs)


# ---- C: bad inputs through torch.ops.tileops.* ------------------------------------------

def _strided_nested(x):
    import warnings
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)   # the strided layout is a prototype
        return torch.nested.nested_tensor([x, x])


def _other_op(cls):
    other = next(c for c in OPS.values() if c is not cls)
    case, _ = driver.small_case(other)
    return other(**case.params)


@pytest.mark.parametrize("cls", _ops())
def test_bad_inputs_through_the_operators_name_the_op_and_argument(cls):
    op, inputs = _case(cls, "cpu")
    first = _first(cls)
    x = inputs[first]
    for b in driver.branches_of(cls):
        overload, args = driver.operator_args(cls, b, op, inputs, driver.out_for(cls, b, op, inputs)
                                              if b.uses_out else None)
        ix = [a.name for a in overload._schema.arguments].index(first)

        def call(**repl):
            a = list(args)
            for k, v in repl.items():
                a[[s.name for s in overload._schema.arguments].index(k)] = v
            return lambda: overload(*a)
        _raises(InputTypeError, call(**{first: None}), cls.__name__, f"'{first}'", "Tensor")
        _raises(InputTypeError, call(**{first: x.to_sparse()}), cls.__name__, f"'{first}'", "strided")
        nested = _strided_nested(x)
        _raises(InputTypeError, call(**{first: nested}), cls.__name__, f"'{first}'", "nested")
        other = _other_op(cls)
        _raises(TileOpsError, call(key=other._key), cls.__name__, "'key'", type(other).__name__)
        _raises(TileOpsError, call(key=f"{cls.__name__}#999999999"), cls.__name__, "no live instance")
        assert ix == [i.name for i in cls._entry.inputs].index(first)


@pytest.mark.parametrize("cls", _ops())
def test_bad_inputs_through_the_call_name_the_op_and_argument(cls):
    op, inputs = _case(cls, "cpu")
    first = _first(cls)
    x = inputs[first]
    q = f"'{first}'"
    _raises(InputTypeError, lambda: op(**dict(inputs, **{first: None})), cls.__name__, q)
    _raises(InputTypeError, lambda: op(**dict(inputs, **{first: x.to_sparse()})), cls.__name__, q, "strided")
    njt = torch.nested.nested_tensor([x, x], layout=torch.jagged)
    _raises(InputTypeError, lambda: op(**dict(inputs, **{first: njt})), cls.__name__, q)
    nested = _strided_nested(x)
    _raises(InputTypeError, lambda: op(**dict(inputs, **{first: nested})), cls.__name__, q, "nested")
    _raises(InputTypeError, lambda: op.forward(**dict(inputs, **{first: "x"})), cls.__name__, q)


# ---- the fast path stays the fast path ------------------------------------------------------

@pytest.mark.parametrize("cls", _ops())
def test_plain_tensors_still_take_the_fast_path_and_lazy_ones_do_not(cls):
    from test_fast_path import operator_calls
    op, inputs = _case(cls, "cpu")
    op(**inputs)
    with operator_calls(cls) as seen:
        op(**inputs)
        op.forward(**inputs)
        assert not seen
        for label, args in _lazy_variants(inputs, "cpu", cls):
            n = len(seen)
            op(**args)
            assert len(seen) == n + 1, label


@pytest.mark.parametrize("cls", [c for c in _ops() if any(b.uses_out for b in driver.branches_of(c.values[0]))])
def test_a_lazy_out_is_refused(cls):
    op, inputs = _case(cls, "cpu")
    b = next(b for b in driver.branches_of(cls) if b.uses_out)
    out = torch._neg_view(driver.out_for(cls, b, op, inputs))
    _raises(InputValueError, lambda: op(**inputs, out=out), cls.__name__, "'out'", "negated")
    overload, oargs = driver.operator_args(cls, b, op, inputs, out)
    _raises(InputValueError, lambda: overload(*oargs), cls.__name__, "'out'", "negated")


@pytest.mark.parametrize("cls", [c for c in _ops() if any(i.mutated for i in c.values[0]._entry.inputs)])
def test_a_writing_call_materialises_the_lazy_inputs_it_only_reads(cls, seen_by_forward):
    op, inputs = _case(cls, "cpu")
    b = next(b for b in driver.branches_of(cls) if b.written)
    read_only = [i.name for i in cls._entry.inputs if i.name not in b.written and inputs.get(i.name) is not None]
    assert read_only
    for name in read_only:
        args = dict(inputs, **{name: torch._neg_view(-inputs[name])})
        want = _ref(cls, op, args)
        first, second = ({k: (v.clone() if k in b.written else v) for k, v in args.items()} for _ in range(2))
        got = op(**first, **dict(b.values))
        overload, oargs = driver.operator_args(cls, b, op, second)
        got_op = overload(*oargs)
        n = len(driver.expected_outputs(cls, b, op, first))
        for g in (driver.call_results(cls, got, first, n), driver.operator_results(cls, b, got_op, second)):
            assert len(g) == len(want)
            for t, r in zip(g, want):
                torch.testing.assert_close(t.double(), r, **driver.tol64(torch.float32))
    assert seen_by_forward and not any(seen_by_forward)
