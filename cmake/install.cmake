# cmake --install: the headers, libmoejit.so and libmoejit.a, a CMake package
# (find_package(moejit CONFIG): moejit::moejit, the shared library, and
# moejit::moejit_static) and moejit.pc for pkg-config; the command when it
# is built.
include(GNUInstallDirs)
include(CMakePackageConfigHelpers)

if(SKBUILD)
  # pip install (pyproject.toml): the wheel holds the shared library inside
  # the Python package, which loads it by path; nothing else is installed.
  install(FILES $<TARGET_FILE:moejit_shared> DESTINATION moejit RENAME libmoejit.so)
  configure_file(${PROJECT_SOURCE_DIR}/python/moejit/_build_info.py.in
                 ${PROJECT_BINARY_DIR}/python/_build_info.py @ONLY)
  install(FILES ${PROJECT_BINARY_DIR}/python/_build_info.py DESTINATION moejit)
  return()
endif()

install(TARGETS moejit_shared moejit_static EXPORT moejitTargets
        LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR}
        ARCHIVE DESTINATION ${CMAKE_INSTALL_LIBDIR})
install(DIRECTORY ${PROJECT_SOURCE_DIR}/include/moejit DESTINATION ${CMAKE_INSTALL_INCLUDEDIR})
if(MOEJIT_BUILD_TOOLS)
  install(TARGETS moejit_cli RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR})
endif()

set(MOEJIT_CMAKE_DIR ${CMAKE_INSTALL_LIBDIR}/cmake/moejit)
install(EXPORT moejitTargets NAMESPACE moejit:: DESTINATION ${MOEJIT_CMAKE_DIR})
configure_package_config_file(${PROJECT_SOURCE_DIR}/cmake/moejitConfig.cmake.in
                              ${PROJECT_BINARY_DIR}/moejitConfig.cmake
                              INSTALL_DESTINATION ${MOEJIT_CMAKE_DIR})
# 0.x: a new minor version may change the API.
write_basic_package_version_file(${PROJECT_BINARY_DIR}/moejitConfigVersion.cmake
                                 COMPATIBILITY SameMinorVersion)
install(FILES ${PROJECT_BINARY_DIR}/moejitConfig.cmake
              ${PROJECT_BINARY_DIR}/moejitConfigVersion.cmake
        DESTINATION ${MOEJIT_CMAKE_DIR})

# pkg-config: the shared library; `--static` adds what libmoejit.a needs.
string(JOIN " " MOEJIT_PC_PRIVATE
  ${MOEJIT_LLVM_ROOT}/lib/libLLVMSupport.a ${MOEJIT_LLVM_ROOT}/lib/libLLVMDemangle.a
  -ltinfo -lpthread -ldl)
file(RELATIVE_PATH MOEJIT_PC_TO_PREFIX /prefix/${CMAKE_INSTALL_LIBDIR}/pkgconfig /prefix)
configure_file(${PROJECT_SOURCE_DIR}/cmake/moejit.pc.in ${PROJECT_BINARY_DIR}/moejit.pc @ONLY)
install(FILES ${PROJECT_BINARY_DIR}/moejit.pc DESTINATION ${CMAKE_INSTALL_LIBDIR}/pkgconfig)
