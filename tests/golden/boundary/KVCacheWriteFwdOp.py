def _check(self, k, v, key_cache, value_cache, slot_mapping):
    if not isinstance(k, Tensor):
        raise InputTypeError("KVCacheWriteFwdOp: argument 'k': expected a Tensor, got " + type(k).__name__)
    if k.dtype not in _ALLOWED_k:
        raise InputTypeError(f"KVCacheWriteFwdOp: argument 'k': expected dtype float32 | float16 | bfloat16, got {k.dtype}")
    _dev = k.device
    if not isinstance(v, Tensor):
        raise InputTypeError("KVCacheWriteFwdOp: argument 'v': expected a Tensor, got " + type(v).__name__)
    if v.dtype != k.dtype:
        raise InputTypeError(f"KVCacheWriteFwdOp: argument 'v': expected dtype same as 'k' ({k.dtype}), got {v.dtype}")
    if v.device != _dev:
        raise InputValueError(f"KVCacheWriteFwdOp: argument 'v': expected a tensor on {k.device} (the device of 'k'), got {v.device}")
    if not isinstance(key_cache, Tensor):
        raise InputTypeError("KVCacheWriteFwdOp: argument 'key_cache': expected a Tensor, got " + type(key_cache).__name__)
    if key_cache.dtype != k.dtype:
        raise InputTypeError(f"KVCacheWriteFwdOp: argument 'key_cache': expected dtype same as 'k' ({k.dtype}), got {key_cache.dtype}")
    if key_cache.device != _dev:
        raise InputValueError(f"KVCacheWriteFwdOp: argument 'key_cache': expected a tensor on {k.device} (the device of 'k'), got {key_cache.device}")
    if not isinstance(value_cache, Tensor):
        raise InputTypeError("KVCacheWriteFwdOp: argument 'value_cache': expected a Tensor, got " + type(value_cache).__name__)
    if value_cache.dtype != k.dtype:
        raise InputTypeError(f"KVCacheWriteFwdOp: argument 'value_cache': expected dtype same as 'k' ({k.dtype}), got {value_cache.dtype}")
    if value_cache.device != _dev:
        raise InputValueError(f"KVCacheWriteFwdOp: argument 'value_cache': expected a tensor on {k.device} (the device of 'k'), got {value_cache.device}")
    if not isinstance(slot_mapping, Tensor):
        raise InputTypeError("KVCacheWriteFwdOp: argument 'slot_mapping': expected a Tensor, got " + type(slot_mapping).__name__)
    if slot_mapping.dtype not in _ALLOWED_slot_mapping:
        raise InputTypeError(f"KVCacheWriteFwdOp: argument 'slot_mapping': expected dtype int64 | int32, got {slot_mapping.dtype}")
    if slot_mapping.device != _dev:
        raise InputValueError(f"KVCacheWriteFwdOp: argument 'slot_mapping': expected a tensor on {k.device} (the device of 'k'), got {slot_mapping.device}")
    if not (k.ndim == 3):
        raise InputValueError(f"KVCacheWriteFwdOp: shape rule `k.ndim == 3` does not hold: k.shape={tuple(k.shape)}")
    if not (v.ndim == 3):
        raise InputValueError(f"KVCacheWriteFwdOp: shape rule `v.ndim == 3` does not hold: v.shape={tuple(v.shape)}")
    if not (v.shape[0] == k.shape[0]):
        raise InputValueError(f"KVCacheWriteFwdOp: shape rule `v.shape[0] == k.shape[0]` does not hold: k.shape={tuple(k.shape)}, v.shape={tuple(v.shape)}")
    if not (v.shape[1] == k.shape[1]):
        raise InputValueError(f"KVCacheWriteFwdOp: shape rule `v.shape[1] == k.shape[1]` does not hold: k.shape={tuple(k.shape)}, v.shape={tuple(v.shape)}")
    if not (v.shape[2] == k.shape[2]):
        raise InputValueError(f"KVCacheWriteFwdOp: shape rule `v.shape[2] == k.shape[2]` does not hold: k.shape={tuple(k.shape)}, v.shape={tuple(v.shape)}")
    if not (key_cache.ndim == 4):
        raise InputValueError(f"KVCacheWriteFwdOp: shape rule `key_cache.ndim == 4` does not hold: key_cache.shape={tuple(key_cache.shape)}")
    if not (key_cache.shape[2] == k.shape[1]):
        raise InputValueError(f"KVCacheWriteFwdOp: shape rule `key_cache.shape[2] == k.shape[1]` does not hold: k.shape={tuple(k.shape)}, key_cache.shape={tuple(key_cache.shape)}")
    if not (key_cache.shape[3] == k.shape[2]):
        raise InputValueError(f"KVCacheWriteFwdOp: shape rule `key_cache.shape[3] == k.shape[2]` does not hold: k.shape={tuple(k.shape)}, key_cache.shape={tuple(key_cache.shape)}")
    if not (value_cache.ndim == 4):
        raise InputValueError(f"KVCacheWriteFwdOp: shape rule `value_cache.ndim == 4` does not hold: value_cache.shape={tuple(value_cache.shape)}")
    if not (value_cache.shape[0] == key_cache.shape[0]):
        raise InputValueError(f"KVCacheWriteFwdOp: shape rule `value_cache.shape[0] == key_cache.shape[0]` does not hold: key_cache.shape={tuple(key_cache.shape)}, value_cache.shape={tuple(value_cache.shape)}")
    if not (value_cache.shape[1] == key_cache.shape[1]):
        raise InputValueError(f"KVCacheWriteFwdOp: shape rule `value_cache.shape[1] == key_cache.shape[1]` does not hold: key_cache.shape={tuple(key_cache.shape)}, value_cache.shape={tuple(value_cache.shape)}")
    if not (value_cache.shape[2] == k.shape[1]):
        raise InputValueError(f"KVCacheWriteFwdOp: shape rule `value_cache.shape[2] == k.shape[1]` does not hold: k.shape={tuple(k.shape)}, value_cache.shape={tuple(value_cache.shape)}")
    if not (value_cache.shape[3] == k.shape[2]):
        raise InputValueError(f"KVCacheWriteFwdOp: shape rule `value_cache.shape[3] == k.shape[2]` does not hold: k.shape={tuple(k.shape)}, value_cache.shape={tuple(value_cache.shape)}")
    if not (slot_mapping.ndim == 1):
        raise InputValueError(f"KVCacheWriteFwdOp: shape rule `slot_mapping.ndim == 1` does not hold: slot_mapping.shape={tuple(slot_mapping.shape)}")
    if not (slot_mapping.shape[0] == k.shape[0]):
        raise InputValueError(f"KVCacheWriteFwdOp: shape rule `slot_mapping.shape[0] == k.shape[0]` does not hold: k.shape={tuple(k.shape)}, slot_mapping.shape={tuple(slot_mapping.shape)}")

