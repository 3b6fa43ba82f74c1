"""Workloads: the concrete cases a manifest entry's `workloads` stand for.

Both generic drivers read them: the benchmark (`python -m tileops bench`) takes
`cases(entry)` at the real sizes; the test driver takes `cases(entry, test=True)`, where
every named dim takes its `test_dims` values instead (small, odd, and 0 rows), except the
dims a case with shapes of its own pins. A case is
each present input's shape, the constructor's params, a dtype, a label and how its index
inputs' values are drawn (index_values)."""
from __future__ import annotations

import dataclasses
import itertools

import torch

from .._dtypes import BY_NAME
from .schema import dim_names


@dataclasses.dataclass(frozen=True)
class Case:
    label: str
    shapes: dict            # input name -> shape tuple (inputs absent from `shapes`: None)
    params: dict            # constructor params
    dtype: torch.dtype
    dims: dict              # the named dims' values of this case
    draws: dict = dataclasses.field(default_factory=dict)   # index input -> DRAWS (default uniform)

    @property
    def name(self) -> str:
        dims = ",".join(f"{k}={v}" for k, v in self.dims.items())
        return f"{self.label}[{dims}]-{str(self.dtype).replace('torch.', '')}"


_DIM_GLOBALS = {"__builtins__": {}}


def _subst(value, dims):
    if isinstance(value, str):
        if value in dims:
            return dims[value]
        return int(eval(value, _DIM_GLOBALS, dict(dims)))  # an expression the schema checked: dims, ints, + - * //
    if isinstance(value, list):
        return tuple(_subst(v, dims) for v in value)
    return value


def cases(entry, test: bool = False, dtypes=None) -> list[Case]:
    """Every case of the entry's workloads (none without workloads), in manifest order,
    without repeats. dtypes: names or torch dtypes to use instead of the manifest's (the
    test driver passes every dtype the first input accepts)."""
    w = entry.workloads
    if w is None:
        return []
    if dtypes is None:
        dtypes = [BY_NAME[d] for d in w.dtypes]
    dtypes = [BY_NAME[d] if isinstance(d, str) else d for d in dtypes]
    # a str param's value (rope_type: llama3) is itself, not the name of a dim
    literal = {p.name for p in entry.params if p.type == "str"}
    out, seen = [], set()
    dtype_params = {p.name for p in entry.params if p.is_dtype}
    for c in w.cases:
        shapes = {**w.shapes, **(c.get("shapes") or {})}
        params = {**w.params, **(c.get("params") or {})}
        fixed = {k: BY_NAME[v] for k, v in params.items() if k in dtype_params}  # a dtype's name, not a dim
        params = {k: v for k, v in params.items() if k not in dtype_params}
        dims = {**w.dims, **(c.get("dims") or {})}
        if test:
            # test_dims replace the dims of the real sizes; a case with shapes of its own
            # (QK-norm's [T, heads, 128]) keeps the dims it pins, which are its point
            pinned = set(c.get("dims") or {}) if c.get("shapes") else set()
            dims = {**dims, **{k: v for k, v in w.test_dims.items() if k not in pinned}}
        named = list(shapes.values()) + [v for k, v in params.items() if k not in literal]
        names = sorted({n for s in named for n in dim_names(s)})
        missing = [n for n in names if n not in dims]
        if missing:
            raise ValueError(f"{entry.name}: workload {c.get('label')!r} gives no value for dims {missing}")
        values = [dims[n] if isinstance(dims[n], list) else [dims[n]] for n in names]
        for combo in itertools.product(*values):
            d = dict(zip(names, combo))
            for dt in dtypes:
                case = Case(c.get("label", "default"), {k: _subst(v, d) for k, v in shapes.items()},
                            {**{k: v if k in literal else _subst(v, d) for k, v in params.items()}, **fixed}, dt, d,
                            dict(w.test_draws if test else w.draws))
                key = (tuple(sorted(case.shapes.items())), tuple(sorted(case.params.items())), dt)
                if key not in seen:
                    seen.add(key)
                    out.append(case)
    return out


def roofline_bytes(entry, tensors: dict) -> int | None:
    """Bytes the entry's roofline says one call moves, given its inputs and outputs by
    name (None for an absent one)."""
    if not entry.roofline or "bytes" not in entry.roofline:
        return None
    return int(eval(entry.roofline["bytes"], _RULE_GLOBALS, dict(tensors)))  # a rule checked by the schema


def input_dtype(spec, case_dtype, made):
    """An input's dtype under the case's dtype: same_as(other) follows that input (made:
    the inputs made so far, by name); a set of allowed dtypes takes the case's dtype when
    it is in the set, else the first (an index input's int32, a cache's float32)."""
    if spec.dtype.same_as:
        return made[spec.dtype.same_as].dtype
    return case_dtype if case_dtype in spec.dtype.allowed else spec.dtype.allowed[0]


