"""What the base class generates for every op, boundary or not, from its manifest entry:

  _allocate          the op's outputs, from the manifest's shape and dtype rules (the same
                     rules the fake uses): torch.empty, contiguous; a written input where
                     the call writes it; the caller's `out` where given; None where omitted
  _memo_<interface>  the memo key of a call to kernel_for, from the interface's declaration
                     (KernelInterface.tensors, shape_dependent): what selection and the
                     build identity may depend on beyond the params

and, for an op with no call-time tensor input (no boundary):

  _check_params      the entry's rules, which read params only (a clear error naming the
                     op, the rule and the params' values)
  _call              the op's call, `op(*, device=None, ...)`: eager, it checks the params
                     (once per value of them), runs forward on `device` (default the CPU)
                     and returns its new outputs; under torch.compile it returns a clone of
                     each output computed once at trace time (op._traced, see
                     op._traced_functions: a graph constant, guarded on the params), so no
                     tileops node is in the graph

Both are Python source, exec'd once per class; `python -m tileops boundary OP` prints them
with the boundary."""
from __future__ import annotations

import ast

import torch

from ..errors import ManifestError


def dtype_expr(rule, ns, key) -> str:
    """Source of an output's dtype: `<input>.dtype`, a constant `key` put in `ns`, or a
    dtype param's value `self.<param>` (the instance's: generated code where `self` is the
    instance), with its rule for None. The memo key needs no term for it: a param's
    value is fixed per instance, and assigning a param forgets the memo (Op.__setattr__)."""
    if rule.param is not None:
        if rule.fallback is None:
            return f"self.{rule.param}"
        return f"(self.{rule.param} if self.{rule.param} is not None else {dtype_expr(rule.fallback, ns, key)})"
    if rule.same_as:
        return f"{rule.same_as}.dtype"
    ns[key] = rule.allowed[0]
    return key


def rule_names(expr: str, names) -> list:
    """Those of `names` that the rule `expr` reads, sorted."""
    return sorted({n.id for n in ast.walk(ast.parse(expr, mode="eval")) if isinstance(n, ast.Name) and n.id in names})


def names_in(rules, names) -> list:
    """Those of `names` that some rule reads, in the order of `names`."""
    read = {n for r in rules for n in rule_names(r, names)}
    return [n for n in names if n in read]


def selectors(entry) -> list:
    """The call-time bools that choose an effect branch, in signature order."""
    out = []
    for i in entry.inputs:
        if i.mutated and i.when and i.when not in out:
            out.append(i.when)
    for o in entry.outputs:
        if o.optional and o.when not in out:
            out.append(o.when)
    return out


def allocate_source(entry, ns) -> list:
    """Lines of `_allocate(self, <inputs>, *, <selectors>, out=None)`."""
    inputs = [i.name if not i.optional else f"{i.name}=None" for i in entry.inputs]
    sel = selectors(entry)
    out_param = next((c for c in entry.call_params if c.fills), None)
    defaults = {c.name: c.default for c in entry.call_params}
    dev_param = entry.device_param
    kw = [f"{s}={defaults.get(s, False)!r}" for s in sel] + (["out=None"] if out_param else []) \
        + ([f"{dev_param.name}=None"] if dev_param else [])
    args = ", ".join(["self"] + inputs + (["*"] + kw if kw else []))
    lines = [f"def _allocate({args}):"]
    w = lambda s: lines.append("    " + s)  # noqa: E731
    params = [p.name for p in entry.params]
    for p in names_in([o.shape for o in entry.outputs], params):
        w(f"{p} = self.{p}")
    first = entry.inputs[0].name if entry.inputs else None
    device = f"{first}.device" if first else dev_param.name if dev_param else "None"
    required = {i.name for i in entry.inputs if not i.optional}
    names = []
    for o in entry.outputs:
        dt = dtype_expr(o.dtype, ns, f"_DT_{o.name}")
        like = o.shape.removesuffix(".shape")
        if like in required and o.shape == f"{like}.shape":
            # an output shaped as an input: empty_like (its device, contiguous) takes half
            # torch.empty's time from Python (no shape tuple, no device argument to parse)
            dt_kw = "" if dt == f"{like}.dtype" else f"dtype={dt}, "
            fresh = f"torch.empty_like({like}, {dt_kw}memory_format=_CONTIGUOUS)"
        else:
            fresh = f"torch.empty(tuple({o.shape}), dtype={dt}, device={device})"
        choices = []
        if o.alias_of:
            when = next(i.when for i in entry.inputs if i.name == o.alias_of)
            choices.append((when, o.alias_of))   # when None: every call writes it
        if out_param and out_param.fills == o.name:
            choices.append(("out is not None", "out"))
        if o.optional:
            choices.append((f"not {o.when}", "None"))
        if choices and choices[0][0] is None:
            w(f"{o.name} = {choices[0][1]}")
        elif choices:
            expr = fresh
            for cond, val in reversed(choices):
                expr = f"{val} if {cond} else {expr}"
            w(f"{o.name} = {expr}")
        else:
            w(f"{o.name} = {fresh}")
        names.append(o.name)
    if not names:
        w("return None")
    else:
        w(f"return {names[0] if len(names) == 1 else '(' + ', '.join(names) + ',)'}")
    return lines


