def _check(self, logits, k, p):
    if not isinstance(logits, Tensor):
        raise InputTypeError("TopKTopPMaskFwdOp: argument 'logits': expected a Tensor, got " + type(logits).__name__)
    if logits.dtype not in _ALLOWED_logits:
        raise InputTypeError(f"TopKTopPMaskFwdOp: argument 'logits': expected dtype float32 | float16 | bfloat16, got {logits.dtype}")
    _dev = logits.device
    if k is not None:
        if not isinstance(k, Tensor):
            raise InputTypeError("TopKTopPMaskFwdOp: argument 'k': expected a Tensor, got " + type(k).__name__)
        if k.dtype not in _ALLOWED_k:
            raise InputTypeError(f"TopKTopPMaskFwdOp: argument 'k': expected dtype int32 | int64, got {k.dtype}")
        if k.device != _dev:
            raise InputValueError(f"TopKTopPMaskFwdOp: argument 'k': expected a tensor on {logits.device} (the device of 'logits'), got {k.device}")
    if p is not None:
        if not isinstance(p, Tensor):
            raise InputTypeError("TopKTopPMaskFwdOp: argument 'p': expected a Tensor, got " + type(p).__name__)
        if p.dtype not in _ALLOWED_p:
            raise InputTypeError(f"TopKTopPMaskFwdOp: argument 'p': expected dtype float32, got {p.dtype}")
        if p.device != _dev:
            raise InputValueError(f"TopKTopPMaskFwdOp: argument 'p': expected a tensor on {logits.device} (the device of 'logits'), got {p.device}")
    if not (logits.ndim == 2):
        raise InputValueError(f"TopKTopPMaskFwdOp: shape rule `logits.ndim == 2` does not hold: logits.shape={tuple(logits.shape)}")
    if not (k is None or k.ndim == 1):
        raise InputValueError(f"TopKTopPMaskFwdOp: shape rule `k is None or k.ndim == 1` does not hold: k.shape={tuple(k.shape) if k is not None else None}")
    if not (k is None or k.shape[0] == logits.shape[0]):
        raise InputValueError(f"TopKTopPMaskFwdOp: shape rule `k is None or k.shape[0] == logits.shape[0]` does not hold: k.shape={tuple(k.shape) if k is not None else None}, logits.shape={tuple(logits.shape)}")
    if not (p is None or p.ndim == 1):
        raise InputValueError(f"TopKTopPMaskFwdOp: shape rule `p is None or p.ndim == 1` does not hold: p.shape={tuple(p.shape) if p is not None else None}")
    if not (p is None or p.shape[0] == logits.shape[0]):
        raise InputValueError(f"TopKTopPMaskFwdOp: shape rule `p is None or p.shape[0] == logits.shape[0]` does not hold: logits.shape={tuple(logits.shape)}, p.shape={tuple(p.shape) if p is not None else None}")
    if not (logits.shape[1] >= 1):
        raise InputValueError(f"TopKTopPMaskFwdOp: shape rule `logits.shape[1] >= 1` does not hold: logits.shape={tuple(logits.shape)}")

def _guard(logits, k, p, inplace):
    _admit(logits, "TopKTopPMaskFwdOp", "logits", False, inplace)
    if k is not None:
        _admit(k, "TopKTopPMaskFwdOp", "k", True, False)
    if p is not None:
        _admit(p, "TopKTopPMaskFwdOp", "p", True, False)

def _impl_0(logits, k, p, key):
    self = _ref_of(key, _NO_REF)()
    if type(self) is not _CLS:
        self = _recover(_CLS, key, self)
    _guard(logits, k, p, False)
    try:
        _s = (logits.shape, logits.dtype, logits.device, None if k is None else (k.shape, k.dtype, k.device), None if p is None else (p.shape, p.dtype, p.device),)
    except RuntimeError:
        _guard(logits, k, p, False)
        raise
    if _s not in self._checked:
        _check(self, logits, k, p)
        self._note_checked(_s)
    _resolved = self._target is None
    if _resolved:
        self._resolve_target(logits.device)
    try:
        _c_logits = logits if logits.is_contiguous() else logits.contiguous()
        _c_k = None if k is None else (k if k.is_contiguous() else k.contiguous())
        _c_p = None if p is None else (p if p.is_contiguous() else p.contiguous())
        _r = self._forward(_c_logits, _c_k, _c_p, inplace=False)
    except BaseException:
        if _resolved:
            self._unresolve_target()
        raise
    return _r

def _body_0(self, logits, k, p):
    try:
        _s = (logits.shape, logits.dtype, logits.device, None if k is None else (k.shape, k.dtype, k.device), None if p is None else (p.shape, p.dtype, p.device),)
    except RuntimeError:
        _guard(logits, k, p, False)
        raise
    if _s not in self._checked:
        _check(self, logits, k, p)
        self._note_checked(_s)
    _resolved = self._target is None
    if _resolved:
        self._resolve_target(logits.device)
    try:
        _c_logits = logits if logits.is_contiguous() else logits.contiguous()
        _c_k = None if k is None else (k if k.is_contiguous() else k.contiguous())
        _c_p = None if p is None else (p if p.is_contiguous() else p.contiguous())
        _r = self._forward(_c_logits, _c_k, _c_p, inplace=False)
    except BaseException:
        if _resolved:
            self._unresolve_target()
        raise
    return _r

def _fake_0(logits, k, p, key):
    self = _ref_of(key, _NO_REF)()
    if type(self) is not _CLS:
        self = _recover(_CLS, key, self)
    _check(self, logits, k, p)
    _f_masked = torch.empty(tuple(logits.shape), dtype=logits.dtype, device=logits.device)
    return _f_masked

