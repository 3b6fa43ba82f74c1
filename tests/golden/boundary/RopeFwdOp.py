def _check(self, q, k, positions, cos_sin_cache):
    head_size = self.head_size
    rotary_dim = self.rotary_dim
    if not isinstance(q, Tensor):
        raise InputTypeError("RopeFwdOp: argument 'q': expected a Tensor, got " + type(q).__name__)
    if q.dtype not in _ALLOWED_q:
        raise InputTypeError(f"RopeFwdOp: argument 'q': expected dtype float32 | float16 | bfloat16, got {q.dtype}")
    _dev = q.device
    if not isinstance(k, Tensor):
        raise InputTypeError("RopeFwdOp: argument 'k': expected a Tensor, got " + type(k).__name__)
    if k.dtype != q.dtype:
        raise InputTypeError(f"RopeFwdOp: argument 'k': expected dtype same as 'q' ({q.dtype}), got {k.dtype}")
    if k.device != _dev:
        raise InputValueError(f"RopeFwdOp: argument 'k': expected a tensor on {q.device} (the device of 'q'), got {k.device}")
    if not isinstance(positions, Tensor):
        raise InputTypeError("RopeFwdOp: argument 'positions': expected a Tensor, got " + type(positions).__name__)
    if positions.dtype not in _ALLOWED_positions:
        raise InputTypeError(f"RopeFwdOp: argument 'positions': expected dtype int32 | int64, got {positions.dtype}")
    if positions.device != _dev:
        raise InputValueError(f"RopeFwdOp: argument 'positions': expected a tensor on {q.device} (the device of 'q'), got {positions.device}")
    if not isinstance(cos_sin_cache, Tensor):
        raise InputTypeError("RopeFwdOp: argument 'cos_sin_cache': expected a Tensor, got " + type(cos_sin_cache).__name__)
    if cos_sin_cache.dtype not in _ALLOWED_cos_sin_cache:
        raise InputTypeError(f"RopeFwdOp: argument 'cos_sin_cache': expected dtype float32, got {cos_sin_cache.dtype}")
    if cos_sin_cache.device != _dev:
        raise InputValueError(f"RopeFwdOp: argument 'cos_sin_cache': expected a tensor on {q.device} (the device of 'q'), got {cos_sin_cache.device}")
    if not (q.ndim == 3):
        raise InputValueError(f"RopeFwdOp: shape rule `q.ndim == 3` does not hold: q.shape={tuple(q.shape)}")
    if not (q.shape[2] == head_size):
        raise InputValueError(f"RopeFwdOp: shape rule `q.shape[2] == head_size` does not hold: head_size={head_size!r}, q.shape={tuple(q.shape)}")
    if not (k.ndim == 3):
        raise InputValueError(f"RopeFwdOp: shape rule `k.ndim == 3` does not hold: k.shape={tuple(k.shape)}")
    if not (k.shape[0] == q.shape[0]):
        raise InputValueError(f"RopeFwdOp: shape rule `k.shape[0] == q.shape[0]` does not hold: k.shape={tuple(k.shape)}, q.shape={tuple(q.shape)}")
    if not (k.shape[2] == head_size):
        raise InputValueError(f"RopeFwdOp: shape rule `k.shape[2] == head_size` does not hold: head_size={head_size!r}, k.shape={tuple(k.shape)}")
    if not (positions.ndim == 1):
        raise InputValueError(f"RopeFwdOp: shape rule `positions.ndim == 1` does not hold: positions.shape={tuple(positions.shape)}")
    if not (positions.shape[0] == q.shape[0]):
        raise InputValueError(f"RopeFwdOp: shape rule `positions.shape[0] == q.shape[0]` does not hold: positions.shape={tuple(positions.shape)}, q.shape={tuple(q.shape)}")
    if not (cos_sin_cache.ndim == 2):
        raise InputValueError(f"RopeFwdOp: shape rule `cos_sin_cache.ndim == 2` does not hold: cos_sin_cache.shape={tuple(cos_sin_cache.shape)}")
    if not (cos_sin_cache.shape[1] == rotary_dim):
        raise InputValueError(f"RopeFwdOp: shape rule `cos_sin_cache.shape[1] == rotary_dim` does not hold: cos_sin_cache.shape={tuple(cos_sin_cache.shape)}, rotary_dim={rotary_dim!r}")
    if not (rotary_dim % 2 == 0 and 2 <= rotary_dim <= head_size):
        raise InputValueError(f"RopeFwdOp: shape rule `rotary_dim % 2 == 0 and 2 <= rotary_dim <= head_size` does not hold: head_size={head_size!r}, rotary_dim={rotary_dim!r}")

