"""The manifest's schema: what an entry may say, checked when the file is loaded.

An entry is parsed into frozen dataclasses; an unknown key, a bad dtype rule or an
unparsable shape rule is a ManifestError that names the file, the entry and the field.
Rules are Python expressions over the op's inputs, params and call-time scalars, restricted
to a small safe subset (checked here with `ast`); boundary.py compiles them once per class
into generated functions, so nothing is parsed or eval'd on a call."""
from __future__ import annotations

import ast
import dataclasses
import math
from typing import Any

import torch

from .._dtypes import BY_NAME
from ..errors import ManifestError

ENTRY_KEYS = {"family", "status", "ref_api", "description", "signature", "composition",
              "workloads", "roofline", "peers"}
SIGNATURE_KEYS = {"inputs", "outputs", "params", "call_params", "shape_rules"}
INPUT_KEYS = {"dtype", "optional", "mutated", "when", "shape", "contiguous", "index", "distinct", "values"}
# How the boundary treats an input's layout (`contiguous`): "copy" (the default: a
# non-contiguous input is copied, and a written one copied back), "require" (refused
# with a clear error: the op never copies it, e.g. a KV cache), "last_dim" (passed as it
# is when its last dimension has unit stride: the kernel takes the other strides, so a
# view into a packed tensor is read and written in place; copied otherwise).
CONTIGUITY = ("copy", "require", "last_dim")
# Names an input may not take: the generated operators and bodies use them.
RESERVED_INPUT_NAMES = {"key": "the operators' instance-key argument (name a key tensor `k`)",
                        "self": "the op instance in the generated bodies",
                        "out": "the call-time buffer of an output (`call_params.out`)"}
OUTPUT_KEYS = {"dtype", "shape", "optional", "when", "alias_of", "index_of"}
PARAM_KEYS = {"type", "default", "none_means", "choices", "dtypes"}
# A param of type `str` may list its `choices` (e.g. rope_type: default | linear | llama3):
# any other value is refused when assigned, naming the op, the param and the choices.


@dataclasses.dataclass(frozen=True)
class DerivedDefault:
    """A `none_means` computed from other params (`needs`), e.g. attention's scale = 1 /
    sqrt(head_size): resolved once, with the constants, in Op.resolved_params."""
    needs: tuple
    fn: Any
    text: str

    def __call__(self, params: dict):
        return self.fn(params)


# What a param's `none_means` may name: the value None stands for, resolved once
# (Op.resolved_params): a constant, or a DerivedDefault of other params.
NONE_MEANS = {
    "float32_eps": 1.1920928955078125e-07,
    # 1 / sqrt(D), as torch.nn.functional.scaled_dot_product_attention takes scale=None
    "inverse_sqrt_head_size": DerivedDefault(("head_size",), lambda p: 1.0 / math.sqrt(p["head_size"]),
                                             "1 / sqrt(head_size)"),
}
# A param typed `dtype` (or `dtype | None`) holds a torch dtype, one of its `dtypes`; an
# output's dtype rule `param(<name>)` takes it (`param(<name>) or same_as(<input>)` / `or
# <dtype>` where it may be None). Being a constructor param, it is part of the instance, so
# the operator's schema never carries it and the instance key covers it (by its name).
DTYPE_PARAM_TYPES = ("dtype", "dtype|None")
CALL_PARAM_KEYS = {"type", "default", "fills"}
CALL_PARAM_TYPES = {"bool", "int", "float", "Tensor", "device"}
# `device` (type device, default None: the CPU) is where an op with no call-time tensor input
# puts its outputs; such an op declares exactly one, and no other op may (an op with tensor
# inputs takes its device from them).
# A constructor param's type: a literal, so that the instance key, which names the params,
# can rebuild the op in another process (ops/registry.py); "| None" may follow.
PARAM_TYPES = {"bool", "int", "float", "str", "tuple[int, ...]", "dtype"}
STATUSES = {"implemented", "spec-only"}

# What a rule may call and which attributes it may read.
RULE_FUNCTIONS = {"len", "tuple", "list", "min", "max", "all", "any", "abs", "int", "range", "sum"}
RULE_ATTRIBUTES = {"shape", "ndim", "dtype", "numel", "element_size", "size", "nbytes"}
_ALLOWED_NODES = (
    ast.Expression, ast.BoolOp, ast.BinOp, ast.UnaryOp, ast.Compare, ast.Call, ast.Name,
    ast.Load, ast.Attribute, ast.Subscript, ast.Slice, ast.Tuple, ast.List, ast.Constant,
    ast.IfExp, ast.And, ast.Or, ast.Not, ast.USub, ast.UAdd, ast.Add, ast.Sub, ast.Mult,
    ast.FloorDiv, ast.Mod, ast.Div, ast.Pow, ast.Eq, ast.NotEq, ast.Lt, ast.LtE, ast.Gt,
    ast.GtE, ast.Is, ast.IsNot, ast.In, ast.NotIn, ast.GeneratorExp, ast.comprehension,
    ast.Store,
)


