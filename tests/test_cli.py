"""The command line and the process settings: `python -m tileops --version`, `info
--json`, `cache info|clear`, TILEOPS_LOG_LEVEL, XDG_CACHE_HOME, and the CPU kernels'
thread count following torch.set_num_threads unless TILEOPS_NUM_THREADS is set."""
import json
import os
import subprocess
import sys
import textwrap

import pytest
import torch
from helpers import op_key

import tileops
from tileops import _C, _settings
from tileops import __main__ as tileops_main
from tileops.norm import RMSNormFwdOp


@pytest.fixture
def cli(monkeypatch, capsys):
    """`python -m tileops ARGS` in this process, under the environment given (the core reads
    the cache settings on every call): (exit code, stdout, stderr)."""
    def run(*args, **env):
        for k in ("TILEOPS_CACHE_DIR", "XDG_CACHE_HOME"):
            monkeypatch.delenv(k, raising=False)
        for k, v in env.items():
            monkeypatch.setenv(k, v)
        capsys.readouterr()
        code = tileops_main.main(list(args))
        out = capsys.readouterr()
        return code, out.out, out.err
    return run


def _run(*args, code=None, **env):
    e = {k: v for k, v in os.environ.items() if k not in ("TILEOPS_CACHE_DIR", "XDG_CACHE_HOME",
                                                          "TILEOPS_LOG_LEVEL", "TILEOPS_NUM_THREADS", "TILEOPS_PDL",
                                                          "TILEOPS_CPU_SIMD")}
    e.update(env)
    cmd = [sys.executable, "-W", "always"] + (["-c", code] if code else ["-m", "tileops", *args])
    return subprocess.run(cmd, env=e, capture_output=True, text=True, timeout=300)


def test_version_names_tileops_its_distribution_and_torch():
    r = _run("--version")
    assert r.returncode == 0, r.stderr
    assert r.stdout.startswith(f"tileops {tileops.__version__} (distribution tileops-c), torch {torch.__version__}")


def test_info_json_says_what_this_process_runs_on(tmp_path):
    r = _run("info", "--json", XDG_CACHE_HOME=str(tmp_path))
    assert r.returncode == 0, r.stderr
    d = json.loads(r.stdout)
    assert d["tileops"] == tileops.__version__ and d["torch"] == torch.__version__
    assert d["cpu"]["simd"] == _C.cpu_simd_level()
    assert d["cpu"]["threads"] == torch.get_num_threads() and d["cpu"]["threads_from"] == "torch.get_num_threads()"
    assert isinstance(d["cuda"]["available"], bool) and (d["cuda"]["available"] or d["cuda"]["reason"])
    assert d["kernel_cache"] == {"folder": str(tmp_path / "tileops" / tileops.__version__), "on": True, "reason": ""}
    assert set(d["targets"]["names"]) >= {"builtin", "aten"}
    assert d["environment"]["XDG_CACHE_HOME"] == str(tmp_path)
    assert d["cuda"]["pdl"] is True and d["environment"]["TILEOPS_PDL"] is None


def test_tileops_pdl_0_turns_programmatic_dependent_launch_off(tmp_path):
    d = json.loads(_run("info", "--json", XDG_CACHE_HOME=str(tmp_path), TILEOPS_PDL="0").stdout)
    assert d["cuda"]["pdl"] is False and d["environment"]["TILEOPS_PDL"] == "0"


def test_the_default_cache_folder_honours_xdg_cache_home_and_ignores_a_relative_one(tmp_path, cli):
    home = tmp_path / "home"
    home.mkdir()
    for xdg, want in ((str(tmp_path / "xdg"), tmp_path / "xdg" / "tileops" / tileops.__version__),
                      ("relative/cache", home / ".cache" / "tileops" / tileops.__version__)):
        code, out, err = cli("cache", "info", "--json", XDG_CACHE_HOME=xdg, HOME=str(home))
        assert code == 0, err
        d = json.loads(out)
        assert d["folder"] == str(want) and d["on"], d
        assert oct(os.stat(want).st_mode & 0o777) == "0o700"
    code, out, err = cli("cache", "info", "--json", XDG_CACHE_HOME=str(tmp_path / "xdg"),
                         TILEOPS_CACHE_DIR=str(tmp_path / "own"))
    assert json.loads(out)["folder"] == str(tmp_path / "own"), "TILEOPS_CACHE_DIR comes first"


