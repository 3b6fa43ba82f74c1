"""The validator: every implemented manifest entry against its op class.

Checks, per implemented entry:
  - an op class of that name exists and carries this entry;
  - compile_op_names is non-empty exactly when the entry has a call-time tensor input and
    no composition (the seed's two conditions), and each name is a registered operator;
  - each operator's written (mutable) arguments equal the inputs the branch writes (plus
    `out` in an _out branch), and every input marked mutated is written by some branch;
  - forward's tensor parameters equal the signature's inputs, in order, and its other
    parameters equal the call-time parameters;
  - the constructor's parameters (less the keyword-only `target`) equal `params`, in order,
    and a dtype param's default is the manifest's;
  - a composite's sub-ops exist."""
from __future__ import annotations

import inspect

import torch


def check_class(cls, entry) -> list[str]:
    errs = []
    name = entry.name
    if cls._entry is not entry and cls._entry != entry:
        errs.append(f"{name}: the class carries a different manifest entry")
    names = tuple(cls.compile_op_names)
    if bool(names) != entry.has_boundary:
        errs.append(f"{name}: compile_op_names={names} but the entry "
                    f"{'has' if entry.has_boundary else 'has no'} compile boundary "
                    f"(call-time tensor input: {entry.has_call_time_tensor_input}, composition: {list(entry.composition)})")
    branches = cls._boundary["_branches"] if cls._boundary else []
    ever_written = set()
    for qual, b in zip(names, branches):
        ns, op = qual.split("::")
        try:
            schema = getattr(getattr(torch.ops, ns), op).default._schema
        except (AttributeError, RuntimeError):
            errs.append(f"{name}: operator {qual} is not registered")
            continue
        written = [a.name for a in schema.arguments if a.alias_info is not None and a.alias_info.is_write]
        expected = list(b.written) + (["out"] if b.uses_out else [])
        ever_written.update(b.written)
        if written != expected:
            errs.append(f"{name}: operator {qual} writes {written}, the manifest says {expected}")
    marked = {i.name for i in entry.inputs if i.mutated}
    if names and marked != ever_written:
        errs.append(f"{name}: inputs marked mutated {sorted(marked)} but the operators write {sorted(ever_written)}")

    fwd = list(inspect.signature(getattr(cls, "_forward", cls.forward)).parameters.values())[1:]
    n_in = len(entry.inputs)
    got_inputs = [p.name for p in fwd[:n_in]]
    want_inputs = [i.name for i in entry.inputs]
    if got_inputs != want_inputs:
        errs.append(f"{name}: forward's tensor parameters are {got_inputs}, the signature's inputs {want_inputs}")
    got_call = sorted(p.name for p in fwd[n_in:])
    want_call = sorted(c.name for c in entry.call_params)
    if got_call != want_call:
        errs.append(f"{name}: forward's call-time parameters are {got_call}, the manifest's {want_call}")
    for i in entry.inputs:
        p = next((q for q in fwd if q.name == i.name), None)
        if p is not None and i.optional and p.default is not None:
            errs.append(f"{name}: optional input {i.name} must default to None in forward")

    for iname, iface in dict(cls.interfaces).items():
        if getattr(iface, "name", None) != iname:
            errs.append(f"{name}: interfaces[{iname!r}] is not a KernelInterface named {iname!r}")
            continue
        for key in iface.implementations:
            k = cls.kernel_types.get(key)
            if k is None:
                errs.append(f"{name}: interface {iname!r} names {key!r}, which is not in kernel_types")
            elif k.interface != iname:
                errs.append(f"{name}: kernel type {key!r} implements {k.interface!r}, not {iname!r}")
    for key, k in dict(cls.kernel_types).items():
        if not any(key in i.implementations for i in dict(cls.interfaces).values()):
            errs.append(f"{name}: kernel type {key!r} belongs to no interface")

    init = [p for p in list(inspect.signature(cls.__init__).parameters.values())[1:] if p.name != "target"]
    got_params = [p.name for p in init]
    want_params = [p.name for p in entry.params]
    if got_params != want_params:
        errs.append(f"{name}: constructor parameters are {got_params}, the manifest's params {want_params}")
    # a dtype param's default: the constructor's must be the manifest's (a dtype, its name, or None)
    from .._dtypes import BY_NAME
    for p in entry.params:
        q = next((q for q in init if q.name == p.name), None)
        if p.is_dtype and q is not None and p.default is not inspect.Parameter.empty and not p.required:
            got = BY_NAME.get(q.default, q.default) if isinstance(q.default, str) else q.default
            if got is inspect.Parameter.empty or got != p.default:
                errs.append(f"{name}: constructor default of dtype param {p.name!r} is {q.default!r}, "
                            f"the manifest's {p.default!r}")
    tgt = inspect.signature(cls.__init__).parameters.get("target")
    if tgt is None or tgt.kind is not inspect.Parameter.KEYWORD_ONLY:
        errs.append(f"{name}: the constructor must take a keyword-only `target=None`")
    return errs


def validate(extra_classes=None) -> list[str]:
    from .. import all_op_classes
    from .loader import package_entries
    classes = dict(all_op_classes())
    classes.update(extra_classes or {})
    errs = []
    for ename, entry in package_entries().items():
        if entry.status != "implemented":
            continue
        cls = classes.get(ename)
        if cls is None:
            errs.append(f"{ename}: implemented in {entry.source} but no op class of that name exists")
            continue
        errs.extend(check_class(cls, entry))
        for sub in entry.composition:
            if sub not in classes:
                errs.append(f"{ename}: composition names {sub}, which is no op class")
    return errs