@dataclasses.dataclass(frozen=True)
class DtypeRule:
    """A set of allowed dtypes, `same_as(<input>)`, or (outputs only) `param(<name>)`: the
    value of a dtype param, with `fallback` (a rule of one of the other two kinds) where
    the param may be None."""
    allowed: tuple = ()
    same_as: str | None = None
    text: str = ""
    param: str | None = None
    fallback: "DtypeRule | None" = None

    def resolve(self, dtypes: dict, params: dict):
        """The dtype this rule gives, from the inputs' dtypes and the params by name (the
        first allowed dtype for a set, as the generated allocation takes it)."""
        if self.param is not None:
            v = params.get(self.param)
            if v is not None:
                return v
            return self.fallback.resolve(dtypes, params)
        if self.same_as:
            return dtypes[self.same_as]
        return self.allowed[0]


@dataclasses.dataclass(frozen=True)
class InputSpec:
    name: str
    dtype: DtypeRule
    optional: bool = False
    mutated: bool = False
    when: str | None = None     # call-time bool selecting the write; None: every call writes
    shape: tuple | None = None  # named dims ("T", "D", a param's name) or sizes; None: any
    contiguous: str = "copy"    # one of CONTIGUITY
    index: str | None = None    # an index input: the rule giving the exclusive bound of its values
    distinct: bool = False      # an index input whose valid values are distinct (a KV cache's slot
                                # mapping): the drivers draw them without repeats; the op checks nothing
    values: tuple | None = None  # (low, high) rules: the drivers draw the input's values in [low, high)

    @property
    def bounded(self) -> bool:
        """Whether the manifest bounds its values (`index` or `values`): the drivers draw
        them after the inputs the bounds may read."""
        return self.index is not None or self.values is not None


@dataclasses.dataclass(frozen=True)
class OutputSpec:
    name: str
    dtype: DtypeRule
    shape: str
    optional: bool = False
    when: str | None = None     # call-time bool asking for an optional output
    alias_of: str | None = None  # a written input this output is, when that input is written
    index_of: str | None = None  # indices into this input's last dim (top-k): the bench compares
    #                              an impl's indices by the values they pick, so ties may come in any order


@dataclasses.dataclass(frozen=True)
class ParamSpec:
    name: str
    type: str
    default: Any = dataclasses.MISSING
    none_means: Any = None      # the value None stands for (NONE_MEANS: a constant or a DerivedDefault), resolved once
    choices: tuple | None = None  # a str param's allowed values
    dtypes: tuple = ()          # a dtype param: the torch dtypes it may hold

    @property
    def required(self) -> bool:
        return self.default is dataclasses.MISSING

    @property
    def is_dtype(self) -> bool:
        return self.type.replace(" ", "") in DTYPE_PARAM_TYPES

    @property
    def may_be_none(self) -> bool:
        return self.type.replace(" ", "").endswith("|None") or self.default is None


@dataclasses.dataclass(frozen=True)
class CallParamSpec:
    name: str
    type: str                   # bool | int | float | Tensor
    default: Any = None
    fills: str | None = None    # for a Tensor `out`: the output it receives


@dataclasses.dataclass(frozen=True)
class Entry:
    name: str
    family: str
    status: str
    source: str
    inputs: tuple
    outputs: tuple
    params: tuple
    call_params: tuple
    shape_rules: tuple
    composition: tuple = ()
    ref_api: str | None = None
    description: str = ""
    workloads: Any = None       # Workloads, or None
    roofline: Any = None
    peers: Any = None           # peer library -> {call, args, kwargs} (parse_peers), or None

    @property
    def has_call_time_tensor_input(self) -> bool:
        return len(self.inputs) > 0

    @property
    def has_boundary(self) -> bool:
        """The seed's two conditions: a call-time tensor input, and not a composite."""
        return self.has_call_time_tensor_input and not self.composition

    @property
    def device_param(self):
        """The call param of type device (an op without tensor inputs), or None."""
        return next((c for c in self.call_params if c.type == "device"), None)

    @property
    def in_place(self) -> tuple:
        """The inputs every call writes that no output returns (`mutated` without `when`,
        no output `alias_of` them: a KV cache): what they hold after a call is part of its
        result, which the drivers and the bench compare, after the outputs."""
        aliased = {o.alias_of for o in self.outputs if o.alias_of}
        return tuple(i.name for i in self.inputs if i.mutated and i.when is None and i.name not in aliased)

    def input(self, name):
        return next(i for i in self.inputs if i.name == name)

    def output(self, name):
        return next(o for o in self.outputs if o.name == name)