def _entry(folder, arch, name, size):
    d = folder / arch
    d.mkdir(parents=True, exist_ok=True, mode=0o700)
    (d / name).write_bytes(b"\0" * size)
    return d / name


def test_cache_info_and_clear_remove_only_what_tileops_wrote(tmp_path, cli):
    xdg = str(tmp_path / "xdg")
    code, out, err = cli("cache", "info", "--json", XDG_CACHE_HOME=xdg)
    folder = tmp_path / "xdg" / "tileops" / tileops.__version__
    assert code == 0 and json.loads(out)["entries"] == 0, err
    a = _entry(folder, "sm_90a", "tileops_rms_norm-0123456789abcdef.cubin", 100)
    b = _entry(folder, "sm_80", "tileops_layer_norm-fedcba9876543210.cubin", 50)
    tmp = _entry(folder, "sm_80", "tileops_layer_norm-fedcba9876543210.cubin.tmp.123.4", 7)
    keep = [_entry(folder, "sm_90a", "notes.txt", 3),                 # not an entry's name
            _entry(folder, "not_an_arch", "k-0123456789abcdef.cubin", 3)]
    outside = tmp_path / "precious.cubin"
    outside.write_bytes(b"keep me")
    (folder / "sm_90a" / "link-0123456789abcdef.cubin").symlink_to(outside)   # never followed
    old = tmp_path / "xdg" / "tileops" / "0.0.9"                        # another version's folder
    old_entry = _entry(old, "sm_90a", "tileops_rms_norm-1111111111111111.cubin", 30)
    os.chmod(old, 0o700)

    code, out, err = cli("cache", "info", "--json", XDG_CACHE_HOME=xdg)
    d = json.loads(out)
    assert d["entries"] == 3 and d["bytes"] == 157, d
    assert d["by_arch"] == {"sm_90a": {"entries": 1, "bytes": 100}, "sm_80": {"entries": 2, "bytes": 57}}
    assert d["other_versions"] == {"0.0.9": 30}
    code, out, err = cli("cache", "info", XDG_CACHE_HOME=xdg)
    assert "3 entries" in out and "other version 0.0.9" in out, out

    code, out, err = cli("cache", "clear", XDG_CACHE_HOME=xdg)
    assert code == 0 and "removed 3 entries" in out, out + err
    assert not a.exists() and not b.exists() and not tmp.exists()
    assert all(k.exists() for k in keep) and outside.read_bytes() == b"keep me"
    assert (folder / ".tileops-secret").exists(), "the folder's secret stays"
    assert old_entry.exists(), "another version's entries stay without --all-versions"
    code, out, err = cli("cache", "clear", "--all-versions", XDG_CACHE_HOME=xdg)
    assert code == 0 and "removed 1 entries" in out and not old_entry.exists(), out


def test_cache_clear_of_a_refused_or_disabled_cache_touches_nothing(tmp_path, cli):
    shared = tmp_path / "shared"
    shared.mkdir()
    os.chmod(shared, 0o777)
    victim = _entry(shared, "sm_90a", "k-0123456789abcdef.cubin", 10)
    code, out, err = cli("cache", "clear", TILEOPS_CACHE_DIR=str(shared))
    assert code == 1 and "off" in err and "nothing cleared" in err, err
    assert victim.exists()
    code, out, err = cli("cache", "clear", TILEOPS_CACHE_DIR="")
    assert code == 1 and "disabled" in err, err


