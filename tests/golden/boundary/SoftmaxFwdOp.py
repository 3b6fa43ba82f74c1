def _check(self, logits, temperature, out):
    if not isinstance(logits, Tensor):
        raise InputTypeError("SoftmaxFwdOp: argument 'logits': expected a Tensor, got " + type(logits).__name__)
    if logits.dtype not in _ALLOWED_logits:
        raise InputTypeError(f"SoftmaxFwdOp: argument 'logits': expected dtype float32 | float16 | bfloat16, got {logits.dtype}")
    _dev = logits.device
    if temperature is not None:
        if not isinstance(temperature, Tensor):
            raise InputTypeError("SoftmaxFwdOp: argument 'temperature': expected a Tensor, got " + type(temperature).__name__)
        if temperature.dtype not in _ALLOWED_temperature:
            raise InputTypeError(f"SoftmaxFwdOp: argument 'temperature': expected dtype float32, got {temperature.dtype}")
        if temperature.device != _dev:
            raise InputValueError(f"SoftmaxFwdOp: argument 'temperature': expected a tensor on {logits.device} (the device of 'logits'), got {temperature.device}")
    if not (logits.ndim == 2):
        raise InputValueError(f"SoftmaxFwdOp: shape rule `logits.ndim == 2` does not hold: logits.shape={tuple(logits.shape)}")
    if not (temperature is None or temperature.ndim == 1):
        raise InputValueError(f"SoftmaxFwdOp: shape rule `temperature is None or temperature.ndim == 1` does not hold: temperature.shape={tuple(temperature.shape) if temperature is not None else None}")
    if not (temperature is None or temperature.shape[0] == logits.shape[0]):
        raise InputValueError(f"SoftmaxFwdOp: shape rule `temperature is None or temperature.shape[0] == logits.shape[0]` does not hold: logits.shape={tuple(logits.shape)}, temperature.shape={tuple(temperature.shape) if temperature is not None else None}")
    if not (logits.shape[1] >= 1):
        raise InputValueError(f"SoftmaxFwdOp: shape rule `logits.shape[1] >= 1` does not hold: logits.shape={tuple(logits.shape)}")
    if out is not None:
        if not isinstance(out, Tensor):
            raise InputTypeError("SoftmaxFwdOp: argument 'out': expected a Tensor, got " + type(out).__name__)
        _s = tuple(logits.shape)
        if tuple(out.shape) != _s:
            raise InputValueError(f"SoftmaxFwdOp: argument 'out': expected shape {_s} (output 'probs'), got {tuple(out.shape)}")
        if out.dtype != (self.out_dtype if self.out_dtype is not None else logits.dtype):
            raise InputTypeError(f"SoftmaxFwdOp: argument 'out': expected dtype {(self.out_dtype if self.out_dtype is not None else logits.dtype)}, got {out.dtype}")
        if out.device != _dev:
            raise InputValueError(f"SoftmaxFwdOp: argument 'out': expected a tensor on {logits.device}, got {out.device}")

def _guard(logits, temperature, out):
    _admit(logits, "SoftmaxFwdOp", "logits", False, False)
    if temperature is not None:
        _admit(temperature, "SoftmaxFwdOp", "temperature", True, False)
    if out is not None:
        _admit(out, "SoftmaxFwdOp", "out", True, True)

def _impl_0(logits, temperature, key):
    self = _ref_of(key, _NO_REF)()
    if type(self) is not _CLS:
        self = _recover(_CLS, key, self)
    _guard(logits, temperature, None)
    try:
        _s = (logits.shape, logits.dtype, logits.device, None if temperature is None else (temperature.shape, temperature.dtype, temperature.device), None,)
    except RuntimeError:
        _guard(logits, temperature, None)
        raise
    if _s not in self._checked:
        _check(self, logits, temperature, None)
        self._note_checked(_s)
    _resolved = self._target is None
    if _resolved:
        self._resolve_target(logits.device)
    try:
        _c_logits = logits if logits.is_contiguous() else logits.contiguous()
        _c_temperature = None if temperature is None else (temperature if temperature.is_contiguous() else temperature.contiguous())
        _r = self._forward(_c_logits, _c_temperature, out=None)
    except BaseException:
        if _resolved:
            self._unresolve_target()
        raise
    return _r

def _body_0(self, logits, temperature):
    try:
        _s = (logits.shape, logits.dtype, logits.device, None if temperature is None else (temperature.shape, temperature.dtype, temperature.device), None,)
    except RuntimeError:
        _guard(logits, temperature, None)
        raise
    if _s not in self._checked:
        _check(self, logits, temperature, None)
        self._note_checked(_s)
    _resolved = self._target is None
    if _resolved:
        self._resolve_target(logits.device)
    try:
        _c_logits = logits if logits.is_contiguous() else logits.contiguous()
        _c_temperature = None if temperature is None else (temperature if temperature.is_contiguous() else temperature.contiguous())
        _r = self._forward(_c_logits, _c_temperature, out=None)
    except BaseException:
        if _resolved:
            self._unresolve_target()
        raise
    return _r

def _fake_0(logits, temperature, key):
    self = _ref_of(key, _NO_REF)()
    if type(self) is not _CLS:
        self = _recover(_CLS, key, self)
    _check(self, logits, temperature, None)
    _f_probs = torch.empty(tuple(logits.shape), dtype=(self.out_dtype if self.out_dtype is not None else logits.dtype), device=logits.device)
    return _f_probs