def _err(source, entry, field, msg):
    return ManifestError(f"manifest {source}: entry {entry}: field '{field}': {msg}")


def _integer_rule(rule) -> bool:
    """Whether a dtype rule allows integer dtypes only (an index input, an index_of output)."""
    return not rule.same_as and not rule.param and bool(rule.allowed) and all(
        not d.is_floating_point and not d.is_complex and d != torch.bool for d in rule.allowed)


def _check_keys(source, entry, field, got, allowed):
    if not isinstance(got, dict):
        raise _err(source, entry, field, f"expected a mapping, got {type(got).__name__}")
    unknown = sorted(set(got) - allowed)
    if unknown:
        raise _err(source, entry, field, f"unknown key(s) {unknown}; allowed: {sorted(allowed)}")


def parse_dtype_rule(text, source, entry, field, input_names, params=None) -> DtypeRule:
    """`params`: the entry's ParamSpecs by name, for an output's rule (`param(<name>)`
    is refused elsewhere)."""
    if not isinstance(text, str) or not text.strip():
        raise _err(source, entry, field, f"expected a dtype rule string, got {text!r}")
    t = text.strip()
    if t.startswith("param("):
        return _parse_param_rule(t, source, entry, field, input_names, params)
    if t.startswith("same_as(") and t.endswith(")"):
        ref = t[len("same_as("):-1].strip()
        if ref not in input_names:
            raise _err(source, entry, field, f"same_as({ref}) names no input; inputs: {list(input_names)}")
        return DtypeRule(same_as=ref, text=t)
    names = [p.strip() for p in t.split("|")]
    bad = [n for n in names if n not in BY_NAME]
    if bad:
        raise _err(source, entry, field, f"unknown dtype(s) {bad} in rule {t!r}; known: {sorted(BY_NAME)}")
    return DtypeRule(allowed=tuple(BY_NAME[n] for n in names), text=t)


def _parse_param_rule(t, source, entry, field, input_names, params) -> DtypeRule:
    """`param(<name>)` or `param(<name>) or <rule>`: a dtype param's value, the rule where it is None."""
    head, sep, rest = t.partition(" or ")
    head = head.strip()
    if not head.endswith(")"):
        raise _err(source, entry, field, f"expected `param(<name>)` or `param(<name>) or <rule>`, got {t!r}")
    name = head[len("param("):-1].strip()
    if params is None:
        raise _err(source, entry, field, f"a dtype from a param ({t!r}) is for outputs only")
    spec = params.get(name)
    if spec is None or not spec.is_dtype:
        dtype_params = sorted(n for n, p in params.items() if p.is_dtype)
        raise _err(source, entry, field, f"param({name}) names no dtype param (type: dtype); dtype params: {dtype_params}")
    fallback = None
    if sep:
        fallback = None if rest.strip().startswith("param(") else parse_dtype_rule(rest, source, entry, field, input_names)
        if fallback is None or (not fallback.same_as and len(fallback.allowed) != 1):
            raise _err(source, entry, field, f"the rule after `or` must be same_as(<input>) or one dtype, got {rest.strip()!r}")
    elif spec.may_be_none:
        raise _err(source, entry, field, f"param {name!r} may be None: say what the dtype is then, "
                                         f"`param({name}) or same_as(<input>)` or `param({name}) or <dtype>`")
    return DtypeRule(text=t, param=name, fallback=fallback)


