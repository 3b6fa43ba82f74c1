def _check(self, logits):
    k = self.k
    if not isinstance(logits, Tensor):
        raise InputTypeError("TopKFwdOp: argument 'logits': expected a Tensor, got " + type(logits).__name__)
    if logits.dtype not in _ALLOWED_logits:
        raise InputTypeError(f"TopKFwdOp: argument 'logits': expected dtype float32 | float16 | bfloat16, got {logits.dtype}")
    if not (logits.ndim == 2):
        raise InputValueError(f"TopKFwdOp: shape rule `logits.ndim == 2` does not hold: logits.shape={tuple(logits.shape)}")
    if not (1 <= logits.shape[1]):
        raise InputValueError(f"TopKFwdOp: shape rule `1 <= logits.shape[1]` does not hold: logits.shape={tuple(logits.shape)}")
    if not (k <= logits.shape[1]):
        raise InputValueError(f"TopKFwdOp: shape rule `k <= logits.shape[1]` does not hold: k={k!r}, logits.shape={tuple(logits.shape)}")

def _guard(logits, return_values):
    _admit(logits, "TopKFwdOp", "logits", False, False)

def _impl_0(logits, key):
    self = _ref_of(key, _NO_REF)()
    if type(self) is not _CLS:
        self = _recover(_CLS, key, self)
    _guard(logits, False)
    try:
        _s = (logits.shape, logits.dtype, logits.device,)
    except RuntimeError:
        _guard(logits, False)
        raise
    if _s not in self._checked:
        _check(self, logits)
        self._note_checked(_s)
    _resolved = self._target is None
    if _resolved:
        self._resolve_target(logits.device)
    try:
        _c_logits = logits if logits.is_contiguous() else logits.contiguous()
        _r = self._forward(_c_logits, return_values=False)
        if not isinstance(_r, tuple) or len(_r) != 2:
            raise TileOpsError("TopKFwdOp.forward must return a tuple of 2 outputs (None for an omitted one)")
    except BaseException:
        if _resolved:
            self._unresolve_target()
        raise
    return _r[1]

def _body_0(self, logits):
    try:
        _s = (logits.shape, logits.dtype, logits.device,)
    except RuntimeError:
        _guard(logits, False)
        raise
    if _s not in self._checked:
        _check(self, logits)
        self._note_checked(_s)
    _resolved = self._target is None
    if _resolved:
        self._resolve_target(logits.device)
    try:
        _c_logits = logits if logits.is_contiguous() else logits.contiguous()
        _r = self._forward(_c_logits, return_values=False)
        if not isinstance(_r, tuple) or len(_r) != 2:
            raise TileOpsError("TopKFwdOp.forward must return a tuple of 2 outputs (None for an omitted one)")
    except BaseException:
        if _resolved:
            self._unresolve_target()
        raise
    return _r[1]

def _fake_0(logits, key):
    self = _ref_of(key, _NO_REF)()
    if type(self) is not _CLS:
        self = _recover(_CLS, key, self)
    _check(self, logits)
    k = self.k
    _f_indices = torch.empty(tuple((logits.shape[0], k)), dtype=_DT_indices, device=logits.device)
    return _f_indices

def _impl_1(logits, key):
    self = _ref_of(key, _NO_REF)()
    if type(self) is not _CLS:
        self = _recover(_CLS, key, self)
    _guard(logits, True)
    try:
        _s = (logits.shape, logits.dtype, logits.device,)
    except RuntimeError:
        _guard(logits, True)
        raise
    if _s not in self._checked:
        _check(self, logits)
        self._note_checked(_s)
    _resolved = self._target is None
    if _resolved:
        self._resolve_target(logits.device)
    try:
        _c_logits = logits if logits.is_contiguous() else logits.contiguous()
        _r = self._forward(_c_logits, return_values=True)
        if not isinstance(_r, tuple) or len(_r) != 2:
            raise TileOpsError("TopKFwdOp.forward must return a tuple of 2 outputs (None for an omitted one)")
    except BaseException:
        if _resolved:
            self._unresolve_target()
        raise
    return (_r[0], _r[1],)

def _body_1(self, logits):
    try:
        _s = (logits.shape, logits.dtype, logits.device,)
    except RuntimeError:
        _guard(logits, True)
        raise
    if _s not in self._checked:
        _check(self, logits)
        self._note_checked(_s)
    _resolved = self._target is None
    if _resolved:
        self._resolve_target(logits.device)
    try:
        _c_logits = logits if logits.is_contiguous() else logits.contiguous()
        _r = self._forward(_c_logits, return_values=True)
        if not isinstance(_r, tuple) or len(_r) != 2:
            raise TileOpsError("TopKFwdOp.forward must return a tuple of 2 outputs (None for an omitted one)")
    except BaseException:
        if _resolved:
            self._unresolve_target()
        raise
    return (_r[0], _r[1],)

def _fake_1(logits, key):
    self = _ref_of(key, _NO_REF)()
    if type(self) is not _CLS:
        self = _recover(_CLS, key, self)
    _check(self, logits)
    k = self.k
    _f_values = torch.empty(tuple((logits.shape[0], k)), dtype=logits.dtype, device=logits.device)
    _f_indices = torch.empty(tuple((logits.shape[0], k)), dtype=_DT_indices, device=logits.device)
    return (_f_values, _f_indices,)

def _call_boundary(self, logits, *, return_values=True):
    if return_values is not True and return_values is not False:
        raise InputTypeError(f"TopKFwdOp: argument 'return_values': expected True or False, got {return_values!r}")
    if _is_compiling() or _dispatch_len() or _tf_mode() or _functorch_level() is not None or _jit_tracing() is not None:
        _fast = False
    else:
        _g = _grad_enabled()
        _fast = (type(logits) in _PLAIN and logits.layout is _strided and not logits.is_meta and not (_g and logits.requires_grad) and not logits.is_neg() and not logits._is_zerotensor())
    if not _fast:
        if not isinstance(logits, Tensor):
            raise InputTypeError("TopKFwdOp: argument 'logits': expected a Tensor, got " + type(logits).__name__)
        if not _is_compiling():
            _guard(logits, return_values)
    if not return_values:
        if _fast:
            _a = _body_0(self, logits)
        else:
            _a = _op_0(logits, self._key)
        return _a
    else:
        if _fast:
            _a = _body_1(self, logits)
        else:
            _a = _op_1(logits, self._key)
        return _a

def _allocate(self, logits, *, return_values=True):
    k = self.k
    values = None if not return_values else torch.empty(tuple((logits.shape[0], k)), dtype=logits.dtype, device=logits.device)
    indices = torch.empty(tuple((logits.shape[0], k)), dtype=_DT_indices, device=logits.device)
    return (values, indices,)

def _memo_top_k(logits, values, indices):
    return (logits.dtype, values is None, logits.device, (logits.data_ptr() | (0 if values is None else values.data_ptr()) | indices.data_ptr()) & 15, tuple(logits.shape),)

def _full_top_k(logits, values, indices):
    return ((logits.dtype, logits.device, tuple(logits.shape), logits.data_ptr() & 15), None if values is None else (values.dtype, values.device, tuple(values.shape), values.data_ptr() & 15), (indices.dtype, indices.device, tuple(indices.shape), indices.data_ptr() & 15),)

