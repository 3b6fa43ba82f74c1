def _check(self, ids, weight, out):
    if not isinstance(ids, Tensor):
        raise InputTypeError("EmbeddingFwdOp: argument 'ids': expected a Tensor, got " + type(ids).__name__)
    if ids.dtype not in _ALLOWED_ids:
        raise InputTypeError(f"EmbeddingFwdOp: argument 'ids': expected dtype int32 | int64, got {ids.dtype}")
    _dev = ids.device
    if not isinstance(weight, Tensor):
        raise InputTypeError("EmbeddingFwdOp: argument 'weight': expected a Tensor, got " + type(weight).__name__)
    if weight.dtype not in _ALLOWED_weight:
        raise InputTypeError(f"EmbeddingFwdOp: argument 'weight': expected dtype float32 | float16 | bfloat16, got {weight.dtype}")
    if weight.device != _dev:
        raise InputValueError(f"EmbeddingFwdOp: argument 'weight': expected a tensor on {ids.device} (the device of 'ids'), got {weight.device}")
    if not (weight.ndim == 2):
        raise InputValueError(f"EmbeddingFwdOp: shape rule `weight.ndim == 2` does not hold: weight.shape={tuple(weight.shape)}")
    if out is not None:
        if not isinstance(out, Tensor):
            raise InputTypeError("EmbeddingFwdOp: argument 'out': expected a Tensor, got " + type(out).__name__)
        _s = tuple(tuple(ids.shape) + (weight.shape[1],))
        if tuple(out.shape) != _s:
            raise InputValueError(f"EmbeddingFwdOp: argument 'out': expected shape {_s} (output 'y'), got {tuple(out.shape)}")
        if out.dtype != weight.dtype:
            raise InputTypeError(f"EmbeddingFwdOp: argument 'out': expected dtype {weight.dtype}, got {out.dtype}")
        if out.device != _dev:
            raise InputValueError(f"EmbeddingFwdOp: argument 'out': expected a tensor on {ids.device}, got {out.device}")

def _guard(ids, weight, out):
    _admit(ids, "EmbeddingFwdOp", "ids", False, False)
    _admit(weight, "EmbeddingFwdOp", "weight", False, False)
    if out is not None:
        _admit(out, "EmbeddingFwdOp", "out", True, True)

def _impl_0(ids, weight, key):
    self = _ref_of(key, _NO_REF)()
    if type(self) is not _CLS:
        self = _recover(_CLS, key, self)
    _guard(ids, weight, None)
    try:
        _s = (ids.shape, ids.dtype, ids.device, weight.shape, weight.dtype, weight.device, None,)
    except RuntimeError:
        _guard(ids, weight, None)
        raise
    if _s not in self._checked:
        _check(self, ids, weight, None)
        self._note_checked(_s)
    _resolved = self._target is None
    if _resolved:
        self._resolve_target(ids.device)
    try:
        _c_ids = ids if ids.is_contiguous() else ids.contiguous()
        _c_weight = weight if weight.is_contiguous() else weight.contiguous()
        _r = self._forward(_c_ids, _c_weight, out=None)
    except BaseException:
        if _resolved:
            self._unresolve_target()
        raise
    return _r

def _body_0(self, ids, weight):
    try:
        _s = (ids.shape, ids.dtype, ids.device, weight.shape, weight.dtype, weight.device, None,)
    except RuntimeError:
        _guard(ids, weight, None)
        raise
    if _s not in self._checked:
        _check(self, ids, weight, None)
        self._note_checked(_s)
    _resolved = self._target is None
    if _resolved:
        self._resolve_target(ids.device)
    try:
        _c_ids = ids if ids.is_contiguous() else ids.contiguous()
        _c_weight = weight if weight.is_contiguous() else weight.contiguous()
        _r = self._forward(_c_ids, _c_weight, out=None)
    except BaseException:
        if _resolved:
            self._unresolve_target()
        raise
    return _r

def _fake_0(ids, weight, key):
    self = _ref_of(key, _NO_REF)()
    if type(self) is not _CLS:
        self = _recover(_CLS, key, self)
    _check(self, ids, weight, None)
    _f_y = torch.empty(tuple(tuple(ids.shape) + (weight.shape[1],)), dtype=weight.dtype, device=ids.device)
    return _f_y

def _impl_1(ids, weight, out, key):
    self = _ref_of(key, _NO_REF)()
    if type(self) is not _CLS:
        self = _recover(_CLS, key, self)
    _guard(ids, weight, out)
    try:
        _s = (ids.shape, ids.dtype, ids.device, weight.shape, weight.dtype, weight.device, (out.shape, out.dtype, out.device),)
    except RuntimeError:
        _guard(ids, weight, out)
        raise
    if _s not in self._checked:
        _check(self, ids, weight, out)
        self._note_checked(_s)
    _al = _c_apart((out, ), (ids, weight, )) and _apart("EmbeddingFwdOp", (out, ), (ids, weight, ), ('out',), ('ids', 'weight'))
    _resolved = self._target is None
    if _resolved:
        self._resolve_target(ids.device)
    try:
        _c_ids = ids if ids.is_contiguous() else ids.contiguous()
        _c_weight = weight if weight.is_contiguous() else weight.contiguous()
        _c_out = out if out.is_contiguous() and not _al else torch.empty(out.shape, dtype=out.dtype, device=out.device)
        self._forward(_c_ids, _c_weight, out=_c_out)
        if _c_out is not out:
            out.copy_(_c_out)
    except BaseException:
        if _resolved:
            self._unresolve_target()
        raise
    return None

