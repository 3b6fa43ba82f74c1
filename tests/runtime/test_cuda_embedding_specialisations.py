"""EmbeddingFwdOp's CUDA builds compile with nvcc (sm_90a, no GPU needed) without spills,
from the text the runtime hands NVRTC (skipped where nvcc is not installed), and the
launcher compiles only the build a call takes (the runtime stubbed: no GPU needed)."""

import pytest
from helpers import nvcc, nvcc_build

from tileops.kernels.embedding import embedding as K

NVCC = nvcc()


def test_the_vector_path_needs_aligned_rows_of_whole_groups():
    assert "-DTILEOPS_VEC=8" in K.cuda_specialisation(1, 4, 4096, True)[2]
    assert "-DTILEOPS_VEC=1" in K.cuda_specialisation(1, 4, 4096, False)[2]
    assert "-DTILEOPS_VEC=1" in K.cuda_specialisation(1, 4, 4097, True)[2]
    assert "-DTILEOPS_ID64=0" in K.cuda_specialisation(0, 3, 64, True)[2]


@pytest.mark.skipif(NVCC is None, reason="nvcc is not installed: the CUDA C compile check needs it")
@pytest.mark.parametrize("dt,idt,H,aligned", [(1, 4, 4096, True), (2, 3, 3584, True), (0, 4, 4097, True),
                                              (1, 3, 7, False), (0, 4, 64, True)])
@pytest.mark.parametrize("unroll", sorted({1, K.UNROLL}))
def test_builds_compile_without_spills(tmp_path, dt, idt, H, aligned, unroll):
    source, kernel, opts, groups = K.cuda_specialisation(dt, idt, H, aligned, unroll)
    assert f"-DTILEOPS_UNROLL={unroll}" in opts
    nvcc_build(tmp_path, source, kernel, opts)


def test_the_launcher_compiles_only_the_build_a_call_takes(monkeypatch):
    """The CUDA launchable (no GPU: runtime.build and the launch recorded) compiles nothing
    when made, the UNROLL = 1 build on a small call, the UNROLL build on the first call of
    >= UNROLL_FROM groups, each once; during capture (nothing may be compiled) a call takes
    the build there is, and with none it raises NotReadyDuringCaptureError saying to warm up."""
    import torch

    from tileops import NotReadyDuringCaptureError, runtime
    builds, launches, capturing = [], [], [False]

    def build(device, src, kernel, opts, fmt, pdl=False):
        assert pdl, "the embedding kernel is launched with programmatic dependent launch"
        if capturing[0]:
            raise NotReadyDuringCaptureError("kernel tileops_embedding is not built; capturing")
        builds.append(opts)
        return 100 + len(builds)
    monkeypatch.setattr(runtime, "build", build)
    monkeypatch.setattr(K._C, "cuda_launch", lambda h, gx, *rest: launches.append((h, gx)))
    monkeypatch.setattr(torch._C, "_cuda_getCurrentRawStream", lambda device: 0, raising=False)
    H = 4096                                            # fp16: 512 groups a row
    launch = K._build_cuda(K.CudaBuild(device=0, dtype=1, id_dtype=4, H=H, vec=True)).unchecked
    assert builds == []
    weight = torch.zeros(2, H, dtype=torch.float16)
    small, large = K.UNROLL_FROM // 512 - 1, K.UNROLL_FROM // 512   # tokens either side of the switch

    def call(tokens):
        launch(torch.zeros(tokens, dtype=torch.int64), weight, torch.empty(0))
    capturing[0] = True
    with pytest.raises(NotReadyDuringCaptureError, match="call the op once at this shape before capture"):
        call(small)
    capturing[0] = False
    call(small)
    call(small)
    assert [f"-DTILEOPS_UNROLL={u}" in o for o in builds for u in (1, K.UNROLL)] == [True, False]
    assert launches == [(101, -(-small * 512 // K.THREADS))] * 2
    capturing[0] = True                                 # the large build is not there: the small one serves
    call(large)
    assert launches[-1] == (101, -(-large * 512 // K.THREADS)) and len(builds) == 1
    capturing[0] = False
    call(large)
    call(large)
    assert len(builds) == 2 and f"-DTILEOPS_UNROLL={K.UNROLL}" in builds[1]
    assert launches[-2:] == [(102, -(-large * 512 // (K.THREADS * K.UNROLL)))] * 2
    call(0)                                             # no ids: no launch
    assert len(launches) == 5