def _guard(q, k, positions, cos_sin_cache, inplace):
    _admit(q, "RopeFwdOp", "q", False, inplace)
    _admit(k, "RopeFwdOp", "k", False, inplace)
    _admit(positions, "RopeFwdOp", "positions", False, False)
    _admit(cos_sin_cache, "RopeFwdOp", "cos_sin_cache", False, False)

def _impl_0(q, k, positions, cos_sin_cache, key):
    self = _ref_of(key, _NO_REF)()
    if type(self) is not _CLS:
        self = _recover(_CLS, key, self)
    _guard(q, k, positions, cos_sin_cache, False)
    try:
        _s = (q.shape, q.dtype, q.device, k.shape, k.dtype, k.device, positions.shape, positions.dtype, positions.device, cos_sin_cache.shape, cos_sin_cache.dtype, cos_sin_cache.device,)
    except RuntimeError:
        _guard(q, k, positions, cos_sin_cache, False)
        raise
    if _s not in self._checked:
        _check(self, q, k, positions, cos_sin_cache)
        self._note_checked(_s)
    _resolved = self._target is None
    if _resolved:
        self._resolve_target(q.device)
    try:
        _c_q = q if q.stride(-1) == 1 else q.contiguous()
        _c_k = k if k.stride(-1) == 1 else k.contiguous()
        _c_positions = positions if positions.is_contiguous() else positions.contiguous()
        _c_cos_sin_cache = cos_sin_cache if cos_sin_cache.is_contiguous() else cos_sin_cache.contiguous()
        _r = self._forward(_c_q, _c_k, _c_positions, _c_cos_sin_cache, inplace=False)
        if not isinstance(_r, tuple) or len(_r) != 2:
            raise TileOpsError("RopeFwdOp.forward must return a tuple of 2 outputs (None for an omitted one)")
    except BaseException:
        if _resolved:
            self._unresolve_target()
        raise
    return (_r[0], _r[1],)

def _body_0(self, q, k, positions, cos_sin_cache):
    try:
        _s = (q.shape, q.dtype, q.device, k.shape, k.dtype, k.device, positions.shape, positions.dtype, positions.device, cos_sin_cache.shape, cos_sin_cache.dtype, cos_sin_cache.device,)
    except RuntimeError:
        _guard(q, k, positions, cos_sin_cache, False)
        raise
    if _s not in self._checked:
        _check(self, q, k, positions, cos_sin_cache)
        self._note_checked(_s)
    _resolved = self._target is None
    if _resolved:
        self._resolve_target(q.device)
    try:
        _c_q = q if q.stride(-1) == 1 else q.contiguous()
        _c_k = k if k.stride(-1) == 1 else k.contiguous()
        _c_positions = positions if positions.is_contiguous() else positions.contiguous()
        _c_cos_sin_cache = cos_sin_cache if cos_sin_cache.is_contiguous() else cos_sin_cache.contiguous()
        _r = self._forward(_c_q, _c_k, _c_positions, _c_cos_sin_cache, inplace=False)
        if not isinstance(_r, tuple) or len(_r) != 2:
            raise TileOpsError("RopeFwdOp.forward must return a tuple of 2 outputs (None for an omitted one)")
    except BaseException:
        if _resolved:
            self._unresolve_target()
        raise
    return (_r[0], _r[1],)

