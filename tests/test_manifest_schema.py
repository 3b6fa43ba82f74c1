"""The manifest schema rejects what it does not understand, naming entry and field."""
import pytest

from tileops.errors import ManifestError
from tileops.manifest.loader import load_file, package_entries
from tileops.manifest.schema import parse_entry

GOOD = {"family": "toy", "status": "implemented", "signature": {
    "inputs": {"x": {"dtype": "float32 | float16"}},
    "outputs": {"y": {"dtype": "same_as(x)", "shape": "x.shape"}},
    "params": {"k": {"type": "int", "default": 1}},
    "shape_rules": ["x.ndim == 2"]}}


def _with(path, value):
    import copy
    raw = copy.deepcopy(GOOD)
    d = raw
    for p in path[:-1]:
        d = d[p]
    d[path[-1]] = value
    return raw


def test_good_entry_parses():
    e = parse_entry("GoodOp", GOOD, "<t>")
    assert e.has_boundary and e.inputs[0].name == "x"


@pytest.mark.parametrize("path,value,needle", [
    (("colour",), "red", "unknown key(s) ['colour']"),
    (("signature", "inputs", "x", "dtype"), "float33", "unknown dtype(s) ['float33']"),
    (("signature", "inputs", "x", "dtype"), "same_as(z)", "same_as(z) names no input"),
    (("signature", "outputs", "y", "shape"), "x.shape[", "cannot parse rule"),
    (("signature", "outputs", "y", "shape"), "__import__('os')", "calls something other than"),
    (("signature", "shape_rules"), ["x.data_ptr() == 0"], "data_ptr"),
    (("signature", "shape_rules"), ["unknown_name > 1"], "names 'unknown_name'"),
    (("status",), "maybe", "field 'status'"),
    (("signature", "inputs", "x", "sparkle"), True, "unknown key(s) ['sparkle']"),
    (("signature", "params", "k", "type"), "Tensor", "a literal, which the instance key can carry"),
    (("signature", "params", "k", "type"), "dict", "got 'dict'"),
    (("signature", "outputs", "y", "index_of"), "z", "'z' is not an input"),
    (("signature", "outputs", "y", "index_of"), "x", "indices take integer dtypes, got 'same_as(x)'"),
])
def test_bad_entries_are_rejected_naming_entry_and_field(path, value, needle):
    with pytest.raises(ManifestError) as ei:
        parse_entry("BadOp", _with(path, value), "<t>")
    assert "BadOp" in str(ei.value) and needle in str(ei.value)


def test_index_of_marks_indices_into_an_input():
    e = parse_entry("GoodOp", _with(("signature", "outputs", "i"),
                                    {"dtype": "int64", "shape": "x.shape", "index_of": "x"}), "<t>")
    assert [o.index_of for o in e.outputs] == [None, "x"]
    top_k = {n: e for n, e in package_entries().items()}["TopKFwdOp"]
    assert [(o.name, o.index_of) for o in top_k.outputs] == [("values", None), ("indices", "logits")]


def test_unreadable_yaml_is_a_manifest_error(tmp_path):
    p = tmp_path / "bad.yaml"
    p.write_text("Foo: [unclosed")
    with pytest.raises(ManifestError, match="cannot read"):
        load_file(str(p))


def test_package_manifest_has_the_seed_ops():
    e = package_entries()
    assert e["RMSNormFwdOp"].status == "implemented"
    assert not e["AlibiFwdOp"].has_boundary and not e["SinusoidalFwdOp"].has_boundary


# ---- named dims, layouts and index inputs (issue 12's additions) ------------------------

NAMED = {"family": "toy", "status": "implemented", "signature": {
    "inputs": {"q": {"dtype": "float32", "shape": ["T", "H", "head_size"], "contiguous": "last_dim"},
               "k": {"dtype": "same_as(q)", "shape": ["T", "Hk", "head_size"]},
               "ids": {"dtype": "int32 | int64", "shape": ["T"], "index": "table.shape[0]"},
               "table": {"dtype": "float32", "shape": ["V", 4], "contiguous": "require"},
               "extra": {"dtype": "float32", "shape": ["T"], "optional": True}},
    "outputs": {"y": {"dtype": "same_as(q)", "shape": "q.shape"}},
    "params": {"head_size": {"type": "int"}}}}


