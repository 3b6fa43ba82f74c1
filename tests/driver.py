"""The generic op driver: what tests/test_ops.py (CPU) and tests/gpu/test_gpu_ops.py (CUDA)
run for every implemented op, read from the manifest and the op class alone. Nothing here
names an op: the cases come from the entry's `workloads` (workloads.cases(test=True)), the
dtypes from its first input's dtype rule, the effect branches from the generated boundary,
the expected outputs (and the inputs it writes in place, where no output returns them)
from its `ref_api`, and each output's shape, dtype and aliasing from its signature.

One test item is an op x target x dtype x effect branch; inside it every case of the
manifest runs, with each optional input present and absent, contiguous and strided, through
the eager fast path and through the operator (the dispatcher path a compiled graph takes).
torch.library.opcheck, the cold torch.compile and the backward check run once per op x
target x branch with one small case."""
from __future__ import annotations

import dataclasses
import re
import zlib

import pytest
import torch

import tileops
import tileops.targets
from tileops.errors import InputValueError
from tileops.manifest import workloads
from tileops.ops import boundary

from compile_contract import graph_targets
from dispatch_spy import Spy
from helpers import compile_keeping_graphs

# ---- tolerances ------------------------------------------------------------------------
# Against the reference run in float64 on the same inputs (converted exactly to float64).
# u is the dtype's unit roundoff (float16 2^-11 = 4.9e-4, bfloat16 2^-8 = 3.9e-3, float32
# 2^-24 = 6e-8). The bound the driver holds every op to, for outputs of magnitude ~1:
#   * the output is rounded once to the dtype: <= u relative;
#   * a fused add rounds x + residual to the dtype before normalising (the convention the
#     references follow in the op's own dtype, and what the op's residual_out output is);
#     the float64 reference does not, so the normalised output moves by <= u relative per
#     element and its statistics (rms, mean, variance of the rounded sum) by <= u more;
#   * the accumulation in float32 over a row (<= 4097 elements in the manifest's test
#     dims) adds ~sqrt(n) * 2^-24 ~ 4e-6 relative, negligible against u for 16-bit dtypes.
# So |y - ref64| <= 3u |ref64| + (the absolute error of an output near 0: a layer norm's
# bias cancelling n * weight, where the rounded sum's error u * |n * weight| is not
# relative to y). rtol = atol = 4u covers this with a margin: float16 2e-3, bfloat16
# 1.6e-2 (the same numbers as tests/rms_norm_reference.py). float32: 1e-5 relative is the
# float32 accumulation over a row (above) with margin; atol 1e-5 for outputs near 0.
# Measured on the CPU (builtin and aten, the cases up to 2^18 elements), worst error over
# what is allowed: 0.2 for the single-rounding ops (<= 0.8u), 0.34-0.48 for the fused adds
# (<= 1.9u), 0.04 in float32. A tighter 2u for the single-rounding ops would need the
# manifest to say how many times an output is rounded (driver knows nothing per op).
TOL64 = {
    torch.float32: dict(rtol=1e-5, atol=1e-5),
    torch.float16: dict(rtol=2e-3, atol=2e-3),
    torch.bfloat16: dict(rtol=1.6e-2, atol=1.6e-2),
}
# Against the reference run in the op's own dtype (what users compare with): both sides
# round the same intermediates to the dtype and the output once, so they may differ by one
# ulp of the output (2u relative) and by float32 accumulation order. rtol: torch's own
# defaults for the 16-bit dtypes (float16 1e-3 >= 2^-10, one ulp; bfloat16 1.6e-2, two
# ulps); for float32 1e-5 instead of torch's 1.3e-6, because the op's row sums run in
# another order than torch's (~sqrt(n) * 2^-24 for n <= 4097, up to 4e-6). atol: near 0
# the float32 intermediates decide, not the output's rounding: a layer norm over one
# element is exactly 0, while torch's float16 / bfloat16 CPU layer_norm returns a float32
# rounding error of x - mean times rstd = 1/sqrt(eps) (measured up to 9e-5); u of the
# dtype (float16 4.9e-4, bfloat16 3.9e-3) bounds that, where torch's 1e-5 does not.
TOL_OWN = {
    torch.float32: dict(rtol=1e-5, atol=1e-5),
    torch.float16: dict(rtol=1e-3, atol=2.0 ** -11),
    torch.bfloat16: dict(rtol=1.6e-2, atol=2.0 ** -8),
}


def tol64(dtype):
    return TOL64.get(dtype, dict(rtol=1e-5, atol=1e-5))


def tol_own(dtype):
    return TOL_OWN.get(dtype, dict(rtol=1e-5, atol=1e-5))


def coarser(tol, case_dtype, out_dtype):
    """The looser of the bounds of the case's dtype and of an output's own dtype (an
    output whose dtype a param sets, e.g. float16 probabilities of float32 logits, is
    rounded to its own dtype)."""
    a, b = tol(case_dtype), tol(out_dtype) if out_dtype.is_floating_point else tol(case_dtype)
    return a if a["rtol"] >= b["rtol"] else b


# ---- what is tested --------------------------------------------------------------------

def op_classes() -> dict:
    """Every implemented op class of the package, by name (the manifest decides)."""
    return {n: c for n, c in tileops.all_op_classes().items() if c._entry.status == "implemented"}


def targets() -> list:
    return tileops.targets.all_targets()


def data_input(entry):
    """The op's first input that is not an index input: the one whose dtypes the cases run
    (an embedding's table, not its ids); None for an op without tensor inputs."""
    if not entry.inputs:
        return None
    return next((i for i in entry.inputs if i.index is None), entry.inputs[0])


