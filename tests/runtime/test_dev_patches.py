"""The kernel changes parked under dev/patches (measured on a GPU, waiting for their GPU
tests) still apply to the shipped sources, and the kernels they patch still compile
(nvcc, sm_90a, no spills): a change to a shipped file that breaks a parked patch shows
here. Skipped where git or nvcc is not installed."""
import os
import shutil
import subprocess

import pytest
from helpers import nvcc, nvcc_bare

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
PATCHES = sorted(f for f in os.listdir(os.path.join(ROOT, "dev", "patches")) if f.endswith(".patch"))
GIT = shutil.which("git")


@pytest.mark.skipif(GIT is None, reason="git is not installed: the patch check needs it")
@pytest.mark.parametrize("name", PATCHES)
def test_a_parked_patch_applies(name):
    r = subprocess.run([GIT, "apply", "--check", os.path.join("dev", "patches", name)], cwd=ROOT,
                       capture_output=True, text=True)
    assert r.returncode == 0, r.stderr


@pytest.mark.skipif(GIT is None or nvcc() is None, reason="git and nvcc are needed to compile the patched kernel")
def test_the_parked_mask_patch_compiles_without_spills(tmp_path, monkeypatch):
    """The patched sampling sources in a copy of csrc/ops/sampling, read by the runtime from
    there: the mask's builds at the real vocabularies."""
    import torch

    from tileops import runtime
    from tileops._dtypes import CODE
    from tileops.kernels.sampling import cuda_sampling as K
    src = tmp_path / "src"
    shutil.copytree(os.path.join(ROOT, "csrc", "ops"), src / "csrc" / "ops")
    subprocess.run([GIT, "init", "-q"], cwd=src, check=True)
    r = subprocess.run([GIT, "apply", os.path.join(ROOT, "dev", "patches", "mask_top_p_z_from_first_pass.patch")],
                       cwd=src, capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    monkeypatch.setattr(runtime, "CHECKOUT_SOURCE_DIR", str(src / "csrc" / "ops"))
    assert "tkp_key_of_max" in runtime.source("sampling/top_k_top_p_mask.cu")   # the patched text
    for dt in (torch.float32, torch.bfloat16, torch.float16):
        for c in (1, 8):
            nvcc_bare(tmp_path, *K.top_k_top_p_mask_specialisation(CODE[dt], 128256, True, 3, True, True, c)[:3])
