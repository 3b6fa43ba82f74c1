"""The kernel changes parked under dev/patches (measured on a GPU or waiting for their
first run there) still apply to the shipped sources (or over the patches their header
names: "Applies over: A.patch"), by git and by dev/lab.py's applier (what dev/time_top_k.py's
patched variants use on the device), and the kernels they patch still compile (nvcc,
sm_90a, without spills): a change to a shipped file that breaks a parked patch shows here.
Skipped where git or nvcc is not installed."""
import os
import shutil
import subprocess
import sys

import pytest
from helpers import nvcc, nvcc_bare, nvcc_text

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
PATCH_DIR = os.path.join(ROOT, "dev", "patches")   # git keeps no empty folder: none may be parked
PATCHES = sorted(f for f in os.listdir(PATCH_DIR) if f.endswith(".patch")) if os.path.isdir(PATCH_DIR) else []
GIT = shutil.which("git")


def _text(name):
    with open(os.path.join(PATCH_DIR, name)) as f:
        return f.read()


def _from_lab(fn, *args):
    """dev/lab.py's `fn`(*args), outside the lab fixture (at collection, or for its helpers)"""
    sys.path.insert(0, os.path.join(ROOT, "dev"))
    try:
        import lab as dev_lab
        return getattr(dev_lab, fn)(*args)
    finally:
        sys.path.remove(os.path.join(ROOT, "dev"))
        sys.modules.pop("lab", None)


def _bases(name):
    """The parked patches `name` applies over (its header's "Applies over:" line), each's own first."""
    return tuple(b for d in _from_lab("bases_of", _text(name)) for b in (*_bases(d), d))


def _chain(name):
    """`name` after every patch it applies over"""
    return (*_bases(name), name)


NEEDS_NVCC = pytest.mark.skipif(nvcc() is None, reason="nvcc is not installed: the CUDA C compile check needs it")


@pytest.fixture
def lab(monkeypatch):
    monkeypatch.syspath_prepend(os.path.join(ROOT, "dev"))
    import lab as dev_lab
    yield dev_lab
    sys.modules.pop("lab", None)


@pytest.mark.skipif(GIT is None, reason="git is not installed: the patch check needs it")
@pytest.mark.parametrize("name", PATCHES)
def test_a_parked_patch_applies_by_git(name, tmp_path):
    """Alone on the shipped tree, or (with an "Applies over:" line) on a copy of the files
    they touch with its bases applied by git first."""
    bases = _bases(name)
    cwd = ROOT
    if bases:
        files = sorted({f for n in (*bases, name) for f in _from_lab("files_of", _text(n))})
        for f in files:
            (tmp_path / f).parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(os.path.join(ROOT, f), tmp_path / f)
        for b in bases:
            r = subprocess.run([GIT, "apply", os.path.join(PATCH_DIR, b)], cwd=tmp_path, capture_output=True, text=True)
            assert r.returncode == 0, (b, r.stderr)
        cwd = tmp_path
    r = subprocess.run([GIT, "apply", "--check", os.path.join(PATCH_DIR, name)], cwd=cwd,
                       capture_output=True, text=True)
    assert r.returncode == 0, r.stderr


def test_a_patch_over_another_needs_it_first(lab, tmp_path):
    """A patch whose header says "Applies over: B.patch" is refused alone, with the order to
    name (the lab's applier would otherwise say only that a hunk matches nothing)."""
    text = "Why.\nApplies over: smx_b.patch, c-d.patch (the lab: ...)\ndiff --git a/x b/x\nApplies over: no.patch\n"
    assert lab.bases_of(text) == ("smx_b.patch", "c-d.patch")
    assert lab.bases_of("no header\ndiff --git a/x b/x\n") == ()
    over = [n for n in PATCHES if _bases(n)]
    if not over:
        pytest.skip("no parked patch applies over another")
    with pytest.raises(ValueError, match="applies over .*: apply that first"):
        lab.write_patched(tmp_path, [over[0]])   # refused before it reads or writes a file


def test_the_labs_applier_applies_each_hunk_once_or_says_why(lab):
    text = "a\nb\nc\nd\n"
    patch = "--- a/csrc/ops/x.cu\n+++ b/csrc/ops/x.cu\n@@ -1,3 +1,3 @@\n a\n-b\n+B\n c\n"
    assert lab.apply_patch(text, patch, "csrc/ops/x.cu") == "a\nB\nc\nd\n"
    with pytest.raises(ValueError, match="matches 0 places"):
        lab.apply_patch("a\nc\n", patch, "csrc/ops/x.cu")
    with pytest.raises(ValueError, match="no hunk for csrc/ops/y.cu"):
        lab.apply_patch(text, patch, "csrc/ops/y.cu")