def dtypes_of(cls) -> tuple:
    """The dtypes the op's data input accepts (its dtype rule); an op without tensor
    inputs: its first output's."""
    spec = data_input(cls._entry) or cls._entry.outputs[0]
    return tuple(spec.dtype.allowed)


def call_device_kwargs(entry, device) -> dict:
    """The call's device argument of an op without tensor inputs (its `device` call
    param), else nothing: such an op puts its outputs where the call says."""
    dev = entry.device_param
    return {dev.name: torch.device(device)} if dev is not None else {}


def base_name(cls) -> str:
    return boundary.base_operator_name(cls.__name__, cls._entry.family)


def branches_of(cls) -> list:
    """The op's effect branches: the generated boundary's, or (an op without a compile
    boundary) the same enumeration from its manifest entry."""
    if cls._boundary is not None:
        return list(cls._boundary["_branches"])
    return boundary.enumerate_branches(cls._entry, base_name(cls))


def branch_label(cls, b) -> str:
    """A readable id: the operator name's suffix ("writes_x_writes_residual", "out"), or
    "plain" for the branch that writes nothing and omits nothing."""
    suffix = b.name[len(base_name(cls)):].lstrip("_")
    return suffix or "plain"


def dtype_name(dtype) -> str:
    return str(dtype).replace("torch.", "")


def item_params(device: str) -> list:
    """pytest params (op class, target, dtype, branch) for every implemented op, every
    target, every dtype its first input accepts and every effect branch, with readable ids."""
    out = []
    for name, cls in op_classes().items():
        for dt in dtypes_of(cls):  # op, then dtype outermost: the references are cached per op and dtype
            for t in targets():
                for b in branches_of(cls):
                    out.append(pytest.param(cls, t, dt, b, id=f"{name}-{t.name}-{dtype_name(dt)}-{branch_label(cls, b)}"))
    return out


def branch_params() -> list:
    """pytest params (op class, target, branch): the per-branch checks run with one case."""
    out = []
    for name, cls in op_classes().items():
        for t in targets():
            for b in branches_of(cls):
                out.append(pytest.param(cls, t, b, id=f"{name}-{t.name}-{branch_label(cls, b)}"))
    return out


def require_target(cls, target):
    """Skips, saying why, when the target has no implementation of the op."""
    if not target.serves(cls):
        pytest.skip(f"target {target.name!r} does not serve {cls.__name__}")


def require_device(device):
    if device == "cuda" and not torch.cuda.is_available():
        pytest.skip("no CUDA device")


# ---- cases and inputs ------------------------------------------------------------------

def test_cases(cls, dtype) -> list:
    """The manifest's test cases at this dtype; an implemented op without them fails."""
    entry = cls._entry
    cs = workloads.cases(entry, test=True, dtypes=[dtype])
    if not cs:
        pytest.fail(f"{cls.__name__}: the manifest entry has no workloads, so the driver has no case to run; "
                    f"add `workloads` (with `test_dims`) to {entry.source}")
    return cs


def optional_subsets(entry) -> list:
    """Which optional inputs are present: all, none, and each one absent on its own (for
    two optional inputs, every combination)."""
    opt = [i.name for i in entry.inputs if i.optional]
    subsets = [frozenset(opt)]
    if opt:
        subsets.append(frozenset())
        for n in opt:
            s = frozenset(opt) - {n}
            if s not in subsets:
                subsets.append(s)
    return subsets


def subset_label(entry, present) -> str:
    opt = [i.name for i in entry.inputs if i.optional]
    if not opt:
        return "inputs"
    absent = [n for n in opt if n not in present]
    return "all optional" if not absent else "without " + "+".join(absent)


input_dtype = workloads.input_dtype


_POOL = {}


def _pool(device):
    """2^23 standard normal float32 values, drawn once per device: inputs are slices of it
    (drawing fresh values for every case would dominate the driver's time on a small CPU)."""
    p = _POOL.get(device)
    if p is None:
        g = torch.Generator().manual_seed(0)
        p = _POOL[device] = torch.randn(1 << 23, generator=g).to(device)
    return p


def make_inputs(cls, case, present, device) -> dict:
    """Each input by name (None for an absent optional one), in the manifest's order:
    standard normal values at an offset fixed by the case; an index input (`index:` in the
    manifest) uniform integers in [0, its bound), an input with `values: [low, high]`
    uniform values in [low, high), drawn after the inputs the bounds read."""
    entry = cls._entry
    pool = _pool(device)
    seed = zlib.crc32(f"{cls.__name__}/{case.name}/{sorted(present)}".encode())
    made = {}
    for k, spec in sorted(enumerate(entry.inputs), key=lambda kv: kv[1].bounded):
        if spec.optional and spec.name not in present:
            made[spec.name] = None
            continue
        if spec.name not in case.shapes:
            pytest.fail(f"{cls.__name__}: workload case {case.name} gives no shape for input '{spec.name}'")
        dt = input_dtype(spec, case.dtype, made)
        shape = tuple(case.shapes[spec.name])
        if spec.bounded:
            made[spec.name] = workloads.drawn_values(spec, shape, dt, made, case.params, seed + k,
                                                     case.draws.get(spec.name, "uniform")).to(device)
            continue
        n = 1
        for d in shape:
            n *= d
        if n > pool.numel():
            pytest.fail(f"{cls.__name__}: case {case.name}: input '{spec.name}' of {n} elements is larger than the "
                        f"driver's pool of random values ({pool.numel()})")
        start = (seed * (k + 1) * 2654435761) % (pool.numel() - n + 1)
        made[spec.name] = pool[start:start + n].view(shape).to(dtype=dt, copy=True)
    return {i.name: made[i.name] for i in entry.inputs}


