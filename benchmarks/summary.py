"""Summarise a folder of ``python -m tileops bench`` JSON files as Markdown (the README's
"Measured" table is this script's output over one session's run).

    python benchmarks/summary.py DIR [--dtype float16] [--metric hot_us|cold_us|both]
                                     [--behind] [--impls tileops,torch.compile,liger,copy]
                                     [--cases FILTER]
    python benchmarks/summary.py DIR --readme      # the README's "Measured" table
    python benchmarks/summary.py --readme-workloads  # its cases as `bench --workloads` filters, per op

For each case of each op (rows sorted as the files hold them), one line: tileops' time and
each other impl's (torch, torch.compile, peers such as liger or sdpa_gathered; the copy
floor last), in µs, hot and L2-cold as measured in the same interleaved run, with the
ratio of tileops to the fastest impl that is not the copy (< 1: tileops leads). An impl
that failed or whose output differed is shown as its error's first words, never as a
time. ``--behind`` lists only the cases where some impl beat tileops (hot or cold), which
is what the README's "where tileops is behind" paragraph cites. ``--impls`` picks the
columns (the ratio still counts every impl that ran); ``--cases`` keeps the cases whose
name holds one of its comma-separated terms (the bench's ``--workloads`` filter).
``--readme`` prints the README's table instead: the rows of :data:`README_ROWS`, fp16, each
cell "tileops / torch.compile / peer / copy" at a small and a large size, hot and L2-cold.
``--readme-workloads`` prints, per op, the ``--workloads`` filter that selects exactly the
table's cases (dev/readme_bench.sh runs the bench with them: the table in one device call).
"""
from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from tileops.bench import COPY, flag_suspect_hot, impl_order


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
                flag_suspect_hot(r["impls"])   # files written before the bench flagged them too
                rows.append(r)
    return rows


def cell(impl_row, metric, short=False):
    """An impl's time (`` (differs)`` after it when its output disagreed with the
    reference, `` (suspect)`` after a hot time above its own L2-cold time), or why it has
    none: ``failed`` (with the error's type unless ``short``), ``—`` where it did not run."""
    if impl_row is None:
        return "—"
    if impl_row.get("error") and not impl_row.get(metric):
        return "failed" if short else "failed: " + impl_row["error"].split(":")[0][:24]
    v = impl_row.get(metric)
    if v is None:
        return "—"
    flag = "" if impl_row.get("correct", True) else " (differs)"
    if metric == "hot_us" and impl_row.get("suspect"):   # above its own L2-cold time (bench.flag_suspect_hot)
        flag += " (suspect)"
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
    names = impl_order(rows) if impls is None else list(impls)
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
        case = r["case"].rsplit("-", 1)[0] if r["case"].endswith(r["dtype"]) else r["case"]
        line = [r["op"].removesuffix("FwdOp"), case]
        for m, x in zip(metrics, ratios):
            line += [cell(r["impls"].get(n), m) for n in names]
            line.append("—" if x is None else f"{x:.2f}")
        out.append("| " + " | ".join(line) + " |")
    return "\n".join(out), kept


# The README's table: (label, op, case name with %s for the size, peer, (small, large)).
README_ROWS = (
    ("RMSNorm, hidden 4096", "RMSNormFwdOp", "Llama-3-8B[H=4096,T=%s]", "liger", ("1", "4096")),
    ("RMSNorm, hidden 8192", "RMSNormFwdOp", "Llama-3-70B[H=8192,T=%s]", "liger", ("1", "4096")),
    ("QK-norm, 32 heads of 128", "RMSNormFwdOp", "QK-norm, 32 heads[H=128,T=%s]", "liger", ("1", "4096")),
    ("Gemma RMSNorm, 4096", "GemmaRMSNormFwdOp", "Llama-3-8B[H=4096,T=%s]", "liger", ("1", "4096")),
    ("LayerNorm, 4096", "LayerNormFwdOp", "Llama-3-8B[H=4096,T=%s]", "liger", ("1", "4096")),
    ("fused add + RMSNorm, 4096", "FusedAddRMSNormFwdOp", "Llama-3-8B[H=4096,T=%s]", "liger", ("1", "4096")),
    ("fused add + LayerNorm, 4096 (no Liger op)", "FusedAddLayerNormFwdOp", "Llama-3-8B[H=4096,T=%s]", None,
     ("1", "4096")),
    ("SiLU-and-mul, intermediate 14336", "SiluAndMulFwdOp", "Llama-3-8B[I2=28672,T=%s]", "liger", ("1", "4096")),
    ("GeLU(tanh)-and-mul, 14336", "GeluTanhAndMulFwdOp", "Llama-3-8B[I2=28672,T=%s]", "liger", ("1", "4096")),
    ("GeLU(erf)-and-mul, 14336 (no Liger op)", "GeluAndMulFwdOp", "Llama-3-8B[I2=28672,T=%s]", None, ("1", "4096")),
    ("RoPE, Llama-3-8B heads (32 + 8 of 128)", "RopeFwdOp", "Llama-3-8B[D=128,H=32,HK=8,P=8192,T=%s]", None,
     ("1", "4096")),
    ("RoPE, Llama-3-70B heads (64 + 8)", "RopeFwdOp", "Llama-3-70B[D=128,H=64,HK=8,P=8192,T=%s]", None, ("1", "4096")),
    ("embedding, Llama-3-8B table", "EmbeddingFwdOp", "Llama-3-8B[H=4096,T=%s,V=128256]", None, ("1", "4096")),
    ("merge of two attention states, 32 heads", "MergeAttnStatesFwdOp", "Llama-3-8B[D=128,H=32,T=%s]", None,
     ("1", "4096")),
    ("KV-cache write, 8 KV heads, pages of 16 (right: T = 128)", "KVCacheWriteFwdOp",
     "Llama-3-8B, pages of 16[BS=16,D=128,HK=8,NB=2048,T=%s]", None, ("1", "128")),
    ("softmax of 128256 logits (left: B = 1, right: B = 128)", "SoftmaxFwdOp", "Llama-3[B=%s,V=128256]", None,
     ("1", "128")),
    ("argmax of 128256 (B = 1 / 128)", "ArgmaxFwdOp", "Llama-3[B=%s,V=128256]", None, ("1", "128")),
    ("top-50 of 128256 (B = 1 / 128; peer: torch.topk)", "TopKFwdOp", "Llama-3, top-50[B=%s,K=50,V=128256]",
     "torch.topk", ("1", "128")),
    ("top-k/top-p mask of 128256 (B = 1 / 128)", "TopKTopPMaskFwdOp", "Llama-3[B=%s,V=128256]", None, ("1", "128")),
    ("draw from probs of 128256 (B = 1 / 128)", "SampleFromProbsFwdOp", "Llama-3[B=%s,V=128256]", None, ("1", "128")),
    ("paged decode, Llama-3-8B, pages of 16, 4K context (B = 1 / 32; peer: SDPA on K/V gathered)",
     "PagedDecodeAttentionFwdOp", "Llama-3-8B[B=%s,BS=16,CTX=4096,D=128,H=32,HK=8]", "sdpa_gathered", ("1", "32")),
)


