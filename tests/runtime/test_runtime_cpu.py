"""The CUDA runtime's pieces that need no GPU: the disk-cache entry format, and a clean
error (not a crash) where libcuda is missing."""
import os

import pytest
import torch

from tileops import _C
from tileops.errors import CacheError, LibraryError


def test_cache_entry_round_trip_and_rejections(tmp_path):
    p = str(tmp_path / "k.cubin")
    payload = os.urandom(5000)
    _C.cache_store(p, payload)
    assert _C.cache_load(p) == payload
    assert not [f for f in os.listdir(tmp_path) if ".tmp" in f], "temp file left behind"
    raw = open(p, "rb").read()
    open(p, "wb").write(raw[:-10])                       # truncated
    with pytest.raises(CacheError):
        _C.cache_load(p)
    flipped = bytearray(raw)
    flipped[-1] ^= 0xFF                                  # corrupt payload
    open(p, "wb").write(bytes(flipped))
    with pytest.raises(CacheError):
        _C.cache_load(p)
    with pytest.raises(CacheError):
        _C.cache_load(str(tmp_path / "missing"))


@pytest.mark.skipif(torch.cuda.is_available(), reason="checks the no-driver path; this machine has CUDA")
def test_missing_driver_is_a_clear_error():
    if os.path.exists("/usr/lib/x86_64-linux-gnu/libcuda.so.1"):
        pytest.skip("libcuda.so.1 is installed here")
    with pytest.raises(LibraryError, match="libcuda"):
        _C.cuda_load(None)
    with pytest.raises(LibraryError, match="libcuda"):
        _C.cuda_load(None)   # the outcome is remembered, still clean
    with pytest.raises(LibraryError, match="libcuda"):
        _C.cuda_reset_persisting_l2(0)   # the bench's L2-cold timer says why, not crashes


def test_launch_with_a_bad_handle_is_an_error_not_a_crash():
    with pytest.raises((ValueError, TypeError)):
        _C.cuda_launch(12345, 1, 1, 1, 1, 1, 1, 0, 1)


def test_pdl_is_switched_for_a_block_and_restored_after_it_even_on_an_error():
    """runtime.pdl(on): the core's launch mask for the block (no GPU needed to set it), the
    setting before it restored after it, also when the block raises; pdl_enabled reads it
    without writing it."""
    from tileops import _C, runtime
    assert runtime.pdl_enabled() is True
    with runtime.pdl(False):
        assert runtime.pdl_enabled() is False
        assert _C.cuda_set_launch_mask(0) == 0          # the mask in the core is off too
        with pytest.raises(KeyError):
            with runtime.pdl(True):
                assert runtime.pdl_enabled() is True
                raise KeyError("inside")
        assert runtime.pdl_enabled() is False
    assert runtime.pdl_enabled() is True
    assert _C.cuda_set_launch_mask(_C.LAUNCH_PDL) == _C.LAUNCH_PDL
