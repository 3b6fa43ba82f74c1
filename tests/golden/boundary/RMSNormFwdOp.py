def _check(self, x, weight, out):
    normalized_shape = self.normalized_shape
    if not isinstance(x, Tensor):
        raise InputTypeError("RMSNormFwdOp: argument 'x': expected a Tensor, got " + type(x).__name__)
    if x.dtype not in _ALLOWED_x:
        raise InputTypeError(f"RMSNormFwdOp: argument 'x': expected dtype float32 | float16 | bfloat16, got {x.dtype}")
    _dev = x.device
    if weight is not None:
        if not isinstance(weight, Tensor):
            raise InputTypeError("RMSNormFwdOp: argument 'weight': expected a Tensor, got " + type(weight).__name__)
        if weight.dtype != x.dtype:
            raise InputTypeError(f"RMSNormFwdOp: argument 'weight': expected dtype same as 'x' ({x.dtype}), got {weight.dtype}")
        if weight.device != _dev:
            raise InputValueError(f"RMSNormFwdOp: argument 'weight': expected a tensor on {x.device} (the device of 'x'), got {weight.device}")
    if not (x.ndim >= len(normalized_shape)):
        raise InputValueError(f"RMSNormFwdOp: shape rule `x.ndim >= len(normalized_shape)` does not hold: normalized_shape={normalized_shape!r}, x.shape={tuple(x.shape)}")
    if not (x.shape[x.ndim - len(normalized_shape):] == normalized_shape):
        raise InputValueError(f"RMSNormFwdOp: shape rule `x.shape[x.ndim - len(normalized_shape):] == normalized_shape` does not hold: normalized_shape={normalized_shape!r}, x.shape={tuple(x.shape)}")
    if not (weight is None or weight.shape == normalized_shape):
        raise InputValueError(f"RMSNormFwdOp: shape rule `weight is None or weight.shape == normalized_shape` does not hold: normalized_shape={normalized_shape!r}, weight.shape={tuple(weight.shape) if weight is not None else None}")
    if out is not None:
        if not isinstance(out, Tensor):
            raise InputTypeError("RMSNormFwdOp: argument 'out': expected a Tensor, got " + type(out).__name__)
        _s = tuple(x.shape)
        if tuple(out.shape) != _s:
            raise InputValueError(f"RMSNormFwdOp: argument 'out': expected shape {_s} (output 'y'), got {tuple(out.shape)}")
        if out.dtype != x.dtype:
            raise InputTypeError(f"RMSNormFwdOp: argument 'out': expected dtype {x.dtype}, got {out.dtype}")
        if out.device != _dev:
            raise InputValueError(f"RMSNormFwdOp: argument 'out': expected a tensor on {x.device}, got {out.device}")

def _guard(x, weight, out):
    _admit(x, "RMSNormFwdOp", "x", False, False)
    if weight is not None:
        _admit(weight, "RMSNormFwdOp", "weight", True, False)
    if out is not None:
        _admit(out, "RMSNormFwdOp", "out", True, True)

def _impl_0(x, weight, key):
    self = _ref_of(key, _NO_REF)()
    if type(self) is not _CLS:
        self = _recover(_CLS, key, self)
    _guard(x, weight, None)
    try:
        _s = (x.shape, x.dtype, x.device, None if weight is None else (weight.shape, weight.dtype, weight.device), None,)
    except RuntimeError:
        _guard(x, weight, None)
        raise
    if _s not in self._checked:
        _check(self, x, weight, None)
        self._note_checked(_s)
    _resolved = self._target is None
    if _resolved:
        self._resolve_target(x.device)
    try:
        _c_x = x if x.is_contiguous() else x.contiguous()
        _c_weight = None if weight is None else (weight if weight.is_contiguous() else weight.contiguous())
        _r = self._forward(_c_x, _c_weight, out=None)
    except BaseException:
        if _resolved:
            self._unresolve_target()
        raise
    return _r

def _body_0(self, x, weight):
    try:
        _s = (x.shape, x.dtype, x.device, None if weight is None else (weight.shape, weight.dtype, weight.device), None,)
    except RuntimeError:
        _guard(x, weight, None)
        raise
    if _s not in self._checked:
        _check(self, x, weight, None)
        self._note_checked(_s)
    _resolved = self._target is None
    if _resolved:
        self._resolve_target(x.device)
    try:
        _c_x = x if x.is_contiguous() else x.contiguous()
        _c_weight = None if weight is None else (weight if weight.is_contiguous() else weight.contiguous())
        _r = self._forward(_c_x, _c_weight, out=None)
    except BaseException:
        if _resolved:
            self._unresolve_target()
        raise
    return _r

def _fake_0(x, weight, key):
    self = _ref_of(key, _NO_REF)()
    if type(self) is not _CLS:
        self = _recover(_CLS, key, self)
    _check(self, x, weight, None)
    _f_y = torch.empty(tuple(x.shape), dtype=x.dtype, device=x.device)
    return _f_y