def _impl_1(logits, temperature, out, key):
    self = _ref_of(key, _NO_REF)()
    if type(self) is not _CLS:
        self = _recover(_CLS, key, self)
    _guard(logits, temperature, out)
    try:
        _s = (logits.shape, logits.dtype, logits.device, None if temperature is None else (temperature.shape, temperature.dtype, temperature.device), (out.shape, out.dtype, out.device),)
    except RuntimeError:
        _guard(logits, temperature, out)
        raise
    if _s not in self._checked:
        _check(self, logits, temperature, out)
        self._note_checked(_s)
    _al = _c_apart((out, ), (logits, temperature, )) and _apart("SoftmaxFwdOp", (out, ), (logits, temperature, ), ('out',), ('logits', 'temperature'))
    _resolved = self._target is None
    if _resolved:
        self._resolve_target(logits.device)
    try:
        _c_logits = logits if logits.is_contiguous() else logits.contiguous()
        _c_temperature = None if temperature is None else (temperature if temperature.is_contiguous() else temperature.contiguous())
        _c_out = out if out.is_contiguous() and not _al else torch.empty(out.shape, dtype=out.dtype, device=out.device)
        self._forward(_c_logits, _c_temperature, out=_c_out)
        if _c_out is not out:
            out.copy_(_c_out)
    except BaseException:
        if _resolved:
            self._unresolve_target()
        raise
    return None

def _body_1(self, logits, temperature, out):
    try:
        _s = (logits.shape, logits.dtype, logits.device, None if temperature is None else (temperature.shape, temperature.dtype, temperature.device), (out.shape, out.dtype, out.device),)
    except RuntimeError:
        _guard(logits, temperature, out)
        raise
    if _s not in self._checked:
        _check(self, logits, temperature, out)
        self._note_checked(_s)
    _al = _c_apart((out, ), (logits, temperature, )) and _apart("SoftmaxFwdOp", (out, ), (logits, temperature, ), ('out',), ('logits', 'temperature'))
    _resolved = self._target is None
    if _resolved:
        self._resolve_target(logits.device)
    try:
        _c_logits = logits if logits.is_contiguous() else logits.contiguous()
        _c_temperature = None if temperature is None else (temperature if temperature.is_contiguous() else temperature.contiguous())
        _c_out = out if out.is_contiguous() and not _al else torch.empty(out.shape, dtype=out.dtype, device=out.device)
        self._forward(_c_logits, _c_temperature, out=_c_out)
        if _c_out is not out:
            out.copy_(_c_out)
    except BaseException:
        if _resolved:
            self._unresolve_target()
        raise
    return None

def _fake_1(logits, temperature, out, key):
    self = _ref_of(key, _NO_REF)()
    if type(self) is not _CLS:
        self = _recover(_CLS, key, self)
    _check(self, logits, temperature, out)
    return None

def _call_boundary(self, logits, temperature=None, *, out=None):
    if _is_compiling() or _dispatch_len() or _tf_mode() or _functorch_level() is not None or _jit_tracing() is not None:
        _fast = False
    else:
        _g = _grad_enabled()
        _fast = (type(logits) in _PLAIN and logits.layout is _strided and not logits.is_meta and not (_g and logits.requires_grad) and not logits.is_neg() and not logits._is_zerotensor()) and (temperature is None or (type(temperature) in _PLAIN and temperature.layout is _strided and not temperature.is_meta and not (_g and temperature.requires_grad) and not temperature.is_neg() and not temperature._is_zerotensor())) and (out is None or (type(out) in _PLAIN and out.layout is _strided and not out.is_meta and not (_g and out.requires_grad) and not out.is_neg() and not out._is_zerotensor()))
    if not _fast:
        if not isinstance(logits, Tensor):
            raise InputTypeError("SoftmaxFwdOp: argument 'logits': expected a Tensor, got " + type(logits).__name__)
        if temperature is not None and not isinstance(temperature, Tensor):
            raise InputTypeError("SoftmaxFwdOp: argument 'temperature': expected a Tensor or None, got " + type(temperature).__name__)
        if out is not None and not isinstance(out, Tensor):
            raise InputTypeError("SoftmaxFwdOp: argument 'out': expected a Tensor or None, got " + type(out).__name__)
        if not _is_compiling():
            _guard(logits, temperature, out)
    if out is None:
        if _fast:
            _a = _body_0(self, logits, temperature)
        else:
            _a = _op_0(logits, temperature, self._key)
        return _a
    else:
        if _fast:
            with _below_inplace_view():
                _body_1(self, logits, temperature, out)
            _bump(out)
        else:
            _op_1(logits, temperature, out, self._key)
        return out

def _allocate(self, logits, temperature=None, *, out=None):
    probs = out if out is not None else torch.empty_like(logits, dtype=(self.out_dtype if self.out_dtype is not None else logits.dtype), memory_format=_CONTIGUOUS)
    return probs

def _memo_softmax(logits, temperature, probs):
    return (logits.dtype, None if temperature is None else temperature.dtype, logits.device, (logits.data_ptr() | (0 if temperature is None else temperature.data_ptr()) | probs.data_ptr()) & 15, tuple(logits.shape),)

def _full_softmax(logits, temperature, probs):
    return ((logits.dtype, logits.device, tuple(logits.shape), logits.data_ptr() & 15), None if temperature is None else (temperature.dtype, temperature.device, tuple(temperature.shape), temperature.data_ptr() & 15), (probs.dtype, probs.device, tuple(probs.shape), probs.data_ptr() & 15),)