def strided(t):
    """The same values in a non-contiguous layout: every other element of a buffer twice as
    long in the last dimension."""
    if t is None:
        return None
    buf = torch.empty((*t.shape, 2), dtype=t.dtype, device=t.device)
    v = buf[..., 0]
    v.copy_(t)
    return v


def strided_inputs(entry, inputs: dict) -> dict:
    """Each input in a non-contiguous layout (`strided`), but an input the op requires
    contiguous (`contiguous: require`: never copied), which stays contiguous (a copy)."""
    return {i.name: (strided(inputs[i.name]) if i.contiguous != "require"
                     else None if inputs[i.name] is None else inputs[i.name].clone()) for i in entry.inputs}


def refuses_strided(cls, op, branch, inputs: dict):
    """An input the op requires contiguous, given strided, is refused (InputValueError
    naming the op and the argument) before anything is written."""
    entry = cls._entry
    for spec in entry.inputs:
        t = inputs[spec.name]
        if spec.contiguous != "require" or t is None or strided(t).is_contiguous():
            continue
        before = clone_all(inputs)
        args = dict(inputs, **{spec.name: strided(t)})
        with pytest.raises(InputValueError) as e:
            op(*[args[i.name] for i in entry.inputs], **dict(branch.values))
        assert f"{cls.__name__}: argument '{spec.name}'" in str(e.value) and "contiguous" in str(e.value), str(e.value)
        for k, v in inputs.items():
            assert v is None or torch.equal(v, before[k]), f"refusing a strided '{spec.name}', the call wrote '{k}'"


def clone_all(d: dict) -> dict:
    return {k: (None if v is None else v.clone()) for k, v in d.items()}


def small_case(cls, dtype=None, device="cpu"):
    """One small case for the per-branch checks: the smallest workload test case whose
    shapes have every dimension >= 2 (else the smallest non-empty one). Returns (case,
    inputs with every optional input present)."""
    entry = cls._entry
    dtype = dtype or dtypes_of(cls)[0]
    cs = test_cases(cls, dtype)
    good = [c for c in cs if all(d >= 2 for s in case_shapes(cls, c) for d in s)]
    pool = good or [c for c in cs if case_numel(c, cls) > 0] or cs
    case = min(pool, key=lambda c: case_numel(c, cls))
    return case, make_inputs(cls, case, {i.name for i in entry.inputs}, device)


# ---- what the manifest says about outputs ------------------------------------------------

_EVAL_GLOBALS = {"__builtins__": {}, "len": len, "tuple": tuple, "list": list, "min": min, "max": max,
                 "all": all, "any": any, "abs": abs, "int": int, "range": range, "sum": sum}


@dataclasses.dataclass
class Expected:
    """One output the call returns: its name, its index among the entry's outputs, what it
    must be (an alias of a written input, the caller's out, or a new tensor), its shape and
    dtype from the manifest."""
    name: str
    index: int
    kind: str            # "alias" | "out" | "new"
    alias_of: str | None
    shape: tuple
    dtype: torch.dtype


def output_shapes(cls, params: dict) -> list:
    """Each output's shape from the manifest's rule, for an op without tensor inputs (its
    rules read the params alone)."""
    return [tuple(eval(o.shape, _EVAL_GLOBALS, dict(params))) for o in cls._entry.outputs]


def case_shapes(cls, case) -> list:
    """The shapes a case gives: its inputs'; an op without tensor inputs: its outputs'."""
    if cls._entry.inputs:
        return list(case.shapes.values())
    return output_shapes(cls, case.params)


def expected_outputs(cls, branch, op, inputs) -> list:
    entry = cls._entry
    env = dict(inputs)
    env.update(op.params())
    env.update({c.name: c.default for c in entry.call_params if c.type != "Tensor"})
    env.update(dict(branch.values))
    out_param = next((c for c in entry.call_params if c.fills), None)
    res = []
    for k, o in enumerate(entry.outputs):
        if o.name in branch.omitted:
            continue
        shape = tuple(eval(o.shape, _EVAL_GLOBALS, env))  # a rule the schema checked
        dt = o.dtype.resolve({k: v.dtype for k, v in inputs.items() if v is not None}, op.params())
        if o.alias_of and o.alias_of in branch.written:
            kind = "alias"
        elif branch.uses_out and out_param is not None and o.name == out_param.fills:
            kind = "out"
        else:
            kind = "new"
        res.append(Expected(o.name, k, kind, o.alias_of, shape, dt))
    return res


def returned(result, n):
    """The call's result as a list of its n outputs (checking its form)."""
    if n == 0:
        assert result is None, f"expected None (no output), got {type(result).__name__}"
        return []
    if n == 1:
        assert isinstance(result, torch.Tensor), f"expected one tensor, got {type(result).__name__}"
        return [result]
    assert isinstance(result, tuple) and len(result) == n, f"expected a tuple of {n} outputs, got {result!r:.200}"
    return list(result)


def in_place_inputs(entry) -> list:
    """The inputs every call writes that no output returns (Entry.in_place: a KV cache):
    their values after the call are part of its result, checked as an output's are, after
    the outputs."""
    return list(entry.in_place)