def readme_table(rows, spec=README_ROWS, dtype="float16"):
    """The README's table from bench rows: per spec row, "tileops / torch.compile / peer /
    copy" µs at the small and the large size, hot and L2-cold (`failed` for an impl that
    raised, `(differs)` after the time of one whose output disagreed with the reference,
    `—` for one that did not run, `missing` for a case the rows lack)."""
    by_case = {(r["op"], r["case"]): r for r in rows if r.get("dtype") == dtype}

    def quad(op, case, metric, peer):
        r = by_case.get((op, f"{case}-{dtype}"))
        if r is None:
            return "missing"
        return " / ".join(cell(r["impls"].get(n) if n else None, metric, short=True)
                          for n in ("tileops", "torch.compile", peer, COPY))

    out = ["| op (tileops / torch.compile / peer / copy, µs) | small hot | small L2-cold | large hot"
           " | large L2-cold |",
           "| --- | --- | --- | --- | --- |"]
    for label, op, case, peer, (small, large) in spec:
        cells = [quad(op, case % size, m, peer) for size in (small, large) for m in ("hot_us", "cold_us")]
        out.append(f"| {label} | " + " | ".join(cells) + " |")
    return "\n".join(out)


def case_term(case: str) -> str:
    """A ``--workloads`` term matching exactly the case ``LABEL[D1=v1,D2=v2,...]`` (no dtype):
    ``&`` parts (a comma would split the term), ``LABEL[`` matched as text (its commas
    become parts too), every dim exactly (tileops.bench.case_filter: B=1 is not B=128)."""
    label, _, dims = case.rstrip("]").partition("[")
    return "&".join(label.split(",")[:-1] + [label.split(",")[-1] + "["] + dims.split(","))


def readme_workloads(spec=README_ROWS) -> dict:
    """{op: its README cases as one ``--workloads`` filter}, ops in table order."""
    out = {}
    for _label, op, case, _peer, sizes in spec:
        terms = out.setdefault(op, [])
        for size in sizes:
            if case_term(case % size) not in terms:
                terms.append(case_term(case % size))
    return {op: ",".join(terms) for op, terms in out.items()}


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("folder", type=Path, nargs="?")
    ap.add_argument("--dtype", default=None, help="keep the rows of this dtype (default: all)")
    ap.add_argument("--metric", choices=("hot_us", "cold_us", "both"), default="both")
    ap.add_argument("--behind", action="store_true", help="only the cases where another impl beat tileops")
    ap.add_argument("--impls", default=None, help="comma-separated columns (default: every impl that ran)")
    ap.add_argument("--cases", default=None, help="comma-separated terms: keep the cases whose name holds one")
    ap.add_argument("--readme", action="store_true", help="the README's table (README_ROWS, fp16)")
    ap.add_argument("--readme-workloads", action="store_true",
                    help="per op (one a line: OP FILTER), the --workloads filter of the README's cases")
    a = ap.parse_args(argv)
    if a.readme_workloads:
        for op, terms in readme_workloads().items():
            print(op, terms)
        return
    if a.folder is None:
        raise SystemExit("summary: give the folder of bench JSON files")
    if not a.folder.is_dir():
        raise SystemExit(f"summary: {a.folder} is not a folder of bench JSON files")
    if a.readme:
        print(readme_table(load_rows(a.folder, None)))
        return
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
