"""benchmarks/summary.py: the Markdown summary of a folder of bench JSON files (the README's
"Measured" table). Rows as `python -m tileops bench` writes them: the ratio is tileops over
the fastest impl that is neither the copy nor failed nor wrong; --behind keeps the cases
another impl won; a failed or wrong impl shows as such, never as a time."""
import json
import os
import subprocess
import sys

import pytest

from helpers import load_script

_PATH = os.path.join(os.path.dirname(__file__), "..", "benchmarks", "summary.py")


def _row(op, case, dtype, impls):
    return {"op": op, "case": f"{case}-{dtype}", "dtype": dtype, "impls": impls}


def _write(folder, name, rows):
    (folder / name).write_text(json.dumps({"metadata": {"op": name}, "rows": rows}))


@pytest.fixture
def results(tmp_path):
    _write(tmp_path, "AOp.json", [
        _row("AFwdOp", "small[T=1]", "float16", {
            "tileops": {"hot_us": 1.0, "cold_us": 5.0, "correct": True},
            "torch": {"hot_us": 2.0, "cold_us": 4.0, "correct": True},
            "copy": {"hot_us": 0.5, "cold_us": 3.0}}),
        _row("AFwdOp", "big[T=4096]", "float16", {
            "tileops": {"hot_us": 10.0, "cold_us": 12.0, "correct": True},
            "torch": {"hot_us": 20.0, "cold_us": 24.0, "correct": True},
            "torch.compile": {"error": "InductorError: TypeError: list indices"},
            "copy": {"hot_us": 0.1, "cold_us": 0.1}}),
        _row("AFwdOp", "big[T=4096]", "float32", {
            "tileops": {"hot_us": 10.0, "cold_us": 12.0, "correct": True},
            "torch": {"hot_us": 5.0, "cold_us": 6.0, "correct": False,
                      "error": "output differs from the reference"}}),
    ])
    (tmp_path / "notes.json").write_text(json.dumps({"rows": [{"no": "impls"}]}))   # not a bench file's rows
    return tmp_path


@pytest.fixture(scope="module")
def summary():
    return load_script(_PATH, "bench_summary")


def test_ratio_is_against_the_fastest_impl_that_ran_and_agreed(summary, results):
    rows = summary.load_rows(results, None)
    assert len(rows) == 3
    small, big, wrong = rows
    assert summary.ratio(small, "hot_us") == pytest.approx(0.5)
    assert summary.ratio(small, "cold_us") == pytest.approx(1.25)    # torch wins cold
    assert summary.ratio(big, "hot_us") == pytest.approx(0.5)       # the failed compile is not a candidate
    assert summary.ratio(wrong, "hot_us") is None                    # a wrong output is no baseline


def test_cells_say_failed_and_differs_instead_of_a_time(summary, results):
    text, kept = summary.table(summary.load_rows(results, None), ("hot_us",))
    assert kept == 3
    lines = text.splitlines()
    assert lines[0].split(" | ")[:5] == ["| op", "case", "tileops hot", "torch hot", "torch.compile hot"]
    assert lines[0].split(" | ")[-2:] == ["copy hot", "tileops / best hot |"]
    big = next(ln for ln in lines if "big[T=4096]" in ln and "failed" in ln)
    assert "failed: InductorError" in big and "0.50" in big
    assert any("5.00 (differs)" in ln for ln in lines)


def test_behind_keeps_only_the_cases_another_impl_won(summary, results):
    text, kept = summary.table(summary.load_rows(results, "float16"), ("hot_us", "cold_us"), behind_only=True)
    assert kept == 1
    assert "small[T=1]" in text and "big[T=4096]" not in text


def test_the_script_runs_and_refuses_an_empty_folder(results, tmp_path_factory):
    r = subprocess.run([sys.executable, _PATH, str(results), "--dtype", "float16", "--metric", "hot_us"],
                       capture_output=True, text=True, timeout=60)
    assert r.returncode == 0, r.stderr
    assert r.stdout.count("\n| A |") == 2 and "2 of 2 cases" in r.stderr
    r = subprocess.run([sys.executable, _PATH, str(results), "--impls", "tileops,copy", "--cases", "small",
                        "--metric", "cold_us"], capture_output=True, text=True, timeout=60)
    assert r.returncode == 0, r.stderr
    head, _, line = r.stdout.splitlines()
    assert head == "| op | case | tileops cold | copy cold | tileops / best cold |"
    assert line == "| A | small[T=1] | 5.00 | 3.00 | 1.25 |"       # the ratio still counts torch
    empty = tmp_path_factory.mktemp("empty")
    r = subprocess.run([sys.executable, _PATH, str(empty)], capture_output=True, text=True, timeout=60)
    assert r.returncode != 0 and "no bench rows" in r.stderr