def data_input(entry):
    """The spec whose dtype a case's dtype is: the entry's first input that is not an index
    input (an embedding's table, not its ids), else, for an op without tensor inputs, its
    first output; None for an entry with neither. The other inputs follow it (same_as) or
    keep a dtype of their own (input_dtype)."""
    spec = next((i for i in entry.inputs if i.index is None), entry.inputs[0] if entry.inputs else None)
    if spec is None:
        spec = entry.outputs[0] if entry.outputs else None
    return spec


def accepted_dtypes(entry) -> tuple:
    """The dtypes a case of this entry may take (what `cases(dtypes=...)` should be given):
    those its data input's dtype rule allows; () when nothing says."""
    spec = data_input(entry)
    while spec is not None and spec.dtype.same_as:
        spec = next((i for i in entry.inputs if i.name == spec.dtype.same_as), None)
    return tuple(spec.dtype.allowed) if spec is not None else ()


_RULE_GLOBALS = {"__builtins__": {}, "len": len, "tuple": tuple, "list": list, "min": min, "max": max, "all": all,
                 "any": any, "abs": abs, "int": int, "range": range, "sum": sum}


def _numel(shape) -> int:
    n = 1
    for d in shape:
        n *= d
    return n


def _generator(seed: int, device):
    """A generator on `device` (the CPU when None) seeded with `seed` (31 bits)."""
    return torch.Generator(device=torch.device(device or "cpu")).manual_seed(seed & 0x7fffffff)


def ranged_values(spec, shape, dtype, made: dict, params: dict, seed: int, device=None):
    """Values of an input with `values: [low, high]`: uniform in [low, high) (integers:
    randint), seeded, drawn on `device` (the CPU when None) with that device's generator;
    the bounds are rules evaluated over the inputs made so far and the params."""
    low, high = (eval(r, _RULE_GLOBALS, {**params, **made}) for r in spec.values)  # rules the schema checked
    gen = _generator(seed, device)
    if dtype.is_floating_point:
        u = torch.rand(tuple(shape), generator=gen, dtype=torch.float64, device=gen.device)
        return (u * (float(high) - float(low)) + float(low)).to(dtype)
    if _numel(shape) and int(high) <= int(low):
        raise ValueError(f"input '{spec.name}': its values [{low}, {high}) are empty: no value to draw")
    return torch.randint(int(low), max(int(high), int(low) + 1), tuple(shape), generator=gen, dtype=torch.int64,
                         device=gen.device).to(dtype)


def drawn_values(spec, shape, dtype, made: dict, params: dict, seed: int, draw: str = "uniform", device=None):
    """An input whose values the manifest bounds (`index` or `values`), drawn there, on
    `device` (the CPU when None); None for an input without bounds (the drivers draw
    standard normals)."""
    if spec.index is not None:
        return index_values(spec, shape, dtype, made, params, seed, draw, device)
    if spec.values is not None:
        return ranged_values(spec, shape, dtype, made, params, seed, device)
    return None


def index_values(spec, shape, dtype, made: dict, params: dict, seed: int, draw: str = "uniform", device=None):
    """Values of an index input (`index: <bound rule>`) in [0, bound), seeded, drawn on
    `device` (the CPU when None) with that device's generator; the bound is the rule
    evaluated over the inputs made so far and the params. `draw` (schema.DRAWS): "uniform"
    draws each value independently, "max" gives every value bound - 1, "distinct" draws
    without repeats (numel <= bound); an input declared `distinct` (a slot mapping) is
    always drawn so."""
    bound = int(eval(spec.index, _RULE_GLOBALS, {**params, **made}))  # a rule the schema checked
    n = _numel(shape)
    if n and bound < 1:
        raise ValueError(f"index input '{spec.name}': its bound `{spec.index}` is {bound}: no valid value to draw")
    gen = _generator(seed, device)
    if spec.distinct:
        draw = "distinct"
    if draw == "max":
        return torch.full(tuple(shape), max(bound - 1, 0), dtype=torch.int64, device=gen.device).to(dtype)
    if draw == "distinct":   # no value twice: a random choice of n of the bound's values
        if n > bound:
            raise ValueError(f"index input '{spec.name}': {n} distinct values asked of [0, {bound})")
        return torch.randperm(max(bound, 1), generator=gen, device=gen.device)[:n].reshape(tuple(shape)).to(dtype)
    return torch.randint(0, max(bound, 1), tuple(shape), generator=gen, dtype=torch.int64,
                         device=gen.device).to(dtype)
