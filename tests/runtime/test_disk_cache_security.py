"""The disk cache against someone who can reach its folder, through tileops._C.cache_store /
cache_load (an entry is keyed by its file name and MAC'ed with the folder's secret), and the
settings the core cannot honour as given (one TileOpsWarning each). No GPU needed. The C
side of the same (and the build's cache folder, SHA-256/HMAC known answers) is
tests/c/test_disk_cache_attacks.c."""
import os
import signal
import stat
import subprocess
import sys
import time

import pytest

from tileops import _C
from tileops.errors import CacheError

HEADER = 88
SECRET = ".tileops-secret"


@pytest.fixture
def folder(tmp_path):
    d = tmp_path / "cache"
    d.mkdir(mode=0o700)
    os.chmod(d, 0o700)
    return d


def test_round_trip_makes_a_private_secret_and_entry(folder):
    p = str(folder / "k.cubin")
    _C.cache_store(p, b"cubin bytes")
    assert _C.cache_load(p) == b"cubin bytes"
    s = os.lstat(folder / SECRET)
    assert stat.S_ISREG(s.st_mode) and stat.S_IMODE(s.st_mode) == 0o600 and s.st_size == 32
    assert stat.S_IMODE(os.lstat(p).st_mode) == 0o600
    assert os.path.getsize(p) == HEADER + len(b"cubin bytes")


def test_entry_copied_to_another_name_is_refused(folder):
    a, b = folder / "a.cubin", folder / "b.cubin"
    _C.cache_store(str(a), b"payload of a")
    b.write_bytes(a.read_bytes())
    with pytest.raises(CacheError, match="another key"):
        _C.cache_load(str(b))
    assert _C.cache_load(str(a)) == b"payload of a"


def test_forged_entry_and_corrupted_byte_are_refused(folder):
    a = folder / "a.cubin"
    _C.cache_store(str(a), b"good payload")
    raw = bytearray(a.read_bytes())
    forged = bytes(raw[:HEADER]) + b"evil payload"          # same length, MAC no longer fits
    a.write_bytes(forged)
    with pytest.raises(CacheError, match="MAC"):
        _C.cache_load(str(a))
    raw[HEADER + 2] ^= 0x40                                  # one corrupted payload byte
    a.write_bytes(bytes(raw))
    with pytest.raises(CacheError, match="MAC"):
        _C.cache_load(str(a))
    # the old format, with a valid FNV-1a checksum of its payload
    payload = b"evil payload"
    h = 0xcbf29ce484222325
    for c in payload:
        h = ((h ^ c) * 0x100000001b3) & (2**64 - 1)
    old = (b"TOPSCUB1" + (1).to_bytes(4, "little") + (32).to_bytes(4, "little")
           + len(payload).to_bytes(8, "little") + h.to_bytes(8, "little") + payload)
    a.write_bytes(old)
    with pytest.raises(CacheError):
        _C.cache_load(str(a))


def test_symlinked_entry_is_not_followed(folder):
    a = folder / "a.cubin"
    _C.cache_store(str(a), b"valid, but moved aside")
    (folder / "aside").mkdir(mode=0o700)
    os.rename(a, folder / "aside" / "a.cubin")
    os.symlink("aside/a.cubin", a)
    with pytest.raises(CacheError, match="symbolic link"):
        _C.cache_load(str(a))


def test_fifo_is_a_quick_miss(folder):
    _C.cache_store(str(folder / "seed.cubin"), b"x")  # the folder has its secret
    f = folder / "f.cubin"
    os.mkfifo(f, 0o600)

    def hung(*_):
        raise TimeoutError("cache_load blocked on a FIFO")
    old = signal.signal(signal.SIGALRM, hung)
    signal.alarm(10)
    try:
        t0 = time.monotonic()
        with pytest.raises(CacheError, match="not a regular file"):
            _C.cache_load(str(f))
        assert time.monotonic() - t0 < 1.0
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, old)


def test_huge_sparse_entry_is_refused_from_its_size(folder):
    big = folder / "big.cubin"
    _C.cache_store(str(big), b"x")
    header = bytearray(big.read_bytes()[:HEADER])
    size = 6 << 30
    header[16:24] = (size - HEADER).to_bytes(8, "little")
    with open(big, "wb") as f:
        f.write(bytes(header))
        try:
            f.truncate(size)
        except OSError as e:
            pytest.skip(f"no sparse 6 GiB file here: {e}")
    t0 = time.monotonic()
    with pytest.raises(CacheError, match="bytes"):
        _C.cache_load(str(big))
    assert time.monotonic() - t0 < 0.5


