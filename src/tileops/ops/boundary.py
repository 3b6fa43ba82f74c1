"""What the base class generates for an op with a compile boundary.

At class definition, from the op's manifest entry and the signature of its `forward`, this
module writes Python source and exec's it once:

  _check            the dtype, device and shape checks (manifest rules compiled to code)
  _impl_<branch>    the operator body: recover the instance, check (once per call
                    signature), check what the call writes against every other argument
                    (every call: _C.apart, then _apart to name them), resolve the target
                    (undone on failure), make non-written inputs contiguous, call forward
  _body_<branch>    the same body, for the eager fast path, given the instance
  _fake_<branch>    torch.empty from the manifest's shape and dtype rules (contiguous)
  _call_boundary    picks the effect branch from the call-time bools and `out`, then runs
                    the body directly (the eager fast path) or calls the operator
  one torch.library custom operator per effect branch, named
      tileops::<family>_<snake op>[_writes_<input>...][_out][_without_<output>...]

Nothing here is evaluated per call except the generated functions themselves."""
from __future__ import annotations

import dataclasses
import inspect
import itertools
import operator
import re
import sys
import types

import torch

from ..errors import InputTypeError, InputValueError, ManifestError, TileOpsError
from . import plans, registry
from .kit import dtype_expr, names_in, rule_names, selectors

LIB_NAMESPACE = "tileops"


def snake(name: str) -> str:
    s = re.sub(r"(?<=[a-z0-9])([A-Z])", r"_\1", name)
    s = re.sub(r"(?<=[A-Z])([A-Z][a-z])", r"_\1", s)
    return s.lower()


def base_operator_name(class_name: str, family: str) -> str:
    """tileops::<family>_<snake(class without "Op")>, the family written once."""
    stem = class_name[:-2] if class_name.endswith("Op") else class_name
    s = snake(stem)
    if s == family or s.startswith(family + "_"):
        return s
    return f"{family}_{s}"


@dataclasses.dataclass(frozen=True)
class Branch:
    """One effect branch: which inputs it writes, whether `out` is given, which outputs it omits."""
    values: tuple           # ((bool name, value), ...) for every branch-selecting bool
    written: tuple          # input names written
    uses_out: bool
    omitted: tuple          # output names omitted
    name: str               # operator name without namespace
    allocated: tuple        # output names the operator allocates and returns


def enumerate_branches(entry, base: str) -> list[Branch]:
    selecting = selectors(entry)
    out_param = next((c for c in entry.call_params if c.fills), None)
    branches = []
    for vals in itertools.product((False, True), repeat=len(selecting)):
        v = dict(zip(selecting, vals))
        for uses_out in ((False, True) if out_param else (False,)):
            written = tuple(i.name for i in entry.inputs if i.mutated and (i.when is None or v[i.when]))
            omitted = tuple(o.name for o in entry.outputs if o.optional and not v[o.when])
            filled = out_param.fills if uses_out else None
            if filled in omitted:
                continue  # asking for out= of an output the call omits: rejected in _call_boundary
            name = base + "".join(f"_writes_{w}" for w in written) + ("_out" if uses_out else "") \
                + "".join(f"_without_{o}" for o in omitted)
            allocated = tuple(o.name for o in entry.outputs
                              if o.name not in omitted and o.name != filled
                              and not (o.alias_of and o.alias_of in written))
            branches.append(Branch(tuple(v.items()), written, uses_out, omitted, name, allocated))
    return branches


_SCHEMA_TYPES = {"bool": "bool", "int": "SymInt", "float": "float"}


def _schema(entry, branch: Branch, scalars) -> str:
    letters = iter("abcdefghijklmnopqrstuvwxyz")
    args = []
    for i in entry.inputs:
        alias = f"({next(letters)}!)" if i.name in branch.written else ""
        args.append(f"Tensor{alias}{'?' if i.optional else ''} {i.name}")
    for c in scalars:
        args.append(f"{_SCHEMA_TYPES[c.type]} {c.name}")
    if branch.uses_out:
        args.append(f"Tensor({next(letters)}!) out")
    args.append("str key")
    n = len(branch.allocated)
    ret = "()" if n == 0 else "Tensor" if n == 1 else "(" + ", ".join(["Tensor"] * n) + ")"
    return "(" + ", ".join(args) + ") -> " + ret


def _as_scalar(value, kind, opname, arg):
    """A call-time scalar that is not already of its type, as the Python type the schema
    takes: for int and float, ints and numpy scalars convert; a tensor, string, None or
    bool is an InputTypeError; a bool must be a bool. Symbolic values pass through."""
    if isinstance(value, (torch.SymInt, torch.SymFloat, torch.SymBool)):
        return value
    if kind is bool:  # a call-time flag that is not a branch selector: a real bool only
        raise InputTypeError(f"{opname}: argument '{arg}': expected bool, got {type(value).__name__}")
    if isinstance(value, bool) or isinstance(value, torch.Tensor) or value is None:
        raise InputTypeError(f"{opname}: argument '{arg}': expected {kind.__name__}, got {type(value).__name__}")
    try:
        return kind(operator.index(value)) if kind is int else kind(value)
    except (TypeError, ValueError):
        raise InputTypeError(f"{opname}: argument '{arg}': expected {kind.__name__}, got {type(value).__name__}") from None