def memo_source(entry, iface) -> list:
    """Lines of `_memo_<iface>(<tensors>)` and `_full_<iface>(<tensors>)`: the memo key
    for a target whose builds depend only on what the interface declares, and the one
    for a target that may specialise on anything (builder targets: every tensor's dtype,
    device, shape and alignment)."""
    tensors = list(iface.tensors)
    known = {i.name: i for i in entry.inputs}
    out_names = {o.name: o for o in entry.outputs}
    for t in tensors:
        if t not in known and t not in out_names:
            raise ManifestError(f"{entry.name}: interface {iface.name!r} names tensor {t!r}, which is no input or output")
    optional = {t for t in tensors if (t in known and known[t].optional) or (t in out_names and out_names[t].optional)}
    # aliasing: whether an output is the input it may alias (the in-place branch)
    aliases = [f"{o} is {out_names[o].alias_of}" for o in tensors
               if o in out_names and out_names[o].alias_of in tensors]
    first = tensors[0]
    parts = []
    for t in tensors:
        if t in known and not known[t].dtype.same_as:
            parts.append(f"{t}.dtype" if t not in optional else f"None if {t} is None else {t}.dtype")
        elif t in optional:
            parts.append(f"{t} is None")
    parts.append(f"{first}.device")
    ptrs = " | ".join(f"(0 if {t} is None else {t}.data_ptr())" if t in optional else f"{t}.data_ptr()" for t in tensors)
    parts.append(f"({ptrs}) & 15")
    parts += [f"tuple({t}.shape)" for t in iface.shape_dependent]
    parts += aliases
    args = ", ".join(tensors)
    full = [f"None if {t} is None else ({t}.dtype, {t}.device, tuple({t}.shape), {t}.data_ptr() & 15)"
            if t in optional else f"({t}.dtype, {t}.device, tuple({t}.shape), {t}.data_ptr() & 15)" for t in tensors]
    full += aliases
    return [f"def _memo_{iface.name}({args}):",
            f"    return ({', '.join(parts)},)",
            "",
            f"def _full_{iface.name}({args}):",
            f"    return ({', '.join(full)},)"]


def check_params_source(entry) -> list:
    """Lines of `_check_params(self)`: each rule of an op without tensor inputs (rules that
    read params only), raising InputValueError naming the op, the rule and the values."""
    params = [p.name for p in entry.params]
    lines = ["def _check_params(self):"]
    for p in names_in(entry.shape_rules, params):
        lines.append(f"    {p} = self.{p}")
    for rule in entry.shape_rules:
        shown = ", ".join(f"{n}={{{n}!r}}" for n in rule_names(rule, params))
        lines.append(f"    if not ({rule}):")
        lines.append(f"        raise InputValueError(f\"{entry.name}: param rule `{rule}` does not hold: {shown}\")")
    lines.append("    return None")
    return lines


def call_source(entry) -> list:
    """Lines of `_call(self, *, device=None, <call params>)` for an op without tensor inputs
    (module docstring). Other call-time scalars reach forward as keywords; under
    torch.compile their values are constants of the trace, as the params are."""
    dev = entry.device_param.name
    others = [c for c in entry.call_params if c is not entry.device_param]
    kw = ", ".join([f"{dev}=None"] + [f"{c.name}={c.default!r}" for c in others])
    call_kw = "{" + ", ".join(f"{c.name!r}: {c.name}" for c in others) + "}"
    n = len(entry.outputs)
    traced = [f"self._traced[{k}](self._params_version, _dev, {call_kw}).clone()" for k in range(n)]
    lines = [f"def _call(self, *, {kw}):",
             f"    _dev = _as_device({dev}, {entry.name!r}, {dev!r})",
             "    if _is_compiling():",
             f"        return {traced[0] if n == 1 else '(' + ', '.join(traced) + ',)'}",
             f"    return self._run_no_boundary(_dev, {call_kw})"]
    return lines


def generate(cls, entry) -> dict:
    """Execs the kit of `cls` into a namespace and returns it (with `_source`). An
    interface declaring no tensors takes the entry's inputs then outputs."""
    for iface in cls.interfaces.values():
        if not iface.tensors:
            iface.tensors = tuple(i.name for i in entry.inputs) + tuple(o.name for o in entry.outputs)
    from ..errors import InputValueError
    from .op import _as_device
    ns = {"torch": torch, "InputValueError": InputValueError, "_as_device": _as_device,
          "_is_compiling": torch.compiler.is_compiling, "_CONTIGUOUS": torch.contiguous_format}
    lines = allocate_source(entry, ns) + [""]
    for iface in cls.interfaces.values():
        lines += memo_source(entry, iface) + [""]
    if not entry.inputs and not entry.composition:
        lines += check_params_source(entry) + [""] + call_source(entry) + [""]
    src = "\n".join(lines) + "\n"
    exec(compile(src, f"<tileops kit of {cls.__module__}.{cls.__name__}>", "exec"), ns)
    ns["_source"] = src
    return ns