@pytest.mark.parametrize("mode", [0o770, 0o777, 0o1777])
def test_folder_writable_by_others_is_refused(folder, mode):
    a = str(folder / "a.cubin")
    _C.cache_store(a, b"x")
    os.chmod(folder, mode)
    try:
        with pytest.raises(CacheError, match="writable by group or others"):
            _C.cache_load(a)
        with pytest.raises(CacheError, match="writable by group or others"):
            _C.cache_store(a, b"y")
    finally:
        os.chmod(folder, 0o700)
    assert _C.cache_load(a) == b"x"


def test_symlinked_folder_is_not_followed(folder, tmp_path):
    _C.cache_store(str(folder / "a.cubin"), b"x")
    os.symlink(folder, tmp_path / "link")
    with pytest.raises(CacheError, match="symbolic link"):
        _C.cache_load(str(tmp_path / "link" / "a.cubin"))


def test_secret_with_wrong_mode_turns_the_folder_off(folder):
    a = str(folder / "a.cubin")
    _C.cache_store(a, b"x")
    os.chmod(folder / SECRET, 0o644)
    with pytest.raises(CacheError, match="mode 0644"):
        _C.cache_load(a)
    with pytest.raises(CacheError, match="mode 0644"):
        _C.cache_store(a, b"y")


def _run(code, **env):
    e = dict(os.environ)
    e.update(env)
    return subprocess.run([sys.executable, "-W", "always", "-c", code], env=e, capture_output=True,
                          text=True, timeout=120)


def test_settings_that_cannot_be_honoured_warn_once(tmp_path):
    """TILEOPS_NUM_THREADS too big (capped, said at import) and TILEOPS_NVRTC naming a text
    file (said when CUDA is loaded, whether or not a driver is there), one warning each."""
    text = tmp_path / "libnvrtc.txt"
    text.write_text("not a library\n")
    code = (
        "import warnings, os\n"
        "with warnings.catch_warnings(record=True) as w:\n"
        "    warnings.simplefilter('always')\n"
        "    import tileops\n"
        "    from tileops import _C, runtime\n"
        "    print('THREADS', _C.cpu_num_threads(), len(os.sched_getaffinity(0)))\n"
        "    for _ in range(2):\n"
        "        try:\n"
        "            runtime.ensure_loaded()\n"
        "        except tileops.TileOpsError:\n"
        "            pass\n"
        "for x in w:\n"
        "    print('WARN', x.category.__name__, str(x.message).replace(chr(10), ' '))\n")
    r = _run(code, TILEOPS_NUM_THREADS="100000", TILEOPS_NVRTC=str(text))
    assert r.returncode == 0, r.stderr
    threads = [line.split() for line in r.stdout.splitlines() if line.startswith("THREADS")]
    assert threads and threads[0][1] == threads[0][2], r.stdout
    warns = [line for line in r.stdout.splitlines() if line.startswith("WARN")]
    t = [x for x in warns if "TILEOPS_NUM_THREADS=100000" in x]
    n = [x for x in warns if "TILEOPS_NVRTC=" in x]
    assert len(t) == 1 and "TileOpsWarning" in t[0] and f"using {threads[0][2]} threads" in t[0], warns
    assert len(n) == 1 and "ELF" in n[0] and ("instead" in n[0] or "CUDA builds are off" in n[0]), warns


def test_info_says_when_the_cache_is_off(tmp_path):
    shared = tmp_path / "shared"
    shared.mkdir()
    os.chmod(shared, 0o777)
    r = subprocess.run([sys.executable, "-m", "tileops", "info"], capture_output=True, text=True,
                       timeout=120, env=dict(os.environ, TILEOPS_CACHE_DIR=str(shared)))
    assert r.returncode == 0, r.stderr
    line = [x for x in r.stdout.splitlines() if x.startswith("kernel cache:")]
    assert line and str(shared) in line[0] and "OFF" in line[0] and "writable" in line[0], r.stdout
    assert not os.listdir(shared), "nothing may be written into a refused folder"
    afile = tmp_path / "afile"
    afile.write_text("x")
    r = subprocess.run([sys.executable, "-m", "tileops", "info"], capture_output=True, text=True,
                       timeout=120, env=dict(os.environ, TILEOPS_CACHE_DIR=str(afile)))
    line = [x for x in r.stdout.splitlines() if x.startswith("kernel cache:")]
    assert line and "OFF" in line[0] and "not a folder" in line[0], r.stdout