def generate(cls, entry, forward_sig: inspect.Signature) -> dict:
    """Generates and registers the boundary of `cls`; returns the namespace."""
    opname = cls.__name__
    base = base_operator_name(opname, entry.family)
    branches = enumerate_branches(entry, base)
    input_names = [i.name for i in entry.inputs]
    selecting = {n for b in branches for n, _ in b.values}
    scalars = [c for c in entry.call_params if c.type != "Tensor" and c.name not in selecting]
    out_param = next((c for c in entry.call_params if c.fills), None)
    param_names = [p.name for p in entry.params]
    known_names = set(input_names) | set(param_names) | {c.name for c in entry.call_params}
    # the rules _check evaluates: the shape rules, and `out`'s shape
    checked_rules = list(entry.shape_rules) + ([entry.output(out_param.fills).shape] if out_param else [])

    ns = {"torch": torch, "Tensor": torch.Tensor, "Parameter": torch.nn.Parameter,
          "InputTypeError": InputTypeError, "InputValueError": InputValueError,
          "TileOpsError": TileOpsError, "_ref_of": registry.INSTANCES.get, "_NO_REF": registry.NO_REF,
          "_is_compiling": torch.compiler.is_compiling,
          "_dynamo_compiling": torch.compiler.is_dynamo_compiling,
          "_dispatch_len": torch._C._len_torch_dispatch_stack,
          "_tf_mode": torch._C._is_torch_function_mode_enabled,
          "_functorch_level": torch._C._functorch.maybe_current_level,
          "_grad_enabled": torch.is_grad_enabled, "_strided": torch.strided,
          "_jit_tracing": torch._C._get_tracing_state, "_as_scalar": _as_scalar,
          "_bump": torch.autograd.graph.increment_version,
          "_below_inplace_view": torch._C._AutoDispatchBelowADInplaceOrView, "_PLAIN": (torch.Tensor, torch.nn.Parameter),
          "_CLS": cls, "_admit": _admit, "_c_apart": plans.apart, "_apart": _apart, "_recover": _recover,
          "_plan_call": plans.plan_call, "_MISS": plans.MISS, "_SKIP": plans.SKIP, "_record_plan": plans.record,
          "_plan_call_out": plans.plan_call_out}
    lines = []
    w = lines.append
    scalar_args = [c.name for c in scalars]

    # ---- _check ---------------------------------------------------------------
    check_args = input_names + scalar_args + (["out"] if out_param else [])
    w(f"def _check(self, {', '.join(check_args)}):")
    for p in names_in(checked_rules, param_names):
        w(f"    {p} = self.{p}")
    first = entry.inputs[0].name
    for i in entry.inputs:
        if i.optional:
            w(f"    if {i.name} is not None:")
        ind = "        " if i.optional else "    "
        w(f"{ind}if not isinstance({i.name}, Tensor):")
        w(f"{ind}    raise InputTypeError(\"{opname}: argument '{i.name}': expected a Tensor, got \" + type({i.name}).__name__)")
        if i.dtype.same_as:
            w(f"{ind}if {i.name}.dtype != {i.dtype.same_as}.dtype:")
            w(f"{ind}    raise InputTypeError(f\"{opname}: argument '{i.name}': expected dtype same as '{i.dtype.same_as}' ({{{i.dtype.same_as}.dtype}}), got {{{i.name}.dtype}}\")")
        else:
            ns[f"_ALLOWED_{i.name}"] = frozenset(i.dtype.allowed)
            w(f"{ind}if {i.name}.dtype not in _ALLOWED_{i.name}:")
            w(f"{ind}    raise InputTypeError(f\"{opname}: argument '{i.name}': expected dtype {i.dtype.text}, got {{{i.name}.dtype}}\")")
        if i.name == first and len(entry.inputs) + (1 if out_param else 0) > 1:
            w(f"{ind}_dev = {first}.device")
        if i.name != first:
            w(f"{ind}if {i.name}.device != _dev:")
            w(f"{ind}    raise InputValueError(f\"{opname}: argument '{i.name}': expected a tensor on {{{first}.device}} (the device of '{first}'), got {{{i.name}.device}}\")")
    # (call-time scalars are checked once, in _call_boundary; the operator's schema types
    # them on the dispatcher path)
    for k, rule in enumerate(entry.shape_rules):
        names = rule_names(rule, known_names)
        shown = ", ".join(
            (f"{n}.shape={{tuple({n}.shape) if {n} is not None else None}}" if entry.input(n).optional
             else f"{n}.shape={{tuple({n}.shape)}}") if n in input_names else f"{n}={{{n}!r}}"
            for n in names)
        w(f"    if not ({rule}):")
        w(f"        raise InputValueError(f\"{opname}: shape rule `{rule}` does not hold: {shown}\")")
    if out_param:
        o = entry.output(out_param.fills)
        dt = dtype_expr(o.dtype, ns, f"_DT_{o.name}")
        w(f"    if out is not None:")
        w(f"        if not isinstance(out, Tensor):")
        w(f"            raise InputTypeError(\"{opname}: argument 'out': expected a Tensor, got \" + type(out).__name__)")
        w(f"        _s = tuple({o.shape})")
        w(f"        if tuple(out.shape) != _s:")
        w(f"            raise InputValueError(f\"{opname}: argument 'out': expected shape {{_s}} (output '{o.name}'), got {{tuple(out.shape)}}\")")
        w(f"        if out.dtype != {dt}:")
        w(f"            raise InputTypeError(f\"{opname}: argument 'out': expected dtype {{{dt}}}, got {{out.dtype}}\")")
        w(f"        if out.device != _dev:")
        w(f"            raise InputValueError(f\"{opname}: argument 'out': expected a tensor on {{{first}.device}}, got {{out.device}}\")")
    w("")

    # ---- _guard ----------------------------------------------------------------
    # What the operator body needs of each tensor and `_check` (run once per call
    # signature: shapes, dtypes, devices) cannot see: that it is a Tensor (None where
    # optional), dense (strided, not nested: sparse and nested tensors reach the body on
    # the dispatcher path), and, where the call writes it, not a lazily negated or
    # conjugated view (the dispatcher cannot write through one). Run on every call that
    # does not take the fast path (whose own test, `_plain`, declines all of these), and
    # by the operator body, so a direct torch.ops call is checked too.
    sel_names = selectors(entry)
    guard_args = tensor_vars_all = input_names + (["out"] if out_param else [])
    w(f"def _guard({', '.join(guard_args + sel_names)}):")
    for t in tensor_vars_all:
        opt = t == "out" or entry.input(t).optional
        ind = "    "
        if opt:
            w(f"    if {t} is not None:")
            ind = "        "
        if t == "out":
            written = "True"
        else:
            i = entry.input(t)
            written = ("True" if i.when is None else i.when) if i.mutated else "False"
        w(f"{ind}_admit({t}, \"{opname}\", \"{t}\", {'True' if opt else 'False'}, {written})")
    w("")

    # ---- per-branch impl and fake ------------------------------------------------
    # The call signature: the metadata `_check` reads (each input's shape, dtype and
    # device; the call-time scalars a shape rule names; `out`'s, or None). The checks are
    # a function of it and of the params, so the body runs them only for a signature the
    # instance has not passed yet (Op._note_checked; assigning a param forgets them all).
    # Every tensor reaching the body is a Tensor, or None where optional: the dispatcher
    # holds the operator path to its schema, and the fast path takes only plain tensors.
    rule_scalars = names_in(checked_rules, scalar_args)
    sig_parts = []
    for i in entry.inputs:
        v = i.name
        if i.optional:
            sig_parts.append(f"None if {v} is None else ({v}.shape, {v}.dtype, {v}.device)")
        else:
            sig_parts += [f"{v}.shape", f"{v}.dtype", f"{v}.device"]
    sig_parts += rule_scalars
    # each branch's arguments: the operator's, less the trailing key
    branch_args = [input_names + scalar_args + (["out"] if b.uses_out else []) for b in branches]
    for bi, b in enumerate(branches):
        args = ", ".join(branch_args[bi])
        sig = args + ", key"
        chk = ", ".join(input_names + scalar_args + (["out" if b.uses_out else "None"] if out_param else []))
        call_sig = sig_parts + (["(out.shape, out.dtype, out.device)" if b.uses_out else "None"] if out_param else [])
        body = []
        bw = body.append
        guard_call = ", ".join(input_names + (["out" if b.uses_out else "None"] if out_param else [])
                               + [str(v) for _, v in b.values])
        # (a strided nested tensor passes the fast path's test and has no sizes: reading
        # them fails, and `_guard` says why, naming the op and the argument)
        bw(f"try:")
        bw(f"    _s = ({', '.join(call_sig)},)")
        bw(f"except RuntimeError:")
        bw(f"    _guard({guard_call})")
        bw(f"    raise")
        bw(f"if _s not in self._checked:")
        bw(f"    _check(self, {chk})")
        bw(f"    self._note_checked(_s)")
        # Memory the call writes shares no byte with another argument (every call: the
        # pointers are not part of the signature; _c_apart answers the common case in C,
        # _apart looks again and raises); an out= that is exactly one of the inputs is
        # filled through a temporary (_al), as a non-contiguous one is.
        writes = list(b.written) + (["out"] if b.uses_out else [])
        if writes:
            reads = [i.name for i in entry.inputs if i.name not in b.written]
            wt, rt = f"({''.join(f'{v}, ' for v in writes)})", f"({''.join(f'{v}, ' for v in reads)})"
            bw(f"{'_al = ' if b.uses_out else ''}_c_apart({wt}, {rt}) and _apart(\"{opname}\", {wt}, {rt}, "
               f"{tuple(writes)!r}, {tuple(reads)!r})")
        bw(f"_resolved = self._target is None")
        bw(f"if _resolved:")
        bw(f"    self._resolve_target({first}.device)")
        bw(f"try:")
        copies = []
        call_tensors = []
        for i in entry.inputs:
            v = i.name
            if i.contiguous == "require":   # never copied: refused unless contiguous
                test = f"{v} is not None and not {v}.is_contiguous()" if i.optional else f"not {v}.is_contiguous()"
                bw(f"    if {test}:")
                bw(f"        raise InputValueError(f\"{opname}: argument '{v}': expected a contiguous tensor (the op "
                   f"never copies it), got shape {{tuple({v}.shape)}} with strides {{{v}.stride()}}\")")
                call_tensors.append(v)   # passed as it is: nothing to copy back
                continue
            ok = f"{v}.stride(-1) == 1" if i.contiguous == "last_dim" else f"{v}.is_contiguous()"
            if i.optional:
                bw(f"    _c_{v} = None if {v} is None else ({v} if {ok} else {v}.contiguous())")
            else:
                bw(f"    _c_{v} = {v} if {ok} else {v}.contiguous()")
            call_tensors.append(f"_c_{v}")
            if i.name in b.written:
                copies.append(v)
        if b.uses_out:
            bw(f"    _c_out = out if out.is_contiguous() and not _al else torch.empty(out.shape, dtype=out.dtype, "
               f"device=out.device)")
            copies.append("out")
        kw = [f"{c}={c}" for c in scalar_args]
        for n, val in b.values:
            kw.append(f"{n}={val}")
        if out_param:
            kw.append("out=_c_out" if b.uses_out else "out=None")
        bw(f"    {'_r = ' if b.allocated else ''}self._forward({', '.join(call_tensors + kw)})")
        if len(entry.outputs) != 1 and b.allocated:
            bw(f"    if not isinstance(_r, tuple) or len(_r) != {len(entry.outputs)}:")
            bw(f"        raise TileOpsError(\"{opname}.forward must return a tuple of {len(entry.outputs)} outputs (None for an omitted one)\")")
        for v in copies:
            bw(f"    if _c_{v} is not {v}:")
            bw(f"        {v}.copy_(_c_{v})")
        bw(f"except BaseException:")
        bw(f"    if _resolved:")
        bw(f"        self._unresolve_target()")
        bw(f"    raise")
        if len(entry.outputs) == 1:  # forward returned the output itself
            ret = ["_r"] if b.allocated else []
        else:
            idx = {o.name: k for k, o in enumerate(entry.outputs)}
            ret = [f"_r[{idx[n]}]" for n in b.allocated]
        bw(f"return {ret[0] if len(ret) == 1 else '(' + ', '.join(ret) + ',)' if ret else 'None'}")
        # impl: the operator's kernel. The body is written out in it rather than called,
        # one Python frame less on every call through the dispatcher.
        w(f"def _impl_{bi}({sig}):")
        w(f"    self = _ref_of(key, _NO_REF)()")
        w(f"    if type(self) is not _CLS:")
        w(f"        self = _recover(_CLS, key, self)")
        w(f"    _guard({guard_call})")
        lines.extend("    " + ln for ln in body)
        w("")
        # The same body, for the eager fast path, which has the instance in hand (and
        # needs no key).
        w(f"def _body_{bi}(self, {args}):")
        lines.extend("    " + ln for ln in body)
        w("")
        # fake
        w(f"def _fake_{bi}({sig}):")
        w(f"    self = _ref_of(key, _NO_REF)()")
        w(f"    if type(self) is not _CLS:")
        w(f"        self = _recover(_CLS, key, self)")
        w(f"    _check(self, {chk})")
        for p in names_in([entry.output(n).shape for n in b.allocated], param_names):
            w(f"    {p} = self.{p}")
        fakes = []
        for n in b.allocated:
            o = entry.output(n)
            dt = dtype_expr(o.dtype, ns, f"_DT_{o.name}")
            w(f"    _f_{n} = torch.empty(tuple({o.shape}), dtype={dt}, device={first}.device)")
            fakes.append(f"_f_{n}")
        w(f"    return {fakes[0] if len(fakes) == 1 else '(' + ', '.join(fakes) + ',)' if fakes else 'None'}")
        w("")

    # ---- _call_boundary ------------------------------------------------------------
    w(f"def _call_boundary{_signature_text(forward_sig)}:")
    tensor_vars = input_names + (["out"] if out_param else [])
    # Call-time scalars are checked and normalised here, so that both paths see the same
    # Python float/int (the dispatcher would convert some types and reject others).
    for c in scalars:
        w(f"    if type({c.name}) is not {c.type}:")
        w(f"        {c.name} = _as_scalar({c.name}, {c.type}, \"{opname}\", \"{c.name}\")")
    # The selecting bools pick the effect branch by their truth: anything but a bool (the
    # string "False", 1) would pick one silently.
    for n in sel_names:
        w(f"    if {n} is not True and {n} is not False:")
        w(f"        raise InputTypeError(f\"{opname}: argument '{n}': expected True or False, got {{{n}!r}}\")")
    # A plan (plans.py): an op that declares plan_kernel, with no call-time scalar, first
    # asks for the plan of this call signature in the branch that allocates every output
    # (no selector set, no out), and, for an op of one output, in the branch that fills
    # it from out= (plan_call_out); a MISS is recorded by that branch's fast path below.
    plan_branch = out_branch = None
    if getattr(cls, "plan_kernel", None) and cls._plan_likes is not None and not scalars:
        plan_branch = next((bi for bi, b in enumerate(branches)
                            if not b.uses_out and not any(v for _, v in b.values)), None)
        if out_param and len(entry.outputs) == 1:
            out_branch = next((bi for bi, b in enumerate(branches)
                               if b.uses_out and not any(v for _, v in b.values)), None)
    if plan_branch is not None:
        w(f"    _p = None")
    for bi, call in ((plan_branch, f"_plan_call(self._memo, {', '.join(input_names)})"),
                     (out_branch, f"_plan_call_out(self._memo, out, {', '.join(input_names)})")):
        if bi is None or plan_branch is None:
            continue
        conds = [f"{n} is False" for n, _ in branches[bi].values] + (
            [f"out is {'not ' if bi == out_branch else ''}None"] if out_param else [])
        # (dynamo folds _dynamo_compiling() to True: it never traces _plan_call, a builtin;
        # other tracers pass fake or proxy tensors under a mode, which plan_call skips.
        # A third of is_compiling's cost, where a one-token call's whole budget is ~4 µs.)
        w(f"    if {' and '.join(conds + ['not _dynamo_compiling()'])}:")
        w(f"        _p = {call}")
        w(f"        if _p is not _MISS and _p is not _SKIP:")
        w(f"            return _p")
    # The fast path needs plain dense tensors; anything else goes through the operator,
    # after a type check here: the dispatcher's own message would not name the op.
    # A required input that is None takes the operator path too, where the type check
    # below names it: the body takes every non-optional input to be a tensor.
    optional_vars = {t for t in tensor_vars if t == "out" or entry.input(t).optional}
    conj = any(d.is_complex for i in entry.inputs for d in (i.dtype.allowed or ()))
    plain = " and ".join(
        f"({t} is None or {_plain(t, conj)})" if t in optional_vars else _plain(t, conj) for t in tensor_vars)
    w(f"    if _is_compiling() or _dispatch_len() or _tf_mode() or _functorch_level() is not None or _jit_tracing() is not None:")
    w(f"        _fast = False")
    w(f"    else:")
    w(f"        _g = _grad_enabled()")
    w(f"        _fast = {plain}")
    w(f"    if not _fast:")
    for t in tensor_vars:
        opt = t in optional_vars
        guard = f"{t} is not None and " if opt else ""
        w(f"        if {guard}not isinstance({t}, Tensor):")
        w(f"            raise InputTypeError(\"{opname}: argument '{t}': expected a Tensor{' or None' if opt else ''}, got \" + type({t}).__name__)")
    # outside a trace, what the dispatcher would fail on with torch's own message (a
    # nested tensor, a lazily negated tensor the call writes) fails here naming the op
    w(f"        if not _is_compiling():")
    w(f"            _guard({', '.join(guard_args + sel_names)})")
    if out_param:
        omittable = [o for o in entry.outputs if o.optional and o.name == out_param.fills]
        for o in omittable:
            w(f"    if out is not None and not {o.when}:")
            w(f"        raise InputValueError(\"{opname}: argument 'out': given for output '{o.name}', which this call omits ({o.when}=False)\")")
    # The branches cover every combination of the selecting bools and `out` (less those
    # rejected just above), so the last one is the `else`.
    single = len(branches) == 1
    for bi, b in enumerate(branches):
        conds = [f"{n}" if v else f"not {n}" for n, v in b.values]
        if out_param:
            conds.append("out is not None" if b.uses_out else "out is None")
        if single:
            ind = "    "      # one branch: no test at all
        elif bi == len(branches) - 1:
            w("    else:")
            ind = "        "
        else:
            w(f"    {'if' if bi == 0 else 'elif'} {' and '.join(conds)}:")
            ind = "        "
        args = ", ".join(branch_args[bi])
        assign = "_a = " if b.allocated else ""
        w(f"{ind}if _fast:")
        writes = list(b.written) + (["out"] if b.uses_out else [])
        if writes:
            # As under the operator: writes inside the body do not bump version counters
            # (the operator runs its kernel below ADInplaceOrView); the op's own write bumps
            # each written tensor once.
            w(f"{ind}    with _below_inplace_view():")
            w(f"{ind}        {assign}_body_{bi}(self, {args})")
            if bi == out_branch and plan_branch is not None:
                w(f"{ind}    if _p is _MISS:")
                w(f"{ind}        _record_plan(self, ({', '.join(input_names)},), out, out)")
        else:
            w(f"{ind}    {assign}_body_{bi}(self, {args})")
            if bi == plan_branch:
                w(f"{ind}    if _p is _MISS:")
                w(f"{ind}        _record_plan(self, ({', '.join(input_names)},), _a)")
        for v in writes:
            w(f"{ind}    _bump({v})")
        w(f"{ind}else:")
        w(f"{ind}    {assign}_op_{bi}({args}, self._key)")
        present = []
        alloc_i = 0
        n_alloc = len(b.allocated)
        for o in entry.outputs:
            if o.name in b.omitted:
                continue
            if o.alias_of and o.alias_of in b.written:
                present.append(o.alias_of)
            elif b.uses_out and o.name == out_param.fills:
                present.append("out")
            else:
                present.append("_a" if n_alloc == 1 else f"_a[{alloc_i}]")
                alloc_i += 1
        if n_alloc > 1 and present == [f"_a[{k}]" for k in range(n_alloc)]:
            present = ["_a"]   # the operator's tuple is the call's
        w(f"{ind}return {present[0] if len(present) == 1 else '(' + ', '.join(present) + ',)' if present else 'None'}")
    src = "\n".join(lines) + "\n"
    # The generated functions live in a real module (registered in sys.modules) because
    # dynamo resolves a function's globals by importing its __name__.
    module = _generated_module(cls)
    module.__dict__.update(ns)
    ns = module.__dict__
    try:
        exec(compile(src, f"<tileops boundary of {cls.__module__}.{opname}>", "exec"), ns)
    except SyntaxError as e:
        raise ManifestError(f"{opname}: generated boundary does not compile ({e}); manifest {entry.source}") from None

    names = []
    for bi, b in enumerate(branches):
        qual = f"{LIB_NAMESPACE}::{b.name}"
        mutates = tuple(b.written) + (("out",) if b.uses_out else ())
        schema = _schema(entry, b, scalars)
        ns[f"_op_{bi}"] = _register(b.name, schema, ns[f"_impl_{bi}"], ns[f"_fake_{bi}"], mutates, opname)
        names.append(qual)
    ns["_source"] = src
    ns["_branches"] = branches
    ns["_names"] = tuple(names)
    return ns


