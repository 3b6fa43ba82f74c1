"""What the dev/ tools share: benchmarks/common.py (timers, inputs, results I/O) on the
import path, the lab kernel source, where their results go (dev/results/<device>/), and
the variant timers' loop (time_interleaved, min_rows).

    import lab
    common = lab.common
    runtime.build(0, lab.LAB_SOURCE, name, opts, arg_format)

The lab source is dev/cuda/rms_norm_lab.cu (every experiment build; its default builds are
the shipped csrc/ops/norm/rms_norm.cu's cubins), passed to tileops.runtime by its absolute
path."""
from __future__ import annotations

import functools
import re
import sys
from pathlib import Path

DEV_DIR = Path(__file__).resolve().parent
_BENCH = str(DEV_DIR.parent / "benchmarks")
if _BENCH not in sys.path:
    sys.path.insert(0, _BENCH)

import common  # noqa: E402  (benchmarks/common.py)

LAB_SOURCE = str(DEV_DIR / "cuda" / "rms_norm_lab.cu")
RESULTS_DIR = DEV_DIR / "results"


def appended_source(shipped: str, lab_file: str) -> str:
    """The path of a temporary .cu: the shipped source `shipped` (a name tileops.runtime
    knows, e.g. "sampling/softmax.cu") as spliced for NVRTC, then dev/cuda/`lab_file`, a lab
    kernel that uses the shipped file's helpers and defines (the softmax rows and register
    labs, the RoPE persistent lab). runtime.build takes the path."""
    import tempfile

    from tileops import runtime
    text = runtime.source(shipped) + "\n" + (DEV_DIR / "cuda" / lab_file).read_text()
    path = Path(tempfile.mkdtemp(prefix="lab_")) / lab_file
    path.write_text(text)
    return str(path)


def apply_patch(text: str, patch: str, path: str) -> str:
    """`text` (the file `path`, as "csrc/ops/...") with the hunks of unified diff `patch`
    for that file applied: each hunk's old lines (context and removed) must occur exactly
    once in the text. No git or patch binary needed (the device has neither promised)."""
    lines, out, hunks, cur, mine = patch.split("\n"), text, [], None, False
    for ln in lines:
        if ln.startswith("--- "):
            continue
        if ln.startswith("+++ "):
            mine = ln[4:].strip().split("/", 1)[-1] == path
            continue
        if ln.startswith("@@"):
            cur = ([], []) if mine else None
            if cur is not None:
                hunks.append(cur)
            continue
        if cur is None or not ln or ln[0] not in " +-":
            continue
        if ln[0] in " -":
            cur[0].append(ln[1:])
        if ln[0] in " +":
            cur[1].append(ln[1:])
    if not hunks:
        raise ValueError(f"apply_patch: the patch has no hunk for {path}")
    for old, new in hunks:
        o, n = "\n".join(old) + "\n", "\n".join(new) + "\n"
        if out.count(o) != 1:
            raise ValueError(f"apply_patch: a hunk of {path} matches {out.count(o)} places, not one")
        out = out.replace(o, n)
    return out


def files_of(patch: str) -> list:
    """The files a unified diff `patch` writes (its +++ lines, the a/ or b/ prefix dropped)."""
    return sorted({ln[4:].strip().split("/", 1)[-1] for ln in patch.split("\n") if ln.startswith("+++ ")})


def bases_of(patch: str) -> tuple:
    """The patches a parked patch's text `patch` says it applies over, in order (its
    header's "Applies over: A.patch[, B.patch]" line; none: the shipped sources)."""
    for ln in patch.split("\ndiff --git", 1)[0].split("\n"):
        if ln.startswith("Applies over:"):
            return tuple(re.findall(r"[\w.+-]+\.patch", ln[len("Applies over:"):].split("(", 1)[0]))
    return ()


def write_patched(root: Path, names, applied=(), prefixes=("csrc/ops/",)) -> list:
    """Applies the dev/patches files `names` in turn to their files under root that start
    with one of `prefixes` (by default the kernel sources: a patch's launch side, lab
    scripts and tests are skipped): the files written. A patch that applies over others
    (bases_of) must come after them, or they be among `applied` (already in root's
    sources)."""
    written = []
    for i, name in enumerate(names):
        patch = (DEV_DIR / "patches" / name).read_text()
        missing = [b for b in bases_of(patch) if b not in (*applied, *names[:i])]
        if missing:
            raise ValueError(f"{name} applies over {', '.join(missing)}: apply that first "
                             f"(--patches {'+'.join((*missing, name))})")
        for f in files_of(patch):
            if f.startswith(tuple(prefixes)):
                target = root / f
                target.write_text(apply_patch(target.read_text(), patch, f))
                written.append(f)
    return written


@functools.lru_cache(maxsize=None)
def patched_source(shipped: str, patch_files) -> str:
    """The path of a temporary .cu: the shipped source `shipped` (e.g.
    "sampling/top_k.cu") as spliced for NVRTC from a copy of csrc/ops with the dev/patches/
    files `patch_files` (a name or a tuple of them; their hunks under csrc/ops) applied in
    turn (a parked kernel change timed beside the shipped one without applying it to the
    tree). runtime.build takes the path; made once per (shipped, patch_files) in a process
    (every variant's launcher asks). No patch (a `shipped@-DX=v` spec): `shipped` itself,
    the name runtime.build takes for the shipped source."""
    if not patch_files:
        return shipped
    import shutil
    import tempfile

    from tileops import runtime
    tmp = Path(tempfile.mkdtemp(prefix="patched_"))
    shutil.copytree(DEV_DIR.parent / "csrc" / "ops", tmp / "csrc" / "ops")
    write_patched(tmp, [patch_files] if isinstance(patch_files, str) else patch_files)
    text = "\n".join(runtime._splice(str(tmp / "csrc" / "ops" / shipped), set(), ()))
    path = tmp / Path(shipped).name
    path.write_text(text)
    return str(path)


def with_defines(opts, defines) -> tuple:
    """A build's options `opts` with each of `defines` ("-DX=v") replacing the option of its
    name, or added (a lab build of the shipped source with some options changed)."""
    names = tuple(d.split("=")[0] + "=" for d in defines)
    return tuple(o for o in opts if not o.startswith(names)) + tuple(defines)


def parse_spec(spec: str, keys=()) -> tuple:
    """A patched variant's spec, PATCH[+PATCH...][@-DX=v...][@KEY=v...] (KEY one of `keys`,
    each at most once) -> (patches, defines, {KEY: v}). PATCH `shipped` is no patch: the
    shipped source with the defines changed (patches ())."""
    patch, *extra = spec.split("@")
    defines = tuple(d for d in extra if d.startswith("-D"))
    opts = [d.split("=", 1) for d in extra if not d.startswith("-D")]
    if any(len(o) != 2 or o[0] not in keys for o in opts) or len({o[0] for o in opts}) != len(opts) or not patch:
        grammar = "".join(f"[@{k}=v]" for k in keys)
        raise SystemExit(f"--patches {spec}: expected PATCH[+PATCH...][@-DX=v...]{grammar}")
    return (() if patch == "shipped" else tuple(patch.split("+"))), defines, dict(opts)


def variant_name(spec: str, keys=()) -> str:
    """A.patch[+B.patch...][@-DX=v...][@KEY=v...] -> the patches' stems joined by +, then @X=v
    for each define, then @KEY=v for each option"""
    patches, defines, opts = parse_spec(spec, keys)
    return ("+".join(p.rsplit(".", 1)[0] for p in patches or ("shipped",)) + "".join("@" + d[2:] for d in defines) +
            "".join(f"@{k}={v}" for k, v in opts.items()))


def add_flush_option(parser) -> None:
    """--flush write|read: how the cold timer clears L2 (use_flush)."""
    parser.add_argument("--flush", choices=("write", "read"), default="write",
                        help="the cold timer's flush: write its 256 MB (the bench's; L2 left dirty) or read it "
                             "(L2 left clean: what the write-backs of the flush's lines cost a read-only stream)")


def use_flush(mode: str) -> None:
    """The cold timer's flush from now on: "write" (the bench's) or "read" (bench.FLUSH_READS)."""
    from tileops import bench
    bench.FLUSH_READS = mode == "read"


def default_out(filename: str) -> Path:
    """dev/results/<device dir>/<filename> (the device dir as benchmarks/common.py names it)."""
    return RESULTS_DIR / common.results_subdir("cuda") / filename


def time_interleaved(fns: dict, rounds: int = 2, cold_warmup: int = 10, cold_rep: int = 40) -> dict:
    """{name: {"hot": [us, one per round], "cold": [...]}} of each callable of `fns` (name ->
    fn): hot, common.cuda_hot_us (a CUDA graph of 50 calls), and cold, common.cuda_cold_us
    (cold_warmup warm-up calls, 10 by default, cold_rep timed, 40, 256 MB written before
    each), in `rounds` interleaved rounds (every other one in reverse order, so no name
    always runs first)."""
    names = list(fns)
    times = {k: {"hot": [], "cold": []} for k in names}
    for rnd in range(rounds):
        for k in (names if rnd % 2 == 0 else names[::-1]):
            times[k]["hot"].append(common.cuda_hot_us(fns[k]))
            times[k]["cold"].append(common.cuda_cold_us(fns[k], warmup=cold_warmup, rep=cold_rep))
    return times


def min_rows(times: dict, workload: str, label: str, width: int, digits: int = 8, dtype: str = "float16") -> list:
    """One result row per name of `times` (time_interleaved's): workload, dtype, impl, and
    the minimum over the rounds hot and cold, each printed as "<label> <impl> hot <us> cold
    <us>" (the impl padded to `width`, the times to `digits`)."""
    rows = []
    for k, t in times.items():
        row = {"workload": workload, "dtype": dtype, "impl": k, "hot_us": min(t["hot"]), "cold_us": min(t["cold"])}
        rows.append(row)
        print(f"{label} {k:{width}s} hot {row['hot_us']:{digits}.2f}  cold {row['cold_us']:{digits}.2f}", flush=True)
    return rows


def persisting_l2_limit() -> int:
    """The current context's persisting L2 set-aside in bytes (cuCtxGetLimit of
    CU_LIMIT_PERSISTING_L2_CACHE_SIZE; session 39's probes print it), -status on failure."""
    import ctypes
    v = ctypes.c_size_t(0)
    rc = ctypes.CDLL("libcuda.so.1").cuCtxGetLimit(ctypes.byref(v), 0x06)
    return v.value if rc == 0 else -rc