def _named(path, value):
    import copy
    raw = copy.deepcopy(NAMED)
    d = raw
    for p in path[:-1]:
        d = d[p]
    d[path[-1]] = value
    return raw


def test_named_dims_become_shape_rules_bound_to_required_inputs_and_params():
    e = parse_entry("NamedOp", NAMED, "<t>")
    assert e.input("q").shape == ("T", "H", "head_size") and e.input("q").contiguous == "last_dim"
    assert e.input("table").contiguous == "require" and e.input("k").contiguous == "copy"
    assert e.input("ids").index == "table.shape[0]"
    rules = set(e.shape_rules)
    assert {"q.ndim == 3", "q.shape[2] == head_size", "k.ndim == 3", "k.shape[0] == q.shape[0]",
            "k.shape[2] == head_size", "ids.shape[0] == q.shape[0]", "table.shape[1] == 4",
            "extra is None or extra.shape[0] == q.shape[0]"} <= rules
    assert not any("H ==" in r or "Hk" in r or "V ==" in r for r in rules)   # a name seen once binds nothing


def test_the_generated_rules_are_checked_with_the_op_s_name(tmp_path):
    """Through a real op: RopeFwdOp's k with another token count is refused naming the rule."""
    import torch
    from tileops.errors import InputValueError
    from tileops.positional import RopeFwdOp
    op = RopeFwdOp(8, 8)
    with pytest.raises(InputValueError, match=r"RopeFwdOp: shape rule `k.shape\[0\] == q.shape\[0\]`"):
        op(torch.randn(3, 2, 8), torch.randn(2, 1, 8), torch.zeros(3, dtype=torch.int64), torch.randn(4, 8))


@pytest.mark.parametrize("path,value,needle", [
    (("signature", "inputs", "q", "contiguous"), "sometimes", "expected one of ['copy', 'require', 'last_dim']"),
    (("signature", "inputs", "q", "shape"), ["T", -1], "dim names and sizes >= 0"),
    (("signature", "inputs", "q", "shape"), "T, H", "dim names and sizes >= 0"),
    (("signature", "inputs", "q", "index"), "table.shape[0]", "an index input takes integer dtypes"),
    (("signature", "inputs", "ids", "index"), "nothing.shape[0]", "names 'nothing'"),
])
def test_bad_dims_layouts_and_index_rules_are_rejected(path, value, needle):
    with pytest.raises(ManifestError) as ei:
        parse_entry("BadOp", _named(path, value), "<t>")
    assert "BadOp" in str(ei.value) and needle in str(ei.value), str(ei.value)



# ---- ops without tensor inputs: `device` call params, `str` params with `choices` -------

TABLE = {"family": "toy", "status": "implemented", "signature": {
    "inputs": {},
    "outputs": {"t": {"dtype": "float32", "shape": "(n, 2)"}},
    "params": {"n": {"type": "int"}, "kind": {"type": "str", "default": "a", "choices": ["a", "b"]}},
    "call_params": {"device": {"type": "device"}},
    "shape_rules": ["kind != 'b' or n >= 1"]}}


def _table(path, value, drop=False):
    import copy
    raw = copy.deepcopy(TABLE)
    d = raw
    for p in path[:-1]:
        d = d[p]
    if drop:
        del d[path[-1]]
    else:
        d[path[-1]] = value
    return raw


def test_an_op_without_inputs_parses_with_its_device_and_choices():
    e = parse_entry("TableOp", TABLE, "<t>")
    assert not e.has_boundary and e.device_param.name == "device" and e.device_param.default is None
    kind = next(p for p in e.params if p.name == "kind")
    assert kind.choices == ("a", "b") and kind.default == "a"
    assert e.shape_rules == ("kind != 'b' or n >= 1",)


