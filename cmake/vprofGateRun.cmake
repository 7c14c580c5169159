# The gate test's steps (vprofGate.cmake), in CMake's script mode so that it
# needs no shell: RUNS times `vprof run` + `vprof analyze --save`, then
# `vprof gate`, whose exit status is the test's.
string(REPLACE "|" ";" WORKLOAD "${WORKLOAD}")
string(REPLACE "|" ";" BASELINE "${BASELINE}")
file(REMOVE_RECURSE "${OUT}")
file(MAKE_DIRECTORY "${OUT}")
set(_root)
if(ROOT)
  set(_root --root ${ROOT})
endif()
set(_runs)
foreach(i RANGE 1 ${RUNS})
  execute_process(COMMAND ${VPROF} run --trace-dir ${OUT}/trace-${i} -- ${WORKLOAD}
                  RESULT_VARIABLE rc OUTPUT_FILE ${OUT}/run-${i}.log ERROR_FILE ${OUT}/run-${i}.log)
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "${NAME}: run ${i} of the workload failed (${rc}); see ${OUT}/run-${i}.log")
  endif()
  execute_process(COMMAND ${VPROF} analyze ${OUT}/trace-${i} ${_root} --bootstrap 0 --save ${OUT}/run-${i}.vprof
                  RESULT_VARIABLE rc OUTPUT_QUIET)
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "${NAME}: vprof analyze of run ${i} failed (${rc})")
  endif()
  file(REMOVE_RECURSE ${OUT}/trace-${i})
  list(APPEND _runs ${OUT}/run-${i}.vprof)
endforeach()
if("$ENV{VPROF_UPDATE_BASELINE}" STREQUAL "1")
  list(LENGTH BASELINE n)
  math(EXPR last "${n} - 1")
  foreach(i RANGE 0 ${last})
    list(GET _runs ${i} from)
    list(GET BASELINE ${i} to)
    configure_file(${from} ${to} COPYONLY)
    message(STATUS "${NAME}: baseline ${to} recorded")
  endforeach()
  return()
endif()
execute_process(COMMAND ${VPROF} gate --baseline-runs ${BASELINE} --runs ${_runs}
                        --max-var-increase ${MAX_VAR} --max-p99-increase ${MAX_P99}
                        --junit ${OUT}/junit.xml --name ${NAME} --markdown ${OUT}/gate.md
                        --json ${OUT}/gate.json
                RESULT_VARIABLE rc)
if(rc EQUAL 3 AND NOT INCONCLUSIVE STREQUAL "fail")
  # The gate could not tell (docs/gate.md); its line above says about how
  # many runs a side would decide. A skip, unless INCONCLUSIVE is pass.
  if(INCONCLUSIVE STREQUAL "pass")
    message(STATUS "${NAME}: vprof gate: inconclusive, counted as a pass (INCONCLUSIVE pass); ${OUT}/gate.md")
  else()
    message(STATUS "${NAME}: vprof gate: inconclusive, skipped (more runs would decide); ${OUT}/gate.md")
  endif()
  return()
endif()
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "${NAME}: vprof gate exit ${rc} (1: regression, 2: error, 3: inconclusive); ${OUT}/gate.md")
endif()
