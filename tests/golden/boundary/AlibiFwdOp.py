def _allocate(self, *, device=None):
    num_heads = self.num_heads
    seq_len = self.seq_len
    bias = torch.empty(tuple((num_heads, seq_len, seq_len)), dtype=_DT_bias, device=device)
    return bias

def _memo_alibi(bias):
    return (bias.device, (bias.data_ptr()) & 15,)

def _full_alibi(bias):
    return ((bias.dtype, bias.device, tuple(bias.shape), bias.data_ptr() & 15),)

def _check_params(self):
    num_heads = self.num_heads
    seq_len = self.seq_len
    if not (num_heads * seq_len * seq_len <= 2 ** 60):
        raise InputValueError(f"AlibiFwdOp: param rule `num_heads * seq_len * seq_len <= 2 ** 60` does not hold: num_heads={num_heads!r}, seq_len={seq_len!r}")
    return None

def _call(self, *, device=None):
    _dev = _as_device(device, 'AlibiFwdOp', 'device')
    if _is_compiling():
        return self._traced[0](self._params_version, _dev, {}).clone()
    return self._run_no_boundary(_dev, {})

