"""A tileops target plugin for tests.

Registers, through the entry-point group `tileops.targets`, a target named "testplugin"
with a builder for RMSNormFwdOp made of torch operations (computing in float64). Its
detector claims a device type only when $TILEOPS_TESTPLUGIN_CLAIM names it, so that the
"two detectors claim one device" error can be provoked on purpose. FAIL_NEXT[0] = k makes
the next k builds raise, to test that a failed resolution is undone."""
import os

import torch

FAIL_NEXT = [0]
BUILDS = []


def _rms_norm(inputs, params):
    if FAIL_NEXT[0] > 0:
        FAIL_NEXT[0] -= 1
        raise RuntimeError("testplugin: build failed on purpose")
    x = inputs["x"]
    BUILDS.append((x.device.type, x.dtype, tuple(x.shape), inputs["weight"] is not None))
    ns = tuple(params["normalized_shape"])
    eps = params["eps"]
    dims = tuple(range(-len(ns), 0))

    def run(x, weight=None):
        xd = x.double()
        y = xd * torch.rsqrt(xd.pow(2).mean(dim=dims, keepdim=True) + eps)  # params arrive resolved
        if weight is not None:
            y = y * weight.double()
        return y.to(x.dtype)
    return run


class TestPluginTarget:
    name = "testplugin"
    builders = {"RMSNormFwdOp": _rms_norm}

    @staticmethod
    def detect(device):
        return os.environ.get("TILEOPS_TESTPLUGIN_CLAIM") == device.type


TARGET = TestPluginTarget()