_LIBRARY = None


def _library():
    global _LIBRARY
    if _LIBRARY is None:
        _LIBRARY = torch.library.Library(LIB_NAMESPACE, "FRAGMENT")
    return _LIBRARY


def _register(name: str, schema: str, impl, fake, mutates: tuple, opname: str):
    """Defines one operator with torch.library.Library: define + impl + register_fake.

    Measured against torch.library.custom_op (benchmarks/overhead.py, docs in the README):
    custom_op wraps the kernel in Python autograd and ADInplaceOrView layers that cost
    ~7 µs per call through the dispatcher; here the kernel is registered once for every
    backend (CompositeExplicitAutograd), the fake doubles as the Meta kernel, and only an
    operator that writes its inputs gets an ADInplaceOrView kernel, which bumps each written
    tensor's version counter once, as an in-place aten op does. Every operator gets an
    Autograd kernel (_autograd_kernel): inference only, a backward through it raises."""
    lib = _library()
    lib.define(name + schema)
    lib.impl(name, impl, "CompositeExplicitAutograd")
    torch.library.register_fake(f"{LIB_NAMESPACE}::{name}", fake, lib=lib)
    overload = getattr(getattr(torch.ops, LIB_NAMESPACE), name).default
    arg_names = [a.name for a in overload._schema.arguments]
    written_inputs = tuple(arg_names.index(m) for m in mutates if m != "out")
    lib.impl(name, _autograd_kernel(overload, opname, written_inputs, "out" in mutates, arg_names), "Autograd",
             with_keyset=True)
    # a nested tensor would otherwise fail in the dispatcher with no argument named
    refuse_nested = _nested_kernel(opname, arg_names)
    for k in ("NestedTensorCPU", "NestedTensorCUDA"):
        lib.impl(name, refuse_nested, k)
    if mutates:
        arg_names = [a.name for a in overload._schema.arguments]
        written = tuple(arg_names.index(m) for m in mutates)
        below = torch._C._after_ADInplaceOrView_keyset
        guard = torch._C._AutoDispatchBelowADInplaceOrView
        bump = torch.autograd.graph.increment_version

        def ad_inplace_or_view(keyset, *args):
            with guard():
                out = overload.redispatch(keyset & below, *args)
            for i in written:
                bump(args[i])
            return out
        lib.impl(name, ad_inplace_or_view, "ADInplaceOrView", with_keyset=True)
        # torch's negation and conjugation fallbacks cannot write through a lazy view (it
        # fails with "Expected Tensor but got None"): the operator refuses one it writes,
        # naming it, and materialises the others
        lazy = _lazy_view_kernel(overload, opname, arg_names, written)
        lib.impl(name, lazy, "Negative")
        lib.impl(name, lazy, "Conjugate")
    return overload


