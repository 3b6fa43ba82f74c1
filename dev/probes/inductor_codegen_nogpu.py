"""dev/probes/inductor_codegen_nogpu.py: inductor's Triton codegen of the sampler chain's torch
compositions (benchmarks/sampler_chain.py) for a pretended H200, on a machine without a GPU.

    PYTHONPATH=src python dev/probes/inductor_codegen_nogpu.py
        [--fns torch_vllm,torch_vllm_rewritten] [--batch 4,128] [--vocab 128256]
        [--dtypes float32,bfloat16] [--dynamic] [--cubin] [--tb] [--code DIR]

Needs a CUDA build of torch with its triton (the PyPI wheel, e.g. ``pip install torch==2.11.0``
in a venv of its own); no GPU and no driver. Prints a line per function and case:
``codegen ok`` with the kinds of Triton kernels inductor wrote (compiling them needs the
driver: the run stops there), or ``FAIL`` with the error inductor raised while lowering,
scheduling or writing the kernels, after a ``KERNEL`` line naming the kernel it was writing
(its class, numels, range trees and their tensor dims) and ``NODE`` lines (the FX ops fused
into it). With --cubin, inductor also compiles every kernel (each autotuning config) with
Triton to an sm_90 cubin (Triton's own ptxas) and the line says ``compiled``; the kernels
are never loaded or launched. What it does not see: autotuning, and anything at run time.

How: torch.cuda's queries answer for one H200 (sm_90, 132 SMs); the inputs are fake
tensors on cuda:0 (FakeTensorMode), which never reach the driver; the chain is traced on
fake CPU tensors (make_fx; symbolic sizes with --dynamic), its constructors moved to cuda:0,
and handed to inductor's compile_fx. A few steps of compile_fx run real CUDA ops at compile
time; they are stepped around: constant folding off, the attention / pad_mm / misc pattern
sets not built (they match matmuls and randperm, none in the chain), the reinplacing pass's
Tensor.copy_ (whose Python binding sets a CUDA device guard) called as aten.copy_.
"""
from __future__ import annotations

import argparse
import importlib.util
import os
import sys
import traceback
from pathlib import Path

import torch

ROOT = Path(__file__).resolve().parents[2]


class H200Props:
    """What inductor reads of torch.cuda.get_device_properties."""
    name = "NVIDIA H200"
    major, minor = 9, 0
    multi_processor_count = 132
    total_memory = 150_000_000_000
    warp_size = 32
    max_threads_per_multi_processor = 2048
    max_threads_per_block = 1024
    regs_per_multiprocessor = 65536
    shared_memory_per_block = 49152
    shared_memory_per_block_optin = 232448
    shared_memory_per_multiprocessor = 233472
    L2_cache_size = 52428800
    gcnArchName = name
    is_integrated = False
    clock_rate = 1980000
    memory_clock_rate = 3201000
    memory_bus_width = 6144
    uuid = "pretended"
    pci_bus_id = pci_device_id = pci_domain_id = 0