def parse_param(pname, p, source, entry, raw_params=()) -> ParamSpec:
    field = f"signature.params.{pname}"
    _check_keys(source, entry, field, p, PARAM_KEYS)
    if "type" not in p:
        raise _err(source, entry, field + ".type", "required field missing")
    if not isinstance(p["type"], str):
        raise _err(source, entry, field + ".type", f"expected a type string, got {p['type']!r}")
    base = str(p["type"]).replace(" ", "").removesuffix("|None")
    if base not in {t.replace(" ", "") for t in PARAM_TYPES}:
        raise _err(source, entry, field + ".type", f"expected one of {sorted(PARAM_TYPES)} (optionally "
                   f"'| None'): a literal, which the instance key can carry; got {p['type']!r}")
    none_means = p.get("none_means")
    if none_means is not None and none_means not in NONE_MEANS:
        raise _err(source, entry, field + ".none_means", f"expected one of {sorted(NONE_MEANS)}, got {none_means!r}")
    means = NONE_MEANS.get(none_means)
    if isinstance(means, DerivedDefault) and not set(means.needs) <= set(raw_params) - {pname}:
        raise _err(source, entry, field + ".none_means",
                   f"{none_means!r} ({means.text}) needs the param(s) {list(means.needs)}")
    choices = p.get("choices")
    if choices is not None:
        if p["type"] != "str" or not isinstance(choices, list) or not choices \
                or not all(isinstance(c, str) for c in choices):
            raise _err(source, entry, field + ".choices", f"`choices` lists the values of a `type: str` param, got "
                                                          f"{choices!r} for type {p['type']!r}")
        if "default" in p and p["default"] not in choices:
            raise _err(source, entry, field + ".default", f"{p['default']!r} is not one of the choices {choices}")
        choices = tuple(choices)
    default = p["default"] if "default" in p else dataclasses.MISSING
    spec = ParamSpec(pname, p["type"], default, None if none_means is None else NONE_MEANS[none_means], choices)
    if not spec.is_dtype:
        if "dtypes" in p:
            raise _err(source, entry, field + ".dtypes", f"only a dtype param (type: dtype) has dtypes, this one is {p['type']!r}")
        return spec
    allowed = parse_dtype_rule(p.get("dtypes"), source, entry, field + ".dtypes", ())
    if default is not dataclasses.MISSING and default is not None:
        if not isinstance(default, str) or BY_NAME.get(default) not in allowed.allowed:
            raise _err(source, entry, field + ".default", f"expected None or one of {allowed.text!r}, got {default!r}")
        default = BY_NAME[default]
    if default is None and spec.type.replace(" ", "") != "dtype|None":
        raise _err(source, entry, field + ".default", "a default of None needs the type `dtype | None`")
    return dataclasses.replace(spec, default=default, dtypes=allowed.allowed)


def check_rule(text, source, entry, field, known_names) -> ast.Expression:
    """Parses a rule and checks it uses only the safe subset and known names."""
    if not isinstance(text, str):
        raise _err(source, entry, field, f"expected an expression string, got {text!r}")
    try:
        tree = ast.parse(text, mode="eval")
    except SyntaxError as e:
        raise _err(source, entry, field, f"cannot parse rule {text!r}: {e.msg}") from None
    bound = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.comprehension):
            for n in ast.walk(node.target):
                if isinstance(n, ast.Name):
                    bound.add(n.id)
    for node in ast.walk(tree):
        if not isinstance(node, _ALLOWED_NODES):
            raise _err(source, entry, field, f"rule {text!r} uses {type(node).__name__}, which rules may not")
        if isinstance(node, ast.Name) and node.id not in known_names and node.id not in RULE_FUNCTIONS \
                and node.id not in bound and node.id not in ("None", "True", "False"):
            raise _err(source, entry, field, f"rule {text!r} names {node.id!r}, which is no input, param or call parameter")
        if isinstance(node, ast.Attribute) and node.attr not in RULE_ATTRIBUTES:
            raise _err(source, entry, field, f"rule {text!r} reads .{node.attr}; allowed: {sorted(RULE_ATTRIBUTES)}")
        if isinstance(node, ast.Call):
            f = node.func
            ok = (isinstance(f, ast.Name) and f.id in RULE_FUNCTIONS) or \
                 (isinstance(f, ast.Attribute) and f.attr in RULE_ATTRIBUTES)
            if not ok:
                raise _err(source, entry, field, f"rule {text!r} calls something other than {sorted(RULE_FUNCTIONS)}")
    return tree


def dim_rules(inputs, param_names) -> list:
    """The shape rules the inputs' named dims stand for, in input order: each shaped
    input's rank; each size; each dim named by a param equal to the param; each other
    name equal to its first occurrence in a required input. An optional input's rules hold
    when it is absent."""
    rules, first = [], {}
    for i in sorted(inputs, key=lambda i: i.optional):   # names bind to required inputs first
        if i.shape is None:
            continue
        guard = f"{i.name} is None or " if i.optional else ""
        rules.append(f"{guard}{i.name}.ndim == {len(i.shape)}")
        for k, d in enumerate(i.shape):
            here = f"{i.name}.shape[{k}]"
            if isinstance(d, int):
                rules.append(f"{guard}{here} == {d}")
            elif d in param_names:
                rules.append(f"{guard}{here} == {d}")
            elif d in first:
                rules.append(f"{guard}{here} == {first[d]}")
            elif not i.optional:
                first[d] = here
    return rules