def _lazy_view_kernel(overload, opname: str, arg_names: list, written: tuple):
    """The Negative / Conjugate kernel of an operator that writes its arguments: refuses a
    written argument that is a lazy view; resolves the others and calls the operator."""
    def kernel(*args):
        for i in written:
            _admit(args[i], opname, arg_names[i], True, True)
        return overload(*(a.resolve_neg().resolve_conj() if isinstance(a, torch.Tensor) else a for a in args))
    return kernel


def _nested_kernel(opname: str, arg_names: list):
    """The operator's kernel for nested tensors: raises, naming the op and the argument."""
    def refuse(*args):
        for name, a in zip(arg_names, args):
            if isinstance(a, torch.Tensor) and a.is_nested:
                raise InputTypeError(f"{opname}: argument '{name}': expected a dense (strided) tensor, "
                                     f"got a nested tensor")
        raise InputTypeError(f"{opname}: nested tensors are not supported")
    return refuse


def _generated_module(cls):
    pkg_name = "tileops._generated"
    if pkg_name not in sys.modules:
        pkg = types.ModuleType(pkg_name, "Boundaries generated from the manifest, one module per op class.")
        pkg.__path__ = []
        sys.modules[pkg_name] = pkg
    name = f"{pkg_name}.{cls.__module__.replace('.', '_')}__{cls.__qualname__.replace('.', '_')}"
    module = types.ModuleType(name, f"The generated boundary of {cls.__module__}.{cls.__qualname__}.")
    sys.modules[name] = module
    return module


