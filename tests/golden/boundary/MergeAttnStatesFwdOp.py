def _check(self, o_a, lse_a, o_b, lse_b, out):
    if not isinstance(o_a, Tensor):
        raise InputTypeError("MergeAttnStatesFwdOp: argument 'o_a': expected a Tensor, got " + type(o_a).__name__)
    if o_a.dtype not in _ALLOWED_o_a:
        raise InputTypeError(f"MergeAttnStatesFwdOp: argument 'o_a': expected dtype float32 | float16 | bfloat16, got {o_a.dtype}")
    _dev = o_a.device
    if not isinstance(lse_a, Tensor):
        raise InputTypeError("MergeAttnStatesFwdOp: argument 'lse_a': expected a Tensor, got " + type(lse_a).__name__)
    if lse_a.dtype not in _ALLOWED_lse_a:
        raise InputTypeError(f"MergeAttnStatesFwdOp: argument 'lse_a': expected dtype float32, got {lse_a.dtype}")
    if lse_a.device != _dev:
        raise InputValueError(f"MergeAttnStatesFwdOp: argument 'lse_a': expected a tensor on {o_a.device} (the device of 'o_a'), got {lse_a.device}")
    if not isinstance(o_b, Tensor):
        raise InputTypeError("MergeAttnStatesFwdOp: argument 'o_b': expected a Tensor, got " + type(o_b).__name__)
    if o_b.dtype != o_a.dtype:
        raise InputTypeError(f"MergeAttnStatesFwdOp: argument 'o_b': expected dtype same as 'o_a' ({o_a.dtype}), got {o_b.dtype}")
    if o_b.device != _dev:
        raise InputValueError(f"MergeAttnStatesFwdOp: argument 'o_b': expected a tensor on {o_a.device} (the device of 'o_a'), got {o_b.device}")
    if not isinstance(lse_b, Tensor):
        raise InputTypeError("MergeAttnStatesFwdOp: argument 'lse_b': expected a Tensor, got " + type(lse_b).__name__)
    if lse_b.dtype not in _ALLOWED_lse_b:
        raise InputTypeError(f"MergeAttnStatesFwdOp: argument 'lse_b': expected dtype float32, got {lse_b.dtype}")
    if lse_b.device != _dev:
        raise InputValueError(f"MergeAttnStatesFwdOp: argument 'lse_b': expected a tensor on {o_a.device} (the device of 'o_a'), got {lse_b.device}")
    if not (o_a.ndim == 3):
        raise InputValueError(f"MergeAttnStatesFwdOp: shape rule `o_a.ndim == 3` does not hold: o_a.shape={tuple(o_a.shape)}")
    if not (lse_a.ndim == 2):
        raise InputValueError(f"MergeAttnStatesFwdOp: shape rule `lse_a.ndim == 2` does not hold: lse_a.shape={tuple(lse_a.shape)}")
    if not (lse_a.shape[0] == o_a.shape[0]):
        raise InputValueError(f"MergeAttnStatesFwdOp: shape rule `lse_a.shape[0] == o_a.shape[0]` does not hold: lse_a.shape={tuple(lse_a.shape)}, o_a.shape={tuple(o_a.shape)}")
    if not (lse_a.shape[1] == o_a.shape[1]):
        raise InputValueError(f"MergeAttnStatesFwdOp: shape rule `lse_a.shape[1] == o_a.shape[1]` does not hold: lse_a.shape={tuple(lse_a.shape)}, o_a.shape={tuple(o_a.shape)}")
    if not (o_b.ndim == 3):
        raise InputValueError(f"MergeAttnStatesFwdOp: shape rule `o_b.ndim == 3` does not hold: o_b.shape={tuple(o_b.shape)}")
    if not (o_b.shape[0] == o_a.shape[0]):
        raise InputValueError(f"MergeAttnStatesFwdOp: shape rule `o_b.shape[0] == o_a.shape[0]` does not hold: o_a.shape={tuple(o_a.shape)}, o_b.shape={tuple(o_b.shape)}")
    if not (o_b.shape[1] == o_a.shape[1]):
        raise InputValueError(f"MergeAttnStatesFwdOp: shape rule `o_b.shape[1] == o_a.shape[1]` does not hold: o_a.shape={tuple(o_a.shape)}, o_b.shape={tuple(o_b.shape)}")
    if not (o_b.shape[2] == o_a.shape[2]):
        raise InputValueError(f"MergeAttnStatesFwdOp: shape rule `o_b.shape[2] == o_a.shape[2]` does not hold: o_a.shape={tuple(o_a.shape)}, o_b.shape={tuple(o_b.shape)}")
    if not (lse_b.ndim == 2):
        raise InputValueError(f"MergeAttnStatesFwdOp: shape rule `lse_b.ndim == 2` does not hold: lse_b.shape={tuple(lse_b.shape)}")
    if not (lse_b.shape[0] == o_a.shape[0]):
        raise InputValueError(f"MergeAttnStatesFwdOp: shape rule `lse_b.shape[0] == o_a.shape[0]` does not hold: lse_b.shape={tuple(lse_b.shape)}, o_a.shape={tuple(o_a.shape)}")
    if not (lse_b.shape[1] == o_a.shape[1]):
        raise InputValueError(f"MergeAttnStatesFwdOp: shape rule `lse_b.shape[1] == o_a.shape[1]` does not hold: lse_b.shape={tuple(lse_b.shape)}, o_a.shape={tuple(o_a.shape)}")
    if out is not None:
        if not isinstance(out, Tensor):
            raise InputTypeError("MergeAttnStatesFwdOp: argument 'out': expected a Tensor, got " + type(out).__name__)
        _s = tuple(o_a.shape)
        if tuple(out.shape) != _s:
            raise InputValueError(f"MergeAttnStatesFwdOp: argument 'out': expected shape {_s} (output 'o'), got {tuple(out.shape)}")
        if out.dtype != o_a.dtype:
            raise InputTypeError(f"MergeAttnStatesFwdOp: argument 'out': expected dtype {o_a.dtype}, got {out.dtype}")
        if out.device != _dev:
            raise InputValueError(f"MergeAttnStatesFwdOp: argument 'out': expected a tensor on {o_a.device}, got {out.device}")