def call_results(cls, result, inputs: dict, n: int) -> list:
    """What a call of the op gives: its n returned outputs (`returned`), then the inputs
    it wrote in place (in_place_inputs), as they are after the call."""
    return returned(result, n) + [inputs[name] for name in in_place_inputs(cls._entry)]


def operator_results(cls, branch, result, inputs: dict) -> list:
    """call_results for a call of the branch's operator, which returns only the outputs
    it allocates: an output that is a written input is that input."""
    entry = cls._entry
    alloc = list(result) if isinstance(result, (tuple, list)) else [] if result is None else [result]
    outs = []
    for o in entry.outputs:
        if o.name in branch.omitted:
            continue
        outs.append(inputs[o.alias_of] if o.alias_of and o.alias_of in branch.written else alloc.pop(0))
    return outs + [inputs[name] for name in in_place_inputs(entry)]


def ref_outputs(cls, op, inputs: dict, dtype=None, device="cpu") -> tuple:
    """The manifest's reference on these inputs (converted to `dtype` when given), in
    the manifest's output order, then the inputs it writes in place (in_place_inputs:
    the reference gets copies of them and writes those). An op without tensor inputs:
    the reference takes the params, `device` and `dtype` (the dtype it returns: float64
    gives the values before their rounding to the op's dtype)."""
    entry = cls._entry
    if not entry.ref_api:
        pytest.fail(f"{cls.__name__}: the manifest entry has no ref_api, so the driver has nothing to compare with")
    ref = tileops.reference.resolve(entry.ref_api)
    written = in_place_inputs(entry)
    args = []
    for i in entry.inputs:
        t = inputs[i.name]
        if t is not None and dtype and t.is_floating_point():
            t = t.to(dtype)
        if t is not None and i.name in written and t is inputs[i.name]:
            t = t.clone()
        args.append(t)
    extra = {}
    if not entry.inputs:
        extra = dict(call_device_kwargs(entry, device), **({"dtype": dtype} if dtype else {}))
    r = ref(*args, **op.resolved_params(), **extra)
    r = r if isinstance(r, tuple) else (r,)
    assert len(r) == len(entry.outputs), f"ref_api {entry.ref_api} returned {len(r)} outputs, the entry has {len(entry.outputs)}"
    return r + tuple(a for i, a in zip(entry.inputs, args) if i.name in written)


def write_selectors(entry) -> set:
    return {i.when for i in entry.inputs if i.mutated and i.when}


def plain_kwargs(entry, branch) -> dict | None:
    """The call of the branch's out-of-place twin: no input written, no out, the same
    outputs asked for; None when some input is written on every call."""
    if any(i.mutated and not i.when for i in entry.inputs):
        return None
    sel = write_selectors(entry)
    return {n: (False if n in sel else v) for n, v in branch.values}


# ---- one call, every check -----------------------------------------------------------

class Failures:
    """Collects the failures of one test item's many calls, reported together."""

    def __init__(self):
        self.items = []

    def check(self, label, fn, *args):
        try:
            fn(*args)
        except AssertionError as e:
            self.items.append(f"{label}: {e}")
        except Exception as e:  # an op raising is a failure of that call, reported with it
            self.items.append(f"{label}: raised {type(e).__name__}: {e}")

    def report(self, total):
        if self.items:
            shown = "\n".join(self.items[:12])
            more = f"\n... and {len(self.items) - 12} more" if len(self.items) > 12 else ""
            pytest.fail(f"{len(self.items)} of {total} calls failed:\n{shown}{more}", pytrace=False)


class Reference:
    """An expected output and the bound every element must keep to, computed once:
    |got - ref| <= atol + rtol |ref|, elementwise (torch.testing.assert_close's rule; its
    own implementation is many times slower on large tensors), an infinity equal to the
    same infinity. Compared in float64 for float32 outputs and in float32 for 16-bit ones
    (exact enough against tolerances of 1e-3 and more). An integer or bool output (an
    index, a token) is compared exactly, whatever the tolerance."""

    def __init__(self, ref, dtype, rtol, atol):
        if not ref.is_floating_point():
            rtol = atol = 0
        self.cmp = torch.float64 if dtype in (torch.float32, torch.float64) or not ref.is_floating_point() \
            else torch.float32
        self.ref = ref.to(self.cmp)
        self.bound = self.ref.abs().mul_(rtol).add_(atol).masked_fill_(self.ref.isinf(), 0.0)  # an inf: exact
        self.rtol, self.atol = rtol, atol

    def check(self, got, what):
        assert tuple(got.shape) == tuple(self.ref.shape), f"{what}: shape {tuple(got.shape)}, expected {tuple(self.ref.shape)}"
        if not got.numel():
            return
        g = got.to(self.cmp)
        err = g.sub(self.ref).abs_().masked_fill_(g == self.ref, 0)   # inf - inf is NaN, but they agree
        if err.le(self.bound).all():
            return
        bad = err.le(self.bound).logical_not_()  # NaN included
        ratio = torch.nan_to_num(err.div_(self.bound), nan=float("inf"))
        i = int(ratio.argmax())
        idx = tuple(int(v) for v in torch.unravel_index(torch.tensor(i), got.shape))
        raise AssertionError(
            f"{what}: {int(bad.sum())} of {got.numel()} elements outside rtol={self.rtol:g} atol={self.atol:g}; "
            f"worst at {idx}: got {got[idx].item()!r}, expected {self.ref[idx].item()!r}")


