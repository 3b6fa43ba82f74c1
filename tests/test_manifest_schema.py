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