def parse_entry(name, raw, source) -> Entry:
    _check_keys(source, name, "<entry>", raw, ENTRY_KEYS)
    for req in ("family", "status", "signature"):
        if req not in raw:
            raise _err(source, name, req, "required field missing")
    status = raw["status"]
    if status not in STATUSES:
        raise _err(source, name, "status", f"expected one of {sorted(STATUSES)}, got {status!r}")
    family = raw["family"]
    if not isinstance(family, str) or not family.isidentifier():
        raise _err(source, name, "family", f"expected an identifier, got {family!r}")
    sig = raw["signature"]
    _check_keys(source, name, "signature", sig, SIGNATURE_KEYS)

    raw_inputs = sig.get("inputs") or {}
    _check_keys(source, name, "signature.inputs", raw_inputs, set(raw_inputs))
    raw_params = sig.get("params") or {}
    _check_keys(source, name, "signature.params", raw_params, set(raw_params))
    raw_call = sig.get("call_params") or {}
    _check_keys(source, name, "signature.call_params", raw_call, set(raw_call))
    input_names = list(raw_inputs)
    known = set(input_names) | set(raw_params) | set(raw_call)

    call_params = []
    for pname, p in raw_call.items():
        field = f"signature.call_params.{pname}"
        _check_keys(source, name, field, p, CALL_PARAM_KEYS)
        ptype = p.get("type")
        if ptype not in CALL_PARAM_TYPES:
            raise _err(source, name, field + ".type", f"expected one of {sorted(CALL_PARAM_TYPES)}, got {ptype!r}")
        fills = p.get("fills")
        if ptype == "Tensor":
            if pname != "out" or fills is None:
                raise _err(source, name, field, "the only call-time tensor parameter is `out`, with `fills: <output>`")
        elif fills is not None:
            raise _err(source, name, field + ".fills", "only `out` fills an output")
        if ptype == "device":
            if sig.get("inputs"):
                raise _err(source, name, field, "a `device` call param is for an op with no call-time tensor input "
                                                "(an op with tensor inputs puts its outputs on their device)")
            if p.get("default") is not None:
                raise _err(source, name, field + ".default", "a `device` call param defaults to None (the CPU)")
        call_params.append(CallParamSpec(pname, ptype, p.get("default"), fills))
    bools = {c.name for c in call_params if c.type == "bool"}

    params = [parse_param(pname, p, source, name, raw_params) for pname, p in raw_params.items()]
    param_specs = {p.name: p for p in params}

    inputs = []
    for iname, spec in raw_inputs.items():
        field = f"signature.inputs.{iname}"
        _check_keys(source, name, field, spec, INPUT_KEYS)
        if not iname.isidentifier():
            raise _err(source, name, field, "input names must be identifiers")
        if iname in RESERVED_INPUT_NAMES:
            raise _err(source, name, field, f"{iname!r} is reserved: {RESERVED_INPUT_NAMES[iname]}")
        rule = parse_dtype_rule(spec.get("dtype"), source, name, field + ".dtype", input_names)
        when = spec.get("when")
        mutated = bool(spec.get("mutated", False))
        if when is not None and (not mutated or when not in bools):
            raise _err(source, name, field + ".when", f"`when` needs `mutated: true` and a call-time bool; bools: {sorted(bools)}")
        if mutated and spec.get("optional", False):
            raise _err(source, name, field, "an input the op writes cannot be optional")
        shape = spec.get("shape")
        if shape is not None:
            if not isinstance(shape, list) or not all(
                    (isinstance(d, str) and d.isidentifier()) or (isinstance(d, int) and not isinstance(d, bool) and d >= 0)
                    for d in shape):
                raise _err(source, name, field + ".shape", f"expected a list of dim names and sizes >= 0, got {shape!r}")
            shape = tuple(shape)
        contiguous = spec.get("contiguous", "copy")
        if contiguous not in CONTIGUITY:
            raise _err(source, name, field + ".contiguous", f"expected one of {list(CONTIGUITY)}, got {contiguous!r}")
        index = spec.get("index")
        if index is not None:
            if not _integer_rule(rule):
                raise _err(source, name, field + ".index", f"an index input takes integer dtypes, got {rule.text!r}")
            check_rule(index, source, name, field + ".index", known)
        distinct = spec.get("distinct", False)
        if not isinstance(distinct, bool) or (distinct and index is None):
            raise _err(source, name, field + ".distinct", f"expected true or false on an index input, got {distinct!r}"
                       + ("" if index is not None else " (no `index:` here)"))
        values = spec.get("values")
        if values is not None:
            if index is not None:
                raise _err(source, name, field + ".values", "an index input's values are [0, its bound): give one of the two")
            if not isinstance(values, list) or len(values) != 2 or not all(
                    isinstance(v, str) or (isinstance(v, (int, float)) and not isinstance(v, bool)) for v in values):
                raise _err(source, name, field + ".values", f"expected [low, high] (numbers or rules), got {values!r}")
            values = tuple(str(v) for v in values)
            for v in values:
                check_rule(v, source, name, field + ".values", known)
        inputs.append(InputSpec(iname, rule, bool(spec.get("optional", False)), mutated, when, shape, contiguous,
                                None if index is None else str(index), distinct, values))

    outputs = []
    raw_outputs = sig.get("outputs") or {}
    _check_keys(source, name, "signature.outputs", raw_outputs, set(raw_outputs))
    for oname, spec in raw_outputs.items():
        field = f"signature.outputs.{oname}"
        _check_keys(source, name, field, spec, OUTPUT_KEYS)
        rule = parse_dtype_rule(spec.get("dtype"), source, name, field + ".dtype", input_names, param_specs)
        if "shape" not in spec:
            raise _err(source, name, field + ".shape", "required field missing")
        check_rule(spec["shape"], source, name, field + ".shape", known)
        optional = bool(spec.get("optional", False))
        when = spec.get("when")
        if optional and when not in bools:
            raise _err(source, name, field + ".when", f"an optional output needs `when: <call-time bool>`; bools: {sorted(bools)}")
        alias = spec.get("alias_of")
        if alias is not None:
            if alias not in input_names or not raw_inputs[alias].get("mutated"):
                raise _err(source, name, field + ".alias_of", f"{alias!r} is not a mutated input")
        index_of = spec.get("index_of")
        if index_of is not None:
            if index_of not in input_names:
                raise _err(source, name, field + ".index_of", f"{index_of!r} is not an input; inputs: {sorted(input_names)}")
            if not _integer_rule(rule):
                raise _err(source, name, field + ".index_of", f"indices take integer dtypes, got {rule.text!r}")
        outputs.append(OutputSpec(oname, rule, spec["shape"], optional, when, alias, index_of))
    for c in call_params:
        if c.fills is not None and c.fills not in raw_outputs:
            raise _err(source, name, f"signature.call_params.{c.name}.fills", f"{c.fills!r} is no output")

    rules = sig.get("shape_rules") or []
    if not isinstance(rules, list):
        raise _err(source, name, "signature.shape_rules", "expected a list of expressions")
    for i, r in enumerate(rules):
        check_rule(r, source, name, f"signature.shape_rules[{i}]", known if inputs else set(raw_params))
    composition = raw.get("composition") or []
    if not inputs and not composition:
        # no call-time tensor input: no boundary; the call takes `device` and returns new
        # tensors made from the params alone (Op: computed once per trace under torch.compile)
        devices = [c.name for c in call_params if c.type == "device"]
        if len(devices) != 1:
            raise _err(source, name, "signature.call_params", f"an op with no call-time tensor input declares exactly "
                                                              f"one call param of type device (where its outputs go), "
                                                              f"got {devices}")
        other = [c.name for c in call_params if c.type in ("Tensor",)]
        if other:
            raise _err(source, name, "signature.call_params", f"an op with no call-time tensor input takes no "
                                                              f"`out` (its outputs are new tensors), got {other}")
        if not outputs or any(o.optional for o in outputs):
            raise _err(source, name, "signature.outputs", "an op with no call-time tensor input returns at least one "
                                                          "output, none optional")
    # the named dims' rules first: they test each shaped input's rank before a written rule
    # may index it (logits.shape[1] of 1-D logits must fail as a rule, not as an IndexError)
    rules = dim_rules(inputs, {p for p in raw_params}) + list(rules)

    if not isinstance(composition, list) or not all(isinstance(c, str) for c in composition):
        raise _err(source, name, "composition", "expected a list of op class names")
    roofline = raw.get("roofline")
    if roofline is not None:
        _check_keys(source, name, "roofline", roofline, {"bytes", "flops"})
        for k, v in roofline.items():
            check_rule(v, source, name, f"roofline.{k}", known | set(raw_outputs))
    workloads = parse_workloads(raw.get("workloads"), source, name, input_names, param_specs,
                                [i.name for i in inputs if i.index is not None])
    return Entry(name=name, family=family, status=status, source=source, inputs=tuple(inputs),
                 outputs=tuple(outputs), params=tuple(params), call_params=tuple(call_params),
                 shape_rules=tuple(rules), composition=tuple(composition), ref_api=raw.get("ref_api"),
                 description=raw.get("description", ""), workloads=workloads, roofline=roofline,
                 peers=parse_peers(raw.get("peers"), source, name))


