"""Workloads: the concrete cases a manifest entry's `workloads` stand for.

Both generic drivers read them: the benchmark (`python -m tileops bench`) takes
`cases(entry)` at the real sizes; the test driver takes `cases(entry, test=True)`, where
every named dim takes its `test_dims` values instead (small, odd, and 0 rows), except the
dims a case with shapes of its own pins. A case is
each present input's shape, the constructor's params, a dtype and a label."""
from __future__ import annotations

import dataclasses
import itertools

import torch

from .._dtypes import BY_NAME


@dataclasses.dataclass(frozen=True)
class Case:
    label: str
    shapes: dict            # input name -> shape tuple (inputs absent from `shapes`: None)
    params: dict            # constructor params
    dtype: torch.dtype
    dims: dict              # the named dims' values of this case

    @property
    def name(self) -> str:
        dims = ",".join(f"{k}={v}" for k, v in self.dims.items())
        return f"{self.label}[{dims}]-{str(self.dtype).replace('torch.', '')}"


def _subst(value, dims):
    if isinstance(value, str):
        return dims[value]
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
    out, seen = [], set()
    for c in w.cases:
        shapes = {**w.shapes, **(c.get("shapes") or {})}
        params = {**w.params, **(c.get("params") or {})}
        dims = {**w.dims, **(c.get("dims") or {})}
        if test:
            # test_dims replace the dims of the real sizes; a case with shapes of its own
            # (QK-norm's [T, heads, 128]) keeps the dims it pins, which are its point
            pinned = set(c.get("dims") or {}) if c.get("shapes") else set()
            dims = {**dims, **{k: v for k, v in w.test_dims.items() if k not in pinned}}
        names = sorted({v for s in list(shapes.values()) + list(params.values())
                        for v in (s if isinstance(s, list) else [s]) if isinstance(v, str)})
        missing = [n for n in names if n not in dims]
        if missing:
            raise ValueError(f"{entry.name}: workload {c.get('label')!r} gives no value for dims {missing}")
        values = [dims[n] if isinstance(dims[n], list) else [dims[n]] for n in names]
        for combo in itertools.product(*values):
            d = dict(zip(names, combo))
            for dt in dtypes:
                case = Case(c.get("label", "default"), {k: _subst(v, d) for k, v in shapes.items()},
                            {k: _subst(v, d) for k, v in params.items()}, dt, d)
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
    env = {"__builtins__": {}, "sum": sum, "len": len, "max": max, "min": min}
    return int(eval(entry.roofline["bytes"], env, dict(tensors)))  # a rule checked by the schema