def _impl_1(x, weight, out, key):
    self = _ref_of(key, _NO_REF)()
    if type(self) is not _CLS:
        self = _recover(_CLS, key, self)
    _guard(x, weight, out)
    try:
        _s = (x.shape, x.dtype, x.device, None if weight is None else (weight.shape, weight.dtype, weight.device), (out.shape, out.dtype, out.device),)
    except RuntimeError:
        _guard(x, weight, out)
        raise
    if _s not in self._checked:
        _check(self, x, weight, out)
        self._note_checked(_s)
    _al = _c_apart((out, ), (x, weight, )) and _apart("RMSNormFwdOp", (out, ), (x, weight, ), ('out',), ('x', 'weight'))
    _resolved = self._target is None
    if _resolved:
        self._resolve_target(x.device)
    try:
        _c_x = x if x.is_contiguous() else x.contiguous()
        _c_weight = None if weight is None else (weight if weight.is_contiguous() else weight.contiguous())
        _c_out = out if out.is_contiguous() and not _al else torch.empty(out.shape, dtype=out.dtype, device=out.device)
        self._forward(_c_x, _c_weight, out=_c_out)
        if _c_out is not out:
            out.copy_(_c_out)
    except BaseException:
        if _resolved:
            self._unresolve_target()
        raise
    return None

def _body_1(self, x, weight, out):
    try:
        _s = (x.shape, x.dtype, x.device, None if weight is None else (weight.shape, weight.dtype, weight.device), (out.shape, out.dtype, out.device),)
    except RuntimeError:
        _guard(x, weight, out)
        raise
    if _s not in self._checked:
        _check(self, x, weight, out)
        self._note_checked(_s)
    _al = _c_apart((out, ), (x, weight, )) and _apart("RMSNormFwdOp", (out, ), (x, weight, ), ('out',), ('x', 'weight'))
    _resolved = self._target is None
    if _resolved:
        self._resolve_target(x.device)
    try:
        _c_x = x if x.is_contiguous() else x.contiguous()
        _c_weight = None if weight is None else (weight if weight.is_contiguous() else weight.contiguous())
        _c_out = out if out.is_contiguous() and not _al else torch.empty(out.shape, dtype=out.dtype, device=out.device)
        self._forward(_c_x, _c_weight, out=_c_out)
        if _c_out is not out:
            out.copy_(_c_out)
    except BaseException:
        if _resolved:
            self._unresolve_target()
        raise
    return None

def _fake_1(x, weight, out, key):
    self = _ref_of(key, _NO_REF)()
    if type(self) is not _CLS:
        self = _recover(_CLS, key, self)
    _check(self, x, weight, out)
    return None

def _call_boundary(self, x, weight=None, *, out=None):
    _p = None
    if out is None and not _dynamo_compiling():
        _p = _plan_call(self._memo, x, weight)
        if _p is not _MISS and _p is not _SKIP:
            return _p
    if out is not None and not _dynamo_compiling():
        _p = _plan_call_out(self._memo, out, x, weight)
        if _p is not _MISS and _p is not _SKIP:
            return _p
    if _is_compiling() or _dispatch_len() or _tf_mode() or _functorch_level() is not None or _jit_tracing() is not None:
        _fast = False
    else:
        _g = _grad_enabled()
        _fast = (type(x) in _PLAIN and x.layout is _strided and not x.is_meta and not (_g and x.requires_grad) and not x.is_neg() and not x._is_zerotensor()) and (weight is None or (type(weight) in _PLAIN and weight.layout is _strided and not weight.is_meta and not (_g and weight.requires_grad) and not weight.is_neg() and not weight._is_zerotensor())) and (out is None or (type(out) in _PLAIN and out.layout is _strided and not out.is_meta and not (_g and out.requires_grad) and not out.is_neg() and not out._is_zerotensor()))
    if not _fast:
        if not isinstance(x, Tensor):
            raise InputTypeError("RMSNormFwdOp: argument 'x': expected a Tensor, got " + type(x).__name__)
        if weight is not None and not isinstance(weight, Tensor):
            raise InputTypeError("RMSNormFwdOp: argument 'weight': expected a Tensor or None, got " + type(weight).__name__)
        if out is not None and not isinstance(out, Tensor):
            raise InputTypeError("RMSNormFwdOp: argument 'out': expected a Tensor or None, got " + type(out).__name__)
        if not _is_compiling():
            _guard(x, weight, out)
    if out is None:
        if _fast:
            _a = _body_0(self, x, weight)
            if _p is _MISS:
                _record_plan(self, (x, weight,), _a)
        else:
            _a = _op_0(x, weight, self._key)
        return _a
    else:
        if _fast:
            with _below_inplace_view():
                _body_1(self, x, weight, out)
            if _p is _MISS:
                _record_plan(self, (x, weight,), out, out)
            _bump(out)
        else:
            _op_1(x, weight, out, self._key)
        return out

def _allocate(self, x, weight=None, *, out=None):
    y = out if out is not None else torch.empty_like(x, memory_format=_CONTIGUOUS)
    return y

def _memo_rms_norm(x, weight, y):
    return (x.dtype, weight is None, x.device, (x.data_ptr() | (0 if weight is None else weight.data_ptr()) | y.data_ptr()) & 15,)

def _full_rms_norm(x, weight, y):
    return ((x.dtype, x.device, tuple(x.shape), x.data_ptr() & 15), None if weight is None else (weight.dtype, weight.device, tuple(weight.shape), weight.data_ptr() & 15), (y.dtype, y.device, tuple(y.shape), y.data_ptr() & 15),)