# ---- workloads ---------------------------------------------------------------------------
WORKLOAD_KEYS = {"shapes", "params", "dims", "dtypes", "cases", "test_dims", "draws", "test_draws"}
CASE_KEYS = {"label", "shapes", "params", "dims"}
# How the drivers draw an index input's values in [0, its bound) (`draws` for the
# benchmark's cases, `test_draws` for the test driver's; default uniform): "uniform"
# (independent uniform draws), "max" (every value bound - 1: e.g. every sequence at the
# full length its block table allows), "distinct" (no value twice: the first numel values
# of a random permutation of [0, bound), e.g. a block table whose sequences share no block).
DRAWS = ("uniform", "max", "distinct")
# A dim expression in `shapes` or `params` (`B * NB`): names of dims, integers, + - * //.
_DIM_EXPR_NODES = (ast.Expression, ast.BinOp, ast.Name, ast.Load, ast.Constant, ast.Add, ast.Sub, ast.Mult,
                   ast.FloorDiv)


def dim_names(value) -> list:
    """The dim names a workload value reads: a dim's name, an expression over dims
    (`B * NB`), or a list of those (a shape); [] for a number."""
    if isinstance(value, list):
        return [n for v in value for n in dim_names(v)]
    if not isinstance(value, str):
        return []
    if value.isidentifier():
        return [value]
    return sorted({n.id for n in ast.walk(ast.parse(value, mode="eval")) if isinstance(n, ast.Name)})