def _plain(t: str, conj: bool = False) -> str:
    """The fast path's test that tensor variable `t` is an ordinary dense tensor that
    autograd does not record (`_g`: grad mode) and that carries no lazy flag: the kernels
    read memory as it is, so a negative-bit view (torch._neg_view, the .imag of a
    conjugate) or a ZeroTensor (no memory) takes the operator path, where torch
    materialises it. The conjugate bit exists only on complex tensors, so it is tested
    only for an op that admits a complex dtype (any other refuses one in `_check`)."""
    return (f"(type({t}) in _PLAIN and {t}.layout is _strided and not {t}.is_meta"
            f" and not (_g and {t}.requires_grad) and not {t}.is_neg()"
            f" and not {t}._is_zerotensor()"
            + (f" and not {t}.is_conj()" if conj else "") + ")")


def _admit(t, opname: str, arg: str, optional: bool, written: bool):
    """Raises unless tensor `t` (argument `arg`) is one the operator body can take: a
    Tensor, strided and not nested, and, where the call writes it, not a lazily negated or
    conjugated view. Errors name the op, the argument, what was expected and what given."""
    if not isinstance(t, torch.Tensor):
        raise InputTypeError(f"{opname}: argument '{arg}': expected a Tensor{' or None' if optional else ''}, "
                             f"got {type(t).__name__}")
    if t.layout is not torch.strided:
        raise InputTypeError(f"{opname}: argument '{arg}': expected a dense (strided) tensor, got layout {t.layout}")
    if t.is_nested:
        raise InputTypeError(f"{opname}: argument '{arg}': expected a dense (strided) tensor, got a nested tensor")
    if written and (t.is_neg() or t.is_conj()):
        raise InputValueError(
            f"{opname}: argument '{arg}': the call writes it, but it is a lazily "
            f"{'negated' if t.is_neg() else 'conjugated'} view (torch._neg_view, or the .imag of a conjugate), which "
            f"cannot be written in place; pass a materialised tensor ({arg}.resolve_neg() / {arg}.resolve_conj()) "
            f"and copy the result back")


