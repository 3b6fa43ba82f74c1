def _check(self, q, key_cache, value_cache, block_table, seq_lens, out):
    head_size = self.head_size
    block_size = self.block_size
    if not isinstance(q, Tensor):
        raise InputTypeError("PagedDecodeAttentionFwdOp: argument 'q': expected a Tensor, got " + type(q).__name__)
    if q.dtype not in _ALLOWED_q:
        raise InputTypeError(f"PagedDecodeAttentionFwdOp: argument 'q': expected dtype float32 | float16 | bfloat16, got {q.dtype}")
    _dev = q.device
    if not isinstance(key_cache, Tensor):
        raise InputTypeError("PagedDecodeAttentionFwdOp: argument 'key_cache': expected a Tensor, got " + type(key_cache).__name__)
    if key_cache.dtype != q.dtype:
        raise InputTypeError(f"PagedDecodeAttentionFwdOp: argument 'key_cache': expected dtype same as 'q' ({q.dtype}), got {key_cache.dtype}")
    if key_cache.device != _dev:
        raise InputValueError(f"PagedDecodeAttentionFwdOp: argument 'key_cache': expected a tensor on {q.device} (the device of 'q'), got {key_cache.device}")
    if not isinstance(value_cache, Tensor):
        raise InputTypeError("PagedDecodeAttentionFwdOp: argument 'value_cache': expected a Tensor, got " + type(value_cache).__name__)
    if value_cache.dtype != q.dtype:
        raise InputTypeError(f"PagedDecodeAttentionFwdOp: argument 'value_cache': expected dtype same as 'q' ({q.dtype}), got {value_cache.dtype}")
    if value_cache.device != _dev:
        raise InputValueError(f"PagedDecodeAttentionFwdOp: argument 'value_cache': expected a tensor on {q.device} (the device of 'q'), got {value_cache.device}")
    if not isinstance(block_table, Tensor):
        raise InputTypeError("PagedDecodeAttentionFwdOp: argument 'block_table': expected a Tensor, got " + type(block_table).__name__)
    if block_table.dtype not in _ALLOWED_block_table:
        raise InputTypeError(f"PagedDecodeAttentionFwdOp: argument 'block_table': expected dtype int32, got {block_table.dtype}")
    if block_table.device != _dev:
        raise InputValueError(f"PagedDecodeAttentionFwdOp: argument 'block_table': expected a tensor on {q.device} (the device of 'q'), got {block_table.device}")
    if not isinstance(seq_lens, Tensor):
        raise InputTypeError("PagedDecodeAttentionFwdOp: argument 'seq_lens': expected a Tensor, got " + type(seq_lens).__name__)
    if seq_lens.dtype not in _ALLOWED_seq_lens:
        raise InputTypeError(f"PagedDecodeAttentionFwdOp: argument 'seq_lens': expected dtype int32, got {seq_lens.dtype}")
    if seq_lens.device != _dev:
        raise InputValueError(f"PagedDecodeAttentionFwdOp: argument 'seq_lens': expected a tensor on {q.device} (the device of 'q'), got {seq_lens.device}")
    if not (q.ndim == 3):
        raise InputValueError(f"PagedDecodeAttentionFwdOp: shape rule `q.ndim == 3` does not hold: q.shape={tuple(q.shape)}")
    if not (q.shape[2] == head_size):
        raise InputValueError(f"PagedDecodeAttentionFwdOp: shape rule `q.shape[2] == head_size` does not hold: head_size={head_size!r}, q.shape={tuple(q.shape)}")
    if not (key_cache.ndim == 4):
        raise InputValueError(f"PagedDecodeAttentionFwdOp: shape rule `key_cache.ndim == 4` does not hold: key_cache.shape={tuple(key_cache.shape)}")
    if not (key_cache.shape[1] == block_size):
        raise InputValueError(f"PagedDecodeAttentionFwdOp: shape rule `key_cache.shape[1] == block_size` does not hold: block_size={block_size!r}, key_cache.shape={tuple(key_cache.shape)}")
    if not (key_cache.shape[3] == head_size):
        raise InputValueError(f"PagedDecodeAttentionFwdOp: shape rule `key_cache.shape[3] == head_size` does not hold: head_size={head_size!r}, key_cache.shape={tuple(key_cache.shape)}")
    if not (value_cache.ndim == 4):
        raise InputValueError(f"PagedDecodeAttentionFwdOp: shape rule `value_cache.ndim == 4` does not hold: value_cache.shape={tuple(value_cache.shape)}")
    if not (value_cache.shape[0] == key_cache.shape[0]):
        raise InputValueError(f"PagedDecodeAttentionFwdOp: shape rule `value_cache.shape[0] == key_cache.shape[0]` does not hold: key_cache.shape={tuple(key_cache.shape)}, value_cache.shape={tuple(value_cache.shape)}")
    if not (value_cache.shape[1] == block_size):
        raise InputValueError(f"PagedDecodeAttentionFwdOp: shape rule `value_cache.shape[1] == block_size` does not hold: block_size={block_size!r}, value_cache.shape={tuple(value_cache.shape)}")
    if not (value_cache.shape[2] == key_cache.shape[2]):
        raise InputValueError(f"PagedDecodeAttentionFwdOp: shape rule `value_cache.shape[2] == key_cache.shape[2]` does not hold: key_cache.shape={tuple(key_cache.shape)}, value_cache.shape={tuple(value_cache.shape)}")
    if not (value_cache.shape[3] == head_size):
        raise InputValueError(f"PagedDecodeAttentionFwdOp: shape rule `value_cache.shape[3] == head_size` does not hold: head_size={head_size!r}, value_cache.shape={tuple(value_cache.shape)}")
    if not (block_table.ndim == 2):
        raise InputValueError(f"PagedDecodeAttentionFwdOp: shape rule `block_table.ndim == 2` does not hold: block_table.shape={tuple(block_table.shape)}")
    if not (block_table.shape[0] == q.shape[0]):
        raise InputValueError(f"PagedDecodeAttentionFwdOp: shape rule `block_table.shape[0] == q.shape[0]` does not hold: block_table.shape={tuple(block_table.shape)}, q.shape={tuple(q.shape)}")
    if not (seq_lens.ndim == 1):
        raise InputValueError(f"PagedDecodeAttentionFwdOp: shape rule `seq_lens.ndim == 1` does not hold: seq_lens.shape={tuple(seq_lens.shape)}")
    if not (seq_lens.shape[0] == q.shape[0]):
        raise InputValueError(f"PagedDecodeAttentionFwdOp: shape rule `seq_lens.shape[0] == q.shape[0]` does not hold: q.shape={tuple(q.shape)}, seq_lens.shape={tuple(seq_lens.shape)}")
    if not (head_size % 16 == 0 and 16 <= head_size <= 256):
        raise InputValueError(f"PagedDecodeAttentionFwdOp: shape rule `head_size % 16 == 0 and 16 <= head_size <= 256` does not hold: head_size={head_size!r}")
    if not (block_size >= 1):
        raise InputValueError(f"PagedDecodeAttentionFwdOp: shape rule `block_size >= 1` does not hold: block_size={block_size!r}")
    if not (q.ndim != 3 or key_cache.ndim != 4 or (key_cache.shape[2] >= 1 and q.shape[1] % key_cache.shape[2] == 0)):
        raise InputValueError(f"PagedDecodeAttentionFwdOp: shape rule `q.ndim != 3 or key_cache.ndim != 4 or (key_cache.shape[2] >= 1 and q.shape[1] % key_cache.shape[2] == 0)` does not hold: key_cache.shape={tuple(key_cache.shape)}, q.shape={tuple(q.shape)}")
    if out is not None:
        if not isinstance(out, Tensor):
            raise InputTypeError("PagedDecodeAttentionFwdOp: argument 'out': expected a Tensor, got " + type(out).__name__)
        _s = tuple(q.shape)
        if tuple(out.shape) != _s:
            raise InputValueError(f"PagedDecodeAttentionFwdOp: argument 'out': expected shape {_s} (output 'o'), got {tuple(out.shape)}")
        if out.dtype != q.dtype:
            raise InputTypeError(f"PagedDecodeAttentionFwdOp: argument 'out': expected dtype {q.dtype}, got {out.dtype}")
        if out.device != _dev:
            raise InputValueError(f"PagedDecodeAttentionFwdOp: argument 'out': expected a tensor on {q.device}, got {out.device}")