def _check_dim_exprs(source, entry, field, values):
    for k, v in values.items():
        for x in (v if isinstance(v, list) else [v]):
            if not isinstance(x, str) or x.isidentifier():
                continue
            try:
                tree = ast.parse(x, mode="eval")
            except SyntaxError:
                raise _err(source, entry, f"{field}.{k}", f"cannot parse dim expression {x!r}") from None
            bad = [type(n).__name__ for n in ast.walk(tree) if not isinstance(n, _DIM_EXPR_NODES)
                   or (isinstance(n, ast.Constant) and (not isinstance(n.value, int) or isinstance(n.value, bool)))]
            if bad:
                raise _err(source, entry, f"{field}.{k}",
                           f"dim expression {x!r} uses {bad[0]}; allowed: dim names, integers, + - * //")


@dataclasses.dataclass(frozen=True)
class Workloads:
    """What the generic drivers instantiate: each input's shape and the constructor's
    params over named dims (`shapes`, `params`; a size may be an expression over dims,
    `B * NB`), the dims' values (`dims`; a list gives one case per value), labelled
    `cases` overriding any of these, the `dtypes` benchmarks run, the small `test_dims`
    the test driver substitutes for every named dim, and how index inputs' values are
    drawn (`draws` for the benchmark, `test_draws` for the tests; DRAWS)."""
    shapes: dict
    params: dict
    dims: dict
    dtypes: tuple
    cases: tuple            # ({"label", "shapes", "params", "dims"}, ...)
    test_dims: dict
    draws: dict = dataclasses.field(default_factory=dict)
    test_draws: dict = dataclasses.field(default_factory=dict)


def _check_dims(source, entry, field, dims):
    _check_keys(source, entry, field, dims, set(dims))
    for k, v in dims.items():
        vals = v if isinstance(v, list) else [v]
        if not k.isidentifier() or not all(isinstance(x, int) and not isinstance(x, bool) and x >= 0 for x in vals):
            raise _err(source, entry, f"{field}.{k}", f"expected a size or a list of sizes, got {v!r}")