def _fake_0(q, k, positions, cos_sin_cache, key):
    self = _ref_of(key, _NO_REF)()
    if type(self) is not _CLS:
        self = _recover(_CLS, key, self)
    _check(self, q, k, positions, cos_sin_cache)
    _f_q_out = torch.empty(tuple(q.shape), dtype=q.dtype, device=q.device)
    _f_k_out = torch.empty(tuple(k.shape), dtype=q.dtype, device=q.device)
    return (_f_q_out, _f_k_out,)

def _impl_1(q, k, positions, cos_sin_cache, key):
    self = _ref_of(key, _NO_REF)()
    if type(self) is not _CLS:
        self = _recover(_CLS, key, self)
    _guard(q, k, positions, cos_sin_cache, True)
    try:
        _s = (q.shape, q.dtype, q.device, k.shape, k.dtype, k.device, positions.shape, positions.dtype, positions.device, cos_sin_cache.shape, cos_sin_cache.dtype, cos_sin_cache.device,)
    except RuntimeError:
        _guard(q, k, positions, cos_sin_cache, True)
        raise
    if _s not in self._checked:
        _check(self, q, k, positions, cos_sin_cache)
        self._note_checked(_s)
    _c_apart((q, k, ), (positions, cos_sin_cache, )) and _apart("RopeFwdOp", (q, k, ), (positions, cos_sin_cache, ), ('q', 'k'), ('positions', 'cos_sin_cache'))
    _resolved = self._target is None
    if _resolved:
        self._resolve_target(q.device)
    try:
        _c_q = q if q.stride(-1) == 1 else q.contiguous()
        _c_k = k if k.stride(-1) == 1 else k.contiguous()
        _c_positions = positions if positions.is_contiguous() else positions.contiguous()
        _c_cos_sin_cache = cos_sin_cache if cos_sin_cache.is_contiguous() else cos_sin_cache.contiguous()
        self._forward(_c_q, _c_k, _c_positions, _c_cos_sin_cache, inplace=True)
        if _c_q is not q:
            q.copy_(_c_q)
        if _c_k is not k:
            k.copy_(_c_k)
    except BaseException:
        if _resolved:
            self._unresolve_target()
        raise
    return None

def _body_1(self, q, k, positions, cos_sin_cache):
    try:
        _s = (q.shape, q.dtype, q.device, k.shape, k.dtype, k.device, positions.shape, positions.dtype, positions.device, cos_sin_cache.shape, cos_sin_cache.dtype, cos_sin_cache.device,)
    except RuntimeError:
        _guard(q, k, positions, cos_sin_cache, True)
        raise
    if _s not in self._checked:
        _check(self, q, k, positions, cos_sin_cache)
        self._note_checked(_s)
    _c_apart((q, k, ), (positions, cos_sin_cache, )) and _apart("RopeFwdOp", (q, k, ), (positions, cos_sin_cache, ), ('q', 'k'), ('positions', 'cos_sin_cache'))
    _resolved = self._target is None
    if _resolved:
        self._resolve_target(q.device)
    try:
        _c_q = q if q.stride(-1) == 1 else q.contiguous()
        _c_k = k if k.stride(-1) == 1 else k.contiguous()
        _c_positions = positions if positions.is_contiguous() else positions.contiguous()
        _c_cos_sin_cache = cos_sin_cache if cos_sin_cache.is_contiguous() else cos_sin_cache.contiguous()
        self._forward(_c_q, _c_k, _c_positions, _c_cos_sin_cache, inplace=True)
        if _c_q is not q:
            q.copy_(_c_q)
        if _c_k is not k:
            k.copy_(_c_k)
    except BaseException:
        if _resolved:
            self._unresolve_target()
        raise
    return None

def _fake_1(q, k, positions, cos_sin_cache, key):
    self = _ref_of(key, _NO_REF)()
    if type(self) is not _CLS:
        self = _recover(_CLS, key, self)
    _check(self, q, k, positions, cos_sin_cache)
    return None