def _guard(q, key_cache, value_cache, block_table, seq_lens, out, return_lse):
    _admit(q, "PagedDecodeAttentionFwdOp", "q", False, False)
    _admit(key_cache, "PagedDecodeAttentionFwdOp", "key_cache", False, False)
    _admit(value_cache, "PagedDecodeAttentionFwdOp", "value_cache", False, False)
    _admit(block_table, "PagedDecodeAttentionFwdOp", "block_table", False, False)
    _admit(seq_lens, "PagedDecodeAttentionFwdOp", "seq_lens", False, False)
    if out is not None:
        _admit(out, "PagedDecodeAttentionFwdOp", "out", True, True)

def _impl_0(q, key_cache, value_cache, block_table, seq_lens, key):
    self = _ref_of(key, _NO_REF)()
    if type(self) is not _CLS:
        self = _recover(_CLS, key, self)
    _guard(q, key_cache, value_cache, block_table, seq_lens, None, False)
    try:
        _s = (q.shape, q.dtype, q.device, key_cache.shape, key_cache.dtype, key_cache.device, value_cache.shape, value_cache.dtype, value_cache.device, block_table.shape, block_table.dtype, block_table.device, seq_lens.shape, seq_lens.dtype, seq_lens.device, None,)
    except RuntimeError:
        _guard(q, key_cache, value_cache, block_table, seq_lens, None, False)
        raise
    if _s not in self._checked:
        _check(self, q, key_cache, value_cache, block_table, seq_lens, None)
        self._note_checked(_s)
    _resolved = self._target is None
    if _resolved:
        self._resolve_target(q.device)
    try:
        _c_q = q if q.is_contiguous() else q.contiguous()
        if not key_cache.is_contiguous():
            raise InputValueError(f"PagedDecodeAttentionFwdOp: argument 'key_cache': expected a contiguous tensor (the op never copies it), got shape {tuple(key_cache.shape)} with strides {key_cache.stride()}")
        if not value_cache.is_contiguous():
            raise InputValueError(f"PagedDecodeAttentionFwdOp: argument 'value_cache': expected a contiguous tensor (the op never copies it), got shape {tuple(value_cache.shape)} with strides {value_cache.stride()}")
        _c_block_table = block_table if block_table.is_contiguous() else block_table.contiguous()
        _c_seq_lens = seq_lens if seq_lens.is_contiguous() else seq_lens.contiguous()
        _r = self._forward(_c_q, key_cache, value_cache, _c_block_table, _c_seq_lens, return_lse=False, out=None)
        if not isinstance(_r, tuple) or len(_r) != 2:
            raise TileOpsError("PagedDecodeAttentionFwdOp.forward must return a tuple of 2 outputs (None for an omitted one)")
    except BaseException:
        if _resolved:
            self._unresolve_target()
        raise
    return _r[0]