@pytest.mark.parametrize("path,value,drop,needle", [
    (("signature", "call_params", "device"), None, True, "exactly one call param of type device"),
    (("signature", "call_params", "device", "default"), "cuda", False, "defaults to None"),
    (("signature", "call_params", "where"), {"type": "device"}, False, "exactly one call param of type device"),
    (("signature", "call_params", "out"), {"type": "Tensor", "fills": "t"}, False, "takes no `out`"),
    (("signature", "outputs"), {}, False, "returns at least one output"),
    (("signature", "params", "kind", "choices"), "ab", False, "`choices` lists the values"),
    (("signature", "params", "kind", "choices"), [], False, "`choices` lists the values"),
    (("signature", "params", "n", "choices"), [1, 2], False, "`choices` lists the values"),
    (("signature", "params", "kind", "default"), "c", False, "'c' is not one of the choices"),
    (("signature", "shape_rules"), ["device is None"], False, "names 'device'"),
])
def test_bad_ops_without_inputs_are_rejected(path, value, drop, needle):
    with pytest.raises(ManifestError) as ei:
        parse_entry("BadOp", _table(path, value, drop), "<t>")
    assert "BadOp" in str(ei.value) and needle in str(ei.value), str(ei.value)


def test_a_device_call_param_is_refused_beside_tensor_inputs():
    raw = _with(("signature", "call_params"), {"device": {"type": "device"}})
    with pytest.raises(ManifestError, match="a `device` call param is for an op with no call-time tensor input"):
        parse_entry("BadOp", raw, "<t>")


def test_str_params_and_their_choices_are_enforced_on_assignment():
    from tileops.errors import InputTypeError, InputValueError
    from tileops.positional import RopeCosSinCacheFwdOp
    with pytest.raises(InputValueError, match=r"RopeCosSinCacheFwdOp: param 'rope_type': expected one of "
                                              r"\['default', 'linear', 'llama3'\], got 'yarn'"):
        RopeCosSinCacheFwdOp(10000.0, 8, 4, rope_type="yarn")
    op = RopeCosSinCacheFwdOp(10000.0, 8, 4)
    with pytest.raises(InputTypeError, match="param 'rope_type': expected one of"):
        op.rope_type = 3
    assert op.rope_type == "default"


def test_workload_str_params_are_literals_not_dims():
    """`rope_type: llama3` in a workload is the value itself (a dim of that name is never
    looked up)."""
    from tileops.manifest import workloads
    e = package_entries()["RopeCosSinCacheFwdOp"]
    got = {c.params.get("rope_type", "default") for c in workloads.cases(e)}
    assert got == {"default", "llama3", "linear"}


# ---- distinct index inputs and reserved input names (issue 13's additions) ---------------

def test_a_distinct_index_input_is_drawn_without_repeats():
    import torch

    from tileops.manifest.workloads import index_values
    raw = _named(("signature", "inputs", "ids", "distinct"), True)
    e = parse_entry("DistinctOp", raw, "<t>")
    assert e.input("ids").distinct and not parse_entry("NamedOp", NAMED, "<t>").input("ids").distinct
    table = torch.zeros(40, 4)
    for seed in range(5):
        v = index_values(e.input("ids"), (40,), torch.int32, {"table": table}, {}, seed)
        assert v.dtype == torch.int32 and sorted(v.tolist()) == list(range(40))   # all 40, each once
    with pytest.raises(ValueError, match="41 distinct values asked of \\[0, 40\\)"):
        index_values(e.input("ids"), (41,), torch.int64, {"table": table}, {}, 0)


@pytest.mark.parametrize("path,value,needle", [
    (("signature", "inputs", "ids", "distinct"), "yes", "expected true or false on an index input"),
    (("signature", "inputs", "q", "distinct"), True, "no `index:` here"),
])
def test_bad_distinct_flags_are_rejected(path, value, needle):
    with pytest.raises(ManifestError) as ei:
        parse_entry("BadOp", _named(path, value), "<t>")
    assert "BadOp" in str(ei.value) and needle in str(ei.value), str(ei.value)


@pytest.mark.parametrize("name", ["key", "self", "out"])
def test_reserved_input_names_are_rejected(name):
    import copy
    raw = copy.deepcopy(NAMED)
    raw["signature"]["inputs"] = {name: raw["signature"]["inputs"]["q"], **raw["signature"]["inputs"]}
    raw["signature"]["inputs"][name] = {"dtype": "float32"}
    with pytest.raises(ManifestError) as ei:
        parse_entry("BadOp", raw, "<t>")
    assert f"'{name}' is reserved" in str(ei.value), str(ei.value)


# ---- a derived none_means, dim expressions, index draws (issue 13's additions) ----------

