def _check(self, acc, x):
    if not isinstance(acc, Tensor):
        raise InputTypeError("ToyAccumulateOp: argument 'acc': expected a Tensor, got " + type(acc).__name__)
    if acc.dtype not in _ALLOWED_acc:
        raise InputTypeError(f"ToyAccumulateOp: argument 'acc': expected dtype float32 | float16 | bfloat16, got {acc.dtype}")
    _dev = acc.device
    if not isinstance(x, Tensor):
        raise InputTypeError("ToyAccumulateOp: argument 'x': expected a Tensor, got " + type(x).__name__)
    if x.dtype != acc.dtype:
        raise InputTypeError(f"ToyAccumulateOp: argument 'x': expected dtype same as 'acc' ({acc.dtype}), got {x.dtype}")
    if x.device != _dev:
        raise InputValueError(f"ToyAccumulateOp: argument 'x': expected a tensor on {acc.device} (the device of 'acc'), got {x.device}")
    if not (tuple(acc.shape) == tuple(x.shape)):
        raise InputValueError(f"ToyAccumulateOp: shape rule `tuple(acc.shape) == tuple(x.shape)` does not hold: acc.shape={tuple(acc.shape)}, x.shape={tuple(x.shape)}")

def _guard(acc, x):
    _admit(acc, "ToyAccumulateOp", "acc", False, True)
    _admit(x, "ToyAccumulateOp", "x", False, False)

def _impl_0(acc, x, key):
    self = _ref_of(key, _NO_REF)()
    if type(self) is not _CLS:
        self = _recover(_CLS, key, self)
    _guard(acc, x)
    try:
        _s = (acc.shape, acc.dtype, acc.device, x.shape, x.dtype, x.device,)
    except RuntimeError:
        _guard(acc, x)
        raise
    if _s not in self._checked:
        _check(self, acc, x)
        self._note_checked(_s)
    _c_apart((acc, ), (x, )) and _apart("ToyAccumulateOp", (acc, ), (x, ), ('acc',), ('x',))
    _resolved = self._target is None
    if _resolved:
        self._resolve_target(acc.device)
    try:
        _c_acc = acc if acc.is_contiguous() else acc.contiguous()
        _c_x = x if x.is_contiguous() else x.contiguous()
        self._forward(_c_acc, _c_x)
        if _c_acc is not acc:
            acc.copy_(_c_acc)
    except BaseException:
        if _resolved:
            self._unresolve_target()
        raise
    return None

def _body_0(self, acc, x):
    try:
        _s = (acc.shape, acc.dtype, acc.device, x.shape, x.dtype, x.device,)
    except RuntimeError:
        _guard(acc, x)
        raise
    if _s not in self._checked:
        _check(self, acc, x)
        self._note_checked(_s)
    _c_apart((acc, ), (x, )) and _apart("ToyAccumulateOp", (acc, ), (x, ), ('acc',), ('x',))
    _resolved = self._target is None
    if _resolved:
        self._resolve_target(acc.device)
    try:
        _c_acc = acc if acc.is_contiguous() else acc.contiguous()
        _c_x = x if x.is_contiguous() else x.contiguous()
        self._forward(_c_acc, _c_x)
        if _c_acc is not acc:
            acc.copy_(_c_acc)
    except BaseException:
        if _resolved:
            self._unresolve_target()
        raise
    return None

def _fake_0(acc, x, key):
    self = _ref_of(key, _NO_REF)()
    if type(self) is not _CLS:
        self = _recover(_CLS, key, self)
    _check(self, acc, x)
    return None

def _call_boundary(self, acc, x):
    if _is_compiling() or _dispatch_len() or _tf_mode() or _functorch_level() is not None or _jit_tracing() is not None:
        _fast = False
    else:
        _g = _grad_enabled()
        _fast = (type(acc) in _PLAIN and acc.layout is _strided and not acc.is_meta and not (_g and acc.requires_grad) and not acc.is_neg() and not acc._is_zerotensor()) and (type(x) in _PLAIN and x.layout is _strided and not x.is_meta and not (_g and x.requires_grad) and not x.is_neg() and not x._is_zerotensor())
    if not _fast:
        if not isinstance(acc, Tensor):
            raise InputTypeError("ToyAccumulateOp: argument 'acc': expected a Tensor, got " + type(acc).__name__)
        if not isinstance(x, Tensor):
            raise InputTypeError("ToyAccumulateOp: argument 'x': expected a Tensor, got " + type(x).__name__)
        if not _is_compiling():
            _guard(acc, x)
    if _fast:
        with _below_inplace_view():
            _body_0(self, acc, x)
        _bump(acc)
    else:
        _op_0(acc, x, self._key)
    return acc

def _allocate(self, acc, x):
    total = acc
    return total

def _memo_accumulate(acc, x, total):
    return (acc.dtype, acc.device, (acc.data_ptr() | x.data_ptr() | total.data_ptr()) & 15, total is acc,)

def _full_accumulate(acc, x, total):
    return ((acc.dtype, acc.device, tuple(acc.shape), acc.data_ptr() & 15), (x.dtype, x.device, tuple(x.shape), x.data_ptr() & 15), (total.dtype, total.device, tuple(total.shape), total.data_ptr() & 15), total is acc,)