def _body_1(self, ids, weight, out):
    try:
        _s = (ids.shape, ids.dtype, ids.device, weight.shape, weight.dtype, weight.device, (out.shape, out.dtype, out.device),)
    except RuntimeError:
        _guard(ids, weight, out)
        raise
    if _s not in self._checked:
        _check(self, ids, weight, out)
        self._note_checked(_s)
    _al = _c_apart((out, ), (ids, weight, )) and _apart("EmbeddingFwdOp", (out, ), (ids, weight, ), ('out',), ('ids', 'weight'))
    _resolved = self._target is None
    if _resolved:
        self._resolve_target(ids.device)
    try:
        _c_ids = ids if ids.is_contiguous() else ids.contiguous()
        _c_weight = weight if weight.is_contiguous() else weight.contiguous()
        _c_out = out if out.is_contiguous() and not _al else torch.empty(out.shape, dtype=out.dtype, device=out.device)
        self._forward(_c_ids, _c_weight, out=_c_out)
        if _c_out is not out:
            out.copy_(_c_out)
    except BaseException:
        if _resolved:
            self._unresolve_target()
        raise
    return None

def _fake_1(ids, weight, out, key):
    self = _ref_of(key, _NO_REF)()
    if type(self) is not _CLS:
        self = _recover(_CLS, key, self)
    _check(self, ids, weight, out)
    return None

def _call_boundary(self, ids, weight, *, out=None):
    _p = None
    if out is None and not _dynamo_compiling():
        _p = _plan_call(self._memo, ids, weight)
        if _p is not _MISS and _p is not _SKIP:
            return _p
    if out is not None and not _dynamo_compiling():
        _p = _plan_call_out(self._memo, out, ids, weight)
        if _p is not _MISS and _p is not _SKIP:
            return _p
    if _is_compiling() or _dispatch_len() or _tf_mode() or _functorch_level() is not None or _jit_tracing() is not None:
        _fast = False
    else:
        _g = _grad_enabled()
        _fast = (type(ids) in _PLAIN and ids.layout is _strided and not ids.is_meta and not (_g and ids.requires_grad) and not ids.is_neg() and not ids._is_zerotensor()) and (type(weight) in _PLAIN and weight.layout is _strided and not weight.is_meta and not (_g and weight.requires_grad) and not weight.is_neg() and not weight._is_zerotensor()) and (out is None or (type(out) in _PLAIN and out.layout is _strided and not out.is_meta and not (_g and out.requires_grad) and not out.is_neg() and not out._is_zerotensor()))
    if not _fast:
        if not isinstance(ids, Tensor):
            raise InputTypeError("EmbeddingFwdOp: argument 'ids': expected a Tensor, got " + type(ids).__name__)
        if not isinstance(weight, Tensor):
            raise InputTypeError("EmbeddingFwdOp: argument 'weight': expected a Tensor, got " + type(weight).__name__)
        if out is not None and not isinstance(out, Tensor):
            raise InputTypeError("EmbeddingFwdOp: argument 'out': expected a Tensor or None, got " + type(out).__name__)
        if not _is_compiling():
            _guard(ids, weight, out)
    if out is None:
        if _fast:
            _a = _body_0(self, ids, weight)
            if _p is _MISS:
                _record_plan(self, (ids, weight,), _a)
        else:
            _a = _op_0(ids, weight, self._key)
        return _a
    else:
        if _fast:
            with _below_inplace_view():
                _body_1(self, ids, weight, out)
            if _p is _MISS:
                _record_plan(self, (ids, weight,), out, out)
            _bump(out)
        else:
            _op_1(ids, weight, out, self._key)
        return out

def _allocate(self, ids, weight, *, out=None):
    y = out if out is not None else torch.empty(tuple(tuple(ids.shape) + (weight.shape[1],)), dtype=weight.dtype, device=ids.device)
    return y

def _memo_embedding(ids, weight, y):
    return (ids.dtype, weight.dtype, ids.device, (ids.data_ptr() | weight.data_ptr() | y.data_ptr()) & 15, tuple(weight.shape),)

def _full_embedding(ids, weight, y):
    return ((ids.dtype, ids.device, tuple(ids.shape), ids.data_ptr() & 15), (weight.dtype, weight.device, tuple(weight.shape), weight.data_ptr() & 15), (y.dtype, y.device, tuple(y.shape), y.data_ptr() & 15),)