def _touches(name, prefix):
    with open(os.path.join(ROOT, "dev", "patches", name)) as f:
        return any(ln.startswith("+++ b/" + prefix) for ln in f)


SAMPLING_PATCHES = [name for name in PATCHES if _touches(name, "csrc/ops/sampling/")]


def test_time_top_k_names_patched_variants(lab):
    """dev/time_top_k.py's variant grammar: c<C>[n][k|p][l] then +NAME per parked patch
    (the lab fixture puts dev/ on the path)."""
    import time_top_k as T
    sys.modules.pop("time_top_k", None)
    assert T.parse_variant("c8n") == (8, ("-DSMP_KEEP=0",), False)
    assert T.variant_patches("c4k+a_b+c-d") == ("a_b.patch", "c-d.patch")
    assert T.variant_patches("c8") == ()
    assert T.mask_part("c8p+x") == "p" and T.mask_part("c8+x") == "kp"
    with pytest.raises(SystemExit, match="expected c<C>"):
        T.parse_variant("c8u")


def test_apply_patch_writes_a_parked_patch_into_the_tree_once(tmp_path, lab, monkeypatch):
    """dev/apply_patch.py (the device call's way to run GPU tests on a parked change, no git
    there): the shipped file becomes what the lab applier makes of it; a second application
    finds its hunks gone and refuses."""
    import apply_patch as A
    sys.modules.pop("apply_patch", None)
    name = next((n for n in SAMPLING_PATCHES if not n.startswith("smx_ablate_") and not _bases(n)), None)
    if name is None:
        pytest.skip("no sampling patch that stands alone is parked")
    shutil.copytree(os.path.join(ROOT, "csrc", "ops"), tmp_path / "csrc" / "ops")
    monkeypatch.setattr(A, "ROOT", tmp_path)
    A.main([name])
    patch = open(os.path.join(PATCH_DIR, name)).read()
    for rel in (f for f in lab.files_of(patch) if f.startswith("csrc/ops/")):   # what it writes
        shipped = open(os.path.join(ROOT, rel)).read()
        assert (tmp_path / rel).read_text() == lab.apply_patch(shipped, patch, rel) != shipped, rel
    with pytest.raises(ValueError, match="matches 0 places"):
        A.main([name])


def test_apply_patch_applies_a_patch_over_one_it_applied_before(tmp_path, lab, monkeypatch):
    """apply_patch.py records what it applied (.applied_patches), so a patch that applies
    over another goes in by a later call (the device call tests the base, then both); on a
    tree without its base it is refused, nothing written."""
    import apply_patch as A
    sys.modules.pop("apply_patch", None)
    over = next((n for n in PATCHES if _bases(n)), None)
    if over is None:
        pytest.skip("no parked patch applies over another")
    monkeypatch.setattr(A, "ROOT", tmp_path)
    shutil.copytree(os.path.join(ROOT, "csrc", "ops"), tmp_path / "csrc" / "ops")
    before = {p: p.read_text() for p in (tmp_path / "csrc" / "ops").rglob("*") if p.is_file()}
    with pytest.raises(ValueError, match="applies over"):
        A.main([over])
    assert {p: p.read_text() for p in before} == before and not (tmp_path / A.RECORD).exists()
    for b in _bases(over):
        A.main([b])
    A.main([over])
    assert (tmp_path / A.RECORD).read_text().split() == [*_bases(over), over]
    for rel in (f for f in lab.files_of(_text(over)) if f.startswith("csrc/ops/")):
        want = open(os.path.join(ROOT, rel)).read()
        for n in _chain(over):
            if rel in lab.files_of(_text(n)):
                want = lab.apply_patch(want, _text(n), rel)
        assert (tmp_path / rel).read_text() == want, rel


def test_the_labs_builds_replace_an_option_by_its_name(lab):
    """lab.with_defines, what time_softmax.py's and time_gated.py's patched builds pass: a
    define replaces the shipped option of its name (not a longer one sharing the prefix) or
    is added at the end."""
    opts = ("-DTILEOPS_STAGE=2", "-DTILEOPS_STAGES=3", "-DTILEOPS_N=8")
    assert lab.with_defines(opts, ("-DTILEOPS_STAGE=1", "-DSMX_X=0")) == \
        ("-DTILEOPS_STAGES=3", "-DTILEOPS_N=8", "-DTILEOPS_STAGE=1", "-DSMX_X=0")
    assert lab.with_defines(list(opts), ()) == opts


