"""The C runtime depends one way: sha256 -> loader -> devices -> nvrtc -> disk_cache -> modules ->
launch. A file may include its own layer's header and the headers of layers below it,
never one above, so there is no cycle and each layer can be read (and tested) with only
what is beneath it. Parses the `#include "runtime/..."` lines of csrc/runtime/*.c and *.h;
needs no compiler and no GPU."""
import os
import re

import pytest

ROOT = os.path.normpath(os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
RUNTIME = os.path.join(ROOT, "csrc", "runtime")

# Bottom first. A new file in csrc/runtime/ must be given its place here.
LAYERS = ("sha256", "loader", "devices", "nvrtc", "disk_cache", "modules", "launch")
RANK = {name: i for i, name in enumerate(LAYERS)}

_INCLUDE = re.compile(r'^\s*#\s*include\s*"runtime/([^"]+)\.h"', re.M)


def _strip_comments(text):
    return re.sub(r"/\*.*?\*/|//[^\n]*", "", text, flags=re.S)


def runtime_includes(path):
    with open(path, encoding="utf-8") as f:
        return _INCLUDE.findall(_strip_comments(f.read()))


def runtime_files():
    return sorted(f for f in os.listdir(RUNTIME) if f.endswith((".c", ".h")))


def include_graph():
    """{file: [included runtime header stems]} for every runtime file."""
    return {f: runtime_includes(os.path.join(RUNTIME, f)) for f in runtime_files()}


def layer_violations(graph):
    """Every include that is upward (or, from a header, sideways onto itself), or names a
    header that is not a layer, as readable lines."""
    bad = []
    for f, incs in graph.items():
        stem, ext = os.path.splitext(f)
        for inc in incs:
            if inc not in RANK:
                bad.append(f'{f} includes "runtime/{inc}.h", which is not a layer of {LAYERS}')
            elif RANK[inc] > RANK[stem] or (ext == ".h" and inc == stem):
                bad.append(f'{f} (layer {stem}) includes "runtime/{inc}.h" from the higher '
                           f'layer {inc}')
    return bad


def find_cycle(graph):
    """A cycle among the layers' headers (through any file of a layer), or None."""
    edges = {}
    for f, incs in graph.items():
        stem = os.path.splitext(f)[0]
        edges.setdefault(stem, set()).update(i for i in incs if i != stem)
    state = {}

    def visit(node, path):
        state[node] = 1
        for nxt in sorted(edges.get(node, ())):
            if state.get(nxt) == 1:
                return path[path.index(nxt):] + [nxt] if nxt in path else path + [nxt]
            if nxt not in state:
                found = visit(nxt, path + [nxt])
                if found:
                    return found
        state[node] = 2
        return None

    for node in sorted(edges):
        if node not in state:
            found = visit(node, [node])
            if found:
                return found
    return None


def test_every_runtime_file_is_a_layer():
    stems = {os.path.splitext(f)[0] for f in runtime_files()}
    assert stems, "no files in csrc/runtime"
    unknown = sorted(stems - set(RANK))
    assert not unknown, f"csrc/runtime files {unknown} have no place in LAYERS {LAYERS}"


def test_runtime_includes_point_down_only():
    graph = include_graph()
    assert any(graph.values()), "no runtime includes found: is the pattern stale?"
    assert not layer_violations(graph), "\n".join(layer_violations(graph))
    assert find_cycle(graph) is None, " -> ".join(find_cycle(graph))


def test_nothing_outside_the_runtime_uses_its_internal_headers():
    """The binding and the CPU code see the runtime through tileops/runtime.h only."""
    offenders = []
    for folder in ("python", "cpu", "core", "include", "ops"):
        for dirpath, _dirs, files in os.walk(os.path.join(ROOT, "csrc", folder)):
            for name in files:
                if name.endswith((".c", ".h")) and runtime_includes(os.path.join(dirpath, name)):
                    offenders.append(os.path.relpath(os.path.join(dirpath, name), ROOT))
    assert not offenders, f"{offenders} include csrc/runtime's internal headers"


@pytest.mark.parametrize("graph,expect", [
    ({"loader.h": [], "nvrtc.c": ["nvrtc", "loader"]}, None),
    ({"loader.c": ["launch"], "launch.c": ["loader"]}, "launch"),
    ({"nvrtc.h": ["nvrtc"]}, "nvrtc"),
    ({"loader.c": ["nowhere"]}, "nowhere"),
])
def test_the_checker_catches_upward_includes(graph, expect):
    bad = layer_violations(graph)
    if expect is None:
        assert not bad and find_cycle(graph) is None
    else:
        assert bad and expect in bad[0]


def test_the_checker_finds_cycles():
    assert find_cycle({"loader.c": ["devices"], "devices.c": ["loader"]}) in (
        ["loader", "devices", "loader"], ["devices", "loader", "devices"])
    assert find_cycle({"loader.c": [], "devices.c": ["loader"]}) is None