def _workloads(**extra):
    import copy
    raw = copy.deepcopy(NAMED)
    raw["workloads"] = {"shapes": {"q": ["T", "H", "D"], "k": ["T", "H", "D"], "ids": ["T"],
                                   "table": ["T * V + 1", 4]},
                        "params": {"head_size": "D"}, "dims": {"T": [2, 3], "H": 2, "D": 8, "V": 5}, **extra}
    return raw


def test_a_derived_none_means_is_resolved_once_from_the_other_params():
    from tileops.attention import PagedDecodeAttentionFwdOp
    from tileops.manifest.schema import NONE_MEANS, DerivedDefault
    assert isinstance(NONE_MEANS["inverse_sqrt_head_size"], DerivedDefault)
    assert PagedDecodeAttentionFwdOp(64, 16).resolved_params()["scale"] == 0.125
    assert PagedDecodeAttentionFwdOp(64, 16, scale=0.5).resolved_params()["scale"] == 0.5
    raw = _named(("signature", "params", "scale"), {"type": "float | None", "default": None,
                                                      "none_means": "inverse_sqrt_head_size"})
    assert parse_entry("ScaledOp", raw, "<t>").params[1].none_means is NONE_MEANS["inverse_sqrt_head_size"]
    del raw["signature"]["params"]["head_size"]
    raw["signature"]["inputs"]["q"]["shape"] = ["T", "H", "D"]
    raw["signature"]["inputs"]["k"]["shape"] = ["T", "Hk", "D"]
    with pytest.raises(ManifestError, match=r"ScaledOp.*none_means.*needs the param\(s\) \['head_size'\]"):
        parse_entry("ScaledOp", raw, "<t>")


def test_dim_expressions_and_index_draws_make_the_cases():
    import torch
    from tileops.manifest import workloads
    e = parse_entry("NamedOp", _workloads(draws={"ids": "distinct"}, test_draws={"ids": "max"}), "<t>")
    cs = workloads.cases(e, dtypes=["float32"])
    assert [c.shapes["table"] for c in cs] == [(11, 4), (16, 4)] and all(c.draws == {"ids": "distinct"} for c in cs)
    assert workloads.cases(e, test=True, dtypes=["float32"])[0].draws == {"ids": "max"}
    spec = e.input("ids")
    table = torch.empty(16, 4)
    d = workloads.index_values(spec, (16,), torch.int32, {"table": table}, {}, 1, "distinct")
    assert sorted(d.tolist()) == list(range(16))
    assert workloads.index_values(spec, (3,), torch.int64, {"table": table}, {}, 1, "max").tolist() == [15] * 3
    u = workloads.index_values(spec, (200,), torch.int64, {"table": table}, {}, 1)
    assert 0 <= int(u.min()) and int(u.max()) < 16 and len(set(u.tolist())) > 8
    with pytest.raises(ValueError, match="17 distinct values"):
        workloads.index_values(spec, (17,), torch.int64, {"table": table}, {}, 1, "distinct")


@pytest.mark.parametrize("extra,needle", [
    ({"draws": {"q": "max"}}, "unknown key(s) ['q']"),          # not an index input
    ({"draws": {"ids": "sorted"}}, "expected one of ['uniform', 'max', 'distinct']"),
    ({"shapes": {"q": ["T", "H", "D ** 2"]}}, "uses Pow"),
    ({"shapes": {"q": ["T", "H", "D +"]}}, "cannot parse dim expression"),
])
def test_bad_draws_and_dim_expressions_are_rejected(extra, needle):
    raw = _workloads()
    raw["workloads"].update(extra)
    with pytest.raises(ManifestError) as ei:
        parse_entry("BadOp", raw, "<t>")
    assert "BadOp" in str(ei.value) and needle in str(ei.value), str(ei.value)


# ---- outputs whose dtype a param gives; inputs whose values the manifest bounds ----------

