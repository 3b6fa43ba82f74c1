"""The generated source, pinned: every implemented op's and every toy op's generated
boundary and kit (Op.generated_source) equal the golden files under tests/golden/boundary,
so a change to what the manifest generates shows as a diff of those files.
TILEOPS_UPDATE_GOLDEN=1 rewrites them (review the diff before committing)."""
import os
import subprocess
import sys

import pytest

import tileops
from toy_ops import TOY_CLASSES

GOLDEN = os.path.join(os.path.dirname(os.path.abspath(__file__)), "golden", "boundary")
CLASSES = {**tileops.all_op_classes(), **{n: c for n, c in TOY_CLASSES.items() if c._boundary is not None}}


@pytest.mark.parametrize("name", sorted(CLASSES))
def test_generated_source_matches_golden(name):
    src = CLASSES[name].generated_source()
    path = os.path.join(GOLDEN, name + ".py")
    if os.environ.get("TILEOPS_UPDATE_GOLDEN") == "1":
        with open(path, "w", encoding="utf-8") as f:
            f.write(src)
    assert os.path.exists(path), f"no golden file for {name}: run with TILEOPS_UPDATE_GOLDEN=1"
    with open(path, encoding="utf-8") as f:
        assert src == f.read(), f"the generated source of {name} changed; diff it against {path}"


def test_golden_files_have_an_op():
    stale = sorted(f[:-3] for f in os.listdir(GOLDEN) if f[:-3] not in CLASSES)
    assert not stale, f"golden files of no op: {stale}"


def test_boundary_command_prints_the_generated_source():
    r = subprocess.run([sys.executable, "-m", "tileops", "boundary", "RMSNormFwdOp"], capture_output=True, text=True,
                       check=True)
    assert r.stdout == tileops.all_op_classes()["RMSNormFwdOp"].generated_source()
    bad = subprocess.run([sys.executable, "-m", "tileops", "boundary", "NoSuchOp"], capture_output=True, text=True)
    assert bad.returncode == 2 and "no implemented op named 'NoSuchOp'" in bad.stderr


@pytest.mark.parametrize("name", sorted(CLASSES))
def test_generated_source_has_no_dead_code(name):
    """No `if True:`, no value assigned and never read, no statement after a return at the
    same level: the generated source is read by people (python -m tileops boundary)."""
    import ast
    src = CLASSES[name].generated_source()
    assert "if True:" not in src
    tree = ast.parse(src)
    for fn in [n for n in ast.walk(tree) if isinstance(n, ast.FunctionDef)]:
        stored = {n.id for n in ast.walk(fn) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store)}
        loaded = {n.id for n in ast.walk(fn) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Load)}
        assert not (stored - loaded), f"{name}.{fn.name}: assigned and never read: {sorted(stored - loaded)}"
        for block in [n for n in ast.walk(fn) if hasattr(n, "body") and isinstance(n.body, list)]:
            for i, stmt in enumerate(block.body[:-1]):
                assert not isinstance(stmt, (ast.Return, ast.Raise)), f"{name}.{fn.name}: code after line {stmt.lineno}"
