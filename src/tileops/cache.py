"""The compiled-kernel disk cache, seen from Python: where it is, what it holds, and
clearing it (`python -m tileops cache info | clear`).

The folder is the C core's (runtime/disk_cache.c): $TILEOPS_CACHE_DIR, else
$XDG_CACHE_HOME/tileops/<version> (an absolute XDG_CACHE_HOME), else
~/.cache/tileops/<version>; entries are <arch>/<kernel>-<16 hex>.cubin. Clearing removes
only files named like an entry (or an entry's temp file) inside an arch folder named like
one (sm_<digits>[a]), never following a link: a TILEOPS_CACHE_DIR that points at a folder
holding other files loses none of them. The folder's secret stays: it is what makes the
entries trustworthy, and processes running now hold it."""
from __future__ import annotations

import os
import re
import stat
from dataclasses import asdict, dataclass, field

from . import _C, __version__

ARCH = re.compile(r"sm_[0-9]{2,4}a?")
ENTRY = re.compile(r"[A-Za-z0-9_.]{1,64}-[0-9a-f]{16}\.cubin(\.tmp\.[0-9]+\.[0-9]+)?")


@dataclass
class CacheInfo:
    folder: str                 # "" when the disk cache is disabled
    on: bool
    reason: str                 # why it is off ("" when on)
    entries: int = 0
    bytes: int = 0
    by_arch: dict = field(default_factory=dict)    # arch -> {"entries": n, "bytes": n}
    other_versions: dict = field(default_factory=dict)  # sibling version folder -> bytes

    def as_dict(self) -> dict:
        return asdict(self)


def state() -> tuple[bool, str, str]:
    """(on, folder, reason) of the disk cache of this process's setting (the folder is made,
    0700, if missing, as a build would)."""
    _C.cuda_set_version(__version__)
    on, folder, reason = _C.cuda_cache_state()
    _C.take_notes()   # a refused folder's note: the reason says it
    return bool(on), folder, reason


def _scandir(path: str):
    try:
        with os.scandir(path) as it:
            return list(it)
    except OSError:
        return []


def _entries(folder: str):
    """(arch, path, size) of every entry file under folder's arch folders; no link followed."""
    for arch in _scandir(folder):
        if not (ARCH.fullmatch(arch.name) and arch.is_dir(follow_symlinks=False)):
            continue
        for f in _scandir(arch.path):
            if ENTRY.fullmatch(f.name) and f.is_file(follow_symlinks=False):
                try:
                    size = f.stat(follow_symlinks=False).st_size
                except OSError:
                    continue
                yield arch.name, f.path, size


def _default_root(folder: str) -> str | None:
    """The folder holding every version's cache (…/tileops), when `folder` is the default
    one (not TILEOPS_CACHE_DIR)."""
    if os.environ.get("TILEOPS_CACHE_DIR") is not None or not folder:
        return None
    root = os.path.dirname(folder)
    return root if os.path.basename(root) == "tileops" else None


def info() -> CacheInfo:
    on, folder, reason = state()
    ci = CacheInfo(folder=folder, on=on, reason=reason)
    if not on:
        return ci
    for arch, _path, size in _entries(folder):
        a = ci.by_arch.setdefault(arch, {"entries": 0, "bytes": 0})
        a["entries"] += 1
        a["bytes"] += size
        ci.entries += 1
        ci.bytes += size
    root = _default_root(folder)
    if root:
        for d in _scandir(root):
            if d.path != folder and d.is_dir(follow_symlinks=False):
                ci.other_versions[d.name] = sum(s for _a, _p, s in _entries(d.path))
    return ci


def clear(all_versions: bool = False) -> tuple[int, int, list[str]]:
    """Removes the entries of this version's cache (and, with all_versions, of every
    version's folder beside it, for the default folder). Returns (files removed, bytes,
    folders cleared). Raises TileOpsError if the cache is off (a refused folder is not
    touched)."""
    from .errors import TileOpsError
    on, folder, reason = state()
    if not on:
        raise TileOpsError(f"the kernel disk cache is off ({reason}); nothing cleared")
    folders = [folder]
    root = _default_root(folder)
    if all_versions and root:
        me = os.stat(folder).st_uid
        for d in _scandir(root):
            if d.path != folder and d.is_dir(follow_symlinks=False):
                st = d.stat(follow_symlinks=False)
                if st.st_uid == me and not st.st_mode & (stat.S_IWGRP | stat.S_IWOTH):
                    folders.append(d.path)
    n = nbytes = 0
    for f in folders:
        for _arch, path, size in list(_entries(f)):
            try:
                os.unlink(path)
            except FileNotFoundError:
                continue     # another process replaced or removed it meanwhile
            n += 1
            nbytes += size
    return n, nbytes, folders
