# vprof_add_gate_test: a ctest test that runs a workload under vprof and gates
# it against a baseline (docs/gate.md). Installed with the package.
#
#   vprof_add_gate_test(<name>
#     COMMAND <program> [<arg>...]     the workload (a target or a program); it annotates its intervals
#     BASELINE <file>...               saved profiles of the baseline build, one per run
#     [RUNS <n>]                       runs of the workload (default: one per BASELINE file)
#     [ROOT <function>]                root of the variance tree (default: the latency)
#     [MAX_VAR_INCREASE <pct>]         default 10%
#     [MAX_P99_INCREASE <pct>]         default 5%
#     [INCONCLUSIVE skip|pass|fail]    default skip
#     [WORKING_DIRECTORY <dir>])
#
# The test fails (exit 1) with the gate's verdict, which names the factors
# that grew, and writes <build>/vprof-gate/<name>/junit.xml, gate.md and
# gate.json. When the gate cannot tell (an interval on both sides of a
# threshold, or one run a side, as with one BASELINE file or RUNS 1: vprof
# gate's exit 3, docs/gate.md) the test is skipped, saying
# about how many runs would decide, unless INCONCLUSIVE says pass or fail. Run the tests with VPROF_UPDATE_BASELINE=1 in the environment to
# record the runs as the BASELINE files instead (on the baseline's commit).
set(_vprof_gate_dir "${CMAKE_CURRENT_LIST_DIR}")

function(vprof_add_gate_test name)
  cmake_parse_arguments(PARSE_ARGV 1 G "" "RUNS;ROOT;MAX_VAR_INCREASE;MAX_P99_INCREASE;INCONCLUSIVE;WORKING_DIRECTORY"
                        "COMMAND;BASELINE")
  if(NOT G_COMMAND OR NOT G_BASELINE)
    message(FATAL_ERROR "vprof_add_gate_test(${name}): COMMAND and BASELINE are required")
  endif()
  list(LENGTH G_BASELINE _n)
  if(NOT G_RUNS)
    set(G_RUNS ${_n})
  endif()
  if(NOT G_MAX_VAR_INCREASE)
    set(G_MAX_VAR_INCREASE 10%)
  endif()
  if(NOT G_MAX_P99_INCREASE)
    set(G_MAX_P99_INCREASE 5%)
  endif()
  if(NOT G_INCONCLUSIVE)
    set(G_INCONCLUSIVE skip)
  endif()
  if(NOT G_INCONCLUSIVE MATCHES "^(skip|pass|fail)$")
    message(FATAL_ERROR "vprof_add_gate_test(${name}): INCONCLUSIVE is skip, pass or fail, not ${G_INCONCLUSIVE}")
  endif()
  if(NOT G_WORKING_DIRECTORY)
    set(G_WORKING_DIRECTORY ${CMAKE_CURRENT_BINARY_DIR})
  endif()
  set(_vprof ${vprof_EXECUTABLE})
  if(NOT _vprof)
    set(_vprof vprof)
  endif()
  # A target of this project names its file, as in add_test(COMMAND).
  list(GET G_COMMAND 0 _prog)
  if(TARGET ${_prog})
    list(REMOVE_AT G_COMMAND 0)
    list(INSERT G_COMMAND 0 "$<TARGET_FILE:${_prog}>")
  endif()
  # Lists travel to the script with '|' between items (';' would split the -D).
  string(REPLACE ";" "|" _cmd "${G_COMMAND}")
  string(REPLACE ";" "|" _base "${G_BASELINE}")
  add_test(NAME ${name}
    COMMAND ${CMAKE_COMMAND} -DVPROF=${_vprof} -DOUT=${CMAKE_CURRENT_BINARY_DIR}/vprof-gate/${name}
            -DNAME=${name} -DRUNS=${G_RUNS} -DROOT=${G_ROOT} -DMAX_VAR=${G_MAX_VAR_INCREASE}
            -DMAX_P99=${G_MAX_P99_INCREASE} -DINCONCLUSIVE=${G_INCONCLUSIVE} "-DWORKLOAD=${_cmd}"
            "-DBASELINE=${_base}" -P ${_vprof_gate_dir}/vprofGateRun.cmake
    WORKING_DIRECTORY ${G_WORKING_DIRECTORY})
  set_tests_properties(${name} PROPERTIES SKIP_REGULAR_EXPRESSION "vprof gate: inconclusive, skipped")
endfunction()
