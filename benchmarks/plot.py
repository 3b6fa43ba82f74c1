"""Plot a benchmark results JSON.

    python benchmarks/plot.py IN.json OUT.png

A JSON of ``python -m tileops bench`` (rows with ``impls``) is drawn by
``tileops.bench.plot_results``: each impl's time over the copy floor, per case. Any other
results JSON (overhead.py's, the dev/ scripts'): one panel per time metric found in the rows -- ``cold_us`` (L2-cold, GPU), ``hot_us``
(L2-hot CUDA-graph replay, GPU) and ``us`` (per-call loop time: CPU runs, overhead runs) --
with one group of bars per (workload, dtype) and one bar per impl, on a log scale (the
workloads span orders of magnitude). Uses matplotlib's Agg backend; when matplotlib is not
installed it says so and exits 0, since the JSON is the primary result.
"""
from __future__ import annotations

import json
import sys
from pathlib import Path

METRICS = (("cold_us", "L2-cold µs / call (do_bench median)"),
           ("hot_us", "L2-hot µs / call (CUDA-graph replay)"),
           ("us", "µs / call (loop median)"))


def _ordered(seq):
    seen, out = set(), []
    for s in seq:
        if s not in seen:
            seen.add(s)
            out.append(s)
    return out


def _short(v):
    """1234.5 -> '1.23k', 12.345 -> '12.3', 0.5 -> '0.50'."""
    if v >= 1e6:
        return f"{v / 1e6:.3g}M"
    if v >= 1e3:
        return f"{v / 1e3:.3g}k"
    return f"{v:.3g}" if v >= 10 else f"{v:.2f}"


def plot_file(in_path, out_path, title=None):
    """Draw the grouped bar chart of ``in_path`` (a results JSON) into ``out_path``.

    Parameters
    ----------
    in_path : str or Path
        ``{"metadata": {...}, "rows": [{workload, dtype, impl, cold_us|hot_us|us, ...}]}``.
    out_path : str or Path
        The PNG to write (parent folders are created).
    title : str, optional
        Figure title; defaults to the op and device name from the metadata.

    Returns
    -------
    bool
        True when a PNG was written, False when matplotlib is missing or there is nothing
        to plot (a message is printed either way).
    """
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        print(f"[plot] matplotlib is not installed: no plot written ({out_path}); "
              f"the results are in {in_path}")
        return False

    with open(in_path) as f:
        data = json.load(f)
    rows = data.get("rows", [])
    sys.path.insert(0, str(Path(__file__).resolve().parent))
    import common
    common.import_tileops()
    from tileops.bench import plot_results, save_figure
    if any("impls" in r for r in rows):  # python -m tileops bench
        return plot_results(data, out_path)
    meta = data.get("metadata", {})
    metrics = [(k, label) for k, label in METRICS
               if any(isinstance(r.get(k), (int, float)) for r in rows)]
    if not metrics:
        print(f"[plot] {in_path}: no timing columns to plot")
        return False

    groups = _ordered((r.get("workload"), r.get("dtype")) for r in rows)
    impls = _ordered(r.get("impl") for r in rows)
    value = {(r.get("workload"), r.get("dtype"), r.get("impl"), k): r.get(k)
             for r in rows for k, _ in metrics}

    width = 0.8 / max(1, len(impls))
    fig_w = max(7.0, 0.42 * len(groups) * max(1, len(impls)) + 3.5)
    fig, axes = plt.subplots(len(metrics), 1, figsize=(fig_w, 3.6 * len(metrics)),
                             squeeze=False)
    cmap = plt.get_cmap("tab10")
    failed = {(r.get("workload"), r.get("dtype"), r.get("impl")) for r in rows if r.get("error")}
    for ax, (key, label) in zip(axes[:, 0], metrics):
        vals = [v for (_, _, _, k), v in value.items()
                if k == key and isinstance(v, (int, float)) and v > 0]
        lo, hi = min(vals), max(vals)
        for j, impl in enumerate(impls):
            xs, ys, errs = [], [], []
            for i, (wl, dt) in enumerate(groups):
                x = i - 0.4 + width * (j + 0.5)
                v = value.get((wl, dt, impl, key))
                if isinstance(v, (int, float)) and v > 0:
                    xs.append(x)
                    ys.append(v)
                elif (wl, dt, impl) in failed:
                    errs.append(x)
            bars = ax.bar(xs, ys, width, label=impl, color=cmap(j % 10))
            for b, v in zip(bars, ys):
                ax.annotate(_short(v), (b.get_x() + b.get_width() / 2, v), ha="center",
                            va="bottom", fontsize=6, rotation=90, xytext=(0, 2),
                            textcoords="offset points")
            for x in errs:  # a failed impl gets a marker, not a silent gap
                ax.annotate("error", (x, lo / 2), ha="center", va="bottom", fontsize=6,
                            rotation=90, color=cmap(j % 10))
        ax.set_yscale("log")
        ax.set_ylim(lo / 3, hi * 12)
        ax.set_ylabel(label)
        ax.set_xticks(range(len(groups)))
        ax.set_xticklabels([f"{wl}\n{dt}" for wl, dt in groups], fontsize=8)
        ax.grid(axis="y", which="major", alpha=0.3)
        ax.legend(fontsize=8, loc="upper left", bbox_to_anchor=(1.0, 1.0))
    ops = ", ".join(o for o in _ordered(r.get("op") for r in rows) if o)
    fig.suptitle(title or f"{ops} -- {meta.get('device_name', meta.get('device', ''))}",
                 fontsize=10)
    return save_figure(fig, out_path, "plot", dpi=120)


def main(argv=None):
    argv = sys.argv[1:] if argv is None else argv
    if len(argv) != 2 or argv[0] in ("-h", "--help"):
        print(__doc__)
        return 0 if argv and argv[0] in ("-h", "--help") else 2
    plot_file(argv[0], argv[1])
    return 0


if __name__ == "__main__":
    sys.exit(main())