class Prepared:
    """One case with one set of optional inputs: the inputs (`pristine`, never handed to
    an op) and what every branch and target is compared with, computed once (cached for
    the current op and dtype: the items run op by op, dtype by dtype)."""

    def __init__(self, cls, case, present, device):
        self.cls, self.case, self.present, self.device = cls, case, present, torch.device(device)
        self.pristine = make_inputs(cls, case, present, device)
        self.copy = clone_all(self.pristine)  # what the pristine inputs must still hold after a call
        self._ref64 = self._own = None

    def out_dtypes(self, op) -> list:
        """Each output's dtype, as the manifest gives it for these inputs and params, then
        each input written in place's (they follow the outputs in ref_outputs)."""
        dtypes = {k: v.dtype for k, v in self.pristine.items() if v is not None}
        return ([o.dtype.resolve(dtypes, op.params()) for o in self.cls._entry.outputs]
                + [dtypes[n] for n in in_place_inputs(self.cls._entry)])

    def ref64(self):
        """The reference in float64, with TOL64's bound for each output."""
        if self._ref64 is None:
            op = self.cls(**self.case.params)
            r = ref_outputs(self.cls, op, self.pristine, torch.float64, self.device)
            self._ref64 = [Reference(t, self.case.dtype, **coarser(tol64, self.case.dtype, dt))
                           for t, dt in zip(r, self.out_dtypes(op))]
        return self._ref64

    def own(self):
        """The reference run in the inputs' own dtype (what users compare with), each
        floating output rounded to its dtype, with TOL_OWN's bound."""
        if self._own is None:
            op = self.cls(**self.case.params)
            r = ref_outputs(self.cls, op, self.pristine, device=self.device)
            self._own = [Reference(t.to(dt) if t.is_floating_point() else t, self.case.dtype,
                                   **coarser(tol_own, self.case.dtype, dt))
                         for t, dt in zip(r, self.out_dtypes(op))]
        return self._own


_PREPARED = {}


def prepared(cls, case, present, device) -> Prepared:
    key = (cls.__name__, case.name, tuple(sorted(case.shapes.items())), tuple(sorted(case.params.items())),
           case.dtype, frozenset(present), device)
    p = _PREPARED.get(key)
    if p is None:
        for k in [k for k in _PREPARED if (k[0], k[4], k[6]) != (key[0], key[4], key[6])]:
            del _PREPARED[k]
        p = _PREPARED[key] = Prepared(cls, case, present, device)
    return p


def _poisoned(shape, dtype, device, layout):
    """An out buffer full of NaN; strided: every other element of a buffer twice as long
    (returns the view and the whole buffer)."""
    if layout == "strided":
        buf = torch.full((*shape, 2), float("nan"), dtype=dtype, device=device)
        return buf[..., 0], buf
    buf = torch.full(shape, float("nan"), dtype=dtype, device=device)
    return buf, buf


def _same_device(got, want) -> bool:
    """`got` (a tensor's device) is `want` ("cuda" means the current card)."""
    want = torch.device(want)
    if want.type == "cuda" and want.index is None:
        want = torch.device("cuda", torch.cuda.current_device())
    return got == want


def check_call(cls, op, branch, prep, layout, path, twin):
    """One call of one branch on one prepared case: effects, outputs, numerics. `twin`:
    the outputs of the branch's out-of-place twin on the same inputs (or None)."""
    entry = cls._entry
    pristine = prep.pristine
    if layout == "strided":
        inputs = strided_inputs(entry, pristine)
        refuses_strided(cls, op, branch, inputs)
    elif branch.written:
        inputs = clone_all(pristine)
    else:
        inputs = dict(pristine)  # checked against themselves below, and restored if written
    exp = expected_outputs(cls, branch, op, inputs)
    device = prep.device

    kwargs = dict(branch.values, **call_device_kwargs(entry, device))
    out = out_buf = None
    out_exp = next((e for e in exp if e.kind == "out"), None)
    if branch.uses_out:
        out, out_buf = _poisoned(out_exp.shape, out_exp.dtype, device, layout)
        kwargs["out"] = out
    ptrs = {k: v.data_ptr() for k, v in inputs.items() if v is not None}
    versions = {k: v._version for k, v in inputs.items() if v is not None}
    snapshot = prep.copy
    out_version = out._version if out is not None else None
    args = [inputs[i.name] for i in entry.inputs]

    if path == "operator":
        with Spy() as spy:
            result = op(*args, **kwargs)
        want = f"tileops::{branch.name}"
        got_ops = [f"{f._schema.name}" for f in spy.calls]
        assert got_ops == [want], f"the call reached operators {got_ops}, expected [{want}]"
    else:
        result = op(*args, **kwargs)

    # effects: written inputs keep their storage, are returned themselves and bumped; the
    # others are untouched; out is returned as is, every element written, nothing around it
    for spec in entry.inputs:
        v = inputs[spec.name]
        if v is None:
            continue
        if spec.name in branch.written:
            assert v.data_ptr() == ptrs[spec.name], f"written input '{spec.name}' changed storage"
            assert v._version > versions[spec.name], f"written input '{spec.name}': version counter not bumped"
        else:
            if not torch.equal(v, snapshot[spec.name]):
                v.copy_(snapshot[spec.name])  # restore the shared input for the next calls
                raise AssertionError(f"input '{spec.name}' was written, though this branch does not write it")
            assert v._version == versions[spec.name], f"input '{spec.name}' (not written) had its version counter bumped"
    outs = returned(result, len(exp))
    for e, t in zip(exp, outs):
        assert isinstance(t, torch.Tensor), f"output '{e.name}': got {type(t).__name__}"
        if e.kind == "alias":
            assert t is inputs[e.alias_of], f"output '{e.name}' is not the written input '{e.alias_of}' itself"
        elif e.kind == "out":
            assert t is out, f"output '{e.name}' is not the caller's out"
            assert out._version > out_version, "out: version counter not bumped"
            assert not torch.isnan(out).any(), "out: elements left unwritten (still NaN)"
            if layout == "strided" and out.numel():
                assert torch.isnan(out_buf[..., 1]).all(), "out: wrote outside the view it was given"
        else:
            assert t.is_contiguous(), f"output '{e.name}': an allocated output must be contiguous, strides {t.stride()}"
            if t.numel():
                for k, v in inputs.items():
                    if v is not None and v.numel():
                        assert t.untyped_storage().data_ptr() != v.untyped_storage().data_ptr(), \
                            f"output '{e.name}' shares storage with input '{k}'"
        assert tuple(t.shape) == e.shape, f"output '{e.name}': shape {tuple(t.shape)}, the manifest says {e.shape}"
        assert t.dtype == e.dtype, f"output '{e.name}': dtype {t.dtype}, the manifest says {e.dtype}"
        assert _same_device(t.device, device), f"output '{e.name}': device {t.device}, the call's is {device}"

    # numerics: against the reference in float64, and in the op's own dtype (the outputs,
    # then the inputs written in place, which follow the outputs in the references)
    ref64 = prep.ref64()
    checked = [(e.index, f"output '{e.name}'", t) for e, t in zip(exp, outs)]
    checked += [(len(entry.outputs) + k, f"input '{n}' written in place", inputs[n])
                for k, n in enumerate(in_place_inputs(entry))]
    for i, what, t in checked:
        ref64[i].check(t, f"{what} against the float64 reference")
    if layout == "contiguous" and path == "fast":
        own = prep.own()
        for i, what, t in checked:
            own[i].check(t, f"{what} against the reference in {dtype_name(t.dtype)}")

    # an effect branch gives exactly what its out-of-place twin gives
    if twin is not None:
        for e, t, w in zip(exp, outs, twin):
            assert torch.equal(t, w), f"output '{e.name}' differs from the out-of-place call's (max |diff| " \
                                      f"{(t.double() - w.double()).abs().max().item() if t.numel() else 0})"


