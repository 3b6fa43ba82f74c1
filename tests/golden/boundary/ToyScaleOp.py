def _check(self, x, alpha):
    if not isinstance(x, Tensor):
        raise InputTypeError("ToyScaleOp: argument 'x': expected a Tensor, got " + type(x).__name__)
    if x.dtype not in _ALLOWED_x:
        raise InputTypeError(f"ToyScaleOp: argument 'x': expected dtype float32 | float16 | bfloat16, got {x.dtype}")

def _guard(x, inplace):
    _admit(x, "ToyScaleOp", "x", False, inplace)

def _impl_0(x, alpha, key):
    self = _ref_of(key, _NO_REF)()
    if type(self) is not _CLS:
        self = _recover(_CLS, key, self)
    _guard(x, False)
    try:
        _s = (x.shape, x.dtype, x.device,)
    except RuntimeError:
        _guard(x, False)
        raise
    if _s not in self._checked:
        _check(self, x, alpha)
        self._note_checked(_s)
    _resolved = self._target is None
    if _resolved:
        self._resolve_target(x.device)
    try:
        _c_x = x if x.is_contiguous() else x.contiguous()
        _r = self._forward(_c_x, alpha=alpha, inplace=False)
    except BaseException:
        if _resolved:
            self._unresolve_target()
        raise
    return _r

def _body_0(self, x, alpha):
    try:
        _s = (x.shape, x.dtype, x.device,)
    except RuntimeError:
        _guard(x, False)
        raise
    if _s not in self._checked:
        _check(self, x, alpha)
        self._note_checked(_s)
    _resolved = self._target is None
    if _resolved:
        self._resolve_target(x.device)
    try:
        _c_x = x if x.is_contiguous() else x.contiguous()
        _r = self._forward(_c_x, alpha=alpha, inplace=False)
    except BaseException:
        if _resolved:
            self._unresolve_target()
        raise
    return _r

def _fake_0(x, alpha, key):
    self = _ref_of(key, _NO_REF)()
    if type(self) is not _CLS:
        self = _recover(_CLS, key, self)
    _check(self, x, alpha)
    _f_y = torch.empty(tuple(x.shape), dtype=x.dtype, device=x.device)
    return _f_y

def _impl_1(x, alpha, key):
    self = _ref_of(key, _NO_REF)()
    if type(self) is not _CLS:
        self = _recover(_CLS, key, self)
    _guard(x, True)
    try:
        _s = (x.shape, x.dtype, x.device,)
    except RuntimeError:
        _guard(x, True)
        raise
    if _s not in self._checked:
        _check(self, x, alpha)
        self._note_checked(_s)
    _c_apart((x, ), ()) and _apart("ToyScaleOp", (x, ), (), ('x',), ())
    _resolved = self._target is None
    if _resolved:
        self._resolve_target(x.device)
    try:
        _c_x = x if x.is_contiguous() else x.contiguous()
        self._forward(_c_x, alpha=alpha, inplace=True)
        if _c_x is not x:
            x.copy_(_c_x)
    except BaseException:
        if _resolved:
            self._unresolve_target()
        raise
    return None

def _body_1(self, x, alpha):
    try:
        _s = (x.shape, x.dtype, x.device,)
    except RuntimeError:
        _guard(x, True)
        raise
    if _s not in self._checked:
        _check(self, x, alpha)
        self._note_checked(_s)
    _c_apart((x, ), ()) and _apart("ToyScaleOp", (x, ), (), ('x',), ())
    _resolved = self._target is None
    if _resolved:
        self._resolve_target(x.device)
    try:
        _c_x = x if x.is_contiguous() else x.contiguous()
        self._forward(_c_x, alpha=alpha, inplace=True)
        if _c_x is not x:
            x.copy_(_c_x)
    except BaseException:
        if _resolved:
            self._unresolve_target()
        raise
    return None

def _fake_1(x, alpha, key):
    self = _ref_of(key, _NO_REF)()
    if type(self) is not _CLS:
        self = _recover(_CLS, key, self)
    _check(self, x, alpha)
    return None

def _call_boundary(self, x, alpha=1.0, *, inplace=False):
    if type(alpha) is not float:
        alpha = _as_scalar(alpha, float, "ToyScaleOp", "alpha")
    if inplace is not True and inplace is not False:
        raise InputTypeError(f"ToyScaleOp: argument 'inplace': expected True or False, got {inplace!r}")
    if _is_compiling() or _dispatch_len() or _tf_mode() or _functorch_level() is not None or _jit_tracing() is not None:
        _fast = False
    else:
        _g = _grad_enabled()
        _fast = (type(x) in _PLAIN and x.layout is _strided and not x.is_meta and not (_g and x.requires_grad) and not x.is_neg() and not x._is_zerotensor())
    if not _fast:
        if not isinstance(x, Tensor):
            raise InputTypeError("ToyScaleOp: argument 'x': expected a Tensor, got " + type(x).__name__)
        if not _is_compiling():
            _guard(x, inplace)
    if not inplace:
        if _fast:
            _a = _body_0(self, x, alpha)
        else:
            _a = _op_0(x, alpha, self._key)
        return _a
    else:
        if _fast:
            with _below_inplace_view():
                _body_1(self, x, alpha)
            _bump(x)
        else:
            _op_1(x, alpha, self._key)
        return x

def _allocate(self, x, *, inplace=False):
    y = x if inplace else torch.empty_like(x, memory_format=_CONTIGUOUS)
    return y

def _memo_scale(x, y):
    return (x.dtype, x.device, (x.data_ptr() | y.data_ptr()) & 15, y is x,)

def _full_scale(x, y):
    return ((x.dtype, x.device, tuple(x.shape), x.data_ptr() & 15), (y.dtype, y.device, tuple(y.shape), y.data_ptr() & 15), y is x,)