def _body_0(self, q, key_cache, value_cache, block_table, seq_lens):
    try:
        _s = (q.shape, q.dtype, q.device, key_cache.shape, key_cache.dtype, key_cache.device, value_cache.shape, value_cache.dtype, value_cache.device, block_table.shape, block_table.dtype, block_table.device, seq_lens.shape, seq_lens.dtype, seq_lens.device, None,)
    except RuntimeError:
        _guard(q, key_cache, value_cache, block_table, seq_lens, None, False)
        raise
    if _s not in self._checked:
        _check(self, q, key_cache, value_cache, block_table, seq_lens, None)
        self._note_checked(_s)
    _resolved = self._target is None
    if _resolved:
        self._resolve_target(q.device)
    try:
        _c_q = q if q.is_contiguous() else q.contiguous()
        if not key_cache.is_contiguous():
            raise InputValueError(f"PagedDecodeAttentionFwdOp: argument 'key_cache': expected a contiguous tensor (the op never copies it), got shape {tuple(key_cache.shape)} with strides {key_cache.stride()}")
        if not value_cache.is_contiguous():
            raise InputValueError(f"PagedDecodeAttentionFwdOp: argument 'value_cache': expected a contiguous tensor (the op never copies it), got shape {tuple(value_cache.shape)} with strides {value_cache.stride()}")
        _c_block_table = block_table if block_table.is_contiguous() else block_table.contiguous()
        _c_seq_lens = seq_lens if seq_lens.is_contiguous() else seq_lens.contiguous()
        _r = self._forward(_c_q, key_cache, value_cache, _c_block_table, _c_seq_lens, return_lse=False, out=None)
        if not isinstance(_r, tuple) or len(_r) != 2:
            raise TileOpsError("PagedDecodeAttentionFwdOp.forward must return a tuple of 2 outputs (None for an omitted one)")
    except BaseException:
        if _resolved:
            self._unresolve_target()
        raise
    return _r[0]

