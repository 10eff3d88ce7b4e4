# cmodes-mpi: the MPI program of docs/distributed.md, built when MPI (C) and
# ARPACK-ng's PARPACK are found; CMODES_HAVE_MPI tells the tests.
find_package(MPI COMPONENTS C QUIET)
pkg_check_modules(PARPACK QUIET IMPORTED_TARGET parpack)
set(CMODES_HAVE_MPI OFF)
if(MPI_C_FOUND AND PARPACK_FOUND)
  set(CMODES_HAVE_MPI ON)
  file(GLOB CMODES_MPI_SOURCES CONFIGURE_DEPENDS src/mpi/*.c)
  add_executable(cmodes_mpi ${CMODES_MPI_SOURCES} src/cli/args.c)
  set_target_properties(cmodes_mpi PROPERTIES OUTPUT_NAME cmodes-mpi)
  target_include_directories(cmodes_mpi PRIVATE src/mpi)
  target_link_libraries(cmodes_mpi PRIVATE cmodes_static MPI::MPI_C
                        PkgConfig::PARPACK)
  install(TARGETS cmodes_mpi RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR})
  message(STATUS "cmodes: MPI and PARPACK found: building cmodes-mpi")
else()
  message(STATUS "cmodes: MPI or PARPACK not found: cmodes-mpi is off")
endif()
