"""Builds tileops._C from C sources only: no C++, no torch headers, no libtorch.

The C sources are the core (csrc/core, csrc/cpu, csrc/runtime), each op's CPU code
(csrc/ops/<family>/*.c, which registers its kernels in the CPU kernel table) and the
binding (csrc/python). The CUDA C kernels (csrc/ops/<family>/*.cu and the *.cuh they
include) are not compiled here: they are copied into the package as data, one folder per
family, and compiled at run time by NVRTC for the card the call runs on.

Build switches (environment): TILEOPS_WERROR=1 makes warnings errors (the project's own
builds: `make install`, CI; never a user's build, whose compiler may warn where ours does
not); TILEOPS_DEBUG=1 keeps debug information (else the extension is built without it and
stripped: a wheel's _C is about 0.2 MB instead of 1.3). Any C11 compiler that takes GCC's
flags builds it (gcc, clang; CC=... picks one)."""
import glob
import os
import shutil

from setuptools import Extension, setup
from setuptools.command.build_py import build_py

HERE = os.path.dirname(os.path.abspath(__file__))
CUDA_SUFFIXES = (".cu", ".cuh")


def _rel(pattern):
    return sorted(os.path.relpath(p, HERE) for p in glob.glob(os.path.join(HERE, pattern)))


def _copy_cuda_sources():
    """csrc/ops/<family>/*.cu, *.cuh -> src/tileops/cuda/<family>/ (package data; also what
    an editable install reads). The folder is generated: a file whose source is gone
    (renamed, moved, deleted) is removed, so the package never ships a stale kernel."""
    dst_root = os.path.join(HERE, "src", "tileops", "cuda")
    wanted = {}
    for suffix in CUDA_SUFFIXES:
        for src in glob.glob(os.path.join(HERE, "csrc", "ops", "*", "*" + suffix)):
            family = os.path.basename(os.path.dirname(src))
            wanted[os.path.join(family, os.path.basename(src))] = src
    for rel, src in wanted.items():
        dst = os.path.join(dst_root, rel)
        os.makedirs(os.path.dirname(dst), exist_ok=True)
        shutil.copyfile(src, dst)
    for folder, _dirs, files in os.walk(dst_root, topdown=False):
        for name in files:
            rel = os.path.relpath(os.path.join(folder, name), dst_root)
            if name.endswith(CUDA_SUFFIXES) and rel not in wanted:
                os.remove(os.path.join(folder, name))
        if folder != dst_root and not os.listdir(folder):
            os.rmdir(folder)


class BuildPy(build_py):
    def run(self):
        _copy_cuda_sources()
        super().run()


_copy_cuda_sources()

sources = (_rel("csrc/python/*.c") + _rel("csrc/core/*.c") + _rel("csrc/cpu/*.c")
           + _rel("csrc/runtime/*.c") + _rel("csrc/ops/*/*.c"))

def _flag(name):
    return os.environ.get(name, "").strip() not in ("", "0")


DEBUG = _flag("TILEOPS_DEBUG")
compile_args = ["-std=c11", "-O3", "-Wall", "-Wextra", "-pthread", "-fvisibility=hidden"]
compile_args += ["-g"] if DEBUG else ["-g0"]
if _flag("TILEOPS_WERROR"):
    compile_args.append("-Werror")
link_args = ["-pthread"] + ([] if DEBUG else ["-s"])

ext = Extension(
    "tileops._C",
    sources=sources,
    # "tileops/x.h" (public) from csrc/include; "cpu/simd.h", "runtime/loader.h",
    # "ops/norm/rms_norm.h" (internal) from csrc
    include_dirs=["csrc/include", "csrc"],
    define_macros=[("_GNU_SOURCE", "1")],
    extra_compile_args=compile_args,
    extra_link_args=link_args,
    libraries=["dl", "m"],
)

setup(ext_modules=[ext], cmdclass={"build_py": BuildPy})
