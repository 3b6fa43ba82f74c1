"""Launch-shape sweep of the RMSNorm CUDA kernels (the lab copy, dev/cuda/rms_norm_lab.cu,
whose default builds are the shipped csrc/ops/norm/rms_norm.cu cubins) on one GPU.

    python dev/sweep_norm.py [--mode shapes|policies|cluster|bulk] [--only 2048x4096,...]
                                    [--out PATH.json] [--dtype float16]

For each manifest workload, every valid launch shape of each kernel is built through the
tileops runtime with explicit defines (TILEOPS_KERNEL, TILEOPS_THREADS, TILEOPS_ROW_THREADS)
and launched directly, checked against F.rms_norm (fp32 math) and timed L2-cold
(do_bench median) and hot (CUDA-graph replay), next to a plain copy of the same tensor.
This is the evidence behind the launch rules in src/tileops/kernels/norm/rms_norm.py
(`_cuda_launch_shape`): the table printed last gives, per workload, the fastest shape.

--mode cluster measures the register kernel as a 2-block thread block cluster per row
(the lab TILEOPS_CLUSTER=2; default workloads 2048x8192,2048x16384) next to the shipped
shape; each cluster build's output must also equal, bit for bit, that of the one-block
build with twice the threads per row (the "bitwise_equal" field of its rows).

--mode bulk measures tileops_rms_norm_bulk (the lab TILEOPS_KERNEL=3: a persistent grid
staging rows by TMA bulk copies in a ring of TILEOPS_STAGES shared-memory buffers; default
workloads 2048x8192,2048x16384,16384x4096,2048x4096) next to the shipped shape: blocks of
256, 512, 1024 threads x 2, 3, 4 stages, grid.x = min(rows, k x sm_count) for the k blocks
per SM that fit by shared memory; each bulk build's output must also equal, bit for bit,
that of the register kernel with TILEOPS_ROW_THREADS = TILEOPS_THREADS = threads."""
from __future__ import annotations

import argparse
import sys

import torch
import torch.nn.functional as F

from lab import LAB_SOURCE, common, default_out

tileops = common.import_tileops()
from tileops import runtime  # noqa: E402
from tileops.manifest import workloads  # noqa: E402
from tileops._dtypes import CODE  # noqa: E402
from tileops.bench import peer_specs, resolve_dotted  # noqa: E402
from tileops.kernels.norm.rms_norm import (CUDA_ARG_FORMAT, CUDA_REGISTER_MAX_N,  # noqa: E402
                                           GRID_MAX, _cuda_launch_shape, _groups, _pow2ceil, cuda_options)


