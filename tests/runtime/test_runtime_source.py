"""tileops.runtime.source: "<family>/<file>" names, read from csrc/ops/ in a checkout (else
the package copy), with `#include "x.cuh"` lines replaced by those files' text (each file
once, only files of the including file's folder), so NVRTC needs no include path and the
build's cache key (a hash of the text) covers the included files. No GPU needed."""
import os

import pytest

from tileops import runtime

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))


def test_names_are_family_and_file_and_read_from_the_checkout():
    assert runtime.source_path("norm/rms_norm.cu") == os.path.join(ROOT, "csrc", "ops", "norm", "rms_norm.cu")
    text = runtime.source("norm/rms_norm.cu")
    assert "tileops_rms_norm_on_chip" in text and "TILEOPS_ROWS_COMMON_CUH" in text


def test_a_missing_checkout_file_falls_back_to_the_package_copy(monkeypatch, tmp_path):
    monkeypatch.setattr(runtime, "CHECKOUT_SOURCE_DIR", str(tmp_path / "none"))
    assert runtime.source_path("norm/x.cu") == os.path.join(runtime.CUDA_SOURCE_DIR, "norm", "x.cu")


def _read(path):
    runtime.source.cache_clear()
    try:
        return runtime.source(str(path))
    finally:
        runtime.source.cache_clear()


def test_includes_are_spliced_recursively_each_file_once_with_line_markers(tmp_path):
    (tmp_path / "a.cuh").write_text('#include "b.cuh"\nint a;\n')
    (tmp_path / "b.cuh").write_text("int b;\n")
    (tmp_path / "k.cu").write_text('// top\n#include "a.cuh"\n  #  include "b.cuh"  // again\nint k;\n')
    lines = _read(tmp_path / "k.cu").split("\n")
    assert lines.count("int b;") == 1 and lines.count("int a;") == 1 and "int k;" in lines
    assert lines.index("int b;") < lines.index("int a;") < lines.index("int k;")
    assert not [ln for ln in lines if ln.lstrip().startswith("#") and "include" in ln]
    assert '#line 1 "a.cuh"' in lines and '#line 3 "k.cu"' in lines   # k.cu's line after the include
    # the text of a source without includes is the file's text, byte for byte
    assert _read(tmp_path / "b.cuh") == "int b;\n"


@pytest.mark.parametrize("include", ["missing.cuh", "../k.cu", "sub/x.cuh"])
def test_an_unknown_include_is_a_clear_error(tmp_path, include):
    (tmp_path / "sub").mkdir()
    (tmp_path / "sub" / "x.cuh").write_text("int x;\n")
    (tmp_path / "k.cu").write_text(f'int k;\n#include "{include}"\n')
    with pytest.raises(FileNotFoundError, match=rf'k.cu:2: #include "{include}": no such file in'):
        _read(tmp_path / "k.cu")


def test_an_included_file_changes_the_text_and_so_the_cache_key(tmp_path):
    (tmp_path / "a.cuh").write_text("int a = 1;\n")
    (tmp_path / "k.cu").write_text('#include "a.cuh"\n')
    before = _read(tmp_path / "k.cu")
    (tmp_path / "a.cuh").write_text("int a = 2;\n")
    assert _read(tmp_path / "k.cu") != before


def test_a_source_may_include_the_family_neutral_common_folder(tmp_path):
    """"../common/<file>" is the one include outside the source's own folder: the helpers
    every family's kernels share (csrc/ops/common/)."""
    (tmp_path / "common").mkdir()
    (tmp_path / "fam").mkdir()
    (tmp_path / "common" / "c.cuh").write_text("int c;\n")
    (tmp_path / "other").mkdir()
    (tmp_path / "other" / "o.cuh").write_text("int o;\n")
    (tmp_path / "fam" / "k.cu").write_text('#include "../common/c.cuh"\nint k;\n')
    lines = _read(tmp_path / "fam" / "k.cu").split("\n")
    assert "int c;" in lines and lines.index("int c;") < lines.index("int k;")
    (tmp_path / "fam" / "bad.cu").write_text('int k;\n#include "../other/o.cuh"\n')
    with pytest.raises(FileNotFoundError, match=r'bad.cu:2: #include "../other/o.cuh": no such file in'):
        _read(tmp_path / "fam" / "bad.cu")
