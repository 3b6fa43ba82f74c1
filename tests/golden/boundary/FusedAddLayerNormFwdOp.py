def _check(self, x, residual, weight, bias):
    normalized_shape = self.normalized_shape
    if not isinstance(x, Tensor):
        raise InputTypeError("FusedAddLayerNormFwdOp: argument 'x': expected a Tensor, got " + type(x).__name__)
    if x.dtype not in _ALLOWED_x:
        raise InputTypeError(f"FusedAddLayerNormFwdOp: argument 'x': expected dtype float32 | float16 | bfloat16, got {x.dtype}")
    _dev = x.device
    if not isinstance(residual, Tensor):
        raise InputTypeError("FusedAddLayerNormFwdOp: argument 'residual': expected a Tensor, got " + type(residual).__name__)
    if residual.dtype != x.dtype:
        raise InputTypeError(f"FusedAddLayerNormFwdOp: argument 'residual': expected dtype same as 'x' ({x.dtype}), got {residual.dtype}")
    if residual.device != _dev:
        raise InputValueError(f"FusedAddLayerNormFwdOp: argument 'residual': expected a tensor on {x.device} (the device of 'x'), got {residual.device}")
    if weight is not None:
        if not isinstance(weight, Tensor):
            raise InputTypeError("FusedAddLayerNormFwdOp: argument 'weight': expected a Tensor, got " + type(weight).__name__)
        if weight.dtype != x.dtype:
            raise InputTypeError(f"FusedAddLayerNormFwdOp: argument 'weight': expected dtype same as 'x' ({x.dtype}), got {weight.dtype}")
        if weight.device != _dev:
            raise InputValueError(f"FusedAddLayerNormFwdOp: argument 'weight': expected a tensor on {x.device} (the device of 'x'), got {weight.device}")
    if bias is not None:
        if not isinstance(bias, Tensor):
            raise InputTypeError("FusedAddLayerNormFwdOp: argument 'bias': expected a Tensor, got " + type(bias).__name__)
        if bias.dtype != x.dtype:
            raise InputTypeError(f"FusedAddLayerNormFwdOp: argument 'bias': expected dtype same as 'x' ({x.dtype}), got {bias.dtype}")
        if bias.device != _dev:
            raise InputValueError(f"FusedAddLayerNormFwdOp: argument 'bias': expected a tensor on {x.device} (the device of 'x'), got {bias.device}")
    if not (x.ndim >= len(normalized_shape)):
        raise InputValueError(f"FusedAddLayerNormFwdOp: shape rule `x.ndim >= len(normalized_shape)` does not hold: normalized_shape={normalized_shape!r}, x.shape={tuple(x.shape)}")
    if not (x.shape[x.ndim - len(normalized_shape):] == normalized_shape):
        raise InputValueError(f"FusedAddLayerNormFwdOp: shape rule `x.shape[x.ndim - len(normalized_shape):] == normalized_shape` does not hold: normalized_shape={normalized_shape!r}, x.shape={tuple(x.shape)}")
    if not (residual.shape == x.shape):
        raise InputValueError(f"FusedAddLayerNormFwdOp: shape rule `residual.shape == x.shape` does not hold: residual.shape={tuple(residual.shape)}, x.shape={tuple(x.shape)}")
    if not (weight is None or weight.shape == normalized_shape):
        raise InputValueError(f"FusedAddLayerNormFwdOp: shape rule `weight is None or weight.shape == normalized_shape` does not hold: normalized_shape={normalized_shape!r}, weight.shape={tuple(weight.shape) if weight is not None else None}")
    if not (bias is None or bias.shape == normalized_shape):
        raise InputValueError(f"FusedAddLayerNormFwdOp: shape rule `bias is None or bias.shape == normalized_shape` does not hold: bias.shape={tuple(bias.shape) if bias is not None else None}, normalized_shape={normalized_shape!r}")

def _guard(x, residual, weight, bias, inplace):
    _admit(x, "FusedAddLayerNormFwdOp", "x", False, inplace)
    _admit(residual, "FusedAddLayerNormFwdOp", "residual", False, inplace)
    if weight is not None:
        _admit(weight, "FusedAddLayerNormFwdOp", "weight", True, False)
    if bias is not None:
        _admit(bias, "FusedAddLayerNormFwdOp", "bias", True, False)

