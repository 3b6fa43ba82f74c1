def _check(self, logits):
    if not isinstance(logits, Tensor):
        raise InputTypeError("ArgmaxFwdOp: argument 'logits': expected a Tensor, got " + type(logits).__name__)
    if logits.dtype not in _ALLOWED_logits:
        raise InputTypeError(f"ArgmaxFwdOp: argument 'logits': expected dtype float32 | float16 | bfloat16, got {logits.dtype}")
    if not (logits.ndim == 2):
        raise InputValueError(f"ArgmaxFwdOp: shape rule `logits.ndim == 2` does not hold: logits.shape={tuple(logits.shape)}")
    if not (logits.shape[1] >= 1):
        raise InputValueError(f"ArgmaxFwdOp: shape rule `logits.shape[1] >= 1` does not hold: logits.shape={tuple(logits.shape)}")

def _guard(logits):
    _admit(logits, "ArgmaxFwdOp", "logits", False, False)

def _impl_0(logits, key):
    self = _ref_of(key, _NO_REF)()
    if type(self) is not _CLS:
        self = _recover(_CLS, key, self)
    _guard(logits)
    try:
        _s = (logits.shape, logits.dtype, logits.device,)
    except RuntimeError:
        _guard(logits)
        raise
    if _s not in self._checked:
        _check(self, logits)
        self._note_checked(_s)
    _resolved = self._target is None
    if _resolved:
        self._resolve_target(logits.device)
    try:
        _c_logits = logits if logits.is_contiguous() else logits.contiguous()
        _r = self._forward(_c_logits)
    except BaseException:
        if _resolved:
            self._unresolve_target()
        raise
    return _r

def _body_0(self, logits):
    try:
        _s = (logits.shape, logits.dtype, logits.device,)
    except RuntimeError:
        _guard(logits)
        raise
    if _s not in self._checked:
        _check(self, logits)
        self._note_checked(_s)
    _resolved = self._target is None
    if _resolved:
        self._resolve_target(logits.device)
    try:
        _c_logits = logits if logits.is_contiguous() else logits.contiguous()
        _r = self._forward(_c_logits)
    except BaseException:
        if _resolved:
            self._unresolve_target()
        raise
    return _r

def _fake_0(logits, key):
    self = _ref_of(key, _NO_REF)()
    if type(self) is not _CLS:
        self = _recover(_CLS, key, self)
    _check(self, logits)
    _f_token = torch.empty(tuple((logits.shape[0],)), dtype=_DT_token, device=logits.device)
    return _f_token

def _call_boundary(self, logits):
    if _is_compiling() or _dispatch_len() or _tf_mode() or _functorch_level() is not None or _jit_tracing() is not None:
        _fast = False
    else:
        _g = _grad_enabled()
        _fast = (type(logits) in _PLAIN and logits.layout is _strided and not logits.is_meta and not (_g and logits.requires_grad) and not logits.is_neg() and not logits._is_zerotensor())
    if not _fast:
        if not isinstance(logits, Tensor):
            raise InputTypeError("ArgmaxFwdOp: argument 'logits': expected a Tensor, got " + type(logits).__name__)
        if not _is_compiling():
            _guard(logits)
    if _fast:
        _a = _body_0(self, logits)
    else:
        _a = _op_0(logits, self._key)
    return _a

def _allocate(self, logits):
    token = torch.empty(tuple((logits.shape[0],)), dtype=_DT_token, device=logits.device)
    return token

def _memo_argmax(logits, token):
    return (logits.dtype, logits.device, (logits.data_ptr() | token.data_ptr()) & 15, tuple(logits.shape),)

def _full_argmax(logits, token):
    return ((logits.dtype, logits.device, tuple(logits.shape), logits.data_ptr() & 15), (token.dtype, token.device, tuple(token.shape), token.data_ptr() & 15),)

