# Install rules and the CMake package (find_package(FiMLIR CONFIG)): headers, libraries,
# fi-opt. `cmake --install <build> --prefix <dir>`; test/install builds an out-of-tree
# consumer against the result.
include(GNUInstallDirs)
include(CMakePackageConfigHelpers)
set(FI_INSTALL_CMAKEDIR ${CMAKE_INSTALL_LIBDIR}/cmake/FiMLIR)

install(DIRECTORY ${PROJECT_SOURCE_DIR}/kernels/include/fi
        DESTINATION ${CMAKE_INSTALL_INCLUDEDIR} FILES_MATCHING PATTERN "*.h")
set(FI_EXPORTED_TARGETS fi_runtime fi_heuristics)

if(FI_ENABLE_MLIR)
  install(DIRECTORY ${PROJECT_SOURCE_DIR}/dialect/include/fi ${PROJECT_SOURCE_DIR}/lowering/include/fi
          DESTINATION ${CMAKE_INSTALL_INCLUDEDIR} FILES_MATCHING PATTERN "*.h" PATTERN "*.td")
  install(DIRECTORY ${PROJECT_BINARY_DIR}/dialect/include/fi ${PROJECT_BINARY_DIR}/lowering/include/fi
          DESTINATION ${CMAKE_INSTALL_INCLUDEDIR} FILES_MATCHING PATTERN "*.inc")
  install(DIRECTORY ${PROJECT_SOURCE_DIR}/capi/include/fi-c
          DESTINATION ${CMAKE_INSTALL_INCLUDEDIR} FILES_MATCHING PATTERN "*.h")
  foreach(t MLIRFi MLIRFiLowering FiCAPI)
    if(TARGET ${t})
      target_include_directories(${t} INTERFACE $<INSTALL_INTERFACE:${CMAKE_INSTALL_INCLUDEDIR}>)
      list(APPEND FI_EXPORTED_TARGETS ${t})
    endif()
  endforeach()
  install(TARGETS fi-opt RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR})
  # Installed binaries find libMLIR.so where MLIR is installed, and fi's own libraries.
  set_target_properties(fi-opt PROPERTIES INSTALL_RPATH "${LLVM_LIBRARY_DIR};\$ORIGIN/../${CMAKE_INSTALL_LIBDIR}")
  if(TARGET FiCAPI)
    set_target_properties(FiCAPI PROPERTIES INSTALL_RPATH "${LLVM_LIBRARY_DIR}")
  endif()
  if(TARGET FiPlugin)  # for mlir-opt --load-dialect-plugin / --load-pass-plugin
    install(TARGETS FiPlugin LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR})
  endif()
endif()

install(TARGETS ${FI_EXPORTED_TARGETS} EXPORT FiMLIRTargets
        LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR}
        ARCHIVE DESTINATION ${CMAKE_INSTALL_LIBDIR}
        RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR})
install(EXPORT FiMLIRTargets NAMESPACE FiMLIR:: DESTINATION ${FI_INSTALL_CMAKEDIR})
configure_package_config_file(${PROJECT_SOURCE_DIR}/cmake/FiMLIRConfig.cmake.in
  ${PROJECT_BINARY_DIR}/FiMLIRConfig.cmake
  INSTALL_DESTINATION ${FI_INSTALL_CMAKEDIR}
  PATH_VARS CMAKE_INSTALL_INCLUDEDIR CMAKE_INSTALL_BINDIR)
write_basic_package_version_file(${PROJECT_BINARY_DIR}/FiMLIRConfigVersion.cmake
  VERSION 0.1.0 COMPATIBILITY SameMajorVersion)
install(FILES ${PROJECT_BINARY_DIR}/FiMLIRConfig.cmake
              ${PROJECT_BINARY_DIR}/FiMLIRConfigVersion.cmake
        DESTINATION ${FI_INSTALL_CMAKEDIR})

# The out-of-tree consumer: install into a scratch prefix, build test/install/consumer
# against it, run it (ctest test "install_consumer").
add_test(NAME install_consumer
  COMMAND ${PROJECT_SOURCE_DIR}/test/install/run-consumer.sh ${PROJECT_BINARY_DIR}
          ${PROJECT_BINARY_DIR}/install-consumer "${MLIR_DIR}" ${FI_ENABLE_MLIR})
set_tests_properties(install_consumer PROPERTIES TIMEOUT 600)
