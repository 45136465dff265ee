# The library's install (the component "library") is a CMake package a program outside the tree builds
# against: install it into a fresh prefix, configure tests/package with only that prefix to find rigel in,
# build examples/gemm_mlp.cpp there, and check that the program links and starts (without a GPU it says
# "skipped" and exits 77, as it does in the tree). Everything under WORK is removed afterwards.
string(RANDOM LENGTH 8 tag)
set(work ${WORK}/package-${tag})
file(REMOVE_RECURSE ${work})

function(run what)
  execute_process(COMMAND ${ARGN} RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
  if(NOT rc EQUAL 0)
    file(REMOVE_RECURSE ${work})
    message(FATAL_ERROR "${what} failed (${rc}):\n${out}${err}")
  endif()
endfunction()

run("cmake --install --component library" ${CMAKE_COMMAND} --install ${BUILD} --component library
    --prefix ${work}/prefix)
foreach(f include/rigel/gemm.hpp include/rigel/attention.hpp lib/cmake/rigel/rigelConfig.cmake)
  if(NOT EXISTS ${work}/prefix/${f})
    file(GLOB_RECURSE got RELATIVE ${work}/prefix ${work}/prefix/*)
    file(REMOVE_RECURSE ${work})
    message(FATAL_ERROR "the library's install has no ${f}; it has: ${got}")
  endif()
endforeach()
if(EXISTS ${work}/prefix/bin/rigel)
  file(REMOVE_RECURSE ${work})
  message(FATAL_ERROR "the library's install also copied the binary (it belongs to the default component)")
endif()
run("configuring a program against the installed package" ${CMAKE_COMMAND} -S ${SOURCE}/tests/package
    -B ${work}/user -G Ninja -DCMAKE_BUILD_TYPE=Release -DCMAKE_PREFIX_PATH=${work}/prefix
    -DCUDAToolkit_ROOT=${CUDA_ROOT} -DRIGEL_EXAMPLE=${SOURCE}/examples/gemm_mlp.cpp)
run("building it" ${CMAKE_COMMAND} --build ${work}/user)
execute_process(COMMAND ${work}/user/gemm_mlp RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
file(REMOVE_RECURSE ${work})
if(NOT rc EQUAL 0 AND NOT rc EQUAL 77)
  message(FATAL_ERROR "the program built against the installed package exited ${rc}:\n${out}${err}")
endif()
message(STATUS "built against the installed package; it exited ${rc}")
