"""The driver API types the core mirrors (csrc/runtime/loader.h, so that no CUDA header is
needed to build it) have cuda.h's layout: the launch configuration and attribute of
cuLaunchKernelEx are passed to the driver by pointer, so a field at another offset would be
read as something else. Two small C programs print the same sizes and offsets, one from
loader.h and one from cuda.h; they must agree. Needs a C compiler and a CUDA toolkit's
cuda.h (skipped without one: CI's machines may have none)."""
import os
import shutil
import subprocess

import pytest

ROOT = os.path.join(os.path.dirname(__file__), "..", "..")

BODY = r'''
#include <stddef.h>
#include <stdio.h>
int main(void) {
    printf("value %zu %zu\n", sizeof(CUlaunchAttributeValue), _Alignof(CUlaunchAttributeValue));
    printf("attr %zu %zu %zu %zu\n", sizeof(CUlaunchAttribute), _Alignof(CUlaunchAttribute),
           offsetof(CUlaunchAttribute, id), offsetof(CUlaunchAttribute, value));
    printf("pss %zu %d\n", offsetof(CUlaunchAttributeValue, programmaticStreamSerializationAllowed),
           (int)CU_LAUNCH_ATTRIBUTE_PROGRAMMATIC_STREAM_SERIALIZATION);
    printf("config %zu %zu %zu %zu %zu %zu\n", sizeof(CUlaunchConfig), offsetof(CUlaunchConfig, gridDimX),
           offsetof(CUlaunchConfig, sharedMemBytes), offsetof(CUlaunchConfig, hStream),
           offsetof(CUlaunchConfig, attrs), offsetof(CUlaunchConfig, numAttrs));
    return 0;
}
'''


def _cuda_include():
    for base in (os.environ.get("CUDA_HOME"), "/usr/local/cuda",
                 os.path.dirname(os.path.dirname(shutil.which("nvcc") or "/nonexistent/bin/nvcc"))):
        if base and os.path.isfile(os.path.join(base, "include", "cuda.h")):
            return os.path.join(base, "include")
    return None


def _layout(tmp_path, name, header, flags):
    src = tmp_path / f"{name}.c"
    src.write_text(header + BODY)
    exe = tmp_path / name
    cc = os.environ.get("CC", "cc")
    r = subprocess.run([cc, "-std=c11", "-o", str(exe), str(src), *flags], capture_output=True, text=True)
    assert r.returncode == 0, r.stderr[-3000:]
    return subprocess.run([str(exe)], capture_output=True, text=True, check=True).stdout


@pytest.mark.skipif(_cuda_include() is None, reason="no CUDA toolkit's cuda.h here (CUDA_HOME, /usr/local/cuda, nvcc's)")
@pytest.mark.skipif(shutil.which(os.environ.get("CC", "cc")) is None, reason="no C compiler")
def test_the_launch_types_have_the_layout_of_cuda_h(tmp_path):
    ours = _layout(tmp_path, "ours", '#include "runtime/loader.h"\n',
                   ["-I", os.path.join(ROOT, "csrc"), "-I", os.path.join(ROOT, "csrc", "include")])
    theirs = _layout(tmp_path, "theirs", "#include <cuda.h>\n", ["-I", _cuda_include()])
    assert ours == theirs, f"loader.h:\n{ours}\ncuda.h:\n{theirs}"
    assert "attr 72 8 0 8" in ours, ours