def _call_boundary(self, q, k, positions, cos_sin_cache, *, inplace=False):
    if inplace is not True and inplace is not False:
        raise InputTypeError(f"RopeFwdOp: argument 'inplace': expected True or False, got {inplace!r}")
    if _is_compiling() or _dispatch_len() or _tf_mode() or _functorch_level() is not None or _jit_tracing() is not None:
        _fast = False
    else:
        _g = _grad_enabled()
        _fast = (type(q) in _PLAIN and q.layout is _strided and not q.is_meta and not (_g and q.requires_grad) and not q.is_neg() and not q._is_zerotensor()) and (type(k) in _PLAIN and k.layout is _strided and not k.is_meta and not (_g and k.requires_grad) and not k.is_neg() and not k._is_zerotensor()) and (type(positions) in _PLAIN and positions.layout is _strided and not positions.is_meta and not (_g and positions.requires_grad) and not positions.is_neg() and not positions._is_zerotensor()) and (type(cos_sin_cache) in _PLAIN and cos_sin_cache.layout is _strided and not cos_sin_cache.is_meta and not (_g and cos_sin_cache.requires_grad) and not cos_sin_cache.is_neg() and not cos_sin_cache._is_zerotensor())
    if not _fast:
        if not isinstance(q, Tensor):
            raise InputTypeError("RopeFwdOp: argument 'q': expected a Tensor, got " + type(q).__name__)
        if not isinstance(k, Tensor):
            raise InputTypeError("RopeFwdOp: argument 'k': expected a Tensor, got " + type(k).__name__)
        if not isinstance(positions, Tensor):
            raise InputTypeError("RopeFwdOp: argument 'positions': expected a Tensor, got " + type(positions).__name__)
        if not isinstance(cos_sin_cache, Tensor):
            raise InputTypeError("RopeFwdOp: argument 'cos_sin_cache': expected a Tensor, got " + type(cos_sin_cache).__name__)
        if not _is_compiling():
            _guard(q, k, positions, cos_sin_cache, inplace)
    if not inplace:
        if _fast:
            _a = _body_0(self, q, k, positions, cos_sin_cache)
        else:
            _a = _op_0(q, k, positions, cos_sin_cache, self._key)
        return _a
    else:
        if _fast:
            with _below_inplace_view():
                _body_1(self, q, k, positions, cos_sin_cache)
            _bump(q)
            _bump(k)
        else:
            _op_1(q, k, positions, cos_sin_cache, self._key)
        return (q, k,)

def _allocate(self, q, k, positions, cos_sin_cache, *, inplace=False):
    q_out = q if inplace else torch.empty_like(q, memory_format=_CONTIGUOUS)
    k_out = k if inplace else torch.empty_like(k, dtype=q.dtype, memory_format=_CONTIGUOUS)
    return (q_out, k_out,)

def _memo_rope(q, k, positions, cos_sin_cache, q_out, k_out):
    return (q.dtype, positions.dtype, cos_sin_cache.dtype, q.device, (q.data_ptr() | k.data_ptr() | positions.data_ptr() | cos_sin_cache.data_ptr() | q_out.data_ptr() | k_out.data_ptr()) & 15, q_out is q, k_out is k,)

def _full_rope(q, k, positions, cos_sin_cache, q_out, k_out):
    return ((q.dtype, q.device, tuple(q.shape), q.data_ptr() & 15), (k.dtype, k.device, tuple(k.shape), k.data_ptr() & 15), (positions.dtype, positions.device, tuple(positions.shape), positions.data_ptr() & 15), (cos_sin_cache.dtype, cos_sin_cache.device, tuple(cos_sin_cache.shape), cos_sin_cache.data_ptr() & 15), (q_out.dtype, q_out.device, tuple(q_out.shape), q_out.data_ptr() & 15), (k_out.dtype, k_out.device, tuple(k_out.shape), k_out.data_ptr() & 15), q_out is q, k_out is k,)

