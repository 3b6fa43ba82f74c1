def _check(self, probs, q):
    if not isinstance(probs, Tensor):
        raise InputTypeError("SampleFromProbsFwdOp: argument 'probs': expected a Tensor, got " + type(probs).__name__)
    if probs.dtype not in _ALLOWED_probs:
        raise InputTypeError(f"SampleFromProbsFwdOp: argument 'probs': expected dtype float32 | float16 | bfloat16, got {probs.dtype}")
    _dev = probs.device
    if not isinstance(q, Tensor):
        raise InputTypeError("SampleFromProbsFwdOp: argument 'q': expected a Tensor, got " + type(q).__name__)
    if q.dtype not in _ALLOWED_q:
        raise InputTypeError(f"SampleFromProbsFwdOp: argument 'q': expected dtype float32, got {q.dtype}")
    if q.device != _dev:
        raise InputValueError(f"SampleFromProbsFwdOp: argument 'q': expected a tensor on {probs.device} (the device of 'probs'), got {q.device}")
    if not (probs.ndim == 2):
        raise InputValueError(f"SampleFromProbsFwdOp: shape rule `probs.ndim == 2` does not hold: probs.shape={tuple(probs.shape)}")
    if not (q.ndim == 2):
        raise InputValueError(f"SampleFromProbsFwdOp: shape rule `q.ndim == 2` does not hold: q.shape={tuple(q.shape)}")
    if not (q.shape[0] == probs.shape[0]):
        raise InputValueError(f"SampleFromProbsFwdOp: shape rule `q.shape[0] == probs.shape[0]` does not hold: probs.shape={tuple(probs.shape)}, q.shape={tuple(q.shape)}")
    if not (q.shape[1] == probs.shape[1]):
        raise InputValueError(f"SampleFromProbsFwdOp: shape rule `q.shape[1] == probs.shape[1]` does not hold: probs.shape={tuple(probs.shape)}, q.shape={tuple(q.shape)}")
    if not (probs.shape[1] >= 1):
        raise InputValueError(f"SampleFromProbsFwdOp: shape rule `probs.shape[1] >= 1` does not hold: probs.shape={tuple(probs.shape)}")

def _guard(probs, q):
    _admit(probs, "SampleFromProbsFwdOp", "probs", False, False)
    _admit(q, "SampleFromProbsFwdOp", "q", False, False)

def _impl_0(probs, q, key):
    self = _ref_of(key, _NO_REF)()
    if type(self) is not _CLS:
        self = _recover(_CLS, key, self)
    _guard(probs, q)
    try:
        _s = (probs.shape, probs.dtype, probs.device, q.shape, q.dtype, q.device,)
    except RuntimeError:
        _guard(probs, q)
        raise
    if _s not in self._checked:
        _check(self, probs, q)
        self._note_checked(_s)
    _resolved = self._target is None
    if _resolved:
        self._resolve_target(probs.device)
    try:
        _c_probs = probs if probs.is_contiguous() else probs.contiguous()
        _c_q = q if q.is_contiguous() else q.contiguous()
        _r = self._forward(_c_probs, _c_q)
    except BaseException:
        if _resolved:
            self._unresolve_target()
        raise
    return _r

def _body_0(self, probs, q):
    try:
        _s = (probs.shape, probs.dtype, probs.device, q.shape, q.dtype, q.device,)
    except RuntimeError:
        _guard(probs, q)
        raise
    if _s not in self._checked:
        _check(self, probs, q)
        self._note_checked(_s)
    _resolved = self._target is None
    if _resolved:
        self._resolve_target(probs.device)
    try:
        _c_probs = probs if probs.is_contiguous() else probs.contiguous()
        _c_q = q if q.is_contiguous() else q.contiguous()
        _r = self._forward(_c_probs, _c_q)
    except BaseException:
        if _resolved:
            self._unresolve_target()
        raise
    return _r

def _fake_0(probs, q, key):
    self = _ref_of(key, _NO_REF)()
    if type(self) is not _CLS:
        self = _recover(_CLS, key, self)
    _check(self, probs, q)
    _f_token = torch.empty(tuple((probs.shape[0],)), dtype=_DT_token, device=probs.device)
    return _f_token

def _call_boundary(self, probs, q):
    if _is_compiling() or _dispatch_len() or _tf_mode() or _functorch_level() is not None or _jit_tracing() is not None:
        _fast = False
    else:
        _g = _grad_enabled()
        _fast = (type(probs) in _PLAIN and probs.layout is _strided and not probs.is_meta and not (_g and probs.requires_grad) and not probs.is_neg() and not probs._is_zerotensor()) and (type(q) in _PLAIN and q.layout is _strided and not q.is_meta and not (_g and q.requires_grad) and not q.is_neg() and not q._is_zerotensor())
    if not _fast:
        if not isinstance(probs, Tensor):
            raise InputTypeError("SampleFromProbsFwdOp: argument 'probs': expected a Tensor, got " + type(probs).__name__)
        if not isinstance(q, Tensor):
            raise InputTypeError("SampleFromProbsFwdOp: argument 'q': expected a Tensor, got " + type(q).__name__)
        if not _is_compiling():
            _guard(probs, q)
    if _fast:
        _a = _body_0(self, probs, q)
    else:
        _a = _op_0(probs, q, self._key)
    return _a

def _allocate(self, probs, q):
    token = torch.empty(tuple((probs.shape[0],)), dtype=_DT_token, device=probs.device)
    return token

def _memo_sample_from_probs(probs, q, token):
    return (probs.dtype, q.dtype, probs.device, (probs.data_ptr() | q.data_ptr() | token.data_ptr()) & 15, tuple(probs.shape),)

def _full_sample_from_probs(probs, q, token):
    return ((probs.dtype, probs.device, tuple(probs.shape), probs.data_ptr() & 15), (q.dtype, q.device, tuple(q.shape), q.data_ptr() & 15), (token.dtype, token.device, tuple(token.shape), token.data_ptr() & 15),)

