"""What several test files do alike: compile keeping the captured graphs, copy a call's
arguments, compare two calls' outputs."""
import torch


def compile_keeping_graphs(fn, **kwargs):
    """torch.compile(fn, fullgraph=True, **kwargs) with inductor, and the list the graphs
    it captures are appended to."""
    graphs = []

    def backend(gm, example_inputs):
        graphs.append(gm)
        from torch._inductor.compile_fx import compile_fx
        return compile_fx(gm, example_inputs)
    return torch.compile(fn, fullgraph=True, backend=backend, **kwargs), graphs


def clone(v):
    """A copy of a tensor; anything else as is."""
    return v.clone() if isinstance(v, torch.Tensor) else v


def clone_call(args, kwargs):
    """Copies of a call's tensor arguments, for a second call that may write them."""
    return [clone(a) for a in args], {k: clone(v) for k, v in kwargs.items()}


def as_tuple(result):
    """An op's result as a tuple of its outputs."""
    return result if isinstance(result, tuple) else (result,)


def assert_outputs_match(expected, got, check):
    """Two results have as many outputs, None in the same places, and check(e, g) holds
    for each pair of the others (check raises when they differ)."""
    expected, got = as_tuple(expected), as_tuple(got)
    assert len(expected) == len(got), (len(expected), len(got))
    for e, g in zip(expected, got):
        if e is None:
            assert g is None
        else:
            check(e, g)



def nvcc():
    """The nvcc on this machine, or None (compile checks of CUDA C skip without it)."""
    import os
    import shutil
    return shutil.which("nvcc") or ("/usr/local/cuda/bin/nvcc" if os.path.exists("/usr/local/cuda/bin/nvcc") else None)


def nvcc_build(tmp_path, source_name, kernel, opts):
    """Compiles the text the runtime hands NVRTC for `source_name` with nvcc (sm_90a) and
    asserts it compiled `kernel` without local-memory spills; returns nvcc's stderr."""
    import re
    import subprocess

    from tileops import runtime
    src = tmp_path / "k.cu"
    src.write_text(runtime.source(source_name))
    r = subprocess.run([nvcc(), "-cubin", "-arch=sm_90a", "-Xptxas", "-v", *opts, "-o", str(tmp_path / "k.cubin"),
                        str(src)], capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr[-3000:]
    assert f"Compiling entry function '{kernel}'" in r.stderr, r.stderr[-2000:]
    assert not any(int(v) for v in re.findall(r"(\d+) bytes (?:spill|stack)", r.stderr)), r.stderr[-2000:]
    return r.stderr


def nvcc_bare(tmp_path, source_name, kernel, opts):
    """nvcc_build without any CUDA header, as NVRTC --minimal compiles (the runtime's way):
    nvcc's implicit cuda_runtime.h is an empty file, so a kernel that leans on a header
    (atomicAdd, __syncthreads, ceilf, ...) fails here as it would at run time. Returns
    nvcc's stderr; asserts no local-memory spills."""
    import os
    import re
    import subprocess

    from tileops import runtime
    inc = tmp_path / "bare_include"
    inc.mkdir(exist_ok=True)
    (inc / "cuda_runtime.h").write_text("")
    src = tmp_path / "bare.cu"
    src.write_text(runtime.source(source_name))
    top = os.path.dirname(os.path.dirname(os.path.realpath(_toolkit_nvcc())))
    env = dict(os.environ, PATH=os.pathsep.join([os.path.join(top, "nvvm", "bin"), os.path.join(top, "bin"),
                                                 os.environ.get("PATH", "")]))
    r = subprocess.run([_toolkit_nvcc(), "-noprof", f"-I{inc}", "-cubin", "-arch=sm_90a", "-Xptxas", "-v", *opts,
                        "-o", str(tmp_path / "bare.cubin"), str(src)], capture_output=True, text=True, timeout=300,
                       env=env)
    assert r.returncode == 0, r.stderr[-3000:]
    assert f"Compiling entry function '{kernel}'" in r.stderr, r.stderr[-2000:]
    assert not any(int(v) for v in re.findall(r"(\d+) bytes (?:spill|stack)", r.stderr)), r.stderr[-2000:]
    return r.stderr


def _toolkit_nvcc():
    """The toolkit's own nvcc (a wrapper on PATH may point at it), found beside its nvvm/."""
    import os
    for cand in (os.path.realpath(nvcc() or ""), "/usr/local/cuda/bin/nvcc"):
        if cand and os.path.isdir(os.path.join(os.path.dirname(os.path.dirname(cand)), "nvvm", "bin")):
            return cand
    return nvcc()