def test_log_level_from_the_environment():
    # a rebuild (INFO) and a kernel selection (DEBUG)
    code = textwrap.dedent(f"""
        import tileops, torch
        from tileops.norm import RMSNormFwdOp
        torch.ops.tileops.norm_rms_norm_fwd(torch.randn(2, 8), None, {op_key(RMSNormFwdOp, 77, normalized_shape=(8,))!r})
        RMSNormFwdOp(8)(torch.randn(2, 8))
    """)
    r = _run(code=code, TILEOPS_LOG_LEVEL="info")
    assert r.returncode == 0, r.stderr
    assert "tileops.registry INFO" in r.stderr and "rebuilt RMSNormFwdOp" in r.stderr, r.stderr
    assert "DEBUG" not in r.stderr
    r = _run(code=code, TILEOPS_LOG_LEVEL="DEBUG")
    assert "tileops.ops DEBUG" in r.stderr and "target builtin serves 'rms_norm'" in r.stderr, r.stderr
    r = _run(code=code)
    assert "rebuilt" not in r.stderr and "serves" not in r.stderr, r.stderr
    r = _run(code=code, TILEOPS_LOG_LEVEL="loud")
    assert r.returncode == 0 and "TileOpsWarning" in r.stderr and "TILEOPS_LOG_LEVEL='loud' is not a level" in r.stderr


@pytest.mark.parametrize("value, level", [("", None), (" warning ", 30), ("DEBUG", 10), ("15", 15)])
def test_log_levels_read(value, level):
    assert _settings.log_level_from(value) == level


def test_cpu_kernels_follow_torch_set_num_threads():
    n0 = torch.get_num_threads()
    _settings.configure_threads()
    op = RMSNormFwdOp((256,))
    x = torch.randn(512, 256)
    ref = op(x)
    try:
        for n in (1, 2, 1):
            torch.set_num_threads(n)
            assert torch.equal(op(x), ref)
            assert _C.cpu_num_threads() == n, "the next CPU call takes torch's thread count"
    finally:
        torch.set_num_threads(n0)
    op(x)
    assert _C.cpu_num_threads() == n0


def test_tileops_num_threads_fixes_the_count():
    code = textwrap.dedent("""
        import torch, tileops
        from tileops.__main__ import info_dict
        from tileops.norm import RMSNormFwdOp
        torch.set_num_threads(2)          # ignored: TILEOPS_NUM_THREADS fixes the count
        RMSNormFwdOp(64)(torch.randn(256, 64))
        print(tileops._C.cpu_num_threads(), info_dict()['cpu']['threads_from'])
    """)
    r = _run(code=code, TILEOPS_NUM_THREADS="1")
    assert r.returncode == 0, r.stderr
    assert r.stdout.split() == ["1", "TILEOPS_NUM_THREADS"], r.stdout


_SIMD_LEVELS = ("scalar", "avx2", "avx512", "avx512_bf16")