_inference_mode = torch.is_inference_mode_enabled


_SHARES_EXACT_MAX = 1 << 24   # elements whose addresses _shares_elements lists exactly


def _shares_elements(t) -> bool:
    """Whether two elements of strided `t` share an address: a stride 0 over a dim of more
    than one element; else, where the strides, smallest first, do not each pass the extent
    of the dims inside them (the fast test, _C.apart's too), by listing the addresses (up to
    _SHARES_EXACT_MAX elements; beyond that such a layout counts as sharing)."""
    if not t.numel():
        return False
    dims = sorted((st, n) for n, st in zip(t.shape, t.stride()) if n > 1)
    if any(st == 0 for st, _ in dims):
        return True
    inner = 1
    for st, n in dims:
        if st < inner:
            break
        inner += (n - 1) * st
    else:
        return False
    if t.numel() > _SHARES_EXACT_MAX:
        return True
    at = torch.zeros((), dtype=torch.int64)
    for st, n in dims:
        at = (at.unsqueeze(-1) + torch.arange(n, dtype=torch.int64) * st).flatten()
    return at.unique().numel() != at.numel()


def _apart(opname: str, writes: tuple, reads: tuple, wnames: tuple, rnames: tuple) -> bool:
    """Raises InputValueError unless every tensor the call writes (`writes`: the written
    inputs, then out) may be written (not an inference tensor outside inference mode, no
    two of its elements at one address: torch's rules for an in-place update) and shares
    no byte with any other argument (the other written ones and `reads`, None where
    absent), as torch refuses a partial overlap of an out= with an input: a kernel reading
    what it has written gives a wrong result silently. The one sharing allowed is an out
    that is exactly one of the read inputs (the same data, shape, strides and dtype); True
    then: the body fills a temporary and copies it into out. Called where _C.apart (the
    same test in C, which also tells apart views of one packed tensor) answered True; each
    pair is asked of it again, to name the arguments."""
    for w, name in zip(writes, wnames):
        if w is None:
            continue
        if w.is_inference() and not _inference_mode():
            raise InputValueError(f"{opname}: argument '{name}': the call writes it, but it is an inference "
                                  f"tensor and inference mode is off (torch refuses such an in-place update too); "
                                  f"call under torch.inference_mode() or pass a tensor made outside it")
        if not w.is_contiguous() and _shares_elements(w):
            raise InputValueError(f"{opname}: argument '{name}': the call writes it, but several of its elements "
                                  f"share memory (an expanded view?); pass a tensor whose elements are distinct")
    alias = False
    for i, w in enumerate(writes):
        if w is None:
            continue
        for k in range(i + 1, len(writes)):
            if writes[k] is not None and plans.apart((w, writes[k]), ()):
                raise InputValueError(f"{opname}: argument '{wnames[i]}': it shares memory with argument "
                                      f"'{wnames[k]}', and the call writes both; pass tensors that do not overlap")
        for t, name in zip(reads, rnames):
            if t is None or not plans.apart((w,), (t,)):
                continue
            if wnames[i] == "out" and (w.data_ptr() == t.data_ptr() and w.dtype == t.dtype and w.shape == t.shape
                                       and w.stride() == t.stride()):
                alias = True
                continue
            raise InputValueError(
                f"{opname}: argument '{wnames[i]}': it overlaps argument '{name}' in memory, and the call writes it "
                f"while reading '{name}'" + (" (out may be exactly an input of its shape, dtype and strides, or apart "
                                             "from it)" if wnames[i] == "out" else "; pass tensors that do not overlap"))
    return alias