def _impl_1(logits, k, p, key):
    self = _ref_of(key, _NO_REF)()
    if type(self) is not _CLS:
        self = _recover(_CLS, key, self)
    _guard(logits, k, p, True)
    try:
        _s = (logits.shape, logits.dtype, logits.device, None if k is None else (k.shape, k.dtype, k.device), None if p is None else (p.shape, p.dtype, p.device),)
    except RuntimeError:
        _guard(logits, k, p, True)
        raise
    if _s not in self._checked:
        _check(self, logits, k, p)
        self._note_checked(_s)
    _c_apart((logits, ), (k, p, )) and _apart("TopKTopPMaskFwdOp", (logits, ), (k, p, ), ('logits',), ('k', 'p'))
    _resolved = self._target is None
    if _resolved:
        self._resolve_target(logits.device)
    try:
        _c_logits = logits if logits.is_contiguous() else logits.contiguous()
        _c_k = None if k is None else (k if k.is_contiguous() else k.contiguous())
        _c_p = None if p is None else (p if p.is_contiguous() else p.contiguous())
        self._forward(_c_logits, _c_k, _c_p, inplace=True)
        if _c_logits is not logits:
            logits.copy_(_c_logits)
    except BaseException:
        if _resolved:
            self._unresolve_target()
        raise
    return None

def _body_1(self, logits, k, p):
    try:
        _s = (logits.shape, logits.dtype, logits.device, None if k is None else (k.shape, k.dtype, k.device), None if p is None else (p.shape, p.dtype, p.device),)
    except RuntimeError:
        _guard(logits, k, p, True)
        raise
    if _s not in self._checked:
        _check(self, logits, k, p)
        self._note_checked(_s)
    _c_apart((logits, ), (k, p, )) and _apart("TopKTopPMaskFwdOp", (logits, ), (k, p, ), ('logits',), ('k', 'p'))
    _resolved = self._target is None
    if _resolved:
        self._resolve_target(logits.device)
    try:
        _c_logits = logits if logits.is_contiguous() else logits.contiguous()
        _c_k = None if k is None else (k if k.is_contiguous() else k.contiguous())
        _c_p = None if p is None else (p if p.is_contiguous() else p.contiguous())
        self._forward(_c_logits, _c_k, _c_p, inplace=True)
        if _c_logits is not logits:
            logits.copy_(_c_logits)
    except BaseException:
        if _resolved:
            self._unresolve_target()
        raise
    return None

def _fake_1(logits, k, p, key):
    self = _ref_of(key, _NO_REF)()
    if type(self) is not _CLS:
        self = _recover(_CLS, key, self)
    _check(self, logits, k, p)
    return None

def _call_boundary(self, logits, k=None, p=None, *, inplace=False):
    if inplace is not True and inplace is not False:
        raise InputTypeError(f"TopKTopPMaskFwdOp: argument 'inplace': expected True or False, got {inplace!r}")
    if _is_compiling() or _dispatch_len() or _tf_mode() or _functorch_level() is not None or _jit_tracing() is not None:
        _fast = False
    else:
        _g = _grad_enabled()
        _fast = (type(logits) in _PLAIN and logits.layout is _strided and not logits.is_meta and not (_g and logits.requires_grad) and not logits.is_neg() and not logits._is_zerotensor()) and (k is None or (type(k) in _PLAIN and k.layout is _strided and not k.is_meta and not (_g and k.requires_grad) and not k.is_neg() and not k._is_zerotensor())) and (p is None or (type(p) in _PLAIN and p.layout is _strided and not p.is_meta and not (_g and p.requires_grad) and not p.is_neg() and not p._is_zerotensor()))
    if not _fast:
        if not isinstance(logits, Tensor):
            raise InputTypeError("TopKTopPMaskFwdOp: argument 'logits': expected a Tensor, got " + type(logits).__name__)
        if k is not None and not isinstance(k, Tensor):
            raise InputTypeError("TopKTopPMaskFwdOp: argument 'k': expected a Tensor or None, got " + type(k).__name__)
        if p is not None and not isinstance(p, Tensor):
            raise InputTypeError("TopKTopPMaskFwdOp: argument 'p': expected a Tensor or None, got " + type(p).__name__)
        if not _is_compiling():
            _guard(logits, k, p, inplace)
    if not inplace:
        if _fast:
            _a = _body_0(self, logits, k, p)
        else:
            _a = _op_0(logits, k, p, self._key)
        return _a
    else:
        if _fast:
            with _below_inplace_view():
                _body_1(self, logits, k, p)
            _bump(logits)
        else:
            _op_1(logits, k, p, self._key)
        return logits

def _allocate(self, logits, k=None, p=None, *, inplace=False):
    masked = logits if inplace else torch.empty_like(logits, memory_format=_CONTIGUOUS)
    return masked

def _memo_top_k_top_p_mask(logits, k, p, masked):
    return (logits.dtype, None if k is None else k.dtype, None if p is None else p.dtype, logits.device, (logits.data_ptr() | (0 if k is None else k.data_ptr()) | (0 if p is None else p.data_ptr()) | masked.data_ptr()) & 15, tuple(logits.shape), masked is logits,)

def _full_top_k_top_p_mask(logits, k, p, masked):
    return ((logits.dtype, logits.device, tuple(logits.shape), logits.data_ptr() & 15), None if k is None else (k.dtype, k.device, tuple(k.shape), k.data_ptr() & 15), None if p is None else (p.dtype, p.device, tuple(p.shape), p.data_ptr() & 15), (masked.dtype, masked.device, tuple(masked.shape), masked.data_ptr() & 15), masked is logits,)