def _impl_0(x, residual, weight, bias, key):
    self = _ref_of(key, _NO_REF)()
    if type(self) is not _CLS:
        self = _recover(_CLS, key, self)
    _guard(x, residual, weight, bias, False)
    try:
        _s = (x.shape, x.dtype, x.device, residual.shape, residual.dtype, residual.device, None if weight is None else (weight.shape, weight.dtype, weight.device), None if bias is None else (bias.shape, bias.dtype, bias.device),)
    except RuntimeError:
        _guard(x, residual, weight, bias, False)
        raise
    if _s not in self._checked:
        _check(self, x, residual, weight, bias)
        self._note_checked(_s)
    _resolved = self._target is None
    if _resolved:
        self._resolve_target(x.device)
    try:
        _c_x = x if x.is_contiguous() else x.contiguous()
        _c_residual = residual if residual.is_contiguous() else residual.contiguous()
        _c_weight = None if weight is None else (weight if weight.is_contiguous() else weight.contiguous())
        _c_bias = None if bias is None else (bias if bias.is_contiguous() else bias.contiguous())
        _r = self._forward(_c_x, _c_residual, _c_weight, _c_bias, inplace=False)
        if not isinstance(_r, tuple) or len(_r) != 2:
            raise TileOpsError("FusedAddLayerNormFwdOp.forward must return a tuple of 2 outputs (None for an omitted one)")
    except BaseException:
        if _resolved:
            self._unresolve_target()
        raise
    return (_r[0], _r[1],)

def _body_0(self, x, residual, weight, bias):
    try:
        _s = (x.shape, x.dtype, x.device, residual.shape, residual.dtype, residual.device, None if weight is None else (weight.shape, weight.dtype, weight.device), None if bias is None else (bias.shape, bias.dtype, bias.device),)
    except RuntimeError:
        _guard(x, residual, weight, bias, False)
        raise
    if _s not in self._checked:
        _check(self, x, residual, weight, bias)
        self._note_checked(_s)
    _resolved = self._target is None
    if _resolved:
        self._resolve_target(x.device)
    try:
        _c_x = x if x.is_contiguous() else x.contiguous()
        _c_residual = residual if residual.is_contiguous() else residual.contiguous()
        _c_weight = None if weight is None else (weight if weight.is_contiguous() else weight.contiguous())
        _c_bias = None if bias is None else (bias if bias.is_contiguous() else bias.contiguous())
        _r = self._forward(_c_x, _c_residual, _c_weight, _c_bias, inplace=False)
        if not isinstance(_r, tuple) or len(_r) != 2:
            raise TileOpsError("FusedAddLayerNormFwdOp.forward must return a tuple of 2 outputs (None for an omitted one)")
    except BaseException:
        if _resolved:
            self._unresolve_target()
        raise
    return (_r[0], _r[1],)

def _fake_0(x, residual, weight, bias, key):
    self = _ref_of(key, _NO_REF)()
    if type(self) is not _CLS:
        self = _recover(_CLS, key, self)
    _check(self, x, residual, weight, bias)
    _f_y = torch.empty(tuple(x.shape), dtype=x.dtype, device=x.device)
    _f_residual_out = torch.empty(tuple(x.shape), dtype=x.dtype, device=x.device)
    return (_f_y, _f_residual_out,)

def _impl_1(x, residual, weight, bias, key):
    self = _ref_of(key, _NO_REF)()
    if type(self) is not _CLS:
        self = _recover(_CLS, key, self)
    _guard(x, residual, weight, bias, True)
    try:
        _s = (x.shape, x.dtype, x.device, residual.shape, residual.dtype, residual.device, None if weight is None else (weight.shape, weight.dtype, weight.device), None if bias is None else (bias.shape, bias.dtype, bias.device),)
    except RuntimeError:
        _guard(x, residual, weight, bias, True)
        raise
    if _s not in self._checked:
        _check(self, x, residual, weight, bias)
        self._note_checked(_s)
    _c_apart((x, residual, ), (weight, bias, )) and _apart("FusedAddLayerNormFwdOp", (x, residual, ), (weight, bias, ), ('x', 'residual'), ('weight', 'bias'))
    _resolved = self._target is None
    if _resolved:
        self._resolve_target(x.device)
    try:
        _c_x = x if x.is_contiguous() else x.contiguous()
        _c_residual = residual if residual.is_contiguous() else residual.contiguous()
        _c_weight = None if weight is None else (weight if weight.is_contiguous() else weight.contiguous())
        _c_bias = None if bias is None else (bias if bias.is_contiguous() else bias.contiguous())
        self._forward(_c_x, _c_residual, _c_weight, _c_bias, inplace=True)
        if _c_x is not x:
            x.copy_(_c_x)
        if _c_residual is not residual:
            residual.copy_(_c_residual)
    except BaseException:
        if _resolved:
            self._unresolve_target()
        raise
    return None

def _body_1(self, x, residual, weight, bias):
    try:
        _s = (x.shape, x.dtype, x.device, residual.shape, residual.dtype, residual.device, None if weight is None else (weight.shape, weight.dtype, weight.device), None if bias is None else (bias.shape, bias.dtype, bias.device),)
    except RuntimeError:
        _guard(x, residual, weight, bias, True)
        raise
    if _s not in self._checked:
        _check(self, x, residual, weight, bias)
        self._note_checked(_s)
    _c_apart((x, residual, ), (weight, bias, )) and _apart("FusedAddLayerNormFwdOp", (x, residual, ), (weight, bias, ), ('x', 'residual'), ('weight', 'bias'))
    _resolved = self._target is None
    if _resolved:
        self._resolve_target(x.device)
    try:
        _c_x = x if x.is_contiguous() else x.contiguous()
        _c_residual = residual if residual.is_contiguous() else residual.contiguous()
        _c_weight = None if weight is None else (weight if weight.is_contiguous() else weight.contiguous())
        _c_bias = None if bias is None else (bias if bias.is_contiguous() else bias.contiguous())
        self._forward(_c_x, _c_residual, _c_weight, _c_bias, inplace=True)
        if _c_x is not x:
            x.copy_(_c_x)
        if _c_residual is not residual:
            residual.copy_(_c_residual)
    except BaseException:
        if _resolved:
            self._unresolve_target()
        raise
    return None

