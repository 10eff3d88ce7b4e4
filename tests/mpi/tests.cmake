# cmodes-mpi against the serial cmodes (tests/mpi/mpi_check.py, docs/distributed.md):
# oversubscribed mpirun with up to 4 ranks; skipped (77) with a reason when
# cmodes-mpi was not built.
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
  set_tests_properties(${tname} PROPERTIES SKIP_RETURN_CODE 77 TIMEOUT 600
                       LABELS mpi RESOURCE_LOCK mpirun)
endforeach()