def _guard(k, v, key_cache, value_cache, slot_mapping):
    _admit(k, "KVCacheWriteFwdOp", "k", False, False)
    _admit(v, "KVCacheWriteFwdOp", "v", False, False)
    _admit(key_cache, "KVCacheWriteFwdOp", "key_cache", False, True)
    _admit(value_cache, "KVCacheWriteFwdOp", "value_cache", False, True)
    _admit(slot_mapping, "KVCacheWriteFwdOp", "slot_mapping", False, False)

def _impl_0(k, v, key_cache, value_cache, slot_mapping, key):
    self = _ref_of(key, _NO_REF)()
    if type(self) is not _CLS:
        self = _recover(_CLS, key, self)
    _guard(k, v, key_cache, value_cache, slot_mapping)
    try:
        _s = (k.shape, k.dtype, k.device, v.shape, v.dtype, v.device, key_cache.shape, key_cache.dtype, key_cache.device, value_cache.shape, value_cache.dtype, value_cache.device, slot_mapping.shape, slot_mapping.dtype, slot_mapping.device,)
    except RuntimeError:
        _guard(k, v, key_cache, value_cache, slot_mapping)
        raise
    if _s not in self._checked:
        _check(self, k, v, key_cache, value_cache, slot_mapping)
        self._note_checked(_s)
    _c_apart((key_cache, value_cache, ), (k, v, slot_mapping, )) and _apart("KVCacheWriteFwdOp", (key_cache, value_cache, ), (k, v, slot_mapping, ), ('key_cache', 'value_cache'), ('k', 'v', 'slot_mapping'))
    _resolved = self._target is None
    if _resolved:
        self._resolve_target(k.device)
    try:
        _c_k = k if k.stride(-1) == 1 else k.contiguous()
        _c_v = v if v.stride(-1) == 1 else v.contiguous()
        if not key_cache.is_contiguous():
            raise InputValueError(f"KVCacheWriteFwdOp: argument 'key_cache': expected a contiguous tensor (the op never copies it), got shape {tuple(key_cache.shape)} with strides {key_cache.stride()}")
        if not value_cache.is_contiguous():
            raise InputValueError(f"KVCacheWriteFwdOp: argument 'value_cache': expected a contiguous tensor (the op never copies it), got shape {tuple(value_cache.shape)} with strides {value_cache.stride()}")
        _c_slot_mapping = slot_mapping if slot_mapping.is_contiguous() else slot_mapping.contiguous()
        self._forward(_c_k, _c_v, key_cache, value_cache, _c_slot_mapping)
    except BaseException:
        if _resolved:
            self._unresolve_target()
        raise
    return None

