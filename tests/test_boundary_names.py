"""Operator names, schemas and compile_op_names generated from the manifest."""
import pytest
import torch

import toy_ops
from tileops.manifest.validate import check_class
from tileops.norm import RMSNormFwdOp
from tileops.ops.boundary import base_operator_name


def test_rms_norm_compile_op_names_match_the_seed():
    # the seed's name, and the `out=` branch's
    assert RMSNormFwdOp.compile_op_names == ("tileops::norm_rms_norm_fwd", "tileops::norm_rms_norm_fwd_out")


@pytest.mark.parametrize("cls,names", [
    (toy_ops.ToyScaleOp, ("tileops::toy_scale", "tileops::toy_scale_writes_x")),
    (toy_ops.ToyAccumulateOp, ("tileops::toy_accumulate_writes_acc",)),
    (toy_ops.ToyAddOp, ("tileops::toy_add", "tileops::toy_add_out")),
    (toy_ops.ToyNormStatsOp, ("tileops::toy_norm_stats_without_rstd", "tileops::toy_norm_stats")),
    (toy_ops.ToySwapOp, ("tileops::toy_swap_writes_a_writes_b",)),
    (toy_ops.ScaleRowsOp, ("tileops::toy_scale_rows",)),
    (toy_ops.ToyScaleAddOp, ()),
    (toy_ops.ToyIotaOp, ()),
])
def test_compile_op_names_per_branch(cls, names):
    assert cls.compile_op_names == names
    for q in names:
        ns, op = q.split("::")
        assert getattr(getattr(torch.ops, ns), op).default._schema.name == q


def test_family_is_written_once():
    assert base_operator_name("ToyScaleOp", "toy") == "toy_scale"
    assert base_operator_name("ScaleRowsOp", "toy") == "toy_scale_rows"
    assert base_operator_name("RMSNormFwdOp", "norm") == "norm_rms_norm_fwd"
    assert base_operator_name("NormFooOp", "norm") == "norm_foo"


def test_suffix_order_writes_then_out_then_without():
    from tileops.manifest.schema import parse_entry
    from tileops.ops.boundary import enumerate_branches
    raw = {"family": "toy", "status": "spec-only", "signature": {
        "inputs": {"a": {"dtype": "float32", "mutated": True}, "b": {"dtype": "float32", "mutated": True, "when": "inplace"}},
        "outputs": {"y": {"dtype": "float32", "shape": "a.shape"},
                    "s": {"dtype": "float32", "shape": "a.shape", "optional": True, "when": "stats"}},
        "call_params": {"inplace": {"type": "bool"}, "stats": {"type": "bool"}, "out": {"type": "Tensor", "fills": "y"}}}}
    e = parse_entry("MixOp", raw, "<test>")
    names = sorted(b.name for b in enumerate_branches(e, "toy_mix"))
    assert "toy_mix_writes_a_writes_b_out_without_s" in names
    assert "toy_mix_writes_a_out" in names
    assert "toy_mix_writes_a_without_s" in names
    assert len(names) == 8


def test_schema_mutations_match_the_manifest_and_key_is_a_trailing_str():
    s = torch.ops.tileops.toy_scale_writes_x.default._schema
    assert [a.name for a in s.arguments] == ["x", "alpha", "key"]
    assert s.arguments[0].alias_info.is_write
    assert str(s.arguments[-1].type) == "str"
    s = torch.ops.tileops.toy_add_out.default._schema
    assert [a.name for a in s.arguments if a.alias_info and a.alias_info.is_write] == ["out"]
    s = torch.ops.tileops.norm_rms_norm_fwd.default._schema
    assert [str(a.type) for a in s.arguments] == ["Tensor", "Optional[Tensor]", "str"]
    assert not any(a.alias_info for a in s.arguments)


@pytest.mark.parametrize("cls", list(toy_ops.TOY_CLASSES.values()) + [RMSNormFwdOp])
def test_validator_accepts_every_class(cls):
    assert check_class(cls, cls._entry) == []


def test_validator_catches_a_forward_that_disagrees_with_the_manifest():
    class Bad:  # an op class whose forward and constructor disagree with ToyAddOp's entry
        _entry = toy_ops.ToyAddOp._entry
        compile_op_names = ()
        _boundary = None
        kernel_types = {"add": toy_ops.AddKernel, "stray": toy_ops.ScaleKernel}
        interfaces = {"add": toy_ops.ToyAddOp.interfaces["add"]}

        def __init__(self, scale, *, target=None):
            pass

        def forward(self, b, a):
            pass
    errs = check_class(Bad, toy_ops.ToyAddOp._entry)
    text = "\n".join(errs)
    assert "compile_op_names" in text
    assert "forward's tensor parameters are ['b', 'a']" in text
    assert "constructor parameters are ['scale']" in text
    assert "kernel type 'stray' belongs to no interface" in text


def test_python_m_validate_runs_green():
    import subprocess
    import sys
    r = subprocess.run([sys.executable, "-m", "tileops.manifest", "validate"], capture_output=True, text=True)
    assert r.returncode == 0, r.stdout + r.stderr
    assert "RMSNormFwdOp" in r.stdout