def test_time_softmax_names_patched_variants(lab):
    """dev/time_softmax.py --patches' grammar: A.patch[+B.patch][@-DX=v...][@smem=...]"""
    import time_softmax as T
    sys.modules.pop("time_softmax", None)
    assert T.variant_name("smx_a.patch") == "smx_a"
    assert T.variant_name("a.patch+b.patch@-DTILEOPS_STAGE=3@smem=slots") == "a+b@TILEOPS_STAGE=3@smem=slots"
    assert T.parse_spec("a.patch+b.patch@-DX=1@smem=0") == (("a.patch", "b.patch"), ("-DX=1",), "0")
    assert T.parse_spec("a.patch") == (("a.patch",), (), None)
    with pytest.raises(SystemExit, match="expected PATCH"):
        T.parse_spec("a.patch@X=1")


@NEEDS_NVCC
@pytest.mark.parametrize("name", SAMPLING_PATCHES)
def test_a_parked_sampling_patch_compiles_without_spills(tmp_path, lab, name):
    """The selection kernels of the real vocabularies with the patch applied (one CTA and
    clusters of 8; dev/time_top_k.py's variants c1+NAME, c8+NAME), and argmax's and the
    sampler's builds (a CTA a row and the V rule's cluster; dev/time_argmax.py --patches).
    With no sampling patch parked this has no case."""
    import torch

    from tileops._dtypes import CODE
    from tileops.kernels.sampling import cuda_sampling as K
    for dt in (torch.float32, torch.bfloat16, torch.float16):
        for c in (1, 8):
            for spec in (K.top_k_top_p_mask_specialisation(CODE[dt], 128256, True, 3, True, True, c),
                         K.top_k_specialisation(CODE[dt], 152064, 50, True, True, c),
                         K.argmax_specialisation(CODE[dt], 128256, True, 90, 232448, one_cta=c == 1),
                         K.sample_specialisation(CODE[dt], 152064, True, 90, 232448, one_cta=c == 1)):
                source, kernel, opts, _ = spec
                nvcc_bare(tmp_path, lab.patched_source(source, _chain(name)), kernel, opts)


ACTIVATION_PATCHES = [name for name in PATCHES if _touches(name, "csrc/ops/activation/")]


def _keeps_shipped_builds(name):
    """a patch whose header says "Shipped builds: unchanged" (it adds a build behind a define)"""
    return any(ln.startswith("Shipped builds: unchanged") for ln in _text(name).split("\ndiff --git", 1)[0].split("\n"))


def _gated_builds():
    """every gated kernel: op x dtype x Hugging Face rounding x the element build"""
    from tileops.kernels.activation import cuda_gated as G
    for op in G.ops():
        for dt in (0, 1, 2):
            for cast in (False, True):
                for elems in (False, True):
                    yield (op, dt, cast, elems), G.specialisation(op, dt, 14336, 16 // (4 if dt == 0 else 2),
                                                                  cast=cast, elems=elems)[:3]


@NEEDS_NVCC
@pytest.mark.skipif(shutil.which("readelf") is None,
                    reason="readelf (binutils) is not installed: the check reads the cubin")
@pytest.mark.parametrize("name", [n for n in ACTIVATION_PATCHES if _keeps_shipped_builds(n)])
def test_a_parked_activation_patch_leaves_the_shipped_build(tmp_path, lab, name):
    """Every gated kernel with a patch that says so applied: its machine code is the shipped
    one's, byte for byte, so a patch that adds a build behind a define changes nothing else.
    With no such patch parked this has no case."""
    for case, (source, kernel, opts) in _gated_builds():
        shipped = nvcc_text(tmp_path, source, kernel, opts)
        patched = lab.patched_source(source, _chain(name))
        assert nvcc_text(tmp_path, patched, kernel, opts) == shipped, case


@NEEDS_NVCC
@pytest.mark.parametrize("name", [n for n in ACTIVATION_PATCHES if not _keeps_shipped_builds(n)])
def test_a_parked_activation_patch_compiles_every_gated_build(tmp_path, lab, name):
    """Every gated kernel with a patch that changes them applied (an ablation too) compiles
    without spills, as the shipped builds do. With no such patch parked this has no case."""
    for case, (source, kernel, opts) in _gated_builds():
        nvcc_bare(tmp_path, lab.patched_source(source, _chain(name)), kernel, opts)


