"""The kernel changes parked under dev/patches (measured on a GPU or waiting for their
first run there) still apply to the shipped sources, by git and by dev/lab.py's applier
(what dev/time_top_k.py's patched variants use on the device), and the kernels they patch
still compile (nvcc, sm_90a, without spills): a change to a shipped file that breaks a
parked patch shows here. Skipped where git or nvcc is not installed."""
import os
import shutil
import subprocess
import sys

import pytest
from helpers import nvcc, nvcc_bare

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
PATCHES = sorted(f for f in os.listdir(os.path.join(ROOT, "dev", "patches")) if f.endswith(".patch"))
GIT = shutil.which("git")
NEEDS_NVCC = pytest.mark.skipif(nvcc() is None, reason="nvcc is not installed: the CUDA C compile check needs it")


@pytest.fixture
def lab(monkeypatch):
    monkeypatch.syspath_prepend(os.path.join(ROOT, "dev"))
    import lab as dev_lab
    yield dev_lab
    sys.modules.pop("lab", None)


@pytest.mark.skipif(GIT is None, reason="git is not installed: the patch check needs it")
@pytest.mark.parametrize("name", PATCHES)
def test_a_parked_patch_applies_by_git(name):
    r = subprocess.run([GIT, "apply", "--check", os.path.join("dev", "patches", name)], cwd=ROOT,
                       capture_output=True, text=True)
    assert r.returncode == 0, r.stderr


def test_the_labs_applier_applies_each_hunk_once_or_says_why(lab):
    text = "a\nb\nc\nd\n"
    patch = "--- a/csrc/ops/x.cu\n+++ b/csrc/ops/x.cu\n@@ -1,3 +1,3 @@\n a\n-b\n+B\n c\n"
    assert lab.apply_patch(text, patch, "csrc/ops/x.cu") == "a\nB\nc\nd\n"
    with pytest.raises(ValueError, match="matches 0 places"):
        lab.apply_patch("a\nc\n", patch, "csrc/ops/x.cu")
    with pytest.raises(ValueError, match="no hunk for csrc/ops/y.cu"):
        lab.apply_patch(text, patch, "csrc/ops/y.cu")


@NEEDS_NVCC
@pytest.mark.parametrize("patches,marker", [(("mask_top_p_z_from_first_pass.patch",), "tkp_key_of_max"),
                                            (("sampling_cluster_sums_pulled.patch",), "smp_ld_cluster_pair"),
                                            (("sampling_cluster_sums_pulled.patch",
                                              "mask_top_p_z_from_first_pass.patch"), "tkp_key_of_max")])
def test_the_parked_sampling_patches_compile_without_spills(tmp_path, lab, patches, marker):
    """The selection kernels of the real vocabularies with the patches applied (one CTA and
    clusters of 8; dev/time_top_k.py's variants c8u, c8z, c8uz)."""
    import torch

    from tileops._dtypes import CODE
    from tileops.kernels.sampling import cuda_sampling as K
    for dt in (torch.float32, torch.bfloat16, torch.float16):
        for c in (1, 8):
            for spec in (K.top_k_top_p_mask_specialisation(CODE[dt], 128256, True, 3, True, True, c),
                         K.top_k_specialisation(CODE[dt], 152064, 50, True, True, c)):
                source, kernel, opts, _ = spec
                path = lab.patched_source(source, patches)
                with open(path) as f:
                    assert marker in f.read() or "top_k.cu" in source
                nvcc_bare(tmp_path, path, kernel, opts)