CAST = {"family": "toy", "status": "implemented", "signature": {
    "inputs": {"x": {"dtype": "float32 | bfloat16"},
               "t": {"dtype": "float32", "shape": [2], "optional": True, "values": [0.5, "x.shape[0] + 1"]},
               "k": {"dtype": "int32", "shape": [2], "optional": True, "values": [1, 5]}},
    "outputs": {"y": {"dtype": "param(out_dtype) or same_as(x)", "shape": "x.shape"},
                "z": {"dtype": "param(acc_dtype)", "shape": "x.shape"},
                "w": {"dtype": "param(out_dtype) or float16", "shape": "x.shape"}},
    "params": {"out_dtype": {"type": "dtype | None", "default": None, "dtypes": "float32 | float16 | bfloat16"},
               "acc_dtype": {"type": "dtype", "default": "float32", "dtypes": "float32 | float64"}}},
    "workloads": {"shapes": {"x": ["T"]}, "params": {"out_dtype": "float16"}, "dims": {"T": 4}}}


def _cast(path, value):
    import copy
    raw = copy.deepcopy(CAST)
    d = raw
    for p in path[:-1]:
        d = d[p]
    if value is _DELETE:
        del d[path[-1]]
    else:
        d[path[-1]] = value
    return raw


_DELETE = object()


def test_a_dtype_param_parses_and_output_rules_resolve_from_it():
    import torch
    e = parse_entry("CastOp", CAST, "<t>")
    p = {q.name: q for q in e.params}
    assert p["out_dtype"].is_dtype and p["out_dtype"].default is None
    assert p["out_dtype"].dtypes == (torch.float32, torch.float16, torch.bfloat16)
    assert p["acc_dtype"].default is torch.float32 and not p["acc_dtype"].may_be_none
    y, z, w = e.outputs
    assert y.dtype.param == "out_dtype" and y.dtype.fallback.same_as == "x"
    ins = {"x": torch.bfloat16}
    assert y.dtype.resolve(ins, {"out_dtype": None}) is torch.bfloat16
    assert y.dtype.resolve(ins, {"out_dtype": torch.float32}) is torch.float32
    assert z.dtype.resolve(ins, {"acc_dtype": torch.float64}) is torch.float64
    assert w.dtype.resolve(ins, {"out_dtype": None}) is torch.float16
    assert e.input("t").values == ("0.5", "x.shape[0] + 1") and e.input("t").bounded and not e.input("x").bounded


def test_workload_dtype_params_are_dtypes_not_dims():
    import torch
    from tileops.manifest.workloads import cases
    (c,) = cases(parse_entry("CastOp", CAST, "<t>"), dtypes=["float32"])
    assert c.params == {"out_dtype": torch.float16} and c.shapes == {"x": (4,)}


def test_values_are_drawn_in_their_bounds():
    import torch
    from tileops.manifest.workloads import drawn_values
    e = parse_entry("CastOp", CAST, "<t>")
    x = torch.zeros(7)
    t = drawn_values(e.input("t"), (1000,), torch.float32, {"x": x}, {}, 1)
    assert t.dtype is torch.float32 and t.min() >= 0.5 and t.max() < 8 and t.std() > 1
    k = drawn_values(e.input("k"), (1000,), torch.int32, {"x": x}, {}, 1)
    assert k.dtype is torch.int32 and set(k.tolist()) == {1, 2, 3, 4}
    assert drawn_values(e.input("x"), (3,), torch.float32, {}, {}, 1) is None


@pytest.mark.parametrize("path,value,needle", [
    (("signature", "outputs", "y", "dtype"), "param(nothing) or same_as(x)", "param(nothing) names no dtype param"),
    (("signature", "outputs", "y", "dtype"), "param(out_dtype)", "may be None: say what the dtype is then"),
    (("signature", "outputs", "y", "dtype"), "param(out_dtype) or float32 | float16", "must be same_as(<input>) or one dtype"),
    (("signature", "outputs", "y", "dtype"), "param(out_dtype) or param(acc_dtype)", "must be same_as(<input>) or one dtype"),
    (("signature", "outputs", "y", "dtype"), "param(out_dtype) or same_as(q)", "same_as(q) names no input"),
    (("signature", "outputs", "y", "dtype"), "param(out_dtype", "expected `param(<name>)`"),
    (("signature", "inputs", "x", "dtype"), "param(acc_dtype)", "for outputs only"),
    (("signature", "params", "acc_dtype", "dtypes"), "float33", "unknown dtype(s) ['float33']"),
    (("signature", "params", "acc_dtype", "dtypes"), _DELETE, "expected a dtype rule string"),
    (("signature", "params", "acc_dtype", "default"), "bfloat16", "expected None or one of 'float32 | float64'"),
    (("signature", "params", "acc_dtype", "default"), None, "a default of None needs the type `dtype | None`"),
    (("signature", "params", "acc_dtype", "type"), "int", "only a dtype param (type: dtype) has dtypes"),
    (("workloads", "params"), {"out_dtype": "T"}, "expected one of the param's dtypes"),
    (("signature", "inputs", "t", "values"), [0.5], "expected [low, high]"),
    (("signature", "inputs", "t", "values"), [0.5, "nothing + 1"], "names 'nothing'"),
    (("signature", "inputs", "t", "values"), [True, 2], "expected [low, high]"),
    (("signature", "inputs", "k", "index"), "x.shape[0]", "give one of the two"),
])
def test_bad_dtype_params_and_value_bounds_are_rejected(path, value, needle):
    with pytest.raises(ManifestError) as ei:
        parse_entry("BadOp", _cast(path, value), "<t>")
    assert "BadOp" in str(ei.value) and needle in str(ei.value), str(ei.value)