NORM_PATCHES = [name for name in PATCHES if _touches(name, "csrc/ops/norm/")]


@NEEDS_NVCC
@pytest.mark.parametrize("name", NORM_PATCHES)
def test_a_parked_norm_patch_compiles_the_row_builds_it_is_timed_at(tmp_path, lab, name):
    """The norm family's row kernels by the launch rule with the patch applied (an
    ablation too) compile without spills, at the widths dev/time_norm_rows.py --patches
    times them: Qwen2.5's 3584, 4096, 8192, and QK-norm's 128; fp16 and bf16, with and
    without a residual, Gemma's too, each's decode form (weight and bias in shared memory)
    where it has one, and rms_norm.cu's register kernel (tileops_rms_norm, RMSNormFwdOp's)
    at the same widths where the patch touches that file. With no norm patch parked this
    has no case."""
    from tileops.kernels.norm import cuda_rows as R
    shipped_too = "csrc/ops/norm/rms_norm.cu" in {f for n in _chain(name) for f in lab.files_of(_text(n))}
    for dt in (1, 2):
        for n in (128, 3584, 4096, 8192):
            for op in ("layer_norm", "fused_add_layer_norm", "rms_norm_rows", "fused_add_rms_norm", "gemma_rms_norm"):
                hw, hb = True, op.endswith("layer_norm")
                source, kernel, opts, _threads, rpb = R.specialisation(op, dt, n, hw, hb, 8, 132)[:5]
                patched = lab.patched_source(source, _chain(name))
                for o in (opts, R.decode_options(opts, hw, hb, 8, rpb)):
                    if o is not None:
                        nvcc_bare(tmp_path, patched, kernel, o)
            if shipped_too:   # dev/time_norm_rows.py's "shipped +NAME": the rule's row threads
                opts = R.specialisation("rms_norm_rows", dt, n, True, False, 8, 132)[2]
                nvcc_bare(tmp_path, lab.patched_source("norm/rms_norm.cu", _chain(name)), "tileops_rms_norm",
                          [o for o in opts if not o.startswith("-DTILEOPS_HAS_BIAS")])


def test_apply_patch_writes_a_patchs_launch_side_too(tmp_path, lab, monkeypatch):
    """apply_patch.py writes a parked patch's src/tileops hunks as well as its kernel's (a
    kernel change and its launch side go in together on the device); the lab's timing copy
    (patched_source) takes csrc/ops only."""
    import apply_patch as A
    sys.modules.pop("apply_patch", None)
    name = next((n for n in PATCHES if _touches(n, "src/tileops/") and not _bases(n)
                 and all(f.startswith(("csrc/", "src/")) for f in lab.files_of(_text(n)))), None)
    if name is None:
        pytest.skip("no parked patch has a launch side")
    for top in ("csrc", "src"):
        shutil.copytree(os.path.join(ROOT, top), tmp_path / top, ignore=shutil.ignore_patterns("__pycache__", "*.so"))
    monkeypatch.setattr(A, "ROOT", tmp_path)
    A.main([name])
    rels = lab.files_of(_text(name))
    assert any(r.startswith("src/tileops/") for r in rels)
    for rel in rels:
        shipped = open(os.path.join(ROOT, rel)).read()
        assert (tmp_path / rel).read_text() == lab.apply_patch(shipped, _text(name), rel) != shipped, rel


SOFTMAX_PATCHES = [name for name in PATCHES if _touches(name, "csrc/ops/sampling/softmax.cu")]


def _softmax_builds(K):
    """(source, kernel, opts, plan) of every softmax build `K` (cuda_sampling, or a patched
    copy) plans at the real vocabularies for sm_90a: 16-bit and float32 logits, with and
    without a temperature, float32 out"""
    import torch

    from tileops._dtypes import CODE
    for dt in (torch.bfloat16, torch.float16, torch.float32):
        for V in (128256, 152064):
            for temp in (False, True):
                yield K.softmax_specialisation(CODE[dt], CODE[torch.float32], V, temp, True, 90, 232448)