# Each case and set of optional inputs runs in these (layout, path) combinations: every
# layout and every path, not their product (the fast path and the operator run the same
# generated body; what differs between them is the dispatcher, which strides do not reach).
VARIANTS = (("contiguous", "fast"), ("strided", "fast"), ("contiguous", "operator"))
# A case whose inputs hold more elements than this runs in one variant (contiguous, every
# optional input present, the fast path) of the branch that writes nothing (of every
# branch, for an op that always writes): its size adds nothing to what the variants and
# effect branches check on the smaller cases (every test dim still meets every variant at
# a smaller other dim), and on a 2-core CPU one pass over the largest case costs as much as
# all the small cases together. (The manifest's QK-norm cases take H from test_dims, up to
# 4097, times 32 heads: 4.3M elements.)
LARGE = 1 << 16


def case_numel(case, cls=None) -> int:
    """Elements of the case's inputs (an op without tensor inputs: of its outputs)."""
    n = 0
    for s in (case.shapes.values() if cls is None else case_shapes(cls, case)):
        k = 1
        for d in s:
            k *= d
        n += k
    return n


def run_item(cls, target, dtype, branch, device):
    """Every case x optional inputs x variant of one op, target, dtype and branch."""
    require_device(device)
    require_target(cls, target)
    entry = cls._entry
    cs = test_cases(cls, dtype)
    assert any(0 in case_shapes(cls, c)[0] for c in cs), \
        f"{cls.__name__}: no test case has an empty first input (or, without inputs, first output); add 0 to a " \
        f"dim's test_dims in {entry.source}"
    fails = Failures()
    total = 0
    all_variants = VARIANTS if cls._boundary is not None else tuple(v for v in VARIANTS if v[1] == "fast")
    if not entry.inputs:   # no input to lay out: one call per case
        all_variants = all_variants[:1]
    twin_kwargs = plain_kwargs(entry, branch) if (branch.written or branch.uses_out) else None
    subsets = optional_subsets(entry)
    plain = not branch.written and not branch.uses_out
    always_writes = any(i.mutated and not i.when for i in entry.inputs)
    for case in cs:
        large = case_numel(case, cls) > LARGE
        if large and not plain and not always_writes:
            continue
        op = cls(**case.params, target=target.name)
        for present in subsets[:1] if large else subsets:
            label = f"{case.name} {subset_label(entry, present)}"
            prep = prepared(cls, case, present, device)
            twin = None
            if twin_kwargs is not None:
                total += 1
                try:
                    t_in = clone_all(prep.pristine)
                    twin = returned(op(*[t_in[i.name] for i in entry.inputs], **twin_kwargs),
                                    len(expected_outputs(cls, branch, op, t_in)))
                except Exception as e:
                    fails.items.append(f"{label}: the out-of-place call raised {type(e).__name__}: {e}")
            for layout, path in all_variants[:1] if large else all_variants:
                total += 1
                fails.check(f"{label} {layout} ({path} path)", check_call, cls, op, branch, prep, layout, path, twin)
    fails.report(total)


# ---- once per op x target x branch ---------------------------------------------------------

def out_for(cls, branch, op, inputs, layout="contiguous"):
    """A NaN-poisoned out for the output the branch fills, shaped as the manifest says."""
    e = next(e for e in expected_outputs(cls, branch, op, inputs) if e.kind == "out")
    return _poisoned(e.shape, e.dtype, inputs[cls._entry.inputs[0].name].device, layout)[0]


