# The Python interpreters the tests run PyTorch programs with, one per torch:
#   PTPROF_PYTHON        Debian's /usr/bin/python3 (torch 1.13), or the first
#                        python3 on PATH that imports torch
#   PTPROF_VENV_PYTHON   .venv/bin/python of the checkout (pip's torch 2.x),
#                        which scripts/setup.sh creates
# For each, PTPROF_TORCH_PYTHONS gets "<label>|<interpreter>|<version>|<cuda>", the
# label being torch<major>.<minor> (e.g. torch1.13, torch2.15), <cuda> the CUDA
# version the torch was built for (torch.version.cuda) or "none" for a CPU
# build; tests are registered once per entry (tests/CMakeLists.txt). Bench
# targets that link torch use Debian's torch (find_package).
set(PTPROF_PYTHON "" CACHE FILEPATH "Python interpreter with Debian's torch")
set(PTPROF_VENV_PYTHON "${PROJECT_SOURCE_DIR}/.venv/bin/python" CACHE FILEPATH
    "Python interpreter with pip's torch (the project's virtual environment)")

function(_ptprof_torch_of python out_version out_prefix out_cuda)
  set(_probe "import torch, sys; from torch.utils import cmake_prefix_path as p; v = torch.version.cuda or 'none'")
  execute_process(
    COMMAND ${python} -c "${_probe}; sys.stdout.write(';'.join([torch.__version__, p, v]))"
    OUTPUT_VARIABLE _out RESULT_VARIABLE _rc ERROR_QUIET TIMEOUT 120)
  if(_rc EQUAL 0)
    list(GET _out 0 _v)
    list(GET _out 1 _p)
    list(GET _out 2 _c)
    set(${out_version} ${_v} PARENT_SCOPE)
    set(${out_prefix} ${_p} PARENT_SCOPE)
    set(${out_cuda} ${_c} PARENT_SCOPE)
  else()
    set(${out_version} "" PARENT_SCOPE)
  endif()
endfunction()

if(NOT PTPROF_PYTHON)
  foreach(candidate /usr/bin/python3 python3 python)
    find_program(_ptprof_py NAMES ${candidate} NO_CACHE)
    if(_ptprof_py)
      _ptprof_torch_of(${_ptprof_py} _v _p _c)
      if(_v)
        set(PTPROF_PYTHON ${_ptprof_py} CACHE FILEPATH "Python interpreter with Debian's torch" FORCE)
        break()
      endif()
    endif()
    unset(_ptprof_py)
  endforeach()
endif()

set(PTPROF_TORCH_PYTHONS "")
foreach(py ${PTPROF_PYTHON} ${PTPROF_VENV_PYTHON})
  if(EXISTS ${py} OR py STREQUAL PTPROF_PYTHON)
    _ptprof_torch_of(${py} _v _p _c)
    if(_v)
      string(REGEX MATCH "^[0-9]+\\.[0-9]+" _mm ${_v})
      list(APPEND PTPROF_TORCH_PYTHONS "torch${_mm}|${py}|${_v}|${_c}")
      message(STATUS "ptprof: tests run torch ${_v} (CUDA build: ${_c}) with ${py}")
      if(py STREQUAL PTPROF_PYTHON)
        list(APPEND CMAKE_PREFIX_PATH ${_p})
      endif()
    endif()
  endif()
endforeach()
if(NOT PTPROF_TORCH_PYTHONS)
  message(WARNING "ptprof: no Python interpreter imports torch; the PyTorch tests are skipped")
elseif(NOT PTPROF_TORCH_PYTHONS MATCHES "${PTPROF_VENV_PYTHON}")
  message(WARNING "ptprof: ${PTPROF_VENV_PYTHON} does not import torch; only one torch is tested "
                  "(scripts/setup.sh creates the virtual environment)")
endif()
find_package(Torch QUIET)