def parse_workloads(raw, source, entry, input_names, param_names, index_inputs=()):
    """param_names: the entry's ParamSpecs by name; index_inputs: the names of its index inputs."""
    if raw is None:
        return None
    _check_keys(source, entry, "workloads", raw, WORKLOAD_KEYS)
    cases = raw.get("cases") or [{"label": "default"}]
    for i, c in enumerate(cases):
        _check_keys(source, entry, f"workloads.cases[{i}]", c, CASE_KEYS)
        _check_dims(source, entry, f"workloads.cases[{i}].dims", c.get("dims") or {})
    for field in ("shapes", "params"):
        for i, c in enumerate([raw] + list(cases)):
            got = c.get(field) or {}
            allowed = set(input_names) if field == "shapes" else set(param_names)
            _check_keys(source, entry, f"workloads.{field}", got, allowed)
            if field == "params":   # a dtype param takes a dtype's name, not a dim
                for k, v in got.items():
                    spec = param_names[k]
                    if spec.is_dtype and BY_NAME.get(v) not in spec.dtypes:
                        raise _err(source, entry, f"workloads.params.{k}",
                                   f"expected one of the param's dtypes {[str(d).replace('torch.', '') for d in spec.dtypes]}, got {v!r}")
            _check_dim_exprs(source, entry, f"workloads.{field}", got)
    draws = {}
    for field in ("draws", "test_draws"):
        got = raw.get(field) or {}
        _check_keys(source, entry, f"workloads.{field}", got, set(index_inputs))
        for k, v in got.items():
            if v not in DRAWS:
                raise _err(source, entry, f"workloads.{field}.{k}", f"expected one of {list(DRAWS)}, got {v!r}")
        draws[field] = dict(got)
    _check_dims(source, entry, "workloads.dims", raw.get("dims") or {})
    _check_dims(source, entry, "workloads.test_dims", raw.get("test_dims") or {})
    dtypes = tuple(raw.get("dtypes") or ())
    bad = [d for d in dtypes if d not in BY_NAME]
    if bad:
        raise _err(source, entry, "workloads.dtypes", f"unknown dtype(s) {bad}")
    return Workloads(dict(raw.get("shapes") or {}), dict(raw.get("params") or {}), dict(raw.get("dims") or {}),
                     dtypes, tuple(dict(c) for c in cases), dict(raw.get("test_dims") or {}), draws["draws"],
                     draws["test_draws"])


# ---- peers -------------------------------------------------------------------------------
PEER_KEYS = {"call", "args", "kwargs", "devices"}
PEER_DEVICES = ("cpu", "cuda")


def parse_peers(raw, source, entry):
    """`peers`: other libraries' kernels for the same op, which the benchmark times beside
    tileops (python -m tileops bench). Each is `{call: dotted.path, args: [...], kwargs:
    {...}}`: a string argument naming one of the op's inputs or params stands for it, a
    mapping `{expr: "<expression>"}` for that Python expression over the inputs and params
    (a peer taking a view of an input, e.g. `x[..., :x.shape[-1] // 2]`), any other value
    is passed as is; the call returns the op's outputs in manifest order. `devices`, a list
    of "cpu" / "cuda" (default ["cuda"]: a peer library's GPU kernel), says where it runs:
    a torch function the user would call instead (torch.topk) runs on both."""
    if raw is None:
        return None
    _check_keys(source, entry, "peers", raw, set(raw))
    for peer, spec in raw.items():
        field = f"peers.{peer}"
        _check_keys(source, entry, field, spec, PEER_KEYS)
        call = spec.get("call")
        if not isinstance(call, str) or not all(p.isidentifier() for p in call.split(".")):
            raise _err(source, entry, field + ".call", f"expected a dotted path, got {call!r}")
        if not isinstance(spec.get("args", []), list):
            raise _err(source, entry, field + ".args", "expected a list")
        if not isinstance(spec.get("kwargs", {}), dict):
            raise _err(source, entry, field + ".kwargs", "expected a mapping")
        devices = spec.get("devices", ["cuda"])
        if not isinstance(devices, list) or not devices or any(d not in PEER_DEVICES for d in devices):
            raise _err(source, entry, field + ".devices", f"expected a list of {' / '.join(PEER_DEVICES)}, "
                       f"got {devices!r}")
        for i, a in enumerate(list(spec.get("args") or ()) + list((spec.get("kwargs") or {}).values())):
            if isinstance(a, dict):
                _check_keys(source, entry, f"{field}.args[{i}]", a, {"expr"})
                try:
                    compile(a.get("expr"), "<peer arg>", "eval")
                except (SyntaxError, TypeError, ValueError) as e:
                    raise _err(source, entry, f"{field}.args[{i}].expr",
                               f"expected a Python expression, got {a.get('expr')!r} ({e})") from None
    return {peer: {**spec, "devices": list(spec.get("devices", ["cuda"]))} for peer, spec in raw.items()}
