"""Checks a source distribution and a wheel made by check_dist.sh: the sdist holds every
file the build reads (all of csrc/, the package, setup.py, pyproject.toml, the licence)
and no tests; the wheel is tagged manylinux, holds the CUDA C sources, the manifest,
py.typed and the licence, names its distribution tileops-c under Apache-2.0, and its _C
is stripped (no debug sections, no symbol table). Prints one line per check and a
closing "N passed, M failed"."""
import email.parser
import os
import sys
import tarfile
import zipfile

from elftools.elf.elffile import ELFFile  # installed with auditwheel

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
passed = failed = 0


def check(ok, what):
    global passed, failed
    print(("ok   " if ok else "FAIL ") + what)
    passed += bool(ok)
    failed += not ok


def repo_files(top, suffixes=None):
    out = set()
    for folder, _dirs, files in os.walk(os.path.join(ROOT, top)):
        for f in files:
            rel = os.path.relpath(os.path.join(folder, f), ROOT)
            if "__pycache__" in rel or f.endswith((".so", ".o", ".pyc")):
                continue
            if suffixes is None or f.endswith(suffixes):
                out.add(rel)
    return out


def check_sdist(path):
    with tarfile.open(path) as t:
        names = {n.split("/", 1)[1] for n in t.getnames() if "/" in n}
    print(f"sdist {os.path.basename(path)}: {len(names)} entries")
    needed = repo_files("csrc") | {"setup.py", "pyproject.toml", "LICENSE", "README.md", "MANIFEST.in"}
    needed |= {f for f in repo_files("src/tileops") if not f.startswith("src/tileops/cuda/")}
    missing = sorted(needed - names)
    check(not missing, f"sdist holds every file the build reads ({len(needed)}){': missing ' + str(missing) if missing else ''}")
    check(not any(n.startswith(("tests/", "benchmarks/", "dev/")) for n in names), "sdist holds no tests, benchmarks or lab")


def check_wheel(path):
    name = os.path.basename(path)
    print(f"wheel {name}")
    check("-manylinux_" in name or "-manylinux20" in name, f"wheel is tagged manylinux ({name.split('-')[-1]})")
    with zipfile.ZipFile(path) as z:
        names = set(z.namelist())
        info = next(n for n in names if n.endswith(".dist-info/METADATA"))
        meta = email.parser.Parser().parsestr(z.read(info).decode())
        so = next((n for n in names if n.startswith("tileops/_C") and n.endswith(".so")), None)
        so_bytes = z.read(so) if so else b""
    check(meta["Name"] == "tileops-c", f"distribution name tileops-c (got {meta['Name']})")
    check(meta.get("License-Expression") == "Apache-2.0", f"License-Expression Apache-2.0 (got {meta.get('License-Expression')})")
    check(any(n.endswith(".dist-info/licenses/LICENSE") for n in names), "the licence file is in the wheel")
    check("tileops/py.typed" in names, "py.typed (the package is typed)")
    cuda = {"tileops/cuda/" + os.path.relpath(f, "csrc/ops") for f in repo_files("csrc/ops", (".cu", ".cuh"))}
    check(cuda <= names, f"every CUDA C source ({len(cuda)}) under tileops/cuda/: missing {sorted(cuda - names)}")
    yamls = {"tileops/" + os.path.relpath(f, "src/tileops") for f in repo_files("src/tileops/manifest", (".yaml",))}
    check(yamls and yamls <= names, f"the manifest ({len(yamls)} files)")
    check(so is not None, f"the extension {so}")
    if so:
        import io
        elf = ELFFile(io.BytesIO(so_bytes))
        sections = [s.name for s in elf.iter_sections()]
        debug = [s for s in sections if s.startswith((".debug", ".zdebug"))]
        check(not debug and ".symtab" not in sections,
              f"_C is stripped ({len(so_bytes) // 1024} KiB; debug sections {debug}, .symtab "
              f"{'present' if '.symtab' in sections else 'absent'})")


for arg in sys.argv[1:]:
    if arg.endswith(".tar.gz"):
        check_sdist(arg)
    elif arg.endswith(".whl"):
        check_wheel(arg)
    else:
        check(False, f"{arg}: neither an sdist nor a wheel")
print(f"{passed} passed, {failed} failed")
sys.exit(1 if failed or not passed else 0)
