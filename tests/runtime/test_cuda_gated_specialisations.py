"""The CUDA launch rule of the activation family's gated ops
(src/tileops/kernels/activation/cuda_gated.py) obeys the constraints at the top of
csrc/ops/activation/gated_act.cuh, and every kind of specialisation it produces compiles
with nvcc (sm_90a, no GPU needed) without local-memory spills, from the source file and
from the text the runtime hands NVRTC (its includes spliced in, common/ included). The
compile checks are skipped where nvcc is not installed."""
import os
import re
import shutil
import subprocess

import pytest

from tileops import runtime
from tileops.kernels.activation import cuda_gated as G

ROOT = os.path.join(os.path.dirname(__file__), "..", "..")
NVCC = shutil.which("nvcc") or ("/usr/local/cuda/bin/nvcc" if os.path.exists("/usr/local/cuda/bin/nvcc") else None)
OPS = ("gelu_and_mul", "gelu_tanh_and_mul", "silu_and_mul")


def test_the_ops_are_found_from_their_sources():
    assert G.ops() == OPS


def _cases(ns):
    """(op, dtype code, n, vec) for the vector widths a call can get."""
    return [(op, dt, n, vec) for op in G.ops() for dt in (0, 1, 2) for n in ns
            for vec in sorted({G.vec_for(dt, n, False), G.vec_for(dt, n, True)})]


def test_launch_shapes_obey_the_kernel_constraints():
    for op, dt, n, vec in _cases((1, 7, 8, 1001, 4096, 14336, 18944, 28672, 100003)):
        source, kernel, opts, threads, unroll = G.specialisation(op, dt, n, vec)
        d = dict(o[2:].split("=") for o in opts)
        assert source == f"activation/{op}.cu" and os.path.exists(os.path.join(ROOT, "csrc", "ops", source))
        assert kernel == f"tileops_{op}"
        assert (int(d["TILEOPS_DTYPE"]), int(d["TILEOPS_N"]), int(d["TILEOPS_VEC"])) == (dt, n, vec)
        assert 32 <= threads <= 1024 and threads % 32 == 0 and int(d["TILEOPS_THREADS"]) == threads
        assert int(d["TILEOPS_UNROLL"]) == unroll == G.UNROLL and 1 <= unroll <= 8


def test_the_vector_path_needs_aligned_pointers_and_half_rows_of_16_bytes():
    assert G.vec_for(1, 14336, True) == 8 and G.vec_for(1, 14336, False) == 1
    assert G.vec_for(1, 7, True) == 1 and G.vec_for(0, 4, True) == 4 and G.vec_for(0, 6, True) == 1
    assert G.vec_for(2, 8, True) == 8


def test_bad_builds_are_refused_before_compiling():
    with pytest.raises(ValueError, match="n >= 1"):
        G.specialisation("silu_and_mul", 1, 0, 1)
    with pytest.raises(ValueError, match="vec 4"):
        G.specialisation("silu_and_mul", 1, 8, 4)
    with pytest.raises(ValueError, match="dtype code 3"):
        G.specialisation("silu_and_mul", 3, 8, 1)


def _nvcc(tmp_path, opts, src):
    return subprocess.run([NVCC, "-cubin", "-arch=sm_90a", "-Xptxas", "-v", *opts, "-o", str(tmp_path / "k.cubin"),
                           src], capture_output=True, text=True, timeout=300)


@pytest.mark.skipif(NVCC is None, reason="nvcc is not installed: the CUDA C compile check needs it")
@pytest.mark.parametrize("op,dt,n,vec", _cases((1, 7, 14336)))
@pytest.mark.parametrize("unroll", sorted({1, 4, G.UNROLL}))
def test_specialisation_compiles_without_spills(tmp_path, op, dt, n, vec, unroll):
    source, kernel, opts, *_ = G.specialisation(op, dt, n, vec, unroll)
    r = _nvcc(tmp_path, opts, os.path.join(ROOT, "csrc", "ops", source))
    assert r.returncode == 0, r.stderr[-3000:]
    assert f"Compiling entry function '{kernel}'" in r.stderr, r.stderr[-2000:]
    assert not any(int(v) for v in re.findall(r"(\d+) bytes (?:spill|stack)", r.stderr)), r.stderr[-2000:]


