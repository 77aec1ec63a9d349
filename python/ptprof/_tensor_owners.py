"""Modules' and optimizers' tensors for ptprof's memory categories, taken in
the target the way torch's Python tracer takes them for its memory profiler
(torch/profiler/_memory_profiler.py): an ``nn.Module``'s own parameters and
their gradients at its first call in a window; an optimizer's parameters,
gradients and state tensors when its first ``step`` in a window returns
(a first step creates the state, as Adam's moments).

Only while a window records memory and shapes (``ptprof_boot_tensor_identity``):
the two global hooks are registered when such a window starts and removed when
it stops, so a module call outside those windows costs nothing more. Run by
``ptprof._boot``; never imported by a program.
"""

import ctypes

from ptprof._abi import TensorRef  # ptprof_tensor_ref (agent/include/ptprof/bridge_api.h)

MODULE, OPTIMIZER = 1, 2  # wire::TensorGroupKind
PARAMETER, GRADIENT, STATE = 1, 2, 3  # wire::TensorRole
STRIDED = 1 << 2  # wire::kTensorStrided
MAX_REFS = 120  # wire::kMaxTensorRefs
DEVICE_TYPES = {"cpu": 0, "cuda": 1}

_capsule_pointer = ctypes.pythonapi.PyCapsule_GetPointer
_capsule_pointer.restype = ctypes.c_void_p
_capsule_pointer.argtypes = [ctypes.py_object, ctypes.c_char_p]


class Owners:
    """Follows windows; reports each module and optimizer once per window."""

    def __init__(self, torch, identity, report):
        """``identity``, ``report``: the agent's ptprof_boot_tensor_identity
        and ptprof_boot_tensors (bound in _abi.py)."""
        self.torch = torch
        self.identity = identity
        self.report = report
        self.handles = []
        self.seen = set()
        raw = getattr(torch._C, "_tensor_impl_raw_handle", None)
        self.impl_of = (lambda t: _capsule_pointer(raw(t), None) or 0) if raw else (lambda t: 0)
        compiler = getattr(torch, "compiler", None)
        self.is_compiling = getattr(compiler, "is_compiling", None) or (lambda: False)

    def on_window(self, recording):
        if recording and not self.handles and self.identity():
            self.seen = set()
            self.install()
        elif not recording and self.handles:
            for h in self.handles:
                h.remove()
            self.handles = []

    def install(self):
        torch = self.torch
        module_api = torch.nn.modules.module
        self.handles.append(module_api.register_module_forward_pre_hook(self.module_called))
        try:
            import torch.optim.optimizer as optimizer_api

            hook = getattr(optimizer_api, "register_optimizer_step_post_hook", None)
        except ImportError:
            hook = None
        if hook is not None:  # torch >= 2.0
            self.handles.append(hook(self.optimizer_stepped))

    def first_time(self, owner):
        key = id(owner)
        if key in self.seen:
            return False
        self.seen.add(key)
        return True

    def module_called(self, module, args):
        if self.is_compiling() or not self.first_time(module):
            return None
        refs = []
        for i, p in enumerate(module._parameters.values()):
            self.add(refs, p, i, PARAMETER)
            if p is not None:
                self.add(refs, p.grad, i, GRADIENT)
        self.send(MODULE, module, refs)
        return None

    def optimizer_stepped(self, optimizer, args, kwargs):
        if not self.first_time(optimizer):
            return None
        refs = []
        i = 0
        for group in optimizer.param_groups:
            for p in group["params"]:
                self.add(refs, p, i, PARAMETER)
                self.add(refs, p.grad, i, GRADIENT)
                for value in optimizer.state.get(p, {}).values():
                    self.add(refs, value, i, STATE)
                i += 1
        self.send(OPTIMIZER, optimizer, refs)
        return None

    def add(self, refs, t, index, role):
        if t is None or not isinstance(t, self.torch.Tensor) or len(refs) >= MAX_REFS:
            return
        try:
            device = DEVICE_TYPES.get(t.device.type)
            if device is None:
                return
            strided = t.layout == self.torch.strided
            nbytes = 0
            if strided:
                sizes = list(t.size()) or [1]
                strides = list(t.stride()) or [1]
                nbytes = max(a * b for a, b in zip(sizes, strides)) * t.element_size()
            storage = t.untyped_storage() if hasattr(t, "untyped_storage") else t.storage()
            refs.append(
                TensorRef(
                    self.impl_of(t),
                    storage.data_ptr(),
                    max(nbytes, 0),
                    index & 0xFFFF,
                    device,
                    t.device.index if t.device.index is not None else -1,
                    STRIDED if strided else 0,
                    role,
                )
            )
        except Exception:  # a tensor subclass without storage, a fake tensor...
            pass

    def send(self, kind, owner, refs):
        if refs:
            array = (TensorRef * len(refs))(*refs)
            self.report(kind, id(owner), array, len(refs))