@NEEDS_NVCC
@pytest.mark.parametrize("name", SOFTMAX_PATCHES)
def test_a_parked_softmax_patch_compiles_its_builds(tmp_path, lab, name):
    """dev/time_softmax.py --patches NAME builds the op's builds from the patched source:
    every build, the registers build (16-bit logits, no temperature) and the staged one
    (a temperature, or float32 logits), compiles at both vocabularies within the shipped
    registers build's spill bound (32 bytes, test_cuda_sampling_specialisations; an
    ablation, smx_ablate_*, a timing lab, up to 64; sm_90a). A patch that applies over
    others is built over them."""
    from tileops.kernels.sampling import cuda_sampling as K
    stages = set()
    for source, kernel, opts, plan in _softmax_builds(K):
        stages.add(plan.stage)
        nvcc_bare(tmp_path, lab.patched_source(source, _chain(name)), kernel, opts,
                  max_spill=64 if name.startswith("smx_ablate_") else 32)
    assert stages == {1, 2}, stages


SAMPLING_LAUNCH_PATCHES = [name for name in PATCHES if _touches(name, "src/tileops/kernels/sampling/cuda_sampling.py")]


@NEEDS_NVCC
@pytest.mark.parametrize("name", SAMPLING_LAUNCH_PATCHES)
def test_a_parked_softmax_launch_patch_plans_builds_that_compile(tmp_path, lab, name):
    """A patch of the sampling launch side (cuda_sampling.py) loaded as the package's module
    would be once applied: every softmax build it plans (_softmax_builds) compiles from its
    (patched) source within the shipped registers build's spill bound (32 bytes), with the
    CTAs an SM its plan names as TILEOPS_MIN_BLOCKS, and some build differs from the
    shipped plan's. With no such patch parked this has no case."""
    import importlib.util

    from tileops.kernels.sampling import cuda_sampling as K
    rel = "src/tileops/kernels/sampling/cuda_sampling.py"
    text = lab.apply_patch(open(os.path.join(ROOT, rel)).read(), _text(name), rel)
    spec = importlib.util.spec_from_loader("tileops.kernels.sampling._patched_cuda_sampling", loader=None)
    P = importlib.util.module_from_spec(spec)
    P.__package__ = "tileops.kernels.sampling"
    exec(compile(text, rel, "exec"), P.__dict__)
    changed = 0
    for (source, kernel, opts, plan), shipped in zip(_softmax_builds(P), _softmax_builds(K)):
        changed += (opts, plan) != shipped[2:]
        assert f"-DTILEOPS_MIN_BLOCKS={plan.min_blocks}" in opts, plan
        nvcc_bare(tmp_path, lab.patched_source(source, _chain(name)), kernel, opts, max_spill=32)
    assert changed, f"{name} changes no softmax build at these vocabularies"


def test_the_next_runs_plan_names_parked_patches_in_its_order(lab, tmp_path):
    """dev/next_run.sh (the next device call's plan): every --patches spec it times and every
    list it applies before its tests names parked patches, a base before what applies over
    it; its dry run goes through every plan's steps."""
    import re
    with open(os.path.join(ROOT, "dev", "next_run.sh")) as f:
        script = f.read()
    lists = dict(re.findall(r'^([A-Z_]+(?:SPECS|APPLY))="([^"]*)"', script, re.M))
    specs = [s for k, v in lists.items() if k.endswith("SPECS") for s in v.split(",")]
    applies = [v.split() for k, v in lists.items() if k.endswith("APPLY")]
    assert specs and applies, lists
    for spec in specs:
        patches, _, _ = lab.parse_spec(spec, ("smem",))   # time_softmax.py's grammar, the widest
        assert set(patches) <= set(PATCHES), spec
        for i, p in enumerate(patches):
            assert set(_bases(p)) <= set(patches[:i]), spec
    for names in applies:
        assert set(names) <= set(PATCHES), names
        for i, p in enumerate(names):
            assert set(_bases(p)) <= set(names[:i]), names
    plans = re.findall(r"^([a-z0-9]+)_time\(\) \{", script, re.M)
    assert {"softmax", "norm", "floor", "harness", "normfull", "pdafull", "pdaprof"} <= set(plans), plans
    r = subprocess.run(["bash", os.path.join(ROOT, "dev", "next_run.sh"), *plans],
                       capture_output=True, text=True,
                       env=dict(os.environ, NEXT_DRY="1", OUT=str(tmp_path)), timeout=60)
    assert r.returncode == 0 and "next_run: done" in r.stdout, r.stdout + r.stderr
    for step in ("bench_readme", "normfull_LayerNormFwdOp", "pdafull_float16", "pdaprof"):
        assert f"=== next_run {step} " in r.stdout, step