def _body_0(self, k, v, key_cache, value_cache, slot_mapping):
    try:
        _s = (k.shape, k.dtype, k.device, v.shape, v.dtype, v.device, key_cache.shape, key_cache.dtype, key_cache.device, value_cache.shape, value_cache.dtype, value_cache.device, slot_mapping.shape, slot_mapping.dtype, slot_mapping.device,)
    except RuntimeError:
        _guard(k, v, key_cache, value_cache, slot_mapping)
        raise
    if _s not in self._checked:
        _check(self, k, v, key_cache, value_cache, slot_mapping)
        self._note_checked(_s)
    _c_apart((key_cache, value_cache, ), (k, v, slot_mapping, )) and _apart("KVCacheWriteFwdOp", (key_cache, value_cache, ), (k, v, slot_mapping, ), ('key_cache', 'value_cache'), ('k', 'v', 'slot_mapping'))
    _resolved = self._target is None
    if _resolved:
        self._resolve_target(k.device)
    try:
        _c_k = k if k.stride(-1) == 1 else k.contiguous()
        _c_v = v if v.stride(-1) == 1 else v.contiguous()
        if not key_cache.is_contiguous():
            raise InputValueError(f"KVCacheWriteFwdOp: argument 'key_cache': expected a contiguous tensor (the op never copies it), got shape {tuple(key_cache.shape)} with strides {key_cache.stride()}")
        if not value_cache.is_contiguous():
            raise InputValueError(f"KVCacheWriteFwdOp: argument 'value_cache': expected a contiguous tensor (the op never copies it), got shape {tuple(value_cache.shape)} with strides {value_cache.stride()}")
        _c_slot_mapping = slot_mapping if slot_mapping.is_contiguous() else slot_mapping.contiguous()
        self._forward(_c_k, _c_v, key_cache, value_cache, _c_slot_mapping)
    except BaseException:
        if _resolved:
            self._unresolve_target()
        raise
    return None

def _fake_0(k, v, key_cache, value_cache, slot_mapping, key):
    self = _ref_of(key, _NO_REF)()
    if type(self) is not _CLS:
        self = _recover(_CLS, key, self)
    _check(self, k, v, key_cache, value_cache, slot_mapping)
    return None

def _call_boundary(self, k, v, key_cache, value_cache, slot_mapping):
    if _is_compiling() or _dispatch_len() or _tf_mode() or _functorch_level() is not None or _jit_tracing() is not None:
        _fast = False
    else:
        _g = _grad_enabled()
        _fast = (type(k) in _PLAIN and k.layout is _strided and not k.is_meta and not (_g and k.requires_grad) and not k.is_neg() and not k._is_zerotensor()) and (type(v) in _PLAIN and v.layout is _strided and not v.is_meta and not (_g and v.requires_grad) and not v.is_neg() and not v._is_zerotensor()) and (type(key_cache) in _PLAIN and key_cache.layout is _strided and not key_cache.is_meta and not (_g and key_cache.requires_grad) and not key_cache.is_neg() and not key_cache._is_zerotensor()) and (type(value_cache) in _PLAIN and value_cache.layout is _strided and not value_cache.is_meta and not (_g and value_cache.requires_grad) and not value_cache.is_neg() and not value_cache._is_zerotensor()) and (type(slot_mapping) in _PLAIN and slot_mapping.layout is _strided and not slot_mapping.is_meta and not (_g and slot_mapping.requires_grad) and not slot_mapping.is_neg() and not slot_mapping._is_zerotensor())
    if not _fast:
        if not isinstance(k, Tensor):
            raise InputTypeError("KVCacheWriteFwdOp: argument 'k': expected a Tensor, got " + type(k).__name__)
        if not isinstance(v, Tensor):
            raise InputTypeError("KVCacheWriteFwdOp: argument 'v': expected a Tensor, got " + type(v).__name__)
        if not isinstance(key_cache, Tensor):
            raise InputTypeError("KVCacheWriteFwdOp: argument 'key_cache': expected a Tensor, got " + type(key_cache).__name__)
        if not isinstance(value_cache, Tensor):
            raise InputTypeError("KVCacheWriteFwdOp: argument 'value_cache': expected a Tensor, got " + type(value_cache).__name__)
        if not isinstance(slot_mapping, Tensor):
            raise InputTypeError("KVCacheWriteFwdOp: argument 'slot_mapping': expected a Tensor, got " + type(slot_mapping).__name__)
        if not _is_compiling():
            _guard(k, v, key_cache, value_cache, slot_mapping)
    if _fast:
        with _below_inplace_view():
            _body_0(self, k, v, key_cache, value_cache, slot_mapping)
        _bump(key_cache)
        _bump(value_cache)
    else:
        _op_0(k, v, key_cache, value_cache, slot_mapping, self._key)
    return None

def _allocate(self, k, v, key_cache, value_cache, slot_mapping):
    return None

def _memo_kv_cache_write(k, v, key_cache, value_cache, slot_mapping):
    return (k.dtype, slot_mapping.dtype, k.device, (k.data_ptr() | v.data_ptr() | key_cache.data_ptr() | value_cache.data_ptr() | slot_mapping.data_ptr()) & 15, tuple(key_cache.shape),)

def _full_kv_cache_write(k, v, key_cache, value_cache, slot_mapping):
    return ((k.dtype, k.device, tuple(k.shape), k.data_ptr() & 15), (v.dtype, v.device, tuple(v.shape), v.data_ptr() & 15), (key_cache.dtype, key_cache.device, tuple(key_cache.shape), key_cache.data_ptr() & 15), (value_cache.dtype, value_cache.device, tuple(value_cache.shape), value_cache.data_ptr() & 15), (slot_mapping.dtype, slot_mapping.device, tuple(slot_mapping.shape), slot_mapping.data_ptr() & 15),)