def _fake_0(q, key_cache, value_cache, block_table, seq_lens, key):
    self = _ref_of(key, _NO_REF)()
    if type(self) is not _CLS:
        self = _recover(_CLS, key, self)
    _check(self, q, key_cache, value_cache, block_table, seq_lens, None)
    _f_o = torch.empty(tuple(q.shape), dtype=q.dtype, device=q.device)
    return _f_o

def _impl_1(q, key_cache, value_cache, block_table, seq_lens, out, key):
    self = _ref_of(key, _NO_REF)()
    if type(self) is not _CLS:
        self = _recover(_CLS, key, self)
    _guard(q, key_cache, value_cache, block_table, seq_lens, out, False)
    try:
        _s = (q.shape, q.dtype, q.device, key_cache.shape, key_cache.dtype, key_cache.device, value_cache.shape, value_cache.dtype, value_cache.device, block_table.shape, block_table.dtype, block_table.device, seq_lens.shape, seq_lens.dtype, seq_lens.device, (out.shape, out.dtype, out.device),)
    except RuntimeError:
        _guard(q, key_cache, value_cache, block_table, seq_lens, out, False)
        raise
    if _s not in self._checked:
        _check(self, q, key_cache, value_cache, block_table, seq_lens, out)
        self._note_checked(_s)
    _al = _c_apart((out, ), (q, key_cache, value_cache, block_table, seq_lens, )) and _apart("PagedDecodeAttentionFwdOp", (out, ), (q, key_cache, value_cache, block_table, seq_lens, ), ('out',), ('q', 'key_cache', 'value_cache', 'block_table', 'seq_lens'))
    _resolved = self._target is None
    if _resolved:
        self._resolve_target(q.device)
    try:
        _c_q = q if q.is_contiguous() else q.contiguous()
        if not key_cache.is_contiguous():
            raise InputValueError(f"PagedDecodeAttentionFwdOp: argument 'key_cache': expected a contiguous tensor (the op never copies it), got shape {tuple(key_cache.shape)} with strides {key_cache.stride()}")
        if not value_cache.is_contiguous():
            raise InputValueError(f"PagedDecodeAttentionFwdOp: argument 'value_cache': expected a contiguous tensor (the op never copies it), got shape {tuple(value_cache.shape)} with strides {value_cache.stride()}")
        _c_block_table = block_table if block_table.is_contiguous() else block_table.contiguous()
        _c_seq_lens = seq_lens if seq_lens.is_contiguous() else seq_lens.contiguous()
        _c_out = out if out.is_contiguous() and not _al else torch.empty(out.shape, dtype=out.dtype, device=out.device)
        self._forward(_c_q, key_cache, value_cache, _c_block_table, _c_seq_lens, return_lse=False, out=_c_out)
        if _c_out is not out:
            out.copy_(_c_out)
    except BaseException:
        if _resolved:
            self._unresolve_target()
        raise
    return None

def _body_1(self, q, key_cache, value_cache, block_table, seq_lens, out):
    try:
        _s = (q.shape, q.dtype, q.device, key_cache.shape, key_cache.dtype, key_cache.device, value_cache.shape, value_cache.dtype, value_cache.device, block_table.shape, block_table.dtype, block_table.device, seq_lens.shape, seq_lens.dtype, seq_lens.device, (out.shape, out.dtype, out.device),)
    except RuntimeError:
        _guard(q, key_cache, value_cache, block_table, seq_lens, out, False)
        raise
    if _s not in self._checked:
        _check(self, q, key_cache, value_cache, block_table, seq_lens, out)
        self._note_checked(_s)
    _al = _c_apart((out, ), (q, key_cache, value_cache, block_table, seq_lens, )) and _apart("PagedDecodeAttentionFwdOp", (out, ), (q, key_cache, value_cache, block_table, seq_lens, ), ('out',), ('q', 'key_cache', 'value_cache', 'block_table', 'seq_lens'))
    _resolved = self._target is None
    if _resolved:
        self._resolve_target(q.device)
    try:
        _c_q = q if q.is_contiguous() else q.contiguous()
        if not key_cache.is_contiguous():
            raise InputValueError(f"PagedDecodeAttentionFwdOp: argument 'key_cache': expected a contiguous tensor (the op never copies it), got shape {tuple(key_cache.shape)} with strides {key_cache.stride()}")
        if not value_cache.is_contiguous():
            raise InputValueError(f"PagedDecodeAttentionFwdOp: argument 'value_cache': expected a contiguous tensor (the op never copies it), got shape {tuple(value_cache.shape)} with strides {value_cache.stride()}")
        _c_block_table = block_table if block_table.is_contiguous() else block_table.contiguous()
        _c_seq_lens = seq_lens if seq_lens.is_contiguous() else seq_lens.contiguous()
        _c_out = out if out.is_contiguous() and not _al else torch.empty(out.shape, dtype=out.dtype, device=out.device)
        self._forward(_c_q, key_cache, value_cache, _c_block_table, _c_seq_lens, return_lse=False, out=_c_out)
        if _c_out is not out:
            out.copy_(_c_out)
    except BaseException:
        if _resolved:
            self._unresolve_target()
        raise
    return None

