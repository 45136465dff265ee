# cmake/build_commit.cmake, the build step that stamps the binary with the
# commit of the tree it was built from: its own checkout's commit and dirty
# state; an export's COMMIT file; "unknown" otherwise, and never the commit of
# a repository around the tree (an export built inside another checkout once
# recorded the outer checkout's commit, dirty).
# Usage: cmake -DSCRIPT=cmake/build_commit.cmake -DWORK=<folder> -P build_commit.cmake
find_program(GIT git REQUIRED)
file(REMOVE_RECURSE ${WORK})
file(MAKE_DIRECTORY ${WORK})
set(header ${WORK}/build_commit.hpp)

function(git dir)
  execute_process(COMMAND ${GIT} -C ${dir} -c user.name=rigel -c user.email=rigel@example.invalid
                          -c commit.gpgsign=false ${ARGN}
                  RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err OUTPUT_STRIP_TRAILING_WHITESPACE)
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "git ${ARGN} in ${dir}: ${err}")
  endif()
  set(git_out "${out}" PARENT_SCOPE)
endfunction()

function(expect source commit dirty)
  execute_process(COMMAND ${CMAKE_COMMAND} -DSOURCE_DIR=${source} -DOUTPUT=${header} -P ${SCRIPT}
                  RESULT_VARIABLE rc ERROR_VARIABLE err)
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "build_commit.cmake failed for ${source}: ${err}")
  endif()
  file(READ ${header} text)
  if(NOT text MATCHES "#define RIGEL_TREE_COMMIT \"${commit}\"\n#define RIGEL_TREE_DIRTY ${dirty}\n")
    message(FATAL_ERROR "${source}: expected commit ${commit}, dirty ${dirty}; got:\n${text}")
  endif()
  message(STATUS "ok: ${source} -> ${commit} dirty=${dirty}")
endfunction()

# An outer checkout with a commit of its own, and changes (dirty).
set(outer ${WORK}/outer)
file(MAKE_DIRECTORY ${outer})
git(${outer} init -q)
file(WRITE ${outer}/a.txt "outer\n")
git(${outer} add a.txt)
git(${outer} commit -q -m outer)
git(${outer} rev-parse HEAD)
set(outer_commit ${git_out})
file(APPEND ${outer}/a.txt "changed\n")

# An exported tree inside it: its COMMIT file, clean; without one, "unknown".
set(export ${outer}/export)
file(MAKE_DIRECTORY ${export})
file(WRITE ${export}/CMakeLists.txt "# exported\n")
set(exported_commit 0123456789abcdef0123456789abcdef01234567)
file(WRITE ${export}/COMMIT "${exported_commit}\n")
expect(${export} ${exported_commit} 0)
file(REMOVE ${export}/COMMIT)
expect(${export} unknown 0)
file(WRITE ${export}/COMMIT "not a commit\n")
expect(${export} unknown 0)
file(READ ${header} text)
if(text MATCHES "${outer_commit}")
  message(FATAL_ERROR "an export recorded the commit of the checkout around it")
endif()

# A checkout of its own (nested in the outer one): its HEAD; dirty only when a
# tracked file changed, not for an untracked one.
set(inner ${outer}/inner)
file(MAKE_DIRECTORY ${inner})
git(${inner} init -q)
file(WRITE ${inner}/b.txt "inner\n")
git(${inner} add b.txt)
git(${inner} commit -q -m inner)
git(${inner} rev-parse HEAD)
set(inner_commit ${git_out})
expect(${inner} ${inner_commit} 0)
file(WRITE ${inner}/untracked.txt "x\n")
expect(${inner} ${inner_commit} 0)
file(APPEND ${inner}/b.txt "changed\n")
expect(${inner} ${inner_commit} 1)
# A COMMIT file does not outrank the checkout's own history.
file(WRITE ${inner}/COMMIT "${exported_commit}\n")
expect(${inner} ${inner_commit} 1)

# A folder of the checkout below its top is not the top: "unknown".
file(MAKE_DIRECTORY ${inner}/sub)
expect(${inner}/sub unknown 0)

# An unchanged tree leaves the header alone (nothing recompiles).
expect(${inner} ${inner_commit} 1)
file(TIMESTAMP ${header} before "%Y%m%d%H%M%S%f")
execute_process(COMMAND ${CMAKE_COMMAND} -E sleep 0.05)
expect(${inner} ${inner_commit} 1)
file(TIMESTAMP ${header} after "%Y%m%d%H%M%S%f")
if(NOT before STREQUAL after)
  message(FATAL_ERROR "the header was rewritten although nothing changed (${before} -> ${after})")
endif()
file(REMOVE_RECURSE ${WORK})