def _guard(o_a, lse_a, o_b, lse_b, out):
    _admit(o_a, "MergeAttnStatesFwdOp", "o_a", False, False)
    _admit(lse_a, "MergeAttnStatesFwdOp", "lse_a", False, False)
    _admit(o_b, "MergeAttnStatesFwdOp", "o_b", False, False)
    _admit(lse_b, "MergeAttnStatesFwdOp", "lse_b", False, False)
    if out is not None:
        _admit(out, "MergeAttnStatesFwdOp", "out", True, True)

def _impl_0(o_a, lse_a, o_b, lse_b, key):
    self = _ref_of(key, _NO_REF)()
    if type(self) is not _CLS:
        self = _recover(_CLS, key, self)
    _guard(o_a, lse_a, o_b, lse_b, None)
    try:
        _s = (o_a.shape, o_a.dtype, o_a.device, lse_a.shape, lse_a.dtype, lse_a.device, o_b.shape, o_b.dtype, o_b.device, lse_b.shape, lse_b.dtype, lse_b.device, None,)
    except RuntimeError:
        _guard(o_a, lse_a, o_b, lse_b, None)
        raise
    if _s not in self._checked:
        _check(self, o_a, lse_a, o_b, lse_b, None)
        self._note_checked(_s)
    _resolved = self._target is None
    if _resolved:
        self._resolve_target(o_a.device)
    try:
        _c_o_a = o_a if o_a.is_contiguous() else o_a.contiguous()
        _c_lse_a = lse_a if lse_a.is_contiguous() else lse_a.contiguous()
        _c_o_b = o_b if o_b.is_contiguous() else o_b.contiguous()
        _c_lse_b = lse_b if lse_b.is_contiguous() else lse_b.contiguous()
        _r = self._forward(_c_o_a, _c_lse_a, _c_o_b, _c_lse_b, out=None)
        if not isinstance(_r, tuple) or len(_r) != 2:
            raise TileOpsError("MergeAttnStatesFwdOp.forward must return a tuple of 2 outputs (None for an omitted one)")
    except BaseException:
        if _resolved:
            self._unresolve_target()
        raise
    return (_r[0], _r[1],)

def _body_0(self, o_a, lse_a, o_b, lse_b):
    try:
        _s = (o_a.shape, o_a.dtype, o_a.device, lse_a.shape, lse_a.dtype, lse_a.device, o_b.shape, o_b.dtype, o_b.device, lse_b.shape, lse_b.dtype, lse_b.device, None,)
    except RuntimeError:
        _guard(o_a, lse_a, o_b, lse_b, None)
        raise
    if _s not in self._checked:
        _check(self, o_a, lse_a, o_b, lse_b, None)
        self._note_checked(_s)
    _resolved = self._target is None
    if _resolved:
        self._resolve_target(o_a.device)
    try:
        _c_o_a = o_a if o_a.is_contiguous() else o_a.contiguous()
        _c_lse_a = lse_a if lse_a.is_contiguous() else lse_a.contiguous()
        _c_o_b = o_b if o_b.is_contiguous() else o_b.contiguous()
        _c_lse_b = lse_b if lse_b.is_contiguous() else lse_b.contiguous()
        _r = self._forward(_c_o_a, _c_lse_a, _c_o_b, _c_lse_b, out=None)
        if not isinstance(_r, tuple) or len(_r) != 2:
            raise TileOpsError("MergeAttnStatesFwdOp.forward must return a tuple of 2 outputs (None for an omitted one)")
    except BaseException:
        if _resolved:
            self._unresolve_target()
        raise
    return (_r[0], _r[1],)