def _fake_1(q, key_cache, value_cache, block_table, seq_lens, out, key):
    self = _ref_of(key, _NO_REF)()
    if type(self) is not _CLS:
        self = _recover(_CLS, key, self)
    _check(self, q, key_cache, value_cache, block_table, seq_lens, out)
    return None

def _impl_2(q, key_cache, value_cache, block_table, seq_lens, key):
    self = _ref_of(key, _NO_REF)()
    if type(self) is not _CLS:
        self = _recover(_CLS, key, self)
    _guard(q, key_cache, value_cache, block_table, seq_lens, None, True)
    try:
        _s = (q.shape, q.dtype, q.device, key_cache.shape, key_cache.dtype, key_cache.device, value_cache.shape, value_cache.dtype, value_cache.device, block_table.shape, block_table.dtype, block_table.device, seq_lens.shape, seq_lens.dtype, seq_lens.device, None,)
    except RuntimeError:
        _guard(q, key_cache, value_cache, block_table, seq_lens, None, True)
        raise
    if _s not in self._checked:
        _check(self, q, key_cache, value_cache, block_table, seq_lens, None)
        self._note_checked(_s)
    _resolved = self._target is None
    if _resolved:
        self._resolve_target(q.device)
    try:
        _c_q = q if q.is_contiguous() else q.contiguous()
        if not key_cache.is_contiguous():
            raise InputValueError(f"PagedDecodeAttentionFwdOp: argument 'key_cache': expected a contiguous tensor (the op never copies it), got shape {tuple(key_cache.shape)} with strides {key_cache.stride()}")
        if not value_cache.is_contiguous():
            raise InputValueError(f"PagedDecodeAttentionFwdOp: argument 'value_cache': expected a contiguous tensor (the op never copies it), got shape {tuple(value_cache.shape)} with strides {value_cache.stride()}")
        _c_block_table = block_table if block_table.is_contiguous() else block_table.contiguous()
        _c_seq_lens = seq_lens if seq_lens.is_contiguous() else seq_lens.contiguous()
        _r = self._forward(_c_q, key_cache, value_cache, _c_block_table, _c_seq_lens, return_lse=True, out=None)
        if not isinstance(_r, tuple) or len(_r) != 2:
            raise TileOpsError("PagedDecodeAttentionFwdOp.forward must return a tuple of 2 outputs (None for an omitted one)")
    except BaseException:
        if _resolved:
            self._unresolve_target()
        raise
    return (_r[0], _r[1],)