def test_readme_table_cells_and_gaps(summary, results):
    spec = (("A op", "AFwdOp", "small[T=%s]", "torch", ("1", "9")),)
    text = summary.readme_table(summary.load_rows(results, None), spec)
    head, rule, line = text.splitlines()
    assert head.startswith("| op (tileops / torch.compile / peer / copy, µs) | small hot")
    # the small case is there (torch.compile did not run: —); the large one is not
    assert line == "| A op | 1.00 / — / 2.00 / 0.50 | 5.00 / — / 4.00 / 3.00 | missing | missing |"
    spec = (("B op", "AFwdOp", "big[T=%s]", None, ("4096", "4096")),)
    line = summary.readme_table(summary.load_rows(results, None), spec).splitlines()[2]
    assert line.startswith("| B op | 10.00 / failed / — / 0.10 | ")
    spec = (("C op", "AFwdOp", "big[T=%s]", "torch", ("4096", "4096")),)   # float32: torch's output differed
    line = summary.readme_table(summary.load_rows(results, None), spec, dtype="float32").splitlines()[2]
    assert line.startswith("| C op | 10.00 / — / 5.00 (differs) / — | ")


def test_the_readme_rows_name_cases_of_the_manifest():
    """Every README_ROWS case is a manifest case of its op in fp16 (a renamed workload would
    otherwise leave the README's table with `missing` cells)."""
    import tileops
    from tileops.bench import select_cases
    mod = load_script(_PATH, "bench_summary_rows")
    ops = tileops.all_op_classes()
    for label, op, case, peer, sizes in mod.README_ROWS:
        names = {c.name for c in select_cases(ops[op], dtypes=["float16"])}
        for size in sizes:
            assert f"{case % size}-float16" in names, (label, case % size)


def test_the_readme_workloads_select_exactly_the_readme_cases():
    """--readme-workloads: per op, a `bench --workloads` filter (commas inside a case name
    become `&` parts) that keeps exactly the README's fp16 cases of that op."""
    import tileops
    from tileops.bench import case_filter, select_cases
    mod = load_script(_PATH, "bench_summary_wl")
    ops = tileops.all_op_classes()
    want = {}
    for _label, op, case, _peer, sizes in mod.README_ROWS:
        want.setdefault(op, set()).update(f"{case % s}-float16" for s in sizes)
    got = mod.readme_workloads()
    assert list(got) == list(want)
    for op, terms in got.items():
        kept = {c.name for c in select_cases(ops[op], dtypes=["float16"], keep=case_filter(terms))}
        assert kept == want[op], op
    r = subprocess.run([sys.executable, _PATH, "--readme-workloads"], capture_output=True, text=True, timeout=60)
    assert r.returncode == 0 and r.stdout.splitlines()[0] == f"RMSNormFwdOp {got['RMSNormFwdOp']}"


def test_readme_bench_runs_the_bench_on_exactly_those_filters(tmp_path):
    """dev/readme_bench.sh (the README's table in one device call), dry: one bench command
    per op of README_ROWS, with that op's --workloads filter (spaces and `&` intact), fp16,
    into readme/<op>.json of its work folder (packed into $OUT/readme.tar.gz after each op:
    the device tool returns few files a call)."""
    import shlex
    shim = tmp_path / "bin"
    shim.mkdir()
    (shim / "python3").write_text(f'#!/bin/sh\nexec "{sys.executable}" "$@"\n')   # this interpreter, venv and all
    (shim / "python3").chmod(0o755)
    root = os.path.dirname(_PATH) + "/.."
    env = dict(os.environ, README_DRY="1", OUT=str(tmp_path / "out"), PATH=f"{shim}:{os.environ['PATH']}")
    r = subprocess.run(["bash", "dev/readme_bench.sh"], cwd=root, env=env, capture_output=True, text=True, timeout=60)
    assert r.returncode == 0, r.stderr
    want = load_script(_PATH, "bench_summary_sh").readme_workloads()
    cmds = [shlex.split(line) for line in r.stdout.splitlines()]
    assert [c[c.index("--op") + 1] for c in cmds] == list(want)
    for c in cmds:
        op = c[c.index("--op") + 1]
        assert c[c.index("--workloads") + 1] == want[op]
        assert c[c.index("--dtypes") + 1] == "float16" and c[c.index("--device") + 1] == "cuda"
        assert c[c.index("--out") + 1] == f"/tmp/tileops-readme/readme/{op}.json"


def test_a_suspect_hot_time_says_so_in_its_cell(summary):
    """bench.flag_suspect_hot marks a hot time above the impl's own L2-cold time; the
    summary's cell shows it (hot only: the cold time is the one it was held against)."""
    impl = {"hot_us": 1617.3, "cold_us": 1373.7, "suspect": "hot 1617.30 µs is 1.18x its own L2-cold"}
    assert summary.cell(impl, "hot_us") == "1617.30 (suspect)"
    assert summary.cell(impl, "cold_us") == "1373.70"
    assert summary.cell({"hot_us": 2.0, "cold_us": 5.0}, "hot_us") == "2.00"


def test_rows_of_files_written_before_the_flag_are_flagged_on_load(summary, tmp_path):
    _write(tmp_path, "POp.json", [_row("PFwdOp", "big[B=32]", "float16", {
        "tileops": {"hot_us": 1617.3, "cold_us": 1373.7, "correct": True},
        "sdpa_gathered": {"hot_us": 1340.7, "cold_us": 1349.7, "correct": True}})])
    (row,) = summary.load_rows(tmp_path, None)
    assert "suspect" in row["impls"]["tileops"] and "suspect" not in row["impls"]["sdpa_gathered"]
    text, _ = summary.table([row], ("hot_us",))
    assert "1617.30 (suspect)" in text