def operator_args(cls, branch, op, inputs, out=None) -> tuple:
    """The operator's arguments in its schema's order: the op's tensors, call-time
    scalars (their manifest defaults), out, and the instance key last."""
    overload = getattr(torch.ops.tileops, branch.name).default
    calls = {c.name: c for c in cls._entry.call_params}
    args = []
    for a in overload._schema.arguments:
        if a.name in inputs:
            args.append(inputs[a.name])
        elif a.name == "out":
            args.append(out)
        elif a.name == "key":
            args.append(op._key)
        elif a.name in calls:
            args.append(calls[a.name].default)
        else:
            raise AssertionError(f"{branch.name}: schema argument '{a.name}' is no input, call param, out or key")
    return overload, tuple(args)


OPCHECK_TESTS = ("test_schema", "test_autograd_registration", "test_faketensor", "test_aot_dispatch_dynamic")


def run_opcheck(cls, target, branch, device):
    """torch.library.opcheck on the branch's operator, with every optional input present
    and with none, contiguous and strided; every check must pass."""
    require_device(device)
    require_target(cls, target)
    if cls._boundary is None:
        pytest.skip(f"{cls.__name__} has no compile boundary, so no operator to check")
    case, base = small_case(cls, device=device)
    op = cls(**case.params, target=target.name)
    failed = []
    subsets = optional_subsets(cls._entry)  # every optional input, then none
    for present, layout in ((subsets[0], "contiguous"), (subsets[min(1, len(subsets) - 1)], "strided")):
        inputs = {k: (None if k not in present and spec_optional(cls, k) else v) for k, v in base.items()}
        inputs = strided_inputs(cls._entry, inputs) if layout == "strided" else clone_all(inputs)
        out = out_for(cls, branch, op, inputs, layout) if branch.uses_out else None
        overload, args = operator_args(cls, branch, op, inputs, out)
        res = torch.library.opcheck(overload, args, test_utils=OPCHECK_TESTS, raise_exception=False)
        for check, status in res.items():
            if status != "SUCCESS":
                failed.append(f"{check} ({subset_label(cls._entry, present)}, {layout}): "
                              f"{type(status).__name__}: {str(status)[:600]}")
    assert not failed, f"opcheck of tileops::{branch.name} failed:\n" + "\n".join(failed)


def spec_optional(cls, name) -> bool:
    return cls._entry.input(name).optional


def run_compile(cls, target, branch, device):
    """A cold torch.compile(op, fullgraph=True) with inductor: compiled equals eager
    (outputs and written inputs), written inputs and out keep their storage, and the graph
    holds exactly one node, this branch's operator, whatever the target."""
    require_device(device)
    require_target(cls, target)
    if cls._boundary is None and not cls._entry.inputs:
        return run_compile_without_inputs(cls, target, device)
    if cls._boundary is None:
        pytest.skip(f"{cls.__name__} has no compile boundary: dynamo traces its forward")
    entry = cls._entry
    case, inputs = small_case(cls, device=device)
    torch._dynamo.reset()
    op = cls(**case.params, target=target.name)
    e_in = clone_all(inputs)
    kwargs = dict(branch.values)
    e_kwargs = dict(kwargs)
    if branch.uses_out:
        e_kwargs["out"] = out_for(cls, branch, op, e_in)
        kwargs["out"] = out_for(cls, branch, op, inputs, "strided")
    expected = op(*[e_in[i.name] for i in entry.inputs], **e_kwargs)
    ptrs = {k: v.data_ptr() for k, v in inputs.items() if v is not None}
    compiled, graphs = compile_keeping_graphs(op)
    got = compiled(*[inputs[i.name] for i in entry.inputs], **kwargs)
    exp = expected_outputs(cls, branch, op, inputs)
    ex, gt = returned(expected, len(exp)), returned(got, len(exp))
    for e, a, b in zip(exp, ex, gt):
        torch.testing.assert_close(b, a, rtol=0, atol=0, msg=lambda m, e=e: f"output '{e.name}': compiled != eager: {m}")
        if e.kind == "alias":
            assert b.data_ptr() == ptrs[e.alias_of], f"output '{e.name}' does not keep the storage of '{e.alias_of}'"
        elif e.kind == "out":
            assert b.data_ptr() == kwargs["out"].data_ptr(), f"output '{e.name}' does not keep out's storage"
            assert torch.equal(kwargs["out"], e_kwargs["out"]), "out: compiled != eager"
    for n in branch.written:
        assert inputs[n].data_ptr() == ptrs[n], f"written input '{n}' changed storage under compile"
        assert torch.equal(inputs[n], e_in[n]), f"written input '{n}': compiled wrote other values than eager"
    for k, v in inputs.items():
        if v is not None and k not in branch.written:
            assert torch.equal(v, e_in[k]), f"input '{k}' (not written) was written under compile"
    names = [t for g in graphs for t in graph_targets(g)]
    assert len(graphs) == 1, f"{len(graphs)} graphs captured, expected 1"
    assert names == [f"tileops::{branch.name}"], f"graph nodes {names}, expected exactly [tileops::{branch.name}]"


