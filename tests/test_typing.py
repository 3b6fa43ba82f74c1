"""The public API is typed: the package ships py.typed, every op's constructor and forward
annotate every parameter and the return, and a type checker (mypy, where installed) reads
a user's code against tileops: the README's example checks clean, a misuse is reported."""
import inspect
import os
import subprocess
import sys
import textwrap

import pytest

import tileops


def test_the_package_ships_py_typed():
    assert os.path.isfile(os.path.join(os.path.dirname(tileops.__file__), "py.typed"))


@pytest.mark.parametrize("name", sorted(tileops.all_op_classes()))
def test_every_op_annotates_its_constructor_and_forward(name):
    cls = tileops.all_op_classes()[name]
    for what, fn in (("__init__", inspect.unwrap(cls.__init__)), ("forward", cls._forward)):
        sig = inspect.signature(fn)
        missing = [p for p in list(sig.parameters)[1:] if sig.parameters[p].annotation is inspect.Parameter.empty]
        assert not missing, f"{name}.{what}: parameters without a type: {missing}"
        assert sig.return_annotation is not inspect.Signature.empty, f"{name}.{what}: no return type"


def test_the_public_functions_are_annotated():
    for fn in (tileops.set_default_target, tileops.load_failures, tileops.all_op_classes,
               tileops.Op.kernel_for, tileops.Op.params, tileops.Op.resolved_params, tileops.Op.generated_source):
        sig = inspect.signature(fn)
        assert sig.return_annotation is not inspect.Signature.empty, fn.__qualname__
        assert all(p.annotation is not inspect.Parameter.empty for n, p in sig.parameters.items()
                   if n not in ("self", "cls")), fn.__qualname__


USER_CODE = textwrap.dedent("""
    import torch
    import tileops
    from tileops import TileOpsError, all_op_classes, load_failures, set_default_target
    from tileops.activation import SiluAndMulFwdOp
    from tileops.norm import RMSNormFwdOp

    op = RMSNormFwdOp(normalized_shape=(64,), eps=1e-6, target="builtin")
    y = op(torch.randn(2, 64))
    names: tuple[str, ...] = RMSNormFwdOp.compile_op_names
    params: dict = op.params()
    set_default_target(None)
    failures: list[tuple[str, str]] = load_failures()
    version: str = tileops.__version__
    act = SiluAndMulFwdOp()
    try:
        act(torch.randn(2, 8))
    except TileOpsError:
        pass
    wrong: int = tileops.__version__
""")


def test_mypy_reads_user_code_against_the_package(tmp_path):
    try:
        import mypy  # noqa: F401
    except ImportError:
        pytest.skip("mypy is not installed (make install puts it in .venv)")
    (tmp_path / "user.py").write_text(USER_CODE)
    (tmp_path / "mypy.ini").write_text("[mypy]\ncache_dir = .mypy_cache\n[mypy-torch.*]\nfollow_imports = skip\n")
    r = subprocess.run([sys.executable, "-m", "mypy", "--config-file", "mypy.ini", "user.py"], cwd=tmp_path,
                       capture_output=True, text=True, timeout=300)
    errors = [ln for ln in r.stdout.splitlines() if ": error:" in ln]
    # exactly the one misuse written on purpose: the rest of the user's code type-checks
    assert len(errors) == 1 and "user.py:20:" in errors[0] and 'variable has type "int"' in errors[0], r.stdout
