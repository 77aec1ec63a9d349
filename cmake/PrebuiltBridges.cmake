# Bridges prebuilt for the torches the build machine has, shipped in
# share/ptprof/bridges (the wheel sets PTPROF_PREBUILT_BRIDGE_PYTHONS through
# scripts/wheel.sh). The agent loads one when the target's torch has the same
# version and libtorch_cpu.so size (bridge::prebuilt_key), so a user's
# `pip install ptprof` profiles that torch with no compiler. Built by the
# ptprof just built, through the same `ptprof bridge build` users run.
set(PTPROF_PREBUILT_BRIDGE_PYTHONS "" CACHE STRING
    "Interpreters (absolute paths, ;-separated) whose torch gets a bridge built now and installed with ptprof")
if(NOT PTPROF_PREBUILT_BRIDGE_PYTHONS)
  return()
endif()

set(_prebuilt_dir ${CMAKE_BINARY_DIR}/share/ptprof/bridges)
set(_prebuilt_commands)
foreach(py ${PTPROF_PREBUILT_BRIDGE_PYTHONS})
  list(APPEND _prebuilt_commands COMMAND $<TARGET_FILE:ptprof> bridge build --force --python ${py}
       --prebuilt-into ${_prebuilt_dir})
endforeach()
list(TRANSFORM PTPROF_BRIDGE_KIT_FILES PREPEND ${PROJECT_SOURCE_DIR}/ OUTPUT_VARIABLE _kit_sources)
add_custom_command(
  OUTPUT ${_prebuilt_dir}/.built
  COMMAND ${CMAKE_COMMAND} -E rm -rf ${_prebuilt_dir}
  ${_prebuilt_commands}
  COMMAND ${CMAKE_COMMAND} -E touch ${_prebuilt_dir}/.built
  DEPENDS ptprof ${_kit_sources}
  COMMENT "Prebuilding the torch bridges for ${PTPROF_PREBUILT_BRIDGE_PYTHONS}"
  VERBATIM)
add_custom_target(ptprof_prebuilt_bridges ALL DEPENDS ${_prebuilt_dir}/.built)
# The dot files are the builder's locks and markers, not bridges.
install(DIRECTORY ${_prebuilt_dir}/ DESTINATION ${CMAKE_INSTALL_DATADIR}/ptprof/bridges
        PATTERN ".*" EXCLUDE PATTERN "build.log" EXCLUDE)
