"""dev/cuda/stream_floor_lab.cu (dev/time_floor.py's floor of an op's own read / write mix)
writes what torch's kernel of the mix writes, for every mix and unroll, where the group
count is not a multiple of a block's groups (the last block's guards) and where it is."""
import pytest

import time_floor


@pytest.mark.parametrize("read_words,write_words", [(1, 1), (1, 2), (2, 1), (1, 0)])
@pytest.mark.parametrize("groups", [1, 255, 256 * 4, 256 * 4 * 3 + 17])
def test_the_floor_writes_torchs_result_of_its_mix(read_words, write_words, groups):
    # floor_launchers checks each build's output against time_floor.torch_result before
    # returning it (an AssertionError otherwise): one launcher per unroll
    launchers = time_floor.floor_launchers(16 * read_words * groups, 16 * write_words * groups)
    assert sorted(launchers) == sorted(f"floor u{u}" for u in time_floor.unrolls_of(write_words))


@pytest.mark.parametrize("groups", [1, 256 * 4 * 3 + 17, 513024])
def test_the_read_only_floor_in_clusters_writes_torchs_result(groups):
    # the grid rounded up to whole clusters of 8: the padding blocks write a XOR of nothing (0);
    # 513024 groups: argmax's bf16 logits at B = 32 x 128256
    launchers = time_floor.floor_launchers(16 * groups, 0, cluster=8)
    assert sorted(launchers) == sorted(f"floor u{u} c8" for u in time_floor.unrolls_of(0))


def test_clusters_with_writes_are_refused():
    with pytest.raises(ValueError, match="read-only mix"):
        time_floor.floor_launchers(16 * 256, 16 * 256, cluster=8)
