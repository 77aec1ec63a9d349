# The bridge kit: the sources of libptprof_torch.so, copied to
# share/ptprof/bridge/ in the build tree (which mirrors the install tree) and
# installed there. The bridge is never built here: it must be compiled against
# the torch the target imports, so `ptprof bridge build` (or the agent, on
# demand) compiles it from the kit per torch and caches it.
#
# Every file the bridge includes from this repository must be listed, or the
# on-demand build fails (tests/integration/test_bridge.py builds from the kit).
set(PTPROF_BRIDGE_KIT_FILES
  agent/torch/bridge.cpp
  agent/torch/calibrate_ops.hpp
  agent/torch/collective_facts.hpp
  agent/torch/encode_inputs.hpp
  agent/torch/fork_guard.hpp
  agent/torch/memory_reporter.hpp
  agent/torch/tensor_refs.hpp
  agent/torch/torch_compat.hpp
  agent/include/ptprof/bridge_api.h
  common/include/ptprof/record.hpp
  common/include/ptprof/shapes.hpp
  common/include/ptprof/status.hpp
  common/include/ptprof/check.hpp
  common/include/ptprof/torch_version.hpp
  common/include/ptprof/varint.hpp
  common/src/shapes.cpp
  common/src/torch_version.cpp)

set(PTPROF_BRIDGE_KIT_DIR ${CMAKE_BINARY_DIR}/share/ptprof/bridge)
set(_kit_hashes "")
set(_kit_units "")
foreach(f ${PTPROF_BRIDGE_KIT_FILES})
  # configure_file re-runs CMake when a kit file changes, so the hash below
  # always describes the copy next to it.
  configure_file(${PROJECT_SOURCE_DIR}/${f} ${PTPROF_BRIDGE_KIT_DIR}/${f} COPYONLY)
  file(SHA256 ${PROJECT_SOURCE_DIR}/${f} _h)
  string(APPEND _kit_hashes "${f}:${_h};")
  if(f MATCHES "\\.cpp$")
    string(APPEND _kit_units "  \"${f}\",\n")
  endif()
  get_filename_component(_dir ${f} DIRECTORY)
  install(FILES ${PROJECT_SOURCE_DIR}/${f} DESTINATION ${CMAKE_INSTALL_DATADIR}/ptprof/bridge/${_dir})
endforeach()
string(SHA256 PTPROF_BRIDGE_SOURCE_HASH "${_kit_hashes}")
string(SUBSTRING ${PTPROF_BRIDGE_SOURCE_HASH} 0 16 PTPROF_BRIDGE_SOURCE_HASH)
configure_file(${PROJECT_SOURCE_DIR}/cmake/bridge_kit.hpp.in ${CMAKE_BINARY_DIR}/generated/ptprof/bridge_kit.hpp @ONLY)
message(STATUS "ptprof: bridge kit ${PTPROF_BRIDGE_SOURCE_HASH} in ${PTPROF_BRIDGE_KIT_DIR}")
