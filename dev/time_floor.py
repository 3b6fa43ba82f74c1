"""The floor of a streaming op in its own mix of reads and writes (session 38), beside the
copy floor the bench uses (dst.copy_(src) of half the op's bytes) and torch's kernel of
the same mix:

    python3 dev/time_floor.py [--cases 8208384:16416768,...] [--rounds 2] [--flush write|read] [--cluster C]
        [--out PATH.json]

Each case is READ:WRITE bytes (a multiple of 16 each; READ = WRITE, READ = 2 WRITE, WRITE
= 2 READ, or WRITE = 0: reads only, argmax's mix, with 4 / 8 / 16 groups a thread), by default softmax's at 128256 bf16 logits -> float32 for B = 32 / 128 / 256,
the gated activations' at Llama-3-8B 256 tokens (read 2 x 14336, write 14336, fp16),
argmax's at 128256 bf16 logits for B = 32 / 128 (read only; --cases 8208384:0) and
two copies of 32 MiB and a little (COPY_CASES: the bench's copy floor differed by 20 %).
dev/cuda/stream_floor_lab.cu is built for the mix with 256 threads a block and 1, 2 and 4
groups a thread ("floor u1" ...), its output checked against torch's (a copy, the bf16 ->
float32 conversion, the XOR of the two halves) before timing; "torch" is that torch
kernel (`dst.copy_(src)`, `src.view(bf16).to(float32)`, `torch.bitwise_xor(a, b,
out=c)`), "copy" the bench's floor. Hot and L2-cold times (lab.time_interleaved), the
minimum over rounds. The floor is the least of the floor builds; dev/time_softmax.py
--floor times the same builds beside the op. --flush read: the cold timer's flush reads its
256 MB instead of writing it (bench.FLUSH_READS), so L2 holds no dirty lines when the call
starts (session 42: on an H100 a read-only stream of 32.8 MB took 19.17 us L2-cold, a copy
moving the same bytes 15.78). --cluster C (session 43): read-only cases also time the floor
launched in clusters of C CTAs, each thread through a release cluster barrier before its
store ("floor u4 c8" ...; the row's floor_cluster_*): argmax's shape below sm_count / 2
rows, so what a cluster launch and its barrier cost a read-only stream."""
from __future__ import annotations

import argparse
import sys
import types

import torch

import lab

common = lab.common
tileops = common.import_tileops()
from tileops import _C, runtime  # noqa: E402
from tileops.bench import add_copy  # noqa: E402

FLOOR_SOURCE = str(lab.DEV_DIR / "cuda" / "stream_floor_lab.cu")
THREADS = 256
UNROLLS = (1, 2, 4)
SOFTMAX_CASES = [(b * 128256 * 2, b * 128256 * 4) for b in (32, 128, 256)]
ARGMAX_CASES = [(b * 128256 * 2, 0) for b in (32, 128)]   # bf16 logits read, nothing written (session 41)
GATED_CASES = [(256 * 2 * 14336 * 2, 256 * 14336 * 2)]
# the bench's copies in session 38's two 67 MB norm cases (half of RMSNorm 4096 x 4096's and of
# QK-norm 4096 x 32 x 128's bytes): torch's copy_ took 24.20 against 29.18 us hot; a
# same-dtype copy_ is a cudaMemcpyAsync, whose speed may depend on the size; the floor's 1 : 1
# build is one plain kernel at both sizes
COPY_CASES = [(33558528, 33558528), (33554560, 33554560)]


def mix_of(read_bytes: int, write_bytes: int) -> tuple:
    """(reads, writes) 16-byte words a group of the floor kernel, and the group count; READ:0
    is the read-only mix (1, 0, groups): argmax's."""
    if read_bytes % 16 or write_bytes % 16 or read_bytes <= 0 or write_bytes < 0:
        raise ValueError(f"time_floor: bytes must be positive multiples of 16 (writes may be 0), "
                         f"got {read_bytes}:{write_bytes}")
    if write_bytes == 0:
        return 1, 0, read_bytes // 16
    for r, w in ((1, 1), (1, 2), (2, 1)):
        if read_bytes * w == write_bytes * r:
            return r, w, read_bytes // (16 * r)
    raise ValueError(f"time_floor: reads : writes must be 1 : 1, 1 : 2, 2 : 1 or 1 : 0, got {read_bytes}:{write_bytes}")


