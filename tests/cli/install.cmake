# `cmake --install` puts a rigel that runs into PREFIX/bin. Each run installs
# into its own fresh folder under WORK and removes it afterwards.
string(RANDOM LENGTH 8 tag)
set(prefix ${WORK}/prefix-${tag})
file(REMOVE_RECURSE ${prefix})

execute_process(COMMAND ${CMAKE_COMMAND} --install ${BUILD} --prefix ${prefix}
                RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "cmake --install ${BUILD} --prefix ${prefix} failed (${rc}):\n${out}${err}")
endif()
if(NOT EXISTS ${prefix}/bin/rigel)
  message(FATAL_ERROR "cmake --install left no ${prefix}/bin/rigel:\n${out}")
endif()

execute_process(COMMAND ${prefix}/bin/rigel --version
                RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
string(STRIP "${out}" out)
file(REMOVE_RECURSE ${prefix})
if(NOT rc EQUAL 0 OR NOT out STREQUAL "${VERSION}")
  message(FATAL_ERROR "installed rigel --version: exit ${rc}, printed '${out}' (expected '${VERSION}'):\n${err}")
endif()
message(STATUS "installed rigel --version: ${out}")
