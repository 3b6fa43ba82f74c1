def _allocate(self, *, device=None):
    seq_len = self.seq_len
    dim = self.dim
    table = torch.empty(tuple((seq_len, dim)), dtype=_DT_table, device=device)
    return table

def _memo_sinusoidal(table):
    return (table.device, (table.data_ptr()) & 15,)

def _full_sinusoidal(table):
    return ((table.dtype, table.device, tuple(table.shape), table.data_ptr() & 15),)

def _check_params(self):
    seq_len = self.seq_len
    dim = self.dim
    base = self.base
    if not (base >= 1):
        raise InputValueError(f"SinusoidalFwdOp: param rule `base >= 1` does not hold: base={base!r}")
    if not (seq_len * dim <= 2 ** 60):
        raise InputValueError(f"SinusoidalFwdOp: param rule `seq_len * dim <= 2 ** 60` does not hold: dim={dim!r}, seq_len={seq_len!r}")
    if not (seq_len <= 2 ** 50):
        raise InputValueError(f"SinusoidalFwdOp: param rule `seq_len <= 2 ** 50` does not hold: seq_len={seq_len!r}")
    return None

def _call(self, *, device=None):
    _dev = _as_device(device, 'SinusoidalFwdOp', 'device')
    if _is_compiling():
        return self._traced[0](self._params_version, _dev, {}).clone()
    return self._run_no_boundary(_dev, {})