def test_tileops_cpu_simd_caps_the_kernels_level_with_the_same_bits():
    """TILEOPS_CPU_SIMD runs a lower CPU's paths here: the level it names is the one used
    (info says it), and the vector levels' RMSNorm and SiLU-and-mul give the same bits."""
    best = _run(code="import tileops\nprint(tileops._C.cpu_simd_level())\n").stdout.strip()
    code = textwrap.dedent("""
        import hashlib, torch, tileops
        from tileops.__main__ import info_dict
        from tileops.norm import RMSNormFwdOp
        from tileops.activation import SiluAndMulFwdOp
        g = torch.Generator().manual_seed(0)
        x = torch.randn(37, 4100, generator=g).to(torch.bfloat16)
        w = torch.randn(4100, generator=g).to(torch.bfloat16)
        a = torch.randn(5, 2 * 1000, generator=g).to(torch.bfloat16)
        y, z = RMSNormFwdOp(4100, eps=1e-6)(x, w), SiluAndMulFwdOp()(a)
        torch.testing.assert_close(y.double(), torch.nn.functional.rms_norm(x.double(), (4100,), w.double(), 1e-6),
                                   rtol=1e-2, atol=1e-2)
        digest = hashlib.sha256(y.view(torch.int16).numpy().tobytes() + z.view(torch.int16).numpy().tobytes())
        print(tileops._C.cpu_simd_level(), info_dict()['cpu']['simd'], digest.hexdigest())
    """)
    digests = {}
    for level in _SIMD_LEVELS[:_SIMD_LEVELS.index(best) + 1]:
        r = _run(code=code, TILEOPS_CPU_SIMD=level.upper() if level == "avx2" else level)
        assert r.returncode == 0 and "TileOpsWarning" not in r.stderr, r.stderr
        got, info, digests[level] = r.stdout.split()
        assert got == info == level, (level, r.stdout)
    vector = {d for lvl, d in digests.items() if lvl != "scalar"}
    assert len(vector) <= 1, f"the vector levels' bits differ: {digests}"


@pytest.mark.parametrize("value", ["avx1024", "sse2"])
def test_a_tileops_cpu_simd_it_cannot_honour_is_one_warning(value):
    code = "import tileops\nprint(tileops._C.cpu_simd_level())\n"
    best = _run(code=code).stdout.strip()   # the CPU's own, whatever this process was given
    r = _run(code=code, TILEOPS_CPU_SIMD=value)
    assert r.returncode == 0, r.stderr
    warns = [x for x in r.stderr.splitlines() if "TileOpsWarning" in x]
    assert len(warns) == 1 and f"TILEOPS_CPU_SIMD={value}" in warns[0], r.stderr
    assert best in _SIMD_LEVELS and f"using {best}" in warns[0] and r.stdout.strip() == best, r.stdout


def test_a_thread_source_that_misbehaves_is_an_error_not_a_silent_count():
    follows = _C.cpu_threads_followed()
    op = RMSNormFwdOp(64)
    x = torch.randn(4, 64)
    try:
        for bad, err in ((lambda: 0, ValueError), (lambda: "2", ValueError), (lambda: 1 / 0, ZeroDivisionError)):
            _C.cpu_follow_threads(bad)
            with pytest.raises(err):
                op(x)
        with pytest.raises(TypeError, match="cpu_follow_threads"):
            _C.cpu_follow_threads(3)
    finally:
        _C.cpu_follow_threads(follows)
    op(x)


@pytest.mark.parametrize("args, said", [(["--dtype", "foo"], "argument --dtype: invalid choice: 'foo'"),
                                        (["--dtype", "int32"], "argument --dtype: invalid choice: 'int32'"),
                                        (["--dtype", "nn"], "argument --dtype: invalid choice: 'nn'"),
                                        (["--rows", "-1"], "argument --rows: expected an int >= 1, got '-1'"),
                                        (["--n", "0"], "argument --n: expected an int >= 1, got '0'")])
def test_demo_arguments_are_checked_by_argparse(capsys, args, said):
    with pytest.raises(SystemExit) as e:
        tileops_main.main(["demo", *args])
    assert e.value.code == 2 and said in capsys.readouterr().err


@pytest.mark.parametrize("args", [("ops", "--json"), ("cache", "info")])
def test_a_reader_that_goes_away_is_no_traceback(tmp_path, args):
    """`python -m tileops ops --json | head -5`: the pipe closed before the output is
    written ends the command quietly, status 1 (Python's own on EPIPE)."""
    p = subprocess.Popen([sys.executable, "-m", "tileops", *args], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                         env=dict(os.environ, XDG_CACHE_HOME=str(tmp_path)))
    p.stdout.close()            # gone before the command has printed anything (it imports torch first)
    err = p.stderr.read().decode()
    assert p.wait(timeout=300) == 1 and err == "", err
