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
])
def test_bad_entries_are_rejected_naming_entry_and_field(path, value, needle):
    with pytest.raises(ManifestError) as ei:
        parse_entry("BadOp", _with(path, value), "<t>")
    assert "BadOp" in str(ei.value) and needle in str(ei.value)


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