def _recover(cls, key, obj):
    """The instance for an operator of `cls` called with a key no live instance of `cls`
    has: none has it (a program saved in another process, or compiled for an instance since
    dropped or changed): rebuilt from the key's params (registry.rebuild), or an error
    saying why not; the key of an instance of another class: an error."""
    opname = cls.__name__
    if obj is None:
        return registry.rebuild(cls, key)
    raise TileOpsError(f"{opname}: argument 'key': {key!r} is the key of a {type(obj).__name__}, not of a {opname}; "
                       f"call an op through its own operators (op(...) picks them)")


def _signature_text(sig: inspect.Signature) -> str:
    """forward's signature as source, defaults rendered by repr (bool, None, numbers only)."""
    parts = []
    seen_kw = False
    for p in sig.parameters.values():
        if p.kind is p.KEYWORD_ONLY and not seen_kw:
            parts.append("*")
            seen_kw = True
        if p.kind in (p.VAR_POSITIONAL, p.VAR_KEYWORD):
            raise ManifestError(f"forward may not take *args or **kwargs (parameter {p.name})")
        if p.default is inspect.Parameter.empty:
            parts.append(p.name)
        else:
            if not isinstance(p.default, (bool, int, float, type(None))):
                raise ManifestError(f"forward's default for {p.name} must be None, a bool or a number")
            parts.append(f"{p.name}={p.default!r}")
    return "(" + ", ".join(parts) + ")"