def pretend_h200():
    """Patches torch so inductor plans and writes Triton kernels for cuda:0 without a device.
    torch.cuda's answers first: modules imported after (dynamo's device interface) bind them."""
    c = torch.cuda
    answers = dict(is_available=lambda: True, device_count=lambda: 1, current_device=lambda: 0,
                   get_device_properties=lambda d=None: H200Props(), get_device_capability=lambda d=None: (9, 0),
                   get_device_name=lambda d=None: H200Props.name, _lazy_init=lambda: None,
                   is_initialized=lambda: True, synchronize=lambda d=None: None, set_device=lambda d: None,
                   _exchange_device=lambda i: 0, _maybe_exchange_device=lambda i: 0,
                   get_rng_state=lambda device="cuda": torch.zeros(16, dtype=torch.uint8),
                   set_rng_state=lambda state, device="cuda": None)
    for name, fn in answers.items():
        setattr(c, name, fn)
    import torch._C as C
    C._cuda_getDeviceCount = lambda: 1
    C._cuda_getDevice = lambda: 0

    import torch._dynamo.device_interface as device_interface
    import torch._inductor.config as ic
    import torch._inductor.fx_passes.fuse_attention as fuse_attention
    import torch._inductor.fx_passes.misc_patterns as misc_patterns
    import torch._inductor.fx_passes.pad_mm as pad_mm
    import torch._inductor.fx_passes.reinplace as reinplace
    import torch._subclasses.fake_tensor as fake_tensor
    import torch.cuda.random as cuda_random
    import torch.utils._triton as utils_triton
    from torch.utils import _pytree as pytree
    from triton.backends.compiler import GPUTarget
    from triton.compiler.compiler import make_backend

    for name in ("current_device", "set_device", "device_count", "synchronize", "get_device_properties"):
        setattr(device_interface.CudaInterface, name, staticmethod(answers[name]))
    device_interface.CudaInterface.exchange_device = staticmethod(answers["_exchange_device"])
    device_interface.CudaInterface.maybe_exchange_device = staticmethod(answers["_maybe_exchange_device"])
    device_interface.CudaInterface.is_available = staticmethod(answers["is_available"])
    cuda_random.get_rng_state, cuda_random.set_rng_state = c.get_rng_state, c.set_rng_state
    fake_tensor.init_gpu_context = lambda device: None
    backend = make_backend(GPUTarget("cuda", 90, 32))
    utils_triton.triton_backend = lambda: backend
    fuse_attention._sfdp_init = misc_patterns._misc_patterns_init = pad_mm._pad_mm_init = lambda *a, **k: None
    ic.joint_graph_constant_folding = False
    ic.compile_threads = 1

    def inplace_generalized_scatter(inp, src, view_ops):
        tmp = inp
        for view in view_ops:
            args, kwargs = pytree.tree_map(lambda n: n.meta["val"] if isinstance(n, torch.fx.Node) else n,
                                           (view.args, view.kwargs))
            tmp = view.target(tmp, *args, **kwargs)
        torch.ops.aten.copy_.default(tmp, src)
        return inp
    reinplace._inplace_generalized_scatter = inplace_generalized_scatter


def watch_codegen(state):
    """Records the wrapper's source once inductor has written it (``state["src"]``), and on an
    error while a kernel is written, prints that kernel and the FX ops fused into it."""
    import torch._inductor.codegen.simd as simd
    import torch._inductor.graph as graph

    codegen = graph.GraphLowering.codegen

    def recorded(self, *a, **k):
        out = codegen(self, *a, **k)
        state["src"] = getattr(out[0], "value", str(out[0]))
        return out
    graph.GraphLowering.codegen = recorded

    with_kernel = simd.SIMDScheduling.codegen_node_schedule_with_kernel

    def said(self, node_schedule, kernel):
        try:
            return with_kernel(self, node_schedule, kernel)
        except Exception:
            trees = [(t.prefix, t.tensor_dim, t.numel) for t in kernel.range_trees]
            print(f"KERNEL {type(kernel).__name__} numels {dict(kernel.numels)} no_x_dim "
                  f"{getattr(kernel, 'no_x_dim', None)} trees (prefix, tensor_dim, numel) {trees}", flush=True)
            for n in node_schedule:
                if hasattr(n, "get_name"):
                    print("NODE", n.get_name(), sorted(str(o) for o in n.node.get_origins()), flush=True)
            raise
    simd.SIMDScheduling.codegen_node_schedule_with_kernel = said


def compile_kernels_offline(state):
    """Lets inductor compile its Triton kernels (triton.compile for sm_90: PTX, then ptxas)
    with no driver: the kernels are not loaded and get no launchers. Counts the configs
    compiled in ``state["cubins"]``."""
    import torch._inductor.runtime.triton_heuristics as heuristics
    from torch._inductor.runtime import triton_helpers

    triton_helpers.set_driver_to_gpu = lambda: None
    precompile_config = heuristics.CachingAutotuner._precompile_config

    def counted(self, cfg):
        out = precompile_config(self, cfg)
        state["cubins"] = state.get("cubins", 0) + 1
        return out
    heuristics.CachingAutotuner._precompile_config = counted
    heuristics.CachingAutotuner._make_launchers = lambda self: None


def chain_inputs(B, V, dtype, make):
    """The chain's five inputs (logits in ``dtype``, temperature, k, p, q) made by ``make(shape, dtype)``."""
    f32 = torch.float32
    return [make((B, V), dtype), make((B,), f32), make((B,), torch.int32), make((B,), f32), make((B, V), f32)]