def run_compile_without_inputs(cls, target, device):
    """The compile contract of an op without tensor inputs (no boundary): a cold
    torch.compile(fullgraph=True) of a call of it captures one graph holding no tileops
    node (the outputs are constants of the trace), returns exactly what eager returns,
    bit for bit, as new tensors on every call (writing into one changes no later call),
    and a param assigned afterwards gives the new outputs, not the traced ones."""
    entry = cls._entry
    case, _ = small_case(cls, device=device)
    where = call_device_kwargs(entry, device)
    torch._dynamo.reset()
    op = cls(**case.params, target=target.name)
    eager = returned(op(**where), len(entry.outputs))
    compiled, graphs = compile_keeping_graphs(lambda: op(**where))
    got = returned(compiled(), len(entry.outputs))
    again = returned(compiled(), len(entry.outputs))
    assert len(graphs) == 1, f"{len(graphs)} graphs captured, expected 1"
    names = [t for g in graphs for t in graph_targets(g)]
    assert not [n for n in names if n.startswith("tileops::")], f"graph nodes {names}: a tileops node in the graph"
    for o, e, g, a in zip(entry.outputs, eager, got, again):
        assert g.dtype == e.dtype and g.shape == e.shape and g.device == e.device, f"output '{o.name}'"
        assert torch.equal(g, e), f"output '{o.name}': compiled != eager"
        assert g.is_contiguous(), f"output '{o.name}': compiled output not contiguous"
        if g.numel():
            assert g.data_ptr() != a.data_ptr(), f"output '{o.name}': two compiled calls returned one tensor"
            g.fill_(float("nan"))
            assert torch.equal(returned(compiled(), len(entry.outputs))[entry.outputs.index(o)], e), \
                f"output '{o.name}': writing into a returned tensor changed a later compiled call"
    # the params of another case assigned to the op: the next compiled call traces again
    # and gives the new outputs
    other = next((c for c in test_cases(cls, case.dtype) if c.params != case.params and case_numel(c, cls) > 0), None)
    if other is not None:
        for k, v in other.params.items():
            setattr(op, k, v)
        fresh = returned(op(**where), len(entry.outputs))
        regot = returned(compiled(), len(entry.outputs))
        for o, f, r in zip(entry.outputs, fresh, regot):
            assert torch.equal(r, f), f"output '{o.name}': after the params of {other.name}, compiled != eager"


def run_backward(cls, target, branch, device):
    """With the data input requiring grad (a non-leaf, so that an in-place branch may
    write it), the call or a backward through its outputs raises an error naming the op
    (an op whose outputs are all integers gives outputs that do not require grad)."""
    require_device(device)
    require_target(cls, target)
    entry = cls._entry
    case, inputs = small_case(cls, device=device)
    op = cls(**case.params, target=target.name)
    if not entry.inputs:   # nothing can require grad, and the outputs do not
        outs = returned(op(**call_device_kwargs(entry, device)), len(entry.outputs))
        assert not any(t.requires_grad or t.grad_fn is not None for t in outs), \
            f"{cls.__name__}: an output requires grad, though the op has no tensor input"
        return
    first = data_input(entry).name   # a floating input: only those can require grad
    leaf = inputs[first].clone().requires_grad_(True)
    inputs[first] = leaf.clone()
    kwargs = dict(branch.values)
    if branch.uses_out:
        kwargs["out"] = out_for(cls, branch, op, inputs)
    names = [cls.__name__, branch.name] + [n.split("::")[-1] for n in cls.compile_op_names]
    pattern = "|".join(re.escape(n) for n in names)
    try:
        result = op(*[inputs[i.name] for i in entry.inputs], **kwargs)
    except Exception as e:  # refusing the call is also a clear answer, if it names the op
        assert re.search(pattern, str(e)), f"the call raised {type(e).__name__} without naming the op: {e}"
        return
    exp = expected_outputs(cls, branch, op, inputs)
    outs = call_results(cls, result, inputs, len(exp))
    if exp and not any(e.dtype.is_floating_point for e in exp):
        # integer outputs (an index, a token) carry no gradient, as torch.argmax's: nothing
        # for a backward to reach
        assert not any(t.requires_grad or t.grad_fn is not None for t in outs[:len(exp)]), \
            f"tileops::{branch.name}: an integer output requires grad"
        return
    total = sum(t.double().sum() for t in outs if t.requires_grad or t.grad_fn is not None) if outs else None
    assert total is not None and isinstance(total, torch.Tensor) and total.requires_grad, \
        f"tileops::{branch.name}: with input '{first}' requiring grad, no output requires grad and the call " \
        f"raised nothing: a backward cannot reach the op to raise (outputs: " \
        f"{[(o.requires_grad, type(o.grad_fn).__name__) for o in outs]})"
    with pytest.raises(Exception, match=pattern):
        total.backward()


def tests_for(device: str):
    """The driver's four pytest functions for `device`, parametrized: a test module binds
    them (tests/test_ops.py on the CPU, tests/gpu/test_gpu_ops.py on CUDA)."""
    @pytest.mark.parametrize("cls,target,dtype,branch", item_params(device))
    def test_op(cls, target, dtype, branch):
        run_item(cls, target, dtype, branch, device)

    @pytest.mark.parametrize("cls,target,branch", branch_params())
    def test_opcheck(cls, target, branch):
        run_opcheck(cls, target, branch, device)

    @pytest.mark.parametrize("cls,target,branch", branch_params())
    def test_compile(cls, target, branch):
        run_compile(cls, target, branch, device)

    @pytest.mark.parametrize("cls,target,branch", branch_params())
    def test_backward_raises_naming_the_op(cls, target, branch):
        run_backward(cls, target, branch, device)
    return test_op, test_opcheck, test_compile, test_backward_raises_naming_the_op
