# One ctest case per scenario of a C test that names its own: read by
# ctest (the directory's TEST_INCLUDE_FILES) each time it loads the tests,
# so the binary's table is the only list and a scenario added to it is a
# case without touching CMake.  Asks SCENARIO_EXE --list (one name a
# line) and adds SCENARIO_PREFIX.NAME running SCENARIO_EXE NAME.  When
# the binary is missing (not built) or its --list fails or lists nothing,
# adds SCENARIO_PREFIX.list instead, which fails saying why: the cases
# never vanish in silence.
#
# Set by the including file: SCENARIO_EXE, SCENARIO_PREFIX, and
# SCENARIO_CMAKE (cmake, for that failing case: ctest does not set
# CMAKE_COMMAND); SCENARIO_LABELS, the cases' labels, where set.
set(_names "")
set(_why "")
if(NOT EXISTS "${SCENARIO_EXE}")
  set(_why "not built")
else()
  execute_process(COMMAND "${SCENARIO_EXE}" --list
    OUTPUT_VARIABLE _out ERROR_VARIABLE _err RESULT_VARIABLE _rc)
  string(REGEX MATCHALL "[^\n]+" _names "${_out}")
  if(NOT _rc EQUAL 0)
    set(_why "--list failed (${_rc}): ${_err}")
    set(_names "")
  elseif(NOT _names)
    set(_why "--list named no scenario")
  endif()
  foreach(_n IN LISTS _names)
    if(NOT _n MATCHES "^[A-Za-z0-9_]+([.][A-Za-z0-9_]+)?$")
      set(_why "scenario name '${_n}' is not [A-Za-z0-9_]+, or LAYER.NAME")
      set(_names "")
    endif()
  endforeach()
endif()
if(_why)
  add_test("${SCENARIO_PREFIX}.list" "${SCENARIO_CMAKE}" -E echo
    "${SCENARIO_EXE}: ${_why}")
  set_tests_properties("${SCENARIO_PREFIX}.list" PROPERTIES WILL_FAIL TRUE)
endif()
foreach(_n IN LISTS _names)
  add_test("${SCENARIO_PREFIX}.${_n}" "${SCENARIO_EXE}" "${_n}")
  if(SCENARIO_LABELS)
    set_tests_properties("${SCENARIO_PREFIX}.${_n}" PROPERTIES
      LABELS "${SCENARIO_LABELS}")
  endif()
endforeach()