def _body_2(self, q, key_cache, value_cache, block_table, seq_lens):
    try:
        _s = (q.shape, q.dtype, q.device, key_cache.shape, key_cache.dtype, key_cache.device, value_cache.shape, value_cache.dtype, value_cache.device, block_table.shape, block_table.dtype, block_table.device, seq_lens.shape, seq_lens.dtype, seq_lens.device, None,)
    except RuntimeError:
        _guard(q, key_cache, value_cache, block_table, seq_lens, None, True)
        raise
    if _s not in self._checked:
        _check(self, q, key_cache, value_cache, block_table, seq_lens, None)
        self._note_checked(_s)
    _resolved = self._target is None
    if _resolved:
        self._resolve_target(q.device)
    try:
        _c_q = q if q.is_contiguous() else q.contiguous()
        if not key_cache.is_contiguous():
            raise InputValueError(f"PagedDecodeAttentionFwdOp: argument 'key_cache': expected a contiguous tensor (the op never copies it), got shape {tuple(key_cache.shape)} with strides {key_cache.stride()}")
        if not value_cache.is_contiguous():
            raise InputValueError(f"PagedDecodeAttentionFwdOp: argument 'value_cache': expected a contiguous tensor (the op never copies it), got shape {tuple(value_cache.shape)} with strides {value_cache.stride()}")
        _c_block_table = block_table if block_table.is_contiguous() else block_table.contiguous()
        _c_seq_lens = seq_lens if seq_lens.is_contiguous() else seq_lens.contiguous()
        _r = self._forward(_c_q, key_cache, value_cache, _c_block_table, _c_seq_lens, return_lse=True, out=None)
        if not isinstance(_r, tuple) or len(_r) != 2:
            raise TileOpsError("PagedDecodeAttentionFwdOp.forward must return a tuple of 2 outputs (None for an omitted one)")
    except BaseException:
        if _resolved:
            self._unresolve_target()
        raise
    return (_r[0], _r[1],)

def _fake_2(q, key_cache, value_cache, block_table, seq_lens, key):
    self = _ref_of(key, _NO_REF)()
    if type(self) is not _CLS:
        self = _recover(_CLS, key, self)
    _check(self, q, key_cache, value_cache, block_table, seq_lens, None)
    _f_o = torch.empty(tuple(q.shape), dtype=q.dtype, device=q.device)
    _f_lse = torch.empty(tuple(q.shape[:2]), dtype=_DT_lse, device=q.device)
    return (_f_o, _f_lse,)

def _impl_3(q, key_cache, value_cache, block_table, seq_lens, out, key):
    self = _ref_of(key, _NO_REF)()
    if type(self) is not _CLS:
        self = _recover(_CLS, key, self)
    _guard(q, key_cache, value_cache, block_table, seq_lens, out, True)
    try:
        _s = (q.shape, q.dtype, q.device, key_cache.shape, key_cache.dtype, key_cache.device, value_cache.shape, value_cache.dtype, value_cache.device, block_table.shape, block_table.dtype, block_table.device, seq_lens.shape, seq_lens.dtype, seq_lens.device, (out.shape, out.dtype, out.device),)
    except RuntimeError:
        _guard(q, key_cache, value_cache, block_table, seq_lens, out, True)
        raise
    if _s not in self._checked:
        _check(self, q, key_cache, value_cache, block_table, seq_lens, out)
        self._note_checked(_s)
    _al = _c_apart((out, ), (q, key_cache, value_cache, block_table, seq_lens, )) and _apart("PagedDecodeAttentionFwdOp", (out, ), (q, key_cache, value_cache, block_table, seq_lens, ), ('out',), ('q', 'key_cache', 'value_cache', 'block_table', 'seq_lens'))
    _resolved = self._target is None
    if _resolved:
        self._resolve_target(q.device)
    try:
        _c_q = q if q.is_contiguous() else q.contiguous()
        if not key_cache.is_contiguous():
            raise InputValueError(f"PagedDecodeAttentionFwdOp: argument 'key_cache': expected a contiguous tensor (the op never copies it), got shape {tuple(key_cache.shape)} with strides {key_cache.stride()}")
        if not value_cache.is_contiguous():
            raise InputValueError(f"PagedDecodeAttentionFwdOp: argument 'value_cache': expected a contiguous tensor (the op never copies it), got shape {tuple(value_cache.shape)} with strides {value_cache.stride()}")
        _c_block_table = block_table if block_table.is_contiguous() else block_table.contiguous()
        _c_seq_lens = seq_lens if seq_lens.is_contiguous() else seq_lens.contiguous()
        _c_out = out if out.is_contiguous() and not _al else torch.empty(out.shape, dtype=out.dtype, device=out.device)
        _r = self._forward(_c_q, key_cache, value_cache, _c_block_table, _c_seq_lens, return_lse=True, out=_c_out)
        if not isinstance(_r, tuple) or len(_r) != 2:
            raise TileOpsError("PagedDecodeAttentionFwdOp.forward must return a tuple of 2 outputs (None for an omitted one)")
        if _c_out is not out:
            out.copy_(_c_out)
    except BaseException:
        if _resolved:
            self._unresolve_target()
        raise
    return _r[1]