# ---- inference only: a backward through a node raises ------------------------------------
# A node has no derivative: forward and backward are separate ops. Without an autograd
# kernel torch would warn and give no gradient (builtin) or record the reference's own
# gradients in eager but not when compiled (a target built from torch ops). Instead, one
# behaviour everywhere: when autograd records the call, the outputs get a grad_fn whose
# backward calls `tileops::no_backward`, an operator that raises naming the op. Being an
# operator with a fake, it traces (a compiled forward with inputs requiring grad still
# compiles) and raises when the backward actually runs, eager or compiled.

def _no_backward_impl(grad, shape, op):
    from ..errors import BackwardError
    raise BackwardError(f"{op}: backward is not supported: tileops ops serve inference only (forward and "
                        f"backward are separate ops). Run the forward under torch.no_grad() or "
                        f"torch.inference_mode(), or detach its inputs.")


def _no_backward_fake(grad, shape, op):
    return grad.new_empty(shape)


_NO_BACKWARD = None


def _no_backward_op():
    global _NO_BACKWARD
    if _NO_BACKWARD is None:
        lib = _library()
        lib.define("no_backward(Tensor grad, SymInt[] shape, str op) -> Tensor")
        lib.impl("no_backward", _no_backward_impl, "CompositeExplicitAutograd")
        torch.library.register_fake(f"{LIB_NAMESPACE}::no_backward", _no_backward_fake, lib=lib)
        _NO_BACKWARD = getattr(torch.ops, LIB_NAMESPACE).no_backward.default
    return _NO_BACKWARD


class _NoBackward(torch.autograd.Function):
    """Gives the node's new outputs, and the inputs it wrote (their history rebased, as
    for an in-place aten op), a grad_fn reaching the inputs that require grad."""

    @staticmethod
    def forward(ctx, op, n_out, n_dirty, *tensors):
        ctx.op = op
        ctx.shapes = [t.shape for t in tensors]
        dirty = tensors[n_out:n_out + n_dirty]
        ctx.mark_dirty(*dirty)
        res = tuple(t.view_as(t) for t in tensors[:n_out]) + dirty
        return res[0] if len(res) == 1 else res

    @staticmethod
    def backward(ctx, *grads):
        nb = _no_backward_op()
        g = next(g for g in grads if g is not None)
        return (None, None, None) + tuple(nb(g, shape, ctx.op) for shape in ctx.shapes)


def _autograd_kernel(overload, opname, written: tuple, writes_out: bool, arg_names: list):
    """Runs the operator below autograd; when autograd records the call, its new outputs
    and the inputs it wrote get _NoBackward's grad_fn. An `out=` call with an argument
    requiring grad raises at once, as aten's out= functions do; so does a call that would
    write a leaf requiring grad (or a view of one), which torch refuses to update in place,
    before anything is written."""
    from ..errors import BackwardError
    below = torch._C._after_autograd_keyset
    guard = torch._C._AutoDispatchBelowAutograd
    grad_enabled = torch.is_grad_enabled
    Tensor = torch.Tensor
    _no_backward_op()

    def autograd(keyset, *args):
        needing = grad_enabled() and [a for a in args if isinstance(a, Tensor) and a.requires_grad]
        if needing and writes_out:
            raise BackwardError(f"{opname}: out= does not support automatic differentiation, but an argument "
                                f"requires grad; tileops ops serve inference only (run under torch.no_grad())")
        if needing:
            for i in written:
                a = args[i]
                if a.requires_grad and (a.is_leaf or (a._base is not None and a._base.is_leaf)):
                    raise BackwardError(
                        f"{opname}: argument '{arg_names[i]}': the call writes it in place, but it is "
                        f"{'a leaf tensor' if a.is_leaf else 'a view of a leaf tensor'} that requires grad, which "
                        f"torch refuses to update in place; run under torch.no_grad() or pass a tensor that does "
                        f"not require grad")
        with guard():
            out = overload.redispatch(keyset & below, *args)
        if not needing:
            return out
        outs = out if isinstance(out, tuple) else () if out is None else (out,)
        dirty = tuple(args[i] for i in written)
        rest = [a for a in needing if all(a is not d for d in dirty)]
        res = _NoBackward.apply(opname, len(outs), len(dirty), *outs, *dirty, *rest)
        res = res if isinstance(res, tuple) else (res,)
        if out is None:
            return None
        return res[:len(outs)] if isinstance(out, tuple) else res[0]
    return autograd
