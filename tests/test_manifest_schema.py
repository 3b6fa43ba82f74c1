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