@pytest.mark.skipif(NVCC is None, reason="nvcc is not installed: the CUDA C compile check needs it")
@pytest.mark.parametrize("op", OPS)
def test_the_text_nvrtc_gets_compiles_alone(tmp_path, op):
    """runtime.source splices gated_act.cuh and ../common/rows_common.cuh in: the text
    compiles from a folder with no other file in it (as NVRTC sees it: no include path)."""
    text = runtime.source(f"activation/{op}.cu")
    assert "#include" not in "".join(ln for ln in text.splitlines() if ln.lstrip().startswith("#"))
    assert "TILEOPS_ROWS_COMMON_CUH" in text
    src = tmp_path / "alone.cu"
    src.write_text(text)
    _, kernel, opts, *_ = G.specialisation(op, 1, 14336, 8)
    r = _nvcc(tmp_path, opts, str(src))
    assert r.returncode == 0 and f"'{kernel}'" in r.stderr, r.stderr[-3000:]


@pytest.mark.skipif(NVCC is None, reason="nvcc is not installed: the CUDA C compile check needs it")
def test_a_source_without_its_act_is_a_compile_error(tmp_path):
    src = tmp_path / "k.cu"
    src.write_text('#define TILEOPS_ACT 3\n#define TILEOPS_GATED_KERNEL k\n#include "gated_act.cuh"\n')
    shutil.copy(os.path.join(ROOT, "csrc", "ops", "activation", "gated_act.cuh"), tmp_path)
    (tmp_path.parent / "common").mkdir(exist_ok=True)
    shutil.copy(os.path.join(ROOT, "csrc", "ops", "common", "rows_common.cuh"), tmp_path.parent / "common")
    r = _nvcc(tmp_path, ["-DTILEOPS_DTYPE=1", "-DTILEOPS_N=8", "-DTILEOPS_VEC=8", "-DTILEOPS_THREADS=256"], str(src))
    assert r.returncode != 0 and "TILEOPS_ACT must be" in r.stderr, r.stderr[-2000:]


@pytest.mark.skipif(NVCC is None, reason="nvcc is not installed: the CUDA C compile check needs it")
@pytest.mark.parametrize("op", OPS)
@pytest.mark.parametrize("dt,n,vec", [(1, 14336, 8), (2, 14336, 8), (2, 7, 1), (0, 14336, 4)])
def test_cast_before_mul_builds_compile_without_spills(tmp_path, op, dt, n, vec):
    """cast_before_mul adds one define to the same build (act(a) rounded to the dtype)."""
    plain = G.specialisation(op, dt, n, vec)
    source, kernel, opts, threads, unroll = G.specialisation(op, dt, n, vec, cast=True)
    assert opts == plain[2] + ("-DTILEOPS_CAST_BEFORE_MUL=1",) and (threads, unroll) == plain[3:]
    r = _nvcc(tmp_path, opts, os.path.join(ROOT, "csrc", "ops", source))
    assert r.returncode == 0, r.stderr[-3000:]
    assert f"Compiling entry function '{kernel}'" in r.stderr, r.stderr[-2000:]
    assert not any(int(v) for v in re.findall(r"(\d+) bytes (?:spill|stack)", r.stderr)), r.stderr[-2000:]


def test_only_small_calls_of_the_erf_gelu_take_the_element_build():
    assert G.ELEMS_OPS == ("gelu_and_mul",) and G.ELEMS_MAX == 65536
    assert all(G.elems_for("gelu_and_mul", rows, n) for rows, n in ((1, 14336), (4, 14336), (2, 28672), (1, 65536)))
    assert not any(G.elems_for("gelu_and_mul", rows, n) for rows, n in ((0, 14336), (4, 28672), (32, 14336),
                                                                        (1, 65537)))
    assert not G.elems_for("silu_and_mul", 1, 14336) and not G.elems_for("gelu_tanh_and_mul", 1, 14336)
    plain, elems = G.specialisation("gelu_and_mul", 1, 14336, 8), G.specialisation("gelu_and_mul", 1, 14336, 8,
                                                                                     elems=True)
    assert elems[2] == plain[2] + ("-DTILEOPS_GATED_ELEMS=1",) and elems[3] == plain[3]


@pytest.mark.skipif(NVCC is None, reason="nvcc is not installed: the CUDA C compile check needs it")
@pytest.mark.skipif(shutil.which("readelf") is None, reason="readelf (binutils) is not installed: the check reads the cubin")
@pytest.mark.parametrize("op", OPS)
@pytest.mark.parametrize("dt,n,vec", [(1, 14336, 8), (2, 18944, 8), (0, 28672, 4), (1, 7, 1)])
@pytest.mark.parametrize("cast", [False, True])
def test_the_element_build_compiles_without_spills_to_less_code(tmp_path, op, dt, n, vec, cast):
    """The element build (a thread per element: one copy of the activation's code) is the
    point of the small-call rule: L2-cold, a one-token call fetches its code from DRAM."""
    from helpers import nvcc_text
    source, kernel, opts, *_ = G.specialisation(op, dt, n, vec, cast=cast, elems=True)
    elems = nvcc_text(tmp_path, source, kernel, opts)
    group = nvcc_text(tmp_path, source, kernel, G.specialisation(op, dt, n, vec, cast=cast)[2])
    assert len(elems) < len(group), (len(elems), len(group))