def _fake_0(o_a, lse_a, o_b, lse_b, key):
    self = _ref_of(key, _NO_REF)()
    if type(self) is not _CLS:
        self = _recover(_CLS, key, self)
    _check(self, o_a, lse_a, o_b, lse_b, None)
    _f_o = torch.empty(tuple(o_a.shape), dtype=o_a.dtype, device=o_a.device)
    _f_lse = torch.empty(tuple(lse_a.shape), dtype=_DT_lse, device=o_a.device)
    return (_f_o, _f_lse,)

def _impl_1(o_a, lse_a, o_b, lse_b, out, key):
    self = _ref_of(key, _NO_REF)()
    if type(self) is not _CLS:
        self = _recover(_CLS, key, self)
    _guard(o_a, lse_a, o_b, lse_b, out)
    try:
        _s = (o_a.shape, o_a.dtype, o_a.device, lse_a.shape, lse_a.dtype, lse_a.device, o_b.shape, o_b.dtype, o_b.device, lse_b.shape, lse_b.dtype, lse_b.device, (out.shape, out.dtype, out.device),)
    except RuntimeError:
        _guard(o_a, lse_a, o_b, lse_b, out)
        raise
    if _s not in self._checked:
        _check(self, o_a, lse_a, o_b, lse_b, out)
        self._note_checked(_s)
    _al = _c_apart((out, ), (o_a, lse_a, o_b, lse_b, )) and _apart("MergeAttnStatesFwdOp", (out, ), (o_a, lse_a, o_b, lse_b, ), ('out',), ('o_a', 'lse_a', 'o_b', 'lse_b'))
    _resolved = self._target is None
    if _resolved:
        self._resolve_target(o_a.device)
    try:
        _c_o_a = o_a if o_a.is_contiguous() else o_a.contiguous()
        _c_lse_a = lse_a if lse_a.is_contiguous() else lse_a.contiguous()
        _c_o_b = o_b if o_b.is_contiguous() else o_b.contiguous()
        _c_lse_b = lse_b if lse_b.is_contiguous() else lse_b.contiguous()
        _c_out = out if out.is_contiguous() and not _al else torch.empty(out.shape, dtype=out.dtype, device=out.device)
        _r = self._forward(_c_o_a, _c_lse_a, _c_o_b, _c_lse_b, out=_c_out)
        if not isinstance(_r, tuple) or len(_r) != 2:
            raise TileOpsError("MergeAttnStatesFwdOp.forward must return a tuple of 2 outputs (None for an omitted one)")
        if _c_out is not out:
            out.copy_(_c_out)
    except BaseException:
        if _resolved:
            self._unresolve_target()
        raise
    return _r[1]

def _body_1(self, o_a, lse_a, o_b, lse_b, out):
    try:
        _s = (o_a.shape, o_a.dtype, o_a.device, lse_a.shape, lse_a.dtype, lse_a.device, o_b.shape, o_b.dtype, o_b.device, lse_b.shape, lse_b.dtype, lse_b.device, (out.shape, out.dtype, out.device),)
    except RuntimeError:
        _guard(o_a, lse_a, o_b, lse_b, out)
        raise
    if _s not in self._checked:
        _check(self, o_a, lse_a, o_b, lse_b, out)
        self._note_checked(_s)
    _al = _c_apart((out, ), (o_a, lse_a, o_b, lse_b, )) and _apart("MergeAttnStatesFwdOp", (out, ), (o_a, lse_a, o_b, lse_b, ), ('out',), ('o_a', 'lse_a', 'o_b', 'lse_b'))
    _resolved = self._target is None
    if _resolved:
        self._resolve_target(o_a.device)
    try:
        _c_o_a = o_a if o_a.is_contiguous() else o_a.contiguous()
        _c_lse_a = lse_a if lse_a.is_contiguous() else lse_a.contiguous()
        _c_o_b = o_b if o_b.is_contiguous() else o_b.contiguous()
        _c_lse_b = lse_b if lse_b.is_contiguous() else lse_b.contiguous()
        _c_out = out if out.is_contiguous() and not _al else torch.empty(out.shape, dtype=out.dtype, device=out.device)
        _r = self._forward(_c_o_a, _c_lse_a, _c_o_b, _c_lse_b, out=_c_out)
        if not isinstance(_r, tuple) or len(_r) != 2:
            raise TileOpsError("MergeAttnStatesFwdOp.forward must return a tuple of 2 outputs (None for an omitted one)")
        if _c_out is not out:
            out.copy_(_c_out)
    except BaseException:
        if _resolved:
            self._unresolve_target()
        raise
    return _r[1]

