# cmodes-mpi against the serial cmodes (tests/mpi/mpi_check.py, docs/distributed.md):
# oversubscribed mpirun with up to 4 ranks; skipped (77) with a reason when
# cmodes-mpi was not built.
# Not under the sanitizers (label no-sanitizer; they run in the plain
# pass): the cases that repeat, on another scene, paths the sanitizer pass
# still runs. There the mpirun jobs, one at a time, were 525 s of a
# 683 s pass (CI, session 16). Kept under the sanitizers: equal, vectors,
# damped and matrices on the 3D pile and a fleet (vectors on the pile
# alone, with its injected failures), schur on the 3D pile, and partition
# (2D and star scenes), errors, options, oom and matrices-errors whole.
set(CM_MPI_PLAIN_ONLY equal:bar2d equal:pile2d equal:pile3d-tangential
    equal:star vectors:bar2d vectors:pile2d vectors:pile3d-tangential
    vectors:fleet vectors:star damped:pile2d-damped damped:pile3d-damped
    damped:fleet-dashpots schur:pile2d-damped matrices:bar2d
    matrices:pile2d matrices:fleet)
set(CM_MPI_BIN "")
if(CMODES_HAVE_MPI)
  set(CM_MPI_BIN $<TARGET_FILE:cmodes_mpi>)
endif()
foreach(case equal:bar2d equal:pile2d equal:pile3d equal:pile3d-tangential
             equal:fleet equal:star damped:pile2d-damped damped:pile3d-damped
             damped:pile3d-dashpots damped:fleet-dashpots
             damped:fleet-somedamped schur:pile2d-damped
             schur:pile3d-dashpots partition errors options oom
             vectors:bar2d vectors:pile2d vectors:pile3d
             vectors:pile3d-tangential vectors:fleet vectors:star
             matrices:bar2d matrices:pile2d matrices:pile3d matrices:fleet
             matrices:fleet2500
             matrices-errors)
  string(REPLACE "equal:" "equal_" tname "mpi_${case}")
  string(REPLACE "vectors:" "vectors_" tname "${tname}")
  string(REPLACE "damped:" "damped_" tname "${tname}")
  string(REPLACE "schur:" "schur_" tname "${tname}")
  string(REPLACE "matrices:" "matrices_" tname "${tname}")
  string(REPLACE "-" "_" tname "${tname}")
  add_test(NAME ${tname} COMMAND /usr/bin/python3
           ${CMAKE_CURRENT_SOURCE_DIR}/mpi/mpi_check.py
           $<TARGET_FILE:cmodes_cli> "${CM_MPI_BIN}" ${CMAKE_SOURCE_DIR}/data
           ${case})
  # one mpirun at a time: two oversubscribed jobs of up to 4 ranks on 2
  # cores under the sanitizers once ended one rank-1 error case with
  # mpirun's exit 1 and no message of ours (CI, session 12)
  set(labels mpi)
  if(case IN_LIST CM_MPI_PLAIN_ONLY)
    set(labels "mpi;no-sanitizer")
  endif()
  # COST: started first, so that the one-at-a-time chain of mpirun jobs
  # (most of a pass's time) runs beside the other tests, not after them
  # with a core idle (a fresh clone has no timings for ctest to order by)
  set_tests_properties(${tname} PROPERTIES SKIP_RETURN_CODE 77 TIMEOUT 600
                       LABELS "${labels}" RESOURCE_LOCK mpirun COST 1000)
endforeach()