def _fake_1(x, residual, weight, bias, key):
    self = _ref_of(key, _NO_REF)()
    if type(self) is not _CLS:
        self = _recover(_CLS, key, self)
    _check(self, x, residual, weight, bias)
    return None

def _call_boundary(self, x, residual, weight=None, bias=None, *, inplace=False):
    if inplace is not True and inplace is not False:
        raise InputTypeError(f"FusedAddLayerNormFwdOp: argument 'inplace': expected True or False, got {inplace!r}")
    _p = None
    if inplace is False and not _dynamo_compiling():
        _p = _plan_call(self._memo, x, residual, weight, bias)
        if _p is not _MISS and _p is not _SKIP:
            return _p
    if _is_compiling() or _dispatch_len() or _tf_mode() or _functorch_level() is not None or _jit_tracing() is not None:
        _fast = False
    else:
        _g = _grad_enabled()
        _fast = (type(x) in _PLAIN and x.layout is _strided and not x.is_meta and not (_g and x.requires_grad) and not x.is_neg() and not x._is_zerotensor()) and (type(residual) in _PLAIN and residual.layout is _strided and not residual.is_meta and not (_g and residual.requires_grad) and not residual.is_neg() and not residual._is_zerotensor()) and (weight is None or (type(weight) in _PLAIN and weight.layout is _strided and not weight.is_meta and not (_g and weight.requires_grad) and not weight.is_neg() and not weight._is_zerotensor())) and (bias is None or (type(bias) in _PLAIN and bias.layout is _strided and not bias.is_meta and not (_g and bias.requires_grad) and not bias.is_neg() and not bias._is_zerotensor()))
    if not _fast:
        if not isinstance(x, Tensor):
            raise InputTypeError("FusedAddLayerNormFwdOp: argument 'x': expected a Tensor, got " + type(x).__name__)
        if not isinstance(residual, Tensor):
            raise InputTypeError("FusedAddLayerNormFwdOp: argument 'residual': expected a Tensor, got " + type(residual).__name__)
        if weight is not None and not isinstance(weight, Tensor):
            raise InputTypeError("FusedAddLayerNormFwdOp: argument 'weight': expected a Tensor or None, got " + type(weight).__name__)
        if bias is not None and not isinstance(bias, Tensor):
            raise InputTypeError("FusedAddLayerNormFwdOp: argument 'bias': expected a Tensor or None, got " + type(bias).__name__)
        if not _is_compiling():
            _guard(x, residual, weight, bias, inplace)
    if not inplace:
        if _fast:
            _a = _body_0(self, x, residual, weight, bias)
            if _p is _MISS:
                _record_plan(self, (x, residual, weight, bias,), _a)
        else:
            _a = _op_0(x, residual, weight, bias, self._key)
        return _a
    else:
        if _fast:
            with _below_inplace_view():
                _body_1(self, x, residual, weight, bias)
            _bump(x)
            _bump(residual)
        else:
            _op_1(x, residual, weight, bias, self._key)
        return (x, residual,)

def _allocate(self, x, residual, weight=None, bias=None, *, inplace=False):
    y = x if inplace else torch.empty_like(x, memory_format=_CONTIGUOUS)
    residual_out = residual if inplace else torch.empty_like(x, memory_format=_CONTIGUOUS)
    return (y, residual_out,)

def _memo_fused_add_layer_norm(x, residual, weight, bias, y, residual_out):
    return (x.dtype, weight is None, bias is None, x.device, (x.data_ptr() | residual.data_ptr() | (0 if weight is None else weight.data_ptr()) | (0 if bias is None else bias.data_ptr()) | y.data_ptr() | residual_out.data_ptr()) & 15, y is x, residual_out is residual,)

def _full_fused_add_layer_norm(x, residual, weight, bias, y, residual_out):
    return ((x.dtype, x.device, tuple(x.shape), x.data_ptr() & 15), (residual.dtype, residual.device, tuple(residual.shape), residual.data_ptr() & 15), None if weight is None else (weight.dtype, weight.device, tuple(weight.shape), weight.data_ptr() & 15), None if bias is None else (bias.dtype, bias.device, tuple(bias.shape), bias.data_ptr() & 15), (y.dtype, y.device, tuple(y.shape), y.data_ptr() & 15), (residual_out.dtype, residual_out.device, tuple(residual_out.shape), residual_out.data_ptr() & 15), y is x, residual_out is residual,)

