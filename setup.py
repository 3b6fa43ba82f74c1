"""Builds tileops._C from C sources only: no C++, no torch headers, no libtorch.

The CUDA C kernels (csrc/cuda/*.cu) are not compiled here: they are copied into the
package as data and compiled at run time by NVRTC for the card the call runs on."""
import glob
import os
import shutil

from setuptools import Extension, setup
from setuptools.command.build_py import build_py

HERE = os.path.dirname(os.path.abspath(__file__))


def _rel(pattern):
    return sorted(os.path.relpath(p, HERE) for p in glob.glob(os.path.join(HERE, pattern)))


def _copy_cuda_sources():
    """csrc/cuda/*.cu -> src/tileops/cuda/ (package data; also what an editable install reads)."""
    dst = os.path.join(HERE, "src", "tileops", "cuda")
    os.makedirs(dst, exist_ok=True)
    for src in glob.glob(os.path.join(HERE, "csrc", "cuda", "*.cu")):
        shutil.copyfile(src, os.path.join(dst, os.path.basename(src)))


class BuildPy(build_py):
    def run(self):
        _copy_cuda_sources()
        super().run()


_copy_cuda_sources()

sources = (_rel("csrc/python/*.c") + _rel("csrc/core/*.c") + _rel("csrc/cpu/*.c")
           + _rel("csrc/runtime/*.c"))

ext = Extension(
    "tileops._C",
    sources=sources,
    include_dirs=["csrc/include", "csrc"],
    define_macros=[("_GNU_SOURCE", "1")],
    extra_compile_args=["-std=c11", "-O3", "-Wall", "-Wextra", "-Werror", "-pthread",
                        "-fvisibility=hidden"],
    extra_link_args=["-pthread"],
    libraries=["dl", "m"],
)

setup(ext_modules=[ext], cmdclass={"build_py": BuildPy})