def test_the_launcher_takes_the_element_build_once_made_and_the_group_build_while_capturing(monkeypatch):
    """No GPU (runtime.build and the launches recorded): the group build is made with the
    launcher; a small call while the stream is captured launches it (the element build
    is not made); the next small call outside a capture makes the element build, once, and
    launches it over ceil(rows n / THREADS) blocks; a large call keeps the group build."""
    import torch

    from tileops import NotReadyDuringCaptureError, runtime
    builds, launches, capturing = {}, [], [False]

    def build(device, src, kernel, opts, fmt, pdl=False):
        if capturing[0] and opts not in builds:
            raise NotReadyDuringCaptureError(f"kernel {kernel} is not built; capturing")
        return builds.setdefault(opts, 100 + len(builds))
    monkeypatch.setattr(runtime, "build", build)
    from tileops import _C
    monkeypatch.setattr(_C, "cuda_launch", lambda h, gx, gy, gz, bx, *rest: launches.append((h, gx, bx)))
    monkeypatch.setattr(torch._C, "_cuda_getCurrentRawStream", lambda device: 0, raising=False)
    n = 14336
    launch = G.build(0, "gelu_and_mul", 1, n, 8)
    group = builds[G.specialisation("gelu_and_mul", 1, n, 8)[2]]
    x, y = torch.empty(1, 2 * n, dtype=torch.float16), torch.empty(1, n, dtype=torch.float16)
    capturing[0] = True
    launch(x, y)
    assert launches[-1] == (group, G.groups(1, n) // G.THREADS, G.THREADS) and len(builds) == 1
    capturing[0] = False
    launch(x, y)
    launch(x, y)
    elems = builds[G.specialisation("gelu_and_mul", 1, n, 8, elems=True)[2]]
    assert launches[-2:] == [(elems, n // G.THREADS, G.THREADS)] * 2 and len(builds) == 2
    big_x, big_y = torch.empty(32, 2 * n, dtype=torch.float16), torch.empty(32, n, dtype=torch.float16)
    launch(big_x, big_y)
    assert launches[-1] == (group, 32 * G.groups(1, n) // G.THREADS, G.THREADS)
    # a call of WIDE_MIN_GROUPS groups: the 128-thread build while capturing, then the wide
    # build, made once, over ceil(groups / WIDE_THREADS) blocks of WIDE_THREADS
    rows = G.WIDE_MIN_GROUPS // G.groups(1, n) + 1
    wide_x, wide_y = torch.empty(rows, 2 * n, dtype=torch.float16), torch.empty(rows, n, dtype=torch.float16)
    capturing[0] = True
    launch(wide_x, wide_y)
    assert launches[-1] == (group, rows * G.groups(1, n) // G.THREADS, G.THREADS) and len(builds) == 2
    capturing[0] = False
    launch(wide_x, wide_y)
    launch(wide_x, wide_y)
    wide = builds[G.specialisation("gelu_and_mul", 1, n, 8, threads=G.WIDE_THREADS)[2]]
    assert launches[-2:] == [(wide, rows * G.groups(1, n) // G.WIDE_THREADS, G.WIDE_THREADS)] * 2
    ng = G.groups(1, n)
    assert len(builds) == 3 and G.wide_for(rows, ng) and not G.wide_for(rows - 2, ng)
    # the element build's calls are never wide (wide_for need not ask elems_for)
    assert G.ELEMS_MAX < G.WIDE_MIN_GROUPS


def test_build_unless_capturing_gives_none_only_for_a_capture(monkeypatch):
    from tileops import BuildError, NotReadyDuringCaptureError, runtime

    def refuse(*a, **k):
        raise NotReadyDuringCaptureError("capturing")
    monkeypatch.setattr(runtime, "build", refuse)
    assert runtime.build_unless_capturing(0, "activation/gelu_and_mul.cu", "k", (), "ppq") is None

    def fail(*a, **k):
        raise BuildError("NVRTC: error")
    monkeypatch.setattr(runtime, "build", fail)
    with pytest.raises(BuildError):
        runtime.build_unless_capturing(0, "activation/gelu_and_mul.cu", "k", (), "ppq")
