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



def half_ulp(t64):
    """Half a float32 ulp of each value of a float64 tensor (the bound of one rounding)."""
    import math

    import torch
    f = t64.float().abs()
    return (torch.nextafter(f, torch.full_like(f, math.inf)) - f).double() / 2


def assert_one_rounding(got, want64, extra, what):
    """A float32 result within one rounding of float64 values: |got - want64| <= half a
    float32 ulp + `extra` everywhere (on want64's device); returns the max error."""
    import torch
    assert got.dtype == torch.float32 and got.shape == want64.shape, (got.dtype, got.shape, want64.shape)
    err = (got.to(want64.device).double() - want64).abs()
    bound = half_ulp(want64) + extra
    assert bool((err <= bound).all()), f"{what}: max error {err.max().item():.3g}, " \
                                       f"{int((err > bound).sum())} values past half an ulp + {extra:g}"
    return err.max().item() if err.numel() else 0.0


def float32_ulps(a, b):
    """Distance in float32 ulps between two float32 tensors of finite values (int64)."""
    import torch

    def ordered(t):
        i = t.contiguous().view(torch.int32).to(torch.int64)
        return torch.where(i < 0, -(2 ** 31) - i, i)
    return (ordered(a) - ordered(b)).abs()


def hf_llama3_inv_freq(inv, factor, low_freq_factor, high_freq_factor, original_max_position_embeddings):
    """Hugging Face's `_compute_llama3_parameters` (rope_type "llama3"), written here over
    the default inverse frequencies `inv` (in their dtype): the long wavelengths divided by
    `factor`, the short kept, the band between blended. Returns (scaled, band mask)."""
    import math

    import torch
    old, lo, hi = original_max_position_embeddings, low_freq_factor, high_freq_factor
    wavelen = 2 * math.pi / inv
    llama = torch.where(wavelen > old / lo, inv / factor, inv)
    smooth = (old / wavelen - lo) / (hi - lo)
    smoothed = (1 - smooth) * llama / factor + smooth * llama
    medium = ~(wavelen < old / hi) * ~(wavelen > old / lo)
    return torch.where(medium, smoothed, llama), medium


def nvcc():
    """The nvcc on this machine, or None (compile checks of CUDA C skip without it)."""
    import os
    import shutil
    return shutil.which("nvcc") or ("/usr/local/cuda/bin/nvcc" if os.path.exists("/usr/local/cuda/bin/nvcc") else None)


def nvcc_build(tmp_path, source_name, kernel, opts, max_spill=0):
    """Compiles the text the runtime hands NVRTC for `source_name` with nvcc (sm_90a) and
    asserts it compiled `kernel` with at most max_spill bytes of local-memory spills (0:
    none); returns nvcc's stderr."""
    import re
    import subprocess

    from tileops import runtime
    src = tmp_path / "k.cu"
    src.write_text(runtime.source(source_name))
    r = subprocess.run([nvcc(), "-cubin", "-arch=sm_90a", "-Xptxas", "-v", *opts, "-o", str(tmp_path / "k.cubin"),
                        str(src)], capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr[-3000:]
    assert f"Compiling entry function '{kernel}'" in r.stderr, r.stderr[-2000:]
    assert all(int(v) <= max_spill for v in re.findall(r"(\d+) bytes (?:spill|stack)", r.stderr)), r.stderr[-2000:]
    return r.stderr


def nvcc_bare(tmp_path, source_name, kernel, opts, max_spill=0):
    """nvcc_build without any CUDA header, as NVRTC --minimal compiles (the runtime's way):
    nvcc's implicit cuda_runtime.h is an empty file, so a kernel that leans on a header
    (atomicAdd, __syncthreads, ceilf, ...) fails here as it would at run time. Returns
    nvcc's stderr; asserts at most max_spill bytes of local-memory spills (0: none)."""
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
    assert all(int(v) <= max_spill for v in re.findall(r"(\d+) bytes (?:spill|stack)", r.stderr)), r.stderr[-2000:]
    return r.stderr


def nvcc_text(tmp_path, source_name, kernel, opts):
    """The kernel's machine code (readelf's hex dump of its .text section) of an nvcc_bare
    build: equal texts are the same SASS, byte for byte; a longer one is more code."""
    import subprocess
    nvcc_bare(tmp_path, source_name, kernel, opts)
    r = subprocess.run(["readelf", "-x", f".text.{kernel}", str(tmp_path / "bare.cubin")], capture_output=True,
                       text=True)
    assert r.returncode == 0 and "0x" in r.stdout, r.stderr
    return r.stdout


def _toolkit_nvcc():
    """The toolkit's own nvcc (a wrapper on PATH may point at it), found beside its nvvm/."""
    import os
    for cand in (os.path.realpath(nvcc() or ""), "/usr/local/cuda/bin/nvcc"):
        if cand and os.path.isdir(os.path.join(os.path.dirname(os.path.dirname(cand)), "nvvm", "bin")):
            return cand
    return nvcc()


def op_key(op_class, n, drop=(), **params):
    """The instance key `op_class` issues as its n-th: "<Op>#<n>(<param>=<repr>, ...)" with
    every constructor param of its manifest entry in the entry's order, each as given in
    `params` or else at its manifest default (a dtype by its name, as keys write it), so
    that a new param does not break tests that spell keys. `drop`: params left out (a key
    that lacks them); params the entry does not have (`target`, or one it does not know)
    follow, in the order given. tests/test_per_call_work.py pins the format literally."""
    import dataclasses

    import torch

    def literal(v):
        return str(v).removeprefix("torch.") if isinstance(v, torch.dtype) else v
    spec = {p.name: p for p in op_class._entry.params}
    parts = []
    for name, p in spec.items():
        if name in drop:
            continue
        if name not in params and p.default is dataclasses.MISSING:
            raise TypeError(f"op_key: {op_class.__name__}'s param {name!r} has no default: give it")
        parts.append(f"{name}={literal(params[name] if name in params else p.default)!r}")
    parts += [f"{name}={literal(v)!r}" for name, v in params.items() if name not in spec]
    return f"{op_class.__name__}#{n}({', '.join(parts)})"


def load_script(path, name):
    """The module of a script outside the package (benchmarks/, dev/) loaded from its path."""
    import importlib.util
    spec = importlib.util.spec_from_file_location(name, path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod
