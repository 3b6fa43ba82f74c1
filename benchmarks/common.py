"""What the remaining benchmark scripts (overhead.py, build_times.py) and the lab scripts
in dev/ share.

The timers, the correctness check, the metadata and the JSON/table writers live in the
package, in ``tileops.bench`` (the driver of ``python -m tileops bench``), and are
re-exported here under their old names: :func:`loop_times_us` (interleaved perf_counter
loops), :func:`cuda_cold_us` (L2-cold: CUDA events around each call, a 256 MB buffer
written between calls), :func:`cuda_hot_us` (L2-hot: calls captured in a CUDA graph),
:func:`check_close`, :func:`metadata`, :func:`write_results`, :func:`format_table`.
What stays here is specific to the RMSNorm scripts: seeded norm inputs, a direct launcher
of an rms_norm.cu build, the scripts' argument parser and the common end of a run.
"""
from __future__ import annotations

import sys
from pathlib import Path

BENCH_DIR = Path(__file__).resolve().parent
REPO_ROOT = BENCH_DIR.parent
RESULTS_DIR = BENCH_DIR / "results"


def import_tileops():
    """Import tileops, adding ``<repo>/src`` to ``sys.path`` when it is not installed.

    Returns
    -------
    module
        The ``tileops`` package.
    """
    try:
        import tileops
    except ModuleNotFoundError as e:
        if e.name != "tileops":
            raise
        sys.path.insert(0, str(REPO_ROOT / "src"))
        import tileops
    return tileops


import_tileops()
from tileops.bench import (check_close, cuda_cold_us, cuda_hot_us,  # noqa: E402,F401
                           format_table, host_loadavg, loop_times_us, metadata, prepare_device,
                           ratio, results_subdir, source_digest, write_results)


# ---------------------------------------------------------------------------------------
# the RMSNorm scripts' inputs and direct launches
# ---------------------------------------------------------------------------------------
def norm_launch(handle, threads, shared, grid, x, w, y, eps):
    """A closure that launches an rms_norm.cu build (``runtime.build`` handle) directly, on
    torch's current stream: x (rows, n) and w (n,) into y, contiguous rows, one block of
    ``threads`` per grid entry. For sweeps and probes that time builds the op would not
    pick."""
    from tileops import _C, runtime
    rows, n = x.shape
    dev = x.device.index or 0

    def launch():
        _C.cuda_launch(handle, grid, 1, 1, threads, 1, 1, shared, runtime.current_stream(dev),
                       x.data_ptr(), w.data_ptr(), y.data_ptr(), rows, n, n, eps)
    return launch


def workload_name(shape):
    """``(2048, 4096)`` -> ``"2048x4096"``."""
    return "x".join(str(int(d)) for d in shape)


def norm_inputs(shape, dtype, device):
    """x and the weight of a row norm over the last dimension of ``shape``.

    x is standard normal and the weight 1 + 0.1 * standard normal, drawn on the CPU from a
    generator seeded 0 (the same numbers in every script and run), then moved to
    ``device`` in ``dtype`` (a torch dtype).
    """
    import torch
    gen = torch.Generator(device="cpu").manual_seed(0)
    x = torch.randn(shape, generator=gen).to(device=device, dtype=dtype)
    w = (1.0 + 0.1 * torch.randn(shape[-1], generator=gen)).to(device=device, dtype=dtype)
    return x, w


# ---------------------------------------------------------------------------------------
# paths, arguments, the end of a run
# ---------------------------------------------------------------------------------------
def default_out(device, filename):
    """``benchmarks/results/<results_subdir(device)>/<filename>``."""
    return RESULTS_DIR / results_subdir(device) / filename


def clip(text, width=60):
    """``text`` cut to ``width`` characters (with an ellipsis), None kept as None."""
    if text is None:
        return None
    text = str(text)
    return text if len(text) <= width else text[: width - 1] + "…"


def stream_context(device, side_stream):
    """A context that makes a fresh non-default CUDA stream current, or does nothing.

    Parameters
    ----------
    device : str
    side_stream : bool
        True on CUDA: everything inside runs on one ``torch.cuda.Stream()`` instead of the
        legacy default stream.
    """
    import contextlib
    if side_stream and str(device).startswith("cuda"):
        import torch
        return torch.cuda.stream(torch.cuda.Stream())
    return contextlib.nullcontext()


def finish(tag, out, meta, args, failures):
    """The end of a run of a script built on :func:`bench_parser`: says where the results
    went, draws the PNG unless --no-plot, reports the failures. Returns the exit status."""
    print(f"\n[{tag}] wrote {out} ({meta['elapsed_s']} s)")
    if not args.no_plot:
        import plot
        plot.plot_file(out, Path(args.plot) if args.plot else out.with_suffix(".png"))
    if failures:
        print(f"\n[{tag}] FAILED: " + "; ".join(failures), file=sys.stderr)
        return 1
    return 0


def bench_parser(description, results_name):
    """The arguments every benchmark takes: --device, --out, --plot, --no-plot,
    --side-stream. Scripts add their own to the parser returned."""
    import argparse
    ap = argparse.ArgumentParser(description=description)
    ap.add_argument("--device", choices=("cuda", "cpu"), required=True)
    ap.add_argument("--out", help=f"results JSON (default benchmarks/results/<device>/{results_name})")
    ap.add_argument("--plot", help="PNG to draw (default: the JSON's path with .png)")
    ap.add_argument("--no-plot", action="store_true", help="write no PNG")
    ap.add_argument("--side-stream", action="store_true",
                    help="cuda: run everything on a fresh non-default stream instead of the "
                         "legacy default stream (recorded in the metadata)")
    return ap


if __name__ == "__main__":
    if sys.argv[1:] == ["digest"]:
        print(source_digest())
    else:
        sys.exit("usage: python benchmarks/common.py digest")