def shape_configs(n, elem, rows, sm_count, smem_limit):
    """Every valid launch shape of each kernel: (kernel, threads, rt, shared, grid, defines)."""
    ng = _groups(n, elem)
    out = []
    rt = _pow2ceil(-(-ng // 16))     # the lab: up to 16 groups per thread in blocks <= 256
    while rt <= min(1024, _pow2ceil(ng)):   # no more threads a row than it has groups
        if rt >= 32 or rt & (rt - 1) == 0:
            for rpb in (1, 2, 4, 8, 16, 32):   # 32: the rule's 128-thread blocks of QK-norm's 4 threads a row
                threads = rt * rpb
                if 32 <= threads <= 1024 and threads % 32 == 0 and -(-ng // rt) <= _max_vpt(threads, elem):
                    # with the register cap the launch rule gives every register build
                    out.append(("tileops_rms_norm", threads, rt, 0, -(-rows // rpb),
                                {"TILEOPS_MIN_BLOCKS": max(1, 1024 // threads)}))
        rt *= 2
    for threads in (256, 512, 1024):
        if ng * 16 + threads // 4 <= smem_limit:
            out.append(("tileops_rms_norm_on_chip", threads, None, ng * 16, rows, {}))
    for threads in (512, 1024):
        for mult in (1, 2, 4):
            out.append(("tileops_rms_norm_streaming", threads, None, 0, min(rows, sm_count * mult), {}))
    return out


def _shipped_register(n, elem, rows, sm_count):
    """The shipped register-kernel config (kernel, threads, rt, shared, grid, defines less
    the row threads) at this workload."""
    extras, threads, rpb, shared, _cap = _cuda_launch_shape("tileops_rms_norm", n, elem, sm_count)
    shipped = {k: int(v) for k, v in (e[2:].split("=") for e in extras)}
    rt = shipped.pop("TILEOPS_ROW_THREADS")
    return ("tileops_rms_norm", threads, rt, shared, -(-rows // rpb), shipped)


def _max_vpt(threads, elem):
    """The lab's RK_MAX_VPT: groups per thread the register kernel allows in a block."""
    return 16 if threads <= 256 else (8 if elem == 4 else 4)


def policy_configs(n, elem, rows, sm_count, smem_limit):
    """The shipped launch shape under each of the lab's tuning defines (cache policies,
    register cap, prefetching persistent grid), register-kernel shapes with fewer groups
    per thread, and the on-chip kernel in small blocks and persistent grids; the shipped
    shape first and last (their spread is the noise)."""
    if n > CUDA_REGISTER_MAX_N:
        return []
    _, threads, rt, shared, full, shipped = _shipped_register(n, elem, rows, sm_count)

    def variant(grid=full, **defines):   # the shipped defines, some changed
        return ("tileops_rms_norm", threads, rt, shared, grid, {**shipped, **defines})
    out = [variant()]
    for ld in range(1, 7):
        out.append(variant(TILEOPS_LD_POLICY=ld))
    for st in range(1, 4):
        out.append(variant(TILEOPS_ST_POLICY=st))
    out.append(variant(TILEOPS_LD_POLICY=3, TILEOPS_ST_POLICY=2))
    out.append(variant(TILEOPS_LD_POLICY=4, TILEOPS_ST_POLICY=3))
    out.append(variant(RK_W_IN_REGS=0))
    for mb in sorted({0, max(1, 1024 // threads), 2048 // threads}):   # 0: no register cap
        out.append(variant(TILEOPS_MIN_BLOCKS=mb))
        out.append(variant(TILEOPS_MIN_BLOCKS=mb, RK_W_IN_REGS=0))
    for mult in (1, 2, 4, 8):
        if sm_count * mult < full:
            out.append(variant(grid=sm_count * mult, TILEOPS_PREFETCH=1))
    ng = _groups(n, elem)
    for t2 in (2 * threads, 4 * threads):   # fewer groups per thread: fewer registers
        if t2 <= 1024 and rt == threads:
            out.append(("tileops_rms_norm", t2, t2, 0, rows, {"TILEOPS_MIN_BLOCKS": max(1, 1024 // t2)}))
    # the row in shared memory: small blocks (more rows resident than registers allow),
    # and persistent grids (the next row's copy overlaps the stores)
    for t in (64, 128, 256, 512, 1024):
        if ng * 16 + t // 4 <= smem_limit:
            if t <= 256:
                out.append(("tileops_rms_norm_on_chip", t, None, ng * 16, rows, {}))
            for mult in (1, 2, 4):
                if sm_count * mult < rows and mult * t <= 2048 and t >= 256:
                    out.append(("tileops_rms_norm_on_chip", t, None, ng * 16, sm_count * mult, {}))
    out.append(variant())
    return out


CLUSTER_DEFAULT_ONLY = "2048x8192,2048x16384"


def cluster_configs(n, elem, rows, sm_count, smem_limit):
    """The shipped launch shape, then the register kernel as a 2-block cluster per row
    (TILEOPS_CLUSTER=2: blocks of 128, 256 or 512 threads, 2 x threads per row,
    grid.x = 2 * rows), with the shipped rule's register cap max(1, 1024 // threads) and
    without (0); the shipped shape again last (their spread is the noise). A cluster
    config carries a 7th element: the one-block build (TILEOPS_ROW_THREADS =
    TILEOPS_THREADS = 2 x threads) whose output it must equal bit for bit, or None when
    that build does not exist (more than 1024 threads or groups per thread)."""
    if n > CUDA_REGISTER_MAX_N:
        return []
    shipped_cfg = _shipped_register(n, elem, rows, sm_count)
    ng = _groups(n, elem)
    out = [shipped_cfg]
    grid = min(2 * rows, GRID_MAX - GRID_MAX % 2)   # even: whole clusters
    for t in (128, 256, 512):
        rt_total = 2 * t
        vpt = -(-ng // rt_total)
        if vpt > _max_vpt(t, elem):
            continue
        ref = None
        if rt_total <= 1024 and vpt <= _max_vpt(rt_total, elem):
            ref = ("tileops_rms_norm", rt_total, rt_total, 0, rows, {})
        for mb in (max(1, 1024 // t), 0):
            out.append(("tileops_rms_norm", t, t, 0, grid, {"TILEOPS_CLUSTER": 2, "TILEOPS_MIN_BLOCKS": mb}, ref))
    out.append(shipped_cfg)
    return out


BULK_DEFAULT_ONLY = "2048x8192,2048x16384,16384x4096,2048x4096"
BULK_KERNEL = "tileops_rms_norm_bulk"
BULK_KERNEL_CODE = 3           # the lab TILEOPS_KERNEL of tileops_rms_norm_bulk (built only when named)
SM_SHARED_BYTES = 228 * 1024   # shared memory per SM (H100/H200), 1 KiB of it reserved per block


def bulk_configs(n, elem, rows, sm_count, smem_limit):
    """The shipped launch shape (when the register kernel takes N), then
    tileops_rms_norm_bulk for THREADS in 256, 512, 1024 x STAGES in 2, 3, 4 (where the
    STAGES row buffers, the mbarriers and the reduction scratch fit one block's shared
    memory), grid.x = min(rows, k * sm_count) for k = 1, 2, 3 blocks per SM where k blocks
    fit an SM by shared memory (k * (STAGES * NG * 16 + 1 KiB) <= 228 KiB) and by threads
    (k * THREADS <= 2048); the shipped shape again last (their spread is the noise). A bulk
    config carries a 7th element: the register build with TILEOPS_ROW_THREADS =
    TILEOPS_THREADS = THREADS whose output it must equal bit for bit, or None when that
    build does not exist (more groups per thread than the register kernel holds)."""
    ng = _groups(n, elem)
    if (n * elem) % 16:
        return []   # the bulk kernel takes whole 16-byte groups only
    shipped_cfg = _shipped_register(n, elem, rows, sm_count) if n <= CUDA_REGISTER_MAX_N else None
    out = [shipped_cfg] if shipped_cfg else []
    for t in (256, 512, 1024):
        ref = None
        if -(-ng // t) <= _max_vpt(t, elem):
            ref = ("tileops_rms_norm", t, t, 0, rows, {})
        for stages in (2, 3, 4):
            shared = stages * ng * 16
            if shared + 8 * stages + t // 4 > smem_limit:
                continue
            grids = []
            for k in (1, 2, 3):
                if k * (shared + 1024) <= SM_SHARED_BYTES and k * t <= 2048:
                    g = min(rows, k * sm_count)
                    if g not in grids:
                        grids.append(g)
            for g in grids:
                out.append((BULK_KERNEL, t, None, shared, g, {"TILEOPS_STAGES": stages}, ref))
    if shipped_cfg:
        out.append(shipped_cfg)
    return out


REGCAP_DEFAULT_ONLY = "2048x8192,2048x16384"


def regcap_configs(n, elem, rows, sm_count, smem_limit):
    """The register kernel at one row per block for every valid row-thread count, each
    under several register caps (TILEOPS_MIN_BLOCKS 0 = none, up to 2048 / threads
    resident blocks per SM): fewer, fatter threads keep more bytes in flight per thread;
    the cap trades registers for resident blocks. The shipped shape first and last."""
    if n > CUDA_REGISTER_MAX_N:
        return []
    shipped_cfg = _shipped_register(n, elem, rows, sm_count)
    threads, shipped = shipped_cfg[1], shipped_cfg[5]
    ng = _groups(n, elem)
    out = [shipped_cfg]
    t = 32
    while t <= 1024:
        vpt = -(-ng // t)
        if vpt <= _max_vpt(t, elem):
            for mb in (0, 1, 2, 3, 4, 6, 8, 12, 16):
                # a cap below the packed row (4 registers a group) + ~24 can only spill
                fits = mb == 0 or 65536 // (mb * t) >= 4 * vpt + 24
                if mb * t <= 2048 and fits and (mb, t) != (shipped.get("TILEOPS_MIN_BLOCKS"), threads):
                    out.append(("tileops_rms_norm", t, t, 0, rows, {"TILEOPS_MIN_BLOCKS": mb}))
        t *= 2
    out.append(shipped_cfg)
    return out


MODES = {"shapes": shape_configs, "policies": policy_configs, "cluster": cluster_configs, "bulk": bulk_configs, "regcap": regcap_configs}
DEFAULT_ONLY = {"cluster": CLUSTER_DEFAULT_ONLY, "bulk": BULK_DEFAULT_ONLY, "regcap": REGCAP_DEFAULT_ONLY}


def liger_rms_norm(entry):
    """The entry's Liger peer (the call its manifest `peers` names: (x, w, eps)) when it
    imports (carried as a wheel), else None."""
    try:
        return resolve_dotted(peer_specs(entry)["liger"]["call"])
    except ImportError:
        return None


def build_options(name, dtype_code, n, vec, threads):
    """cuda_options for any lab kernel, the bulk one included (which the op layer's
    kernel table does not name: its TILEOPS_KERNEL is set here)."""
    if name == BULK_KERNEL:
        opts = list(cuda_options("tileops_rms_norm", dtype_code, n, True, vec, threads))
        return [f"-DTILEOPS_KERNEL={BULK_KERNEL_CODE}" if o.startswith("-DTILEOPS_KERNEL=") else o for o in opts]
    return list(cuda_options(name, dtype_code, n, True, vec, threads))


def main(argv=None):
    p = argparse.ArgumentParser()
    p.add_argument("--out", default=None)
    p.add_argument("--dtype", default="float16")
    p.add_argument("--only", default=None, help="comma-separated workloads, e.g. 2048x4096,1x4096 "
                   f"(--mode cluster: default {CLUSTER_DEFAULT_ONLY}; 2048x4096, 16384x4096 also; "
                   f"--mode bulk: default {BULK_DEFAULT_ONLY})")
    p.add_argument("--mode", choices=tuple(MODES), default="shapes",
                   help="shapes: every launch shape; policies: the lab's tuning defines "
                        "(cache policies, register cap, prefetch) on the shipped shape; "
                        "cluster: the register kernel as a 2-block cluster per row "
                        "(TILEOPS_CLUSTER=2), checked bit for bit against the one-block build; "
                        "bulk: tileops_rms_norm_bulk (TMA bulk copies into a ring of "
                        "TILEOPS_STAGES row buffers, persistent grid), checked bit for bit "
                        "against the register build with as many threads per row; "
                        "regcap: the register kernel, one row per block, every row-thread count "
                        "under register caps 0-16 (default " + REGCAP_DEFAULT_ONLY + ")")
    a = p.parse_args(argv)
    if a.only is None and a.mode in DEFAULT_ONLY:
        a.only = DEFAULT_ONLY[a.mode]
    dtype = getattr(torch, a.dtype)
    elem = dtype.itemsize
    attrs = runtime.device_attributes(0)
    sm, smem = attrs["sm_count"], attrs["max_shared_per_block"]
    entry = tileops.manifest.package_entries()["RMSNormFwdOp"]
    make_configs = MODES[a.mode]
    rows_out, best, best_cluster, best_bulk = [], [], [], []
    shapes = []   # the manifest's 2-D x shapes, once each (QK-norm's [T, H, 128] as rows x 128)
    for case in workloads.cases(entry, dtypes=(dtype,)):
        *lead, n = case.shapes["x"]
        rows = 1
        for d in lead:
            rows *= int(d)
        if (rows, int(n)) not in shapes:
            shapes.append((rows, int(n)))
    for rows, n in shapes:
        if a.only and f"{rows}x{n}" not in a.only.split(","):
            continue
        x, w = common.norm_inputs((rows, n), dtype, "cuda")
        y = torch.empty_like(x)
        eps = float(torch.finfo(dtype).eps)
        ref = F.rms_norm(x.float(), (n,), w.float(), eps)
        copy_cold = common.cuda_cold_us(lambda: y.copy_(x))
        copy_hot = common.cuda_hot_us(lambda: y.copy_(x))
        peer = liger_rms_norm(entry)
        if peer is not None:   # the peer to beat, by the same timers (the bench's manifest call)
            print(f"{rows}x{n} liger cold={common.cuda_cold_us(lambda: peer(x, w, eps)):.2f} "
                  f"hot={common.cuda_hot_us(lambda: peer(x, w, eps)):.2f} copy={copy_cold:.2f}/{copy_hot:.2f}")
        results = []

        def build(name, threads, rt, defines):
            opts = build_options(name, CODE[dtype], n, 16 // elem, threads)
            if rt is not None:
                opts.append(f"-DTILEOPS_ROW_THREADS={rt}")
            opts += [f"-D{k}={v}" for k, v in defines.items()]
            try:
                return runtime.build(0, LAB_SOURCE, name, opts, CUDA_ARG_FORMAT)
            except Exception as e:  # an invalid shape is a compile error: skip it, say so
                print(f"skip {name} threads={threads} rt={rt} {defines}: {str(e).splitlines()[0][:100]}")
                return None

        def launcher(h, threads, shared, grid, out):
            return common.norm_launch(h, threads, shared, grid, x, w, out, eps)

        bitwise_refs = {}   # one-block reference config -> its output (None: no build)

        def bitwise_ref(cfg):
            rname, rthreads, rrt, rshared, rgrid, rdefines = cfg
            key = (rname, rthreads, rrt, rshared, rgrid, tuple(sorted(rdefines.items())))
            if key not in bitwise_refs:
                h = build(rname, rthreads, rrt, rdefines)
                out = None
                if h is not None:
                    out = torch.full_like(x, float("nan"))   # poisoned: unwritten shows
                    launcher(h, rthreads, rshared, rgrid, out)()
                    torch.cuda.synchronize()
                bitwise_refs[key] = out
            return bitwise_refs[key]

        for cfg in make_configs(n, elem, rows, sm, smem):
            name, threads, rt, shared, grid, defines = cfg[:6]
            ref_cfg = cfg[6] if len(cfg) > 6 else None
            h = build(name, threads, rt, defines)
            if h is None:
                continue
            launch = launcher(h, threads, shared, grid, y)
            y.fill_(float("nan"))
            launch()
            torch.cuda.synchronize()
            err, _, ok = common.check_close(y, ref, "float16")   # the half tolerance, any dtype
            row = {"workload": f"{rows}x{n}", "dtype": a.dtype, "kernel": name, "threads": threads,
                   "row_threads": rt, "grid": grid, "shared": shared, "defines": defines,
                   "max_abs_err": err, "ok": ok}
            if len(cfg) > 6:   # a config with a bit-for-bit reference (--mode cluster, bulk)
                ref_out = bitwise_ref(ref_cfg) if ref_cfg is not None else None
                if name == BULK_KERNEL:
                    row["stages"] = int(defines["TILEOPS_STAGES"])
                else:
                    row["cluster"] = int(defines.get("TILEOPS_CLUSTER", 1))
                row["bitwise_ref"] = None if ref_cfg is None else \
                    {"threads": ref_cfg[1], "row_threads": ref_cfg[2], "grid": ref_cfg[4], "defines": ref_cfg[5]}
                row["bitwise_equal"] = None if ref_out is None else bool(torch.equal(y, ref_out))
            cold = common.cuda_cold_us(launch) if ok else None
            hot = common.cuda_hot_us(launch) if ok else None
            row.update({"cold_us": cold, "hot_us": hot, "copy_cold_us": copy_cold, "copy_hot_us": copy_hot})
            results.append(row)
            bits = f" bitwise={row['bitwise_equal']}" if "bitwise_equal" in row else ""
            print(f"{rows}x{n} {name:28s} threads={threads:5d} rt={str(rt):5s} grid={grid:6d} {defines} "
                  f"cold={cold if cold is None else round(cold, 2)} hot={hot if hot is None else round(hot, 2)} "
                  f"copy={copy_cold:.2f}/{copy_hot:.2f} err={err:.3g}{bits}")
        rows_out.extend(results)
        for table, keep in ((best, lambda r: True), (best_cluster, lambda r: r.get("cluster") == 2),
                            (best_bulk, lambda r: r["kernel"] == BULK_KERNEL)):
            good = [r for r in results if r["ok"] and keep(r)]
            if good:
                table.append((f"{rows}x{n}", min(good, key=lambda r: r["cold_us"]),
                              min(good, key=lambda r: r["hot_us"]), copy_cold, copy_hot))
        del x, w, y, ref, bitwise_refs
        torch.cuda.empty_cache()
    for title, table in (("best per workload", best), ("best 2-block cluster build per workload", best_cluster),
                         ("best bulk build per workload", best_bulk)):
        if not table:
            continue
        print(f"\n{title} (cold | hot), ratio to copy:")
        for wl, bc, bh, cc, ch in table:
            print(f"{wl:11s} cold {bc['kernel']:17s} t={bc['threads']} rt={bc['row_threads']} grid={bc['grid']} "
                  f"{bc['defines']} {bc['cold_us']:.2f} ({bc['cold_us'] / cc:.3f}x) | hot t={bh['threads']} "
                  f"rt={bh['row_threads']} grid={bh['grid']} {bh['defines']} {bh['hot_us']:.2f} "
                  f"({bh['hot_us'] / ch:.3f}x)")
    out = a.out or str(default_out(f"sweep_norm{'' if a.mode == 'shapes' else '_' + a.mode}.json"))
    common.write_results(out, rows_out, common.metadata("cuda", sweep=f"rms_norm {a.mode}"))
    return 0 if all(r["ok"] and r.get("bitwise_equal") is not False for r in rows_out) else 1


if __name__ == "__main__":
    sys.exit(main())
