# cmodes-mpi: the MPI program of docs/distributed.md, built when MPI (C) and
# ARPACK-ng's PARPACK are found; CMODES_HAVE_MPI tells the tests.
find_package(MPI COMPONENTS C QUIET)
pkg_check_modules(PARPACK QUIET IMPORTED_TARGET parpack)
set(CMODES_HAVE_MPI OFF)
if(MPI_C_FOUND AND PARPACK_FOUND)
  set(CMODES_HAVE_MPI ON)
  file(GLOB CMODES_MPI_SOURCES CONFIGURE_DEPENDS src/mpi/*.c)
  list(REMOVE_ITEM CMODES_MPI_SOURCES ${CMAKE_CURRENT_SOURCE_DIR}/src/mpi/main.c)
  # --matrices --vectors writes the file of `cmodes analyze --vectors`
  list(APPEND CMODES_MPI_SOURCES
       ${CMAKE_CURRENT_SOURCE_DIR}/src/cli/cmd_analyze_vectors.c)
  # the partition, halo and solves (also linked by the SLEPc bench)
  add_library(cmodes_mpi_core STATIC ${CMODES_MPI_SOURCES})
  target_include_directories(cmodes_mpi_core PUBLIC src/mpi)
  target_link_libraries(cmodes_mpi_core PUBLIC cmodes_static MPI::MPI_C
                        PkgConfig::PARPACK)
  add_executable(cmodes_mpi src/mpi/main.c src/cli/args.c)
  set_target_properties(cmodes_mpi PROPERTIES OUTPUT_NAME cmodes-mpi)
  target_link_libraries(cmodes_mpi PRIVATE cmodes_mpi_core)
  # SLEPc's Krylov-Schur on the same distributed operator: a bench program,
  # only when Debian's slepc-dev is there (docs/distributed.md)
  pkg_check_modules(SLEPC QUIET IMPORTED_TARGET slepc)
  if(SLEPC_FOUND)
    add_executable(bench_mpi_slepc bench/slepc/bench_mpi_slepc.c)
    target_link_libraries(bench_mpi_slepc PRIVATE cmodes_mpi_core
                          PkgConfig::SLEPC)
    set_target_properties(bench_mpi_slepc PROPERTIES RUNTIME_OUTPUT_DIRECTORY
                          ${CMAKE_BINARY_DIR}/bench)
    message(STATUS "cmodes: SLEPc found: building bench/bench_mpi_slepc")
  endif()
  install(TARGETS cmodes_mpi RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR})
  message(STATUS "cmodes: MPI and PARPACK found: building cmodes-mpi")
else()
  message(STATUS "cmodes: MPI or PARPACK not found: cmodes-mpi is off")
endif()
