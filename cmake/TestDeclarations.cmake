# What an integration test needs, read from the test's own file: the lines
# REQUIRES, COST_S and TIMEOUT_S that tests/integration/ptproftest.py's
# docstring defines, each written on one line, for example
#
#   REQUIRES = ("torch2",)
#   COST_S = 200
#   TIMEOUT_S = 3600  # a comment may follow
#
# ptprof_test_declarations(<file> <prefix>) sets <prefix>_REQUIRES (a list of
# words), <prefix>_COST_S and <prefix>_TIMEOUT_S (empty where not declared)
# in the caller's scope, and makes an edit to <file> re-run the configure. A
# word it does not know, or a line that begins like a declaration and is not
# one, fails the configure with the file and the line: never ignored, a test
# would otherwise be registered for torches it cannot run on.

# The words REQUIRES may hold, each with its rule in tests/CMakeLists.txt.
# ptprof_check_requirement_words() holds them to ptproftest.py's REQUIREMENTS.
set(PTPROF_TEST_REQUIREMENTS no_torch cuda_torch torch2)

# The words of `line`, a one-line Python tuple of double-quoted words
# (`NAME = ("a", "b")`, `NAME = ("a",)` or `NAME = ()`), into `out`.
function(_ptprof_tuple_words file line out)
  set(_where "${file}: `${line}`")
  if(NOT line MATCHES "^[A-Z_]+ = \\(([^)]*)\\)( +#.*)?$")
    message(FATAL_ERROR "${_where}: not a one-line tuple of words, as `REQUIRES = (\"torch2\",)`")
  endif()
  string(STRIP "${CMAKE_MATCH_1}" _inner)
  if(_inner STREQUAL "")
    set(${out} "" PARENT_SCOPE)
    return()
  endif()
  if(NOT _inner MATCHES "^\"[^\"]*\"(, \"[^\"]*\")*,?$")
    message(FATAL_ERROR "${_where}: not a tuple of double-quoted words, as `REQUIRES = (\"torch2\",)`")
  endif()
  if(_inner MATCHES "^\"[^\"]*\"$")
    message(FATAL_ERROR "${_where}: one word needs its comma to be a tuple, as `REQUIRES = (\"torch2\",)`")
  endif()
  string(REGEX MATCHALL "\"[^\"]*\"" _words "${_inner}")
  string(REPLACE "\"" "" _words "${_words}")
  set(${out} "${_words}" PARENT_SCOPE)
endfunction()

function(ptprof_test_declarations file prefix)
  set_property(DIRECTORY APPEND PROPERTY CMAKE_CONFIGURE_DEPENDS "${file}")
  set(_requires "")
  set(_cost "")
  set(_timeout "")
  set(_seen "")
  file(STRINGS "${file}" _lines ENCODING UTF-8 REGEX "^(REQUIRES|COST_S|TIMEOUT_S)([^A-Za-z0-9_]|$)")
  foreach(line IN LISTS _lines)
    string(REGEX MATCH "^[A-Z_]+" _key "${line}")
    if(_key IN_LIST _seen)
      message(FATAL_ERROR "${file}: ${_key} is declared twice (`${line}`)")
    endif()
    list(APPEND _seen ${_key})
    if(_key STREQUAL "REQUIRES")
      _ptprof_tuple_words("${file}" "${line}" _requires)
      foreach(word IN LISTS _requires)
        if(NOT word IN_LIST PTPROF_TEST_REQUIREMENTS)
          string(REPLACE ";" ", " _known "${PTPROF_TEST_REQUIREMENTS}")
          message(FATAL_ERROR "${file}: unknown requirement \"${word}\" in `${line}` (known: ${_known})")
        endif()
      endforeach()
      list(LENGTH _requires _count)
      if("no_torch" IN_LIST _requires AND _count GREATER 1)
        message(FATAL_ERROR "${file}: `${line}`: no_torch runs no torch, so it cannot need one")
      endif()
    elseif(line MATCHES "^(COST_S|TIMEOUT_S) = ([1-9][0-9]*)( +#.*)?$")
      if(_key STREQUAL "COST_S")
        set(_cost ${CMAKE_MATCH_2})
      else()
        set(_timeout ${CMAKE_MATCH_2})
      endif()
    else()
      message(FATAL_ERROR "${file}: `${line}`: not a whole number of seconds above 0, as `${_key} = 200`")
    endif()
  endforeach()
  set(${prefix}_REQUIRES "${_requires}" PARENT_SCOPE)
  set(${prefix}_COST_S "${_cost}" PARENT_SCOPE)
  set(${prefix}_TIMEOUT_S "${_timeout}" PARENT_SCOPE)
endfunction()

# ptproftest.py's REQUIREMENTS (what a test may declare, and what its main()
# accepts) must be the words there are rules for here.
function(ptprof_check_requirement_words ptproftest)
  set_property(DIRECTORY APPEND PROPERTY CMAKE_CONFIGURE_DEPENDS "${ptproftest}")
  file(STRINGS "${ptproftest}" _line ENCODING UTF-8 REGEX "^REQUIREMENTS = ")
  list(LENGTH _line _count)
  if(NOT _count EQUAL 1)
    message(FATAL_ERROR "${ptproftest}: no one line `REQUIREMENTS = (...)` (found ${_count})")
  endif()
  _ptprof_tuple_words("${ptproftest}" "${_line}" _words)
  set(_rules ${PTPROF_TEST_REQUIREMENTS})
  list(SORT _words)
  list(SORT _rules)
  if(NOT _words STREQUAL _rules)
    message(FATAL_ERROR "${ptproftest}: REQUIREMENTS names ${_words}, tests/CMakeLists.txt has rules for "
                        "${_rules} (cmake/TestDeclarations.cmake): a word needs its rule, a rule its word")
  endif()
endfunction()
