"""Saved programs across processes on a GPU: the CPU test's program (RMSNormFwdOp with
eps=0.25, then SiluAndMulFwdOp) on cuda:0, saved by torch.export.save and as an
AOTInductor package in one process, loaded in another where another RMSNormFwdOp (eps=1e-6)
took '#0' first: bit-identical to the saving process (same card, same kernels)."""
import pytest

from test_saved_programs import save_and_load_aoti, save_and_load_exported


@pytest.mark.parametrize("first", ["other", "none"])
def test_gpu_exported_program_in_a_new_process_runs_with_its_own_params(tmp_path, first):
    save_and_load_exported(tmp_path, first, "cuda")


def test_gpu_aotinductor_package_in_a_new_process_runs_with_its_own_params(tmp_path):
    save_and_load_aoti(tmp_path, "cuda")
