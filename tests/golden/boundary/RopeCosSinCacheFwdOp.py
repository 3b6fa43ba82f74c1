def _allocate(self, *, device=None):
    rotary_dim = self.rotary_dim
    max_position = self.max_position
    cos_sin_cache = torch.empty(tuple((max_position, rotary_dim)), dtype=_DT_cos_sin_cache, device=device)
    return cos_sin_cache

def _memo_rope_cos_sin_cache(cos_sin_cache):
    return (cos_sin_cache.device, (cos_sin_cache.data_ptr()) & 15,)

def _full_rope_cos_sin_cache(cos_sin_cache):
    return ((cos_sin_cache.dtype, cos_sin_cache.device, tuple(cos_sin_cache.shape), cos_sin_cache.data_ptr() & 15),)

def _check_params(self):
    base = self.base
    rotary_dim = self.rotary_dim
    max_position = self.max_position
    rope_type = self.rope_type
    factor = self.factor
    low_freq_factor = self.low_freq_factor
    high_freq_factor = self.high_freq_factor
    original_max_position_embeddings = self.original_max_position_embeddings
    if not (rotary_dim % 2 == 0 and rotary_dim >= 2):
        raise InputValueError(f"RopeCosSinCacheFwdOp: param rule `rotary_dim % 2 == 0 and rotary_dim >= 2` does not hold: rotary_dim={rotary_dim!r}")
    if not (base >= 1):
        raise InputValueError(f"RopeCosSinCacheFwdOp: param rule `base >= 1` does not hold: base={base!r}")
    if not (factor > 0):
        raise InputValueError(f"RopeCosSinCacheFwdOp: param rule `factor > 0` does not hold: factor={factor!r}")
    if not (rope_type != 'llama3' or 0 < low_freq_factor <= high_freq_factor):
        raise InputValueError(f"RopeCosSinCacheFwdOp: param rule `rope_type != 'llama3' or 0 < low_freq_factor <= high_freq_factor` does not hold: high_freq_factor={high_freq_factor!r}, low_freq_factor={low_freq_factor!r}, rope_type={rope_type!r}")
    if not (rope_type != 'llama3' or original_max_position_embeddings >= 1):
        raise InputValueError(f"RopeCosSinCacheFwdOp: param rule `rope_type != 'llama3' or original_max_position_embeddings >= 1` does not hold: original_max_position_embeddings={original_max_position_embeddings!r}, rope_type={rope_type!r}")
    if not (max_position * rotary_dim <= 2 ** 60):
        raise InputValueError(f"RopeCosSinCacheFwdOp: param rule `max_position * rotary_dim <= 2 ** 60` does not hold: max_position={max_position!r}, rotary_dim={rotary_dim!r}")
    if not (max_position <= 2 ** 50 * (1.0 if rope_type == 'default' else min(1.0, factor))):
        raise InputValueError(f"RopeCosSinCacheFwdOp: param rule `max_position <= 2 ** 50 * (1.0 if rope_type == 'default' else min(1.0, factor))` does not hold: factor={factor!r}, max_position={max_position!r}, rope_type={rope_type!r}")
    return None

def _call(self, *, device=None):
    _dev = _as_device(device, 'RopeCosSinCacheFwdOp', 'device')
    if _is_compiling():
        return self._traced[0](self._params_version, _dev, {}).clone()
    return self._run_no_boundary(_dev, {})