READ_ONLY_UNROLLS = (4, 8, 16)   # 1 : 0: a thread's groups XORed into one 4-byte store


def unrolls_of(w: int) -> tuple:
    return READ_ONLY_UNROLLS if w == 0 else UNROLLS


def floor_launchers(read_bytes: int, write_bytes: int, device: int = 0, cluster: int = 1) -> dict:
    """{"floor u1": launch, ...}: the lab floor for the mix, each launch writing its own
    buffer, each checked against torch's result of the mix first (an AssertionError if not
    equal). cluster C > 1 (the read-only mix only): {"floor u4 c8": ...}, the grid rounded up
    to a multiple of C and launched in clusters of C with a cluster barrier before the
    stores (-DTILEOPS_CLUSTER)."""
    if cluster > 1 and write_bytes:
        raise ValueError(f"time_floor: clusters with the read-only mix (READ:0) only, got {read_bytes}:{write_bytes}")
    r, w, groups = mix_of(read_bytes, write_bytes)
    gen = torch.Generator(device="cuda").manual_seed(0)
    src = torch.randint(-2**31, 2**31 - 1, (read_bytes // 4,), generator=gen, device="cuda", dtype=torch.int32)
    stream = torch._C._cuda_getCurrentRawStream
    out = {}
    for u in unrolls_of(w):
        grid = -(-groups // (THREADS * u))
        grid = -(-grid // cluster) * cluster
        want = torch_result(src, r, w, u, blocks=grid)
        opts = (f"-DTILEOPS_READS={r}", f"-DTILEOPS_WRITES={w}", f"-DTILEOPS_THREADS={THREADS}",
                f"-DTILEOPS_UNROLL={u}") + ((f"-DTILEOPS_CLUSTER={cluster}",) if cluster > 1 else ())
        handle = runtime.build(device, FLOOR_SOURCE, "tileops_stream_floor", opts, "ppq")
        dst = torch.full((write_bytes // 4 if w else grid * THREADS,), -1, device="cuda", dtype=torch.int32)
        keep = types.SimpleNamespace(src=src, dst=dst)

        def launch(handle=handle, grid=grid, keep=keep):
            _C.cuda_launch(handle, grid, 1, 1, THREADS, 1, 1, 0, stream(device), keep.src.data_ptr(),
                           keep.dst.data_ptr(), groups)
        launch()
        torch.cuda.synchronize()
        name = f"floor u{u}" + (f" c{cluster}" if cluster > 1 else "")
        assert torch.equal(dst, want), f"{name} ({r}:{w}) differs from torch's result"
        out[name] = launch
    return out


def torch_result(src: torch.Tensor, r: int, w: int, unroll: int = 1, blocks: int = 0) -> torch.Tensor:
    """What the floor kernel writes for src (int32 words), as int32 words; 1 : 0 (its
    build's `unroll`): a thread's groups' words XORed, one word a thread of every block
    (`blocks` of them where more than the groups need: a cluster's rounded grid)."""
    if w == 0:
        per_block = THREADS * unroll
        groups = src.numel() // 4
        words = torch.zeros(max(blocks, -(-groups // per_block)) * per_block * 4, dtype=torch.int32,
                            device=src.device)
        words[: src.numel()] = src
        x = words.view(-1, unroll, THREADS, 4)   # [block, u, t, word]: group (b u_count + u) T + t
        out = x[:, 0, :, 0].clone()
        for u in range(unroll):
            for k in range(4):
                if u or k:
                    out ^= x[:, u, :, k]
        return out.reshape(-1)
    if (r, w) == (1, 1):
        return src.clone()
    if (r, w) == (1, 2):
        return src.view(torch.bfloat16).float().view(torch.int32)
    a, b = src.view(2, -1)
    return torch.bitwise_xor(a, b)


def torch_launcher(read_bytes: int, write_bytes: int):
    """torch's kernel of the mix on fresh buffers: a copy, a bf16 -> float32 conversion, an XOR,
    a maximum (1 : 0: torch.amax of the int32 words, a read-only reduction)."""
    r, w, _ = mix_of(read_bytes, write_bytes)
    src = torch.ones(read_bytes // 4, device="cuda", dtype=torch.int32)
    if w == 0:
        return lambda: torch.amax(src)
    if (r, w) == (1, 1):
        dst = torch.empty_like(src)
        return lambda: dst.copy_(src)
    if (r, w) == (1, 2):
        x = src.view(torch.bfloat16)
        dst = torch.empty(x.numel(), device="cuda", dtype=torch.float32)
        return lambda: dst.copy_(x)
    a, b = src.view(2, -1)
    dst = torch.empty_like(a)
    return lambda: torch.bitwise_xor(a, b, out=dst)


def time_case(read_bytes: int, write_bytes: int, rounds: int, cluster: int = 1) -> dict:
    clustered = cluster > 1 and write_bytes == 0   # --cluster: the read-only cases only
    fns = dict(floor_launchers(read_bytes, write_bytes))
    if clustered:
        fns.update(floor_launchers(read_bytes, write_bytes, cluster=cluster))
    fns["torch"] = torch_launcher(read_bytes, write_bytes)
    add_copy(fns, read_bytes + write_bytes, torch.float16, "cuda")   # the bench's floor, as it makes it (fp16 cases)
    times = lab.time_interleaved(fns, rounds, cold_warmup=25, cold_rep=100)
    row = {"read_bytes": read_bytes, "write_bytes": write_bytes, "mix": "%d:%d" % mix_of(read_bytes, write_bytes)[:2]}
    for k, v in times.items():
        for m in ("hot", "cold"):
            row[f"{k.replace(' ', '_')}_{m}_us"] = min(v[m])
    for m in ("hot", "cold"):
        row[f"floor_{m}_us"] = min(row[f"floor_u{u}_{m}_us"] for u in unrolls_of(mix_of(read_bytes, write_bytes)[1]))
        if clustered:
            row[f"floor_cluster_{m}_us"] = min(row[f"floor_u{u}_c{cluster}_{m}_us"] for u in unrolls_of(0))
    return row


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--cases", default=None, help="READ:WRITE bytes, comma-separated (default: softmax's and the gated ops')")
    p.add_argument("--rounds", type=int, default=2)
    p.add_argument("--cluster", type=int, default=1,
                   help="read-only cases (READ:0): also the floor launched in clusters of this many CTAs, a cluster "
                        "barrier before the stores (argmax's shape below sm_count / 2 rows: 8)")
    p.add_argument("--out", default=None)
    lab.add_flush_option(p)
    a = p.parse_args(argv)
    lab.use_flush(a.flush)
    cases = SOFTMAX_CASES + GATED_CASES + COPY_CASES if a.cases is None else \
        [tuple(int(v) for v in c.split(":")) for c in a.cases.split(",")]
    for c in cases:
        mix_of(*c)   # refuse a bad case before any build
    rows = []
    print(f"{'read:write MB':>16s} {'mix':>4s} {'floor hot':>10s} {'floor cold':>10s} {'torch hot':>10s} "
          f"{'torch cold':>10s} {'copy hot':>9s} {'copy cold':>9s} {'copy/floor c':>12s}")
    for rb, wb in cases:
        row = time_case(rb, wb, a.rounds, a.cluster)
        rows.append(row)
        print(f"{rb / 1e6:7.2f}:{wb / 1e6:<8.2f} {row['mix']:>4s} {row['floor_hot_us']:10.2f} {row['floor_cold_us']:10.2f} "
              f"{row['torch_hot_us']:10.2f} {row['torch_cold_us']:10.2f} {row['copy_hot_us']:9.2f} "
              f"{row['copy_cold_us']:9.2f} {row['copy_cold_us'] / row['floor_cold_us']:12.3f}"
              + (f"  clusters of {a.cluster}: {row['floor_cluster_hot_us']:.2f} / {row['floor_cluster_cold_us']:.2f}"
                 if "floor_cluster_hot_us" in row else ""))
    out = a.out or str(lab.default_out("time_floor.json"))
    common.write_results(out, rows, common.metadata("cuda", sweep="stream floor", flush=a.flush, cluster=a.cluster))
    return 0


if __name__ == "__main__":
    sys.exit(main())
