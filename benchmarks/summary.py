"""Summarise a folder of ``python -m tileops bench`` JSON files as Markdown (the README's
"Measured" table is this script's output over one session's run).

    python benchmarks/summary.py DIR [--dtype float16] [--metric hot_us|cold_us|both]
                                     [--behind] [--impls tileops,torch.compile,liger,copy]
                                     [--cases FILTER]

For each case of each op (rows sorted as the files hold them), one line: tileops' time and
each other impl's (torch, torch.compile, peers such as liger or sdpa_gathered; the copy
floor last), in µs, hot and L2-cold as measured in the same interleaved run, with the
ratio of tileops to the fastest impl that is not the copy (< 1: tileops leads). An impl
that failed or whose output differed is shown as its error's first words, never as a
time. ``--behind`` lists only the cases where some impl beat tileops (hot or cold), which
is what the README's "where tileops is behind" paragraph cites. ``--impls`` picks the
columns (the ratio still counts every impl that ran); ``--cases`` keeps the cases whose
name holds one of its comma-separated terms (the bench's ``--workloads`` filter).
"""
from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

COPY = "copy"
ORDER = ("tileops", "torch", "torch.compile")


def load_rows(folder: Path, dtype: str | None):
    """Every bench row of every JSON in ``folder`` (sorted by file name), keeping the
    rows of ``dtype`` when given; each row with its file's op."""
    rows = []
    for path in sorted(folder.glob("*.json")):
        data = json.loads(path.read_text())
        if not isinstance(data, dict) or "rows" not in data:
            continue
        for r in data["rows"]:
            if "impls" in r and (dtype is None or r.get("dtype") == dtype):
                rows.append(r)
    return rows


def impl_names(rows):
    """tileops, torch, torch.compile, then the peers in order of appearance, copy last."""
    names = list(ORDER)
    for r in rows:
        for n in r["impls"]:
            if n not in names and n != COPY:
                names.append(n)
    return names + [COPY]


def cell(impl_row, metric):
    """An impl's time, or why it has none (``—`` where it did not run)."""
    if impl_row is None:
        return "—"
    if impl_row.get("error") and not impl_row.get(metric):
        return "failed: " + impl_row["error"].split(":")[0][:24]
    v = impl_row.get(metric)
    if v is None:
        return "—"
    flag = "" if impl_row.get("correct", True) else " (differs)"
    return f"{v:.2f}{flag}"


def best_other(row, metric):
    """(name, time) of the fastest impl besides tileops and the copy whose output agreed
    with the reference, or None."""
    cands = [(r[metric], n) for n, r in row["impls"].items()
             if n not in ("tileops", COPY) and r.get(metric) and r.get("correct", True) and not r.get("error")]
    return min(cands)[::-1] if cands else None


def ratio(row, metric):
    """tileops / the fastest other impl (None when either is missing)."""
    t = row["impls"].get("tileops", {}).get(metric)
    b = best_other(row, metric)
    return None if not t or b is None else t / b[1]


def table(rows, metrics, behind_only=False, impls=None):
    """The Markdown table of ``rows`` for the given metrics (columns: ``impls``, default
    every impl that ran)."""
    names = impl_names(rows) if impls is None else list(impls)
    head = ["op", "case"]
    for m in metrics:
        tag = "hot" if m == "hot_us" else "cold" if m == "cold_us" else m
        head += [f"{n} {tag}" for n in names] + [f"tileops / best {tag}"]
    out = ["| " + " | ".join(head) + " |", "|" + " --- |" * len(head)]
    kept = 0
    for r in rows:
        ratios = [ratio(r, m) for m in metrics]
        if behind_only and not any(x is not None and x > 1.0 for x in ratios):
            continue
        kept += 1
        line = [r["op"].removesuffix("FwdOp"), r["case"].rsplit("-", 1)[0] if r["case"].endswith(r["dtype"]) else r["case"]]
        for m, x in zip(metrics, ratios):
            line += [cell(r["impls"].get(n), m) for n in names]
            line.append("—" if x is None else f"{x:.2f}")
        out.append("| " + " | ".join(line) + " |")
    return "\n".join(out), kept


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("folder", type=Path)
    ap.add_argument("--dtype", default=None, help="keep the rows of this dtype (default: all)")
    ap.add_argument("--metric", choices=("hot_us", "cold_us", "both"), default="both")
    ap.add_argument("--behind", action="store_true", help="only the cases where another impl beat tileops")
    ap.add_argument("--impls", default=None, help="comma-separated columns (default: every impl that ran)")
    ap.add_argument("--cases", default=None, help="comma-separated terms: keep the cases whose name holds one")
    a = ap.parse_args(argv)
    if not a.folder.is_dir():
        raise SystemExit(f"summary: {a.folder} is not a folder of bench JSON files")
    rows = load_rows(a.folder, a.dtype)
    if a.cases:
        terms = [t.strip().lower() for t in a.cases.split(",") if t.strip()]
        rows = [r for r in rows if any(t in r["case"].lower() for t in terms)]
    if not rows:
        raise SystemExit(f"summary: no bench rows in {a.folder}" + (f" of dtype {a.dtype}" if a.dtype else ""))
    metrics = ("hot_us", "cold_us") if a.metric == "both" else (a.metric,)
    text, kept = table(rows, metrics, a.behind, a.impls.split(",") if a.impls else None)
    print(text)
    print(f"\n{kept} of {len(rows)} cases" + (" with tileops behind another impl" if a.behind else ""),
          file=sys.stderr)


if __name__ == "__main__":
    main()
