# Writes OUTPUT, the header that tells a rigel binary which tree it was built
# from (src/harness/provenance.cpp). Run at every build, not only at configure
# time, and rewrites OUTPUT only when its text changes, so that an unchanged
# tree recompiles nothing.
#   - SOURCE_DIR is the top of its own git checkout: `git rev-parse HEAD`, dirty
#     when `git status --porcelain --untracked-files=no` lists anything;
#   - otherwise a file SOURCE_DIR/COMMIT names the commit (scripts/stage_visit.sh
#     writes it into a tree exported from a commit: clean by construction);
#   - otherwise "unknown". A repository around SOURCE_DIR (an export built
#     inside another checkout) is never asked: its commit is not this tree's.
# Usage: cmake -DSOURCE_DIR=... -DOUTPUT=... -P build_commit.cmake
cmake_minimum_required(VERSION 3.25)
foreach(var SOURCE_DIR OUTPUT)
  if(NOT DEFINED ${var})
    message(FATAL_ERROR "build_commit.cmake needs -D${var}=...")
  endif()
endforeach()

set(commit unknown)
set(dirty 0)
# A commit id: 40 (SHA-1) or 64 (SHA-256) lowercase hex digits.
function(is_commit_id text result)
  string(LENGTH "${text}" n)
  if(text MATCHES "^[0-9a-f]+$" AND (n EQUAL 40 OR n EQUAL 64))
    set(${result} TRUE PARENT_SCOPE)
  else()
    set(${result} FALSE PARENT_SCOPE)
  endif()
endfunction()
file(REAL_PATH "${SOURCE_DIR}" source)

find_program(GIT_EXECUTABLE git)
set(own_checkout FALSE)
if(GIT_EXECUTABLE)
  execute_process(COMMAND ${GIT_EXECUTABLE} -C ${source} rev-parse --show-toplevel
                  RESULT_VARIABLE rc OUTPUT_VARIABLE top OUTPUT_STRIP_TRAILING_WHITESPACE ERROR_QUIET)
  if(rc EQUAL 0 AND NOT top STREQUAL "")
    file(REAL_PATH "${top}" top)
    if(top STREQUAL source)
      set(own_checkout TRUE)
    endif()
  endif()
endif()

if(own_checkout)
  execute_process(COMMAND ${GIT_EXECUTABLE} -C ${source} rev-parse HEAD
                  RESULT_VARIABLE rc_head OUTPUT_VARIABLE head OUTPUT_STRIP_TRAILING_WHITESPACE ERROR_QUIET)
  execute_process(COMMAND ${GIT_EXECUTABLE} -C ${source} status --porcelain --untracked-files=no
                  RESULT_VARIABLE rc_status OUTPUT_VARIABLE changes ERROR_QUIET)
  # A checkout without a commit, or whose state git cannot read, is "unknown".
  is_commit_id("${head}" head_ok)
  if(rc_head EQUAL 0 AND rc_status EQUAL 0 AND head_ok)
    set(commit ${head})
    if(NOT changes STREQUAL "")
      set(dirty 1)
    endif()
  endif()
elseif(EXISTS ${source}/COMMIT)
  file(READ ${source}/COMMIT exported)
  string(STRIP "${exported}" exported)
  is_commit_id("${exported}" exported_ok)
  if(exported_ok)
    set(commit ${exported})
  else()
    message(WARNING "${source}/COMMIT holds no commit id; the build records \"unknown\"")
  endif()
endif()

set(text "// Generated at build time by cmake/build_commit.cmake: the commit of the tree
// this binary was built from, and whether its tracked files differed from it.
#pragma once
#define RIGEL_TREE_COMMIT \"${commit}\"
#define RIGEL_TREE_DIRTY ${dirty}
")
set(old "")
if(EXISTS ${OUTPUT})
  file(READ ${OUTPUT} old)
endif()
if(NOT old STREQUAL text)
  file(WRITE ${OUTPUT} "${text}")
endif()
