"""What several test files do alike: compile keeping the captured graphs, copy a call's
arguments, compare two calls' outputs."""
import torch


def compile_keeping_graphs(fn, **kwargs):
    """torch.compile(fn, fullgraph=True, **kwargs) with inductor, and the list the graphs
    it captures are appended to."""
    graphs = []

    def backend(gm, example_inputs):
        graphs.append(gm)
        from torch._inductor.compile_fx import compile_fx
        return compile_fx(gm, example_inputs)
    return torch.compile(fn, fullgraph=True, backend=backend, **kwargs), graphs


def clone(v):
    """A copy of a tensor; anything else as is."""
    return v.clone() if isinstance(v, torch.Tensor) else v


def clone_call(args, kwargs):
    """Copies of a call's tensor arguments, for a second call that may write them."""
    return [clone(a) for a in args], {k: clone(v) for k, v in kwargs.items()}


def as_tuple(result):
    """An op's result as a tuple of its outputs."""
    return result if isinstance(result, tuple) else (result,)


def assert_outputs_match(expected, got, check):
    """Two results have as many outputs, None in the same places, and check(e, g) holds
    for each pair of the others (check raises when they differ)."""
    expected, got = as_tuple(expected), as_tuple(got)
    assert len(expected) == len(got), (len(expected), len(got))
    for e, g in zip(expected, got):
        if e is None:
            assert g is None
        else:
            check(e, g)