def test_a_folder_name_that_is_not_utf8_or_a_reason_cut_inside_a_character_is_shown(tmp_path):
    """Found by review: `info` and `cache info` died with UnicodeDecodeError on a cache
    folder whose name is not UTF-8, and on a refused folder whose reason (cut at 700
    bytes) ended inside a multi-byte character. The folder is shown as os.fsdecode spells
    it; a cut character is replaced."""
    raw = os.fsencode(str(tmp_path)) + b"/\xff\xfecache"
    r = subprocess.run([sys.executable, "-m", "tileops", "cache", "info"], capture_output=True, timeout=120,
                       env=dict(os.environb, TILEOPS_CACHE_DIR=raw))
    assert r.returncode == 0, r.stderr
    assert os.fsdecode(raw).encode("utf-8", "surrogateescape") in r.stdout, r.stdout
    # ASCII up to an odd byte offset p0 < 700, then one run of 2-byte characters past 700:
    # the cut at 700 bytes (700 - p0 odd) falls inside one
    deep = tmp_path
    while len(os.fsencode(str(deep))) < 450:
        deep = deep / ("a" * 100)
    pad = 600 - len(os.fsencode(str(deep))) - 1
    deep = deep / ("a" * pad) / ("é" * 100) / "x"
    with pytest.raises(UnicodeDecodeError):   # the case: its first 700 bytes end inside a character
        os.fsencode(str(deep))[:700].decode()
    deep.mkdir(parents=True)
    os.chmod(deep, 0o777)     # refused: the reason names the folder, cut at 700 bytes
    r = subprocess.run([sys.executable, "-m", "tileops", "info"], capture_output=True, timeout=120,
                       env=dict(os.environ, TILEOPS_CACHE_DIR=str(deep)))
    assert r.returncode == 0 and b"OFF" in r.stdout, r.stderr


@pytest.mark.parametrize("value,fixed", [("abc", False), ("0", False), ("2.5", False), ("  ", False),
                                         ("+1", True), (" 1\n", True)])
def test_a_thread_count_that_is_not_a_whole_number_is_ignored_as_if_unset(value, fixed):
    """Found by review: an invalid TILEOPS_NUM_THREADS pinned the pool to every CPU (the
    README says ignored), and a blank one was warned about by the core but read as unset by
    Python. Now both read it alike: invalid or blank, the pool follows torch; the count
    reported is the one the next launch uses."""
    code = ("import torch, tileops\n"
            "from tileops import _C, _settings\n"
            "torch.set_num_threads(1)\n"
            "print('COUNT', _C.cpu_num_threads(), _settings.thread_source())\n")
    r = _run(code, TILEOPS_NUM_THREADS=value, OMP_NUM_THREADS="1")
    assert r.returncode == 0, r.stderr
    line = [x for x in r.stdout.splitlines() if x.startswith("COUNT")][0]
    assert line == ("COUNT 1 TILEOPS_NUM_THREADS" if fixed else "COUNT 1 torch.get_num_threads()"), r.stdout
    said = "is not a whole number >= 1; ignored" in r.stderr
    assert said == (value.strip() != "" and not fixed), r.stderr


def test_on_off_settings_other_than_0_or_1_are_said_and_a_digit_that_is_no_number_too():
    """Found by review: TILEOPS_PDL=off (or TILEOPS_CPU_HUGEPAGES=no) silently kept it on;
    TILEOPS_LOG_LEVEL='²' gave int()'s message without the variable."""
    code = "import tileops\nfrom tileops import runtime\nprint('PDL', runtime.pdl_enabled())\n"
    r = _run(code, TILEOPS_PDL="off", TILEOPS_CPU_HUGEPAGES=" 0 ", TILEOPS_LOG_LEVEL="²")
    assert r.returncode == 0 and "PDL True" in r.stdout, r.stderr
    assert "TILEOPS_PDL='off' is neither 0 (off) nor 1 (on); it stays on" in r.stderr, r.stderr
    assert "TILEOPS_CPU_HUGEPAGES" not in r.stderr, r.stderr        # " 0 " is 0
    assert "TILEOPS_LOG_LEVEL='²' is not a level" in r.stderr, r.stderr
    r = _run(code, TILEOPS_PDL=" 0\n")
    assert "PDL False" in r.stdout and "TileOpsWarning" not in r.stderr, r.stdout + r.stderr
