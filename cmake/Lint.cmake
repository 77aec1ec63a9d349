# The house rules (.clang-format, .clang-tidy) are part of the test command:
# ctest's `lint` runs scripts/lint.sh on this build's compile_commands.json.
find_program(PTPROF_CLANG_TIDY NAMES clang-tidy-14 clang-tidy)
find_program(PTPROF_CLANG_FORMAT NAMES clang-format-14 clang-format)
if(PTPROF_CLANG_TIDY AND PTPROF_CLANG_FORMAT)
  add_test(NAME lint COMMAND ${PROJECT_SOURCE_DIR}/scripts/lint.sh ${CMAKE_BINARY_DIR})
  set_tests_properties(lint PROPERTIES
    ENVIRONMENT "CLANG_TIDY=${PTPROF_CLANG_TIDY};CLANG_FORMAT=${PTPROF_CLANG_FORMAT}"
    TIMEOUT 900)
else()
  message(WARNING "clang-tidy or clang-format not found: the lint test is not defined")
endif()
