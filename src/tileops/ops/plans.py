"""Plans: an eager CPU call of an op replayed in C (tileops._C.plan_call).

The generated boundary's eager fast path is Python (boundary.py): per call it tests the
tensors, reads their signature, allocates the outputs and launches through the kernel
memo, ~10 µs at one token where torch's own call of a fused ATen op takes ~5. An op whose
`forward` is exactly "allocate the outputs, then one launchable of interface `plan_kernel`
over the inputs then the outputs" declares `plan_kernel`; for it the boundary first asks
`_C.plan_call(op._memo, *inputs)`, which replays the plan recorded for this call
signature: the same tests the fast path makes (no compile, dispatch, torch-function or
functorch mode, no tracer; plain dense tensors that autograd does not record, without a
lazy flag) plus contiguity and the CPU, the signature (each input's shape and dtype, and
the inputs' 16-byte alignment) as the key, the outputs allocated (torch.empty_like of the
input an output is shaped like, else of a template of the shape recorded: a plan is one
call signature, and an op without call-time scalars has output shapes that the input
shapes and its params fix; the template is a 0-dim tensor expanded, so it holds no memory,
and empty_like of it takes half torch.empty's time), one CPU launch from the kernel's
recipe of data. When it cannot replay (no plan yet: MISS; these tensors or this call are
not for a plan: SKIP) the boundary takes its Python path, and on a MISS records the plan
of what that path did (`record`), or None when the call is not one a plan can replay
exactly. An out= call of an op of one output has its own plan (plan_call_out: out tested
and keyed as the inputs are, written in place of an allocation, its version bumped once as
the Python path bumps it; an out that is one of the inputs is not for a plan). A plan is
kept in the instance's memo, so whatever drops the memo drops the plans
with it: a param assigned, the target undone, the memo's size limit. Only launchables that
carry `plan_recipe` (the CPU builds that set it: kernels/norm/rows.py, norm/rms_norm.py,
activation/gated.py, embedding/embedding.py) are planned."""
from __future__ import annotations

import torch

from .. import _C


class _Sentinel:
    __slots__ = ("name",)

    def __init__(self, name: str):
        self.name = name

    def __repr__(self) -> str:
        return f"<tileops plan {self.name}>"


MISS = _Sentinel("MISS")   # no plan for this call signature: the Python path records one
SKIP = _Sentinel("SKIP")   # not a call a plan replays: the Python path, nothing recorded
OUT = _Sentinel("OUT")     # the first item of an out= call's key (plan_call_out)

_C.plan_setup((torch.Tensor, torch.nn.Parameter), torch.strided,
              (torch._C._len_torch_dispatch_stack, torch._C._is_torch_function_mode_enabled),
              (torch._C._functorch.maybe_current_level, torch._C._get_tracing_state),
              torch.is_grad_enabled, torch.empty_like, torch.contiguous_format, MISS, SKIP, OUT,
              torch.autograd.graph.increment_version, torch.is_inference_mode_enabled)

plan_call = _C.plan_call
apart = _C.apart   # the boundary's common-case test of a call's written tensors (boundary._apart)
plan_call_out = _C.plan_call_out


def key(inputs: tuple, out=None):
    """The memo key plan_call builds for these inputs (each a contiguous CPU tensor or
    None), or plan_call_out for them and `out`; None when it would not look one up."""
    parts = [MISS if out is None else OUT]   # then each tensor's shape and dtype (None, None when absent), flat
    align = 0
    for t in tuple(inputs) + (() if out is None else (out,)):
        if t is None:
            parts += (None, None)
            continue
        if not (t.is_cpu and t.is_contiguous()):
            return None
        parts += (t.shape, t.dtype)
        align |= t.data_ptr() & 15
    parts.append(align)
    return tuple(parts)


def likes(entry) -> tuple:
    """For each output of the manifest entry, the index of the required input it is shaped
    like ("x.shape": allocated by torch.empty_like of it), or None (its shape is recorded
    with the plan)."""
    names = [i.name for i in entry.inputs]
    required = {i.name for i in entry.inputs if not i.optional}
    out = []
    for o in entry.outputs:
        like = o.shape.removesuffix(".shape")
        out.append(names.index(like) if like in required and o.shape == f"{like}.shape" else None)
    return tuple(out)


def record(op, inputs: tuple, result, out=None) -> None:
    """After the Python fast path served `inputs` (plan_call, or with `out` plan_call_out,
    said MISS): the plan of what it did into op._memo, or None under the same key when the
    call is not one a plan can replay exactly (which then says SKIP at once for it)."""
    k = key(inputs, out)
    if k is None:
        return
    op._memo[k] = _plan(op, inputs, result, into=out is not None)


def _plan(op, inputs, result, into=False):
    """The plan of a served call: `result` its outputs, or (into) the out= call's out."""
    cls = type(op)
    name, target, like = cls.plan_kernel, op._target, cls._plan_likes
    if name is None or like is None or target is None or not target.honours_memo_key:
        return None
    outs = result if isinstance(result, tuple) else (result,)
    if len(outs) != len(like) or (into and len(outs) != 1):
        return None
    allocs = []
    for o, i in zip(outs, like):
        if not (type(o) in (torch.Tensor, torch.nn.Parameter) and o.is_cpu and o.is_contiguous()
                and (into or i is None or o.shape == inputs[i].shape)):
            return None
        if not into:   # an out= call allocates nothing
            allocs.append((torch.empty((), dtype=o.dtype).expand(o.shape), o.numel()) if i is None else i)
        if o.numel() and any(t is not None and t.data_ptr() == o.data_ptr() for t in inputs):
            return None     # an output that is an input: not the allocation a plan makes
    memo, _, iface = op._memo_fns[name]
    tensors = tuple(inputs) + outs
    if len(iface.tensors) != len(tensors):
        return None
    pair = op._memo.get((name, memo(*tensors)))
    recipe = None if pair is None else getattr(pair[0], "plan_recipe", None)
    if recipe is None:
        return None
    handle, items = recipe
    out_align = 0
    for o in outs:
        out_align |= o.data_ptr() & 15
    plan = _C.plan_make(handle, items, len(inputs), len(outs), out_align)
    return (plan, None if into else tuple(allocs), tuple(o.dtype for o in outs))