def compile_case(fn, B, V, dtype, dynamic, state, args):
    """Inductor's codegen of ``fn`` at B x V (``dtype`` logits) for cuda:0; prints the outcome line."""
    from torch._dynamo.source import ConstantSource
    from torch._inductor.compile_fx import compile_fx
    from torch._subclasses.fake_tensor import FakeTensorMode
    from torch.fx.experimental.proxy_tensor import make_fx
    from torch.fx.experimental.symbolic_shapes import ShapeEnv

    label = f"{fn.__name__} B={B} V={V} {str(dtype).replace('torch.', '')}{' dynamic' if dynamic else ''}"
    def chain(logits, temperature, k, p, q):   # the five inputs alone (fn may take options)
        return fn(logits, temperature, k, p, q)

    cpu = chain_inputs(B, V, dtype, lambda s, dt: torch.ones(s, dtype=dt))
    with torch.no_grad():
        gm = make_fx(chain, tracing_mode="symbolic" if dynamic else "fake")(*cpu)
    for node in gm.graph.nodes:
        if node.kwargs.get("device") == torch.device("cpu"):
            node.kwargs = {**node.kwargs, "device": torch.device("cuda:0")}
    gm.recompile()
    env = ShapeEnv() if dynamic else None
    mode = FakeTensorMode(shape_env=env)
    if dynamic:
        B = env.create_symintnode(env.create_symbol(B, source=ConstantSource("B")), hint=B)
        V = env.create_symintnode(env.create_symbol(V, source=ConstantSource("V")), hint=V)
    with mode:
        inputs = chain_inputs(B, V, dtype, lambda s, dt: torch.empty(s, dtype=dt, device="cuda:0"))
    state.clear()
    try:
        with torch.no_grad():
            compile_fx(gm, inputs)
        said = f": {state.get('cubins', 0)} kernel configs compiled to cubins (those found in the caches not counted)"
        print(f"compiled {label}" + (said if args.cubin else ""), flush=True)
    except Exception as e:
        if "src" not in state:
            if args.tb:
                traceback.print_exc()
            print(f"FAIL {label}: {type(e).__name__}: {str(e).splitlines()[0][:300]}", flush=True)
            return
        src = state["src"]
        kinds = sorted({line.split("@triton_heuristics.")[1].split("(")[0]
                        for line in src.splitlines() if "@triton_heuristics." in line})
        if args.code:
            os.makedirs(args.code, exist_ok=True)
            Path(args.code, label.replace(" ", "_") + ".py").write_text(src)
        then = str(e).splitlines()[0][:100] if str(e) else type(e).__name__
        print(f"codegen ok {label}: Triton kernels {kinds} (then, needing the driver: {then})", flush=True)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--fns", default="torch_vllm,torch_vllm_rewritten",
                    help="functions of benchmarks/sampler_chain.py taking the chain's five inputs")
    ap.add_argument("--batch", default="4,128")
    ap.add_argument("--vocab", default="128256")
    ap.add_argument("--dtypes", default="float32", help="the logits' dtypes (float32, bfloat16)")
    ap.add_argument("--dynamic", action="store_true", help="B and V symbolic (as torch.compile(dynamic=True))")
    ap.add_argument("--tb", action="store_true", help="print the traceback of a failure")
    ap.add_argument("--code", help="write each case's generated wrapper and kernels to this folder")
    ap.add_argument("--cubin", action="store_true",
                    help="also compile every kernel with Triton to a cubin for sm_90 (each autotuning config)")
    args = ap.parse_args(argv)
    if not torch.backends.cuda.is_built():
        print("needs a CUDA build of torch (no GPU needed)", file=sys.stderr)
        return 2
    state = {}
    pretend_h200()   # before the benchmark's imports (tileops imports dynamo)
    watch_codegen(state)
    if args.cubin:
        compile_kernels_offline(state)
    spec = importlib.util.spec_from_file_location("sampler_chain", ROOT / "benchmarks" / "sampler_chain.py")
    sc = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(sc)
    print(f"torch {torch.__version__}", flush=True)
    for name in args.fns.split(","):
        for V in (int(v) for v in args.vocab.split(",")):
            for B in (int(b) for b in args.batch.split(",")):
                for dtype in args.dtypes.split(","):
                    compile_case(getattr(sc, name), B, V, getattr(torch, dtype), args.dynamic, state, args)
    return 0


if __name__ == "__main__":
    sys.exit(main())