def test_an_output_dtype_from_a_param_through_a_real_op():
    """ToyCastOp (tests/manifest/toy.yaml): y's dtype is `out_dtype`, x's when None. The
    allocation, the out= check and the fake follow it; the operator's schema does not carry
    it (the instance key covers it); an assignment takes effect on the next call."""
    import torch
    from helpers import compile_keeping_graphs
    from tileops.errors import InputTypeError, InputValueError
    from toy_ops import ToyCastOp
    x = torch.randn(3, 4, dtype=torch.bfloat16)
    assert ToyCastOp()(x).dtype is torch.bfloat16
    op = ToyCastOp(torch.float32)
    y = op(x)
    assert y.dtype is torch.float32 and torch.equal(y, x.float())
    assert ToyCastOp("float16").out_dtype is torch.float16
    schema = str(torch.ops.tileops.toy_cast.default._schema)
    assert "dtype" not in schema.replace("ScalarType", "") and "out_dtype" not in schema, schema
    with pytest.raises(InputTypeError, match=r"ToyCastOp: argument 'out': expected dtype torch.float32, got torch.bfloat16"):
        op(x, out=torch.empty(3, 4, dtype=torch.bfloat16))
    out = torch.empty(3, 4)
    assert op(x, out=out) is out and torch.equal(out, x.float())
    with pytest.raises(InputValueError, match=r"ToyCastOp: param 'out_dtype': expected one of float32 \| float16 \| bfloat16, got torch.int32"):
        ToyCastOp(torch.int32)
    with pytest.raises(InputTypeError, match=r"ToyCastOp: param 'out_dtype': expected a torch dtype"):
        ToyCastOp(3)
    with pytest.raises(InputTypeError, match=r"ToyCastOp: param 'out_dtype': expected a torch dtype"):
        ToyCastOp("float33")
    compiled, graphs = compile_keeping_graphs(op)
    assert compiled(x).dtype is torch.float32
    op.out_dtype = torch.float16
    assert op(x).dtype is torch.float16
    with torch._subclasses.fake_tensor.FakeTensorMode():
        assert ToyCastOp(torch.float16)(torch.empty(2, 2)).dtype is torch.float16
    names = [str(n.target) for g in graphs for n in g.graph.nodes if n.op == "call_function"]
    assert names == ["tileops.toy_cast.default"], names


def test_the_validator_holds_a_dtype_params_default_to_the_manifests(monkeypatch):
    import torch
    from tileops.manifest.validate import check_class
    from toy_ops import ToyCastOp
    assert check_class(ToyCastOp, ToyCastOp._entry) == []
    monkeypatch.setattr(ToyCastOp, "__init__", lambda self, out_dtype=torch.float16, *, target=None: None)
    errs = check_class(ToyCastOp, ToyCastOp._entry)
    assert any("constructor default of dtype param 'out_dtype' is torch.float16" in e for e in errs), errs
    monkeypatch.setattr(ToyCastOp, "__init__", lambda self, out_dtype="float16", *, target=None: None)
    assert any("is 'float16', the manifest's None" in e for e in check_class(ToyCastOp, ToyCastOp._entry))
