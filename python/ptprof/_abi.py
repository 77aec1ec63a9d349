"""The agent's C entry points this package calls, declared once for ctypes.

Two ABIs, each with its header:

- ``ptprof_*``, the API for programs (agent/include/ptprof.h), called by the
  user API (``ptprof/__init__.py``) and by the bootstrap (marks, ranges);
- ``ptprof_boot_*``, the agent's plumbing for its in-target Python bootstrap
  (agent/include/ptprof/boot_api.h), called by ``_boot.py`` and
  ``_tensor_owners.py`` only.

Each function here has the argument and result types its header writes; a
change to one is a change to both. The functions are found in the running
process (``ptprof run`` preloads the agent, libptprof_agent.so), looked up
only when ``bind`` is called: importing this module touches nothing.
"""

import ctypes


# struct ptprof_tensor_ref (agent/include/ptprof/bridge_api.h).
class TensorRef(ctypes.Structure):
    _fields_ = [
        ("impl", ctypes.c_uint64),
        ("storage", ctypes.c_uint64),
        ("nbytes", ctypes.c_uint64),
        ("index", ctypes.c_uint16),
        ("device_type", ctypes.c_int8),
        ("device_index", ctypes.c_int8),
        ("flags", ctypes.c_uint8),
        ("role", ctypes.c_uint8),
    ]


# void (*callback)(int): ptprof_boot_window_flag's argument.
WindowCallback = ctypes.CFUNCTYPE(None, ctypes.c_int)

# name: (argument types, result type)
SIGNATURES = {
    # ptprof.h
    "ptprof_step": ([], None),
    "ptprof_range_push": ([ctypes.c_char_p], None),
    "ptprof_range_pop": ([], None),
    "ptprof_mark": ([ctypes.c_char_p], None),
    "ptprof_recording": ([], ctypes.c_int),
    # ptprof/boot_api.h
    "ptprof_boot_forward_ended": ([], None),
    "ptprof_boot_reports_steps": ([], ctypes.c_int),
    "ptprof_boot_scopes_ended": ([ctypes.c_char_p, ctypes.c_uint32], ctypes.c_uint32),
    "ptprof_boot_fold_wake": ([], ctypes.POINTER(ctypes.c_uint32)),
    "ptprof_boot_dataloader_worker": ([ctypes.c_int], None),
    "ptprof_boot_window_flag": ([WindowCallback], ctypes.c_int),
    "ptprof_boot_distributed": ([ctypes.c_int, ctypes.c_int], None),
    "ptprof_boot_tensor_identity": ([], ctypes.c_int),
    "ptprof_boot_tensors": ([ctypes.c_int, ctypes.c_uint64, ctypes.POINTER(TensorRef), ctypes.c_uint32], None),
}


def bind(*names):
    """The agent's functions ``names`` (a tuple, in that order), typed as
    their headers declare them; None when the agent is not loaded in this
    process, or lacks one of them (then none is bound)."""
    try:
        lib = ctypes.CDLL(None)
        functions = tuple(getattr(lib, name) for name in names)
    except (OSError, AttributeError):
        return None
    for name, function in zip(names, functions):
        function.argtypes, function.restype = SIGNATURES[name]
    return functions