def _body_3(self, q, key_cache, value_cache, block_table, seq_lens, out):
    try:
        _s = (q.shape, q.dtype, q.device, key_cache.shape, key_cache.dtype, key_cache.device, value_cache.shape, value_cache.dtype, value_cache.device, block_table.shape, block_table.dtype, block_table.device, seq_lens.shape, seq_lens.dtype, seq_lens.device, (out.shape, out.dtype, out.device),)
    except RuntimeError:
        _guard(q, key_cache, value_cache, block_table, seq_lens, out, True)
        raise
    if _s not in self._checked:
        _check(self, q, key_cache, value_cache, block_table, seq_lens, out)
        self._note_checked(_s)
    _al = _c_apart((out, ), (q, key_cache, value_cache, block_table, seq_lens, )) and _apart("PagedDecodeAttentionFwdOp", (out, ), (q, key_cache, value_cache, block_table, seq_lens, ), ('out',), ('q', 'key_cache', 'value_cache', 'block_table', 'seq_lens'))
    _resolved = self._target is None
    if _resolved:
        self._resolve_target(q.device)
    try:
        _c_q = q if q.is_contiguous() else q.contiguous()
        if not key_cache.is_contiguous():
            raise InputValueError(f"PagedDecodeAttentionFwdOp: argument 'key_cache': expected a contiguous tensor (the op never copies it), got shape {tuple(key_cache.shape)} with strides {key_cache.stride()}")
        if not value_cache.is_contiguous():
            raise InputValueError(f"PagedDecodeAttentionFwdOp: argument 'value_cache': expected a contiguous tensor (the op never copies it), got shape {tuple(value_cache.shape)} with strides {value_cache.stride()}")
        _c_block_table = block_table if block_table.is_contiguous() else block_table.contiguous()
        _c_seq_lens = seq_lens if seq_lens.is_contiguous() else seq_lens.contiguous()
        _c_out = out if out.is_contiguous() and not _al else torch.empty(out.shape, dtype=out.dtype, device=out.device)
        _r = self._forward(_c_q, key_cache, value_cache, _c_block_table, _c_seq_lens, return_lse=True, out=_c_out)
        if not isinstance(_r, tuple) or len(_r) != 2:
            raise TileOpsError("PagedDecodeAttentionFwdOp.forward must return a tuple of 2 outputs (None for an omitted one)")
        if _c_out is not out:
            out.copy_(_c_out)
    except BaseException:
        if _resolved:
            self._unresolve_target()
        raise
    return _r[1]

def _fake_3(q, key_cache, value_cache, block_table, seq_lens, out, key):
    self = _ref_of(key, _NO_REF)()
    if type(self) is not _CLS:
        self = _recover(_CLS, key, self)
    _check(self, q, key_cache, value_cache, block_table, seq_lens, out)
    _f_lse = torch.empty(tuple(q.shape[:2]), dtype=_DT_lse, device=q.device)
    return _f_lse