def _fake_1(o_a, lse_a, o_b, lse_b, out, key):
    self = _ref_of(key, _NO_REF)()
    if type(self) is not _CLS:
        self = _recover(_CLS, key, self)
    _check(self, o_a, lse_a, o_b, lse_b, out)
    _f_lse = torch.empty(tuple(lse_a.shape), dtype=_DT_lse, device=o_a.device)
    return _f_lse

def _call_boundary(self, o_a, lse_a, o_b, lse_b, *, out=None):
    if _is_compiling() or _dispatch_len() or _tf_mode() or _functorch_level() is not None or _jit_tracing() is not None:
        _fast = False
    else:
        _g = _grad_enabled()
        _fast = (type(o_a) in _PLAIN and o_a.layout is _strided and not o_a.is_meta and not (_g and o_a.requires_grad) and not o_a.is_neg() and not o_a._is_zerotensor()) and (type(lse_a) in _PLAIN and lse_a.layout is _strided and not lse_a.is_meta and not (_g and lse_a.requires_grad) and not lse_a.is_neg() and not lse_a._is_zerotensor()) and (type(o_b) in _PLAIN and o_b.layout is _strided and not o_b.is_meta and not (_g and o_b.requires_grad) and not o_b.is_neg() and not o_b._is_zerotensor()) and (type(lse_b) in _PLAIN and lse_b.layout is _strided and not lse_b.is_meta and not (_g and lse_b.requires_grad) and not lse_b.is_neg() and not lse_b._is_zerotensor()) and (out is None or (type(out) in _PLAIN and out.layout is _strided and not out.is_meta and not (_g and out.requires_grad) and not out.is_neg() and not out._is_zerotensor()))
    if not _fast:
        if not isinstance(o_a, Tensor):
            raise InputTypeError("MergeAttnStatesFwdOp: argument 'o_a': expected a Tensor, got " + type(o_a).__name__)
        if not isinstance(lse_a, Tensor):
            raise InputTypeError("MergeAttnStatesFwdOp: argument 'lse_a': expected a Tensor, got " + type(lse_a).__name__)
        if not isinstance(o_b, Tensor):
            raise InputTypeError("MergeAttnStatesFwdOp: argument 'o_b': expected a Tensor, got " + type(o_b).__name__)
        if not isinstance(lse_b, Tensor):
            raise InputTypeError("MergeAttnStatesFwdOp: argument 'lse_b': expected a Tensor, got " + type(lse_b).__name__)
        if out is not None and not isinstance(out, Tensor):
            raise InputTypeError("MergeAttnStatesFwdOp: argument 'out': expected a Tensor or None, got " + type(out).__name__)
        if not _is_compiling():
            _guard(o_a, lse_a, o_b, lse_b, out)
    if out is None:
        if _fast:
            _a = _body_0(self, o_a, lse_a, o_b, lse_b)
        else:
            _a = _op_0(o_a, lse_a, o_b, lse_b, self._key)
        return _a
    else:
        if _fast:
            with _below_inplace_view():
                _a = _body_1(self, o_a, lse_a, o_b, lse_b, out)
            _bump(out)
        else:
            _a = _op_1(o_a, lse_a, o_b, lse_b, out, self._key)
        return (out, _a,)

def _allocate(self, o_a, lse_a, o_b, lse_b, *, out=None):
    o = out if out is not None else torch.empty_like(o_a, memory_format=_CONTIGUOUS)
    lse = torch.empty_like(lse_a, dtype=_DT_lse, memory_format=_CONTIGUOUS)
    return (o, lse,)

def _memo_merge_attn_states(o_a, lse_a, o_b, lse_b, o, lse):
    return (o_a.dtype, lse_a.dtype, lse_b.dtype, o_a.device, (o_a.data_ptr() | lse_a.data_ptr() | o_b.data_ptr() | lse_b.data_ptr() | o.data_ptr() | lse.data_ptr()) & 15, tuple(o_a.shape),)

def _full_merge_attn_states(o_a, lse_a, o_b, lse_b, o, lse):
    return ((o_a.dtype, o_a.device, tuple(o_a.shape), o_a.data_ptr() & 15), (lse_a.dtype, lse_a.device, tuple(lse_a.shape), lse_a.data_ptr() & 15), (o_b.dtype, o_b.device, tuple(o_b.shape), o_b.data_ptr() & 15), (lse_b.dtype, lse_b.device, tuple(lse_b.shape), lse_b.data_ptr() & 15), (o.dtype, o.device, tuple(o.shape), o.data_ptr() & 15), (lse.dtype, lse.device, tuple(lse.shape), lse.data_ptr() & 15),)