def _call_boundary(self, q, key_cache, value_cache, block_table, seq_lens, *, return_lse=False, out=None):
    if return_lse is not True and return_lse is not False:
        raise InputTypeError(f"PagedDecodeAttentionFwdOp: argument 'return_lse': expected True or False, got {return_lse!r}")
    if _is_compiling() or _dispatch_len() or _tf_mode() or _functorch_level() is not None or _jit_tracing() is not None:
        _fast = False
    else:
        _g = _grad_enabled()
        _fast = (type(q) in _PLAIN and q.layout is _strided and not q.is_meta and not (_g and q.requires_grad) and not q.is_neg() and not q._is_zerotensor()) and (type(key_cache) in _PLAIN and key_cache.layout is _strided and not key_cache.is_meta and not (_g and key_cache.requires_grad) and not key_cache.is_neg() and not key_cache._is_zerotensor()) and (type(value_cache) in _PLAIN and value_cache.layout is _strided and not value_cache.is_meta and not (_g and value_cache.requires_grad) and not value_cache.is_neg() and not value_cache._is_zerotensor()) and (type(block_table) in _PLAIN and block_table.layout is _strided and not block_table.is_meta and not (_g and block_table.requires_grad) and not block_table.is_neg() and not block_table._is_zerotensor()) and (type(seq_lens) in _PLAIN and seq_lens.layout is _strided and not seq_lens.is_meta and not (_g and seq_lens.requires_grad) and not seq_lens.is_neg() and not seq_lens._is_zerotensor()) and (out is None or (type(out) in _PLAIN and out.layout is _strided and not out.is_meta and not (_g and out.requires_grad) and not out.is_neg() and not out._is_zerotensor()))
    if not _fast:
        if not isinstance(q, Tensor):
            raise InputTypeError("PagedDecodeAttentionFwdOp: argument 'q': expected a Tensor, got " + type(q).__name__)
        if not isinstance(key_cache, Tensor):
            raise InputTypeError("PagedDecodeAttentionFwdOp: argument 'key_cache': expected a Tensor, got " + type(key_cache).__name__)
        if not isinstance(value_cache, Tensor):
            raise InputTypeError("PagedDecodeAttentionFwdOp: argument 'value_cache': expected a Tensor, got " + type(value_cache).__name__)
        if not isinstance(block_table, Tensor):
            raise InputTypeError("PagedDecodeAttentionFwdOp: argument 'block_table': expected a Tensor, got " + type(block_table).__name__)
        if not isinstance(seq_lens, Tensor):
            raise InputTypeError("PagedDecodeAttentionFwdOp: argument 'seq_lens': expected a Tensor, got " + type(seq_lens).__name__)
        if out is not None and not isinstance(out, Tensor):
            raise InputTypeError("PagedDecodeAttentionFwdOp: argument 'out': expected a Tensor or None, got " + type(out).__name__)
        if not _is_compiling():
            _guard(q, key_cache, value_cache, block_table, seq_lens, out, return_lse)
    if not return_lse and out is None:
        if _fast:
            _a = _body_0(self, q, key_cache, value_cache, block_table, seq_lens)
        else:
            _a = _op_0(q, key_cache, value_cache, block_table, seq_lens, self._key)
        return _a
    elif not return_lse and out is not None:
        if _fast:
            with _below_inplace_view():
                _body_1(self, q, key_cache, value_cache, block_table, seq_lens, out)
            _bump(out)
        else:
            _op_1(q, key_cache, value_cache, block_table, seq_lens, out, self._key)
        return out
    elif return_lse and out is None:
        if _fast:
            _a = _body_2(self, q, key_cache, value_cache, block_table, seq_lens)
        else:
            _a = _op_2(q, key_cache, value_cache, block_table, seq_lens, self._key)
        return _a
    else:
        if _fast:
            with _below_inplace_view():
                _a = _body_3(self, q, key_cache, value_cache, block_table, seq_lens, out)
            _bump(out)
        else:
            _a = _op_3(q, key_cache, value_cache, block_table, seq_lens, out, self._key)
        return (out, _a,)

def _allocate(self, q, key_cache, value_cache, block_table, seq_lens, *, return_lse=False, out=None):
    o = out if out is not None else torch.empty_like(q, memory_format=_CONTIGUOUS)
    lse = None if not return_lse else torch.empty(tuple(q.shape[:2]), dtype=_DT_lse, device=q.device)
    return (o, lse,)

def _memo_paged_decode_attention(q, key_cache, value_cache, block_table, seq_lens, o, lse):
    return (q.dtype, block_table.dtype, seq_lens.dtype, lse is None, q.device, (q.data_ptr() | key_cache.data_ptr() | value_cache.data_ptr() | block_table.data_ptr() | seq_lens.data_ptr() | o.data_ptr() | (0 if lse is None else lse.data_ptr())) & 15, tuple(q.shape), tuple(key_cache.shape),)

def _full_paged_decode_attention(q, key_cache, value_cache, block_table, seq_lens, o, lse):
    return ((q.dtype, q.device, tuple(q.shape), q.data_ptr() & 15), (key_cache.dtype, key_cache.device, tuple(key_cache.shape), key_cache.data_ptr() & 15), (value_cache.dtype, value_cache.device, tuple(value_cache.shape), value_cache.data_ptr() & 15), (block_table.dtype, block_table.device, tuple(block_table.shape), block_table.data_ptr() & 15), (seq_lens.dtype, seq_lens.device, tuple(seq_lens.shape), seq_lens.data_ptr() & 15), (o.dtype, o.device, tuple(o.shape), o.data_ptr() & 15), None if lse is None else (lse.dtype, lse.device, tuple(lse.shape), lse.data_ptr() & 15),)

