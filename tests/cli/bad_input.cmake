# Bad input: one clear line on stderr, a non-zero exit, and nothing already in
# the output folder touched.
file(REMOVE_RECURSE ${WORK})
file(MAKE_DIRECTORY ${WORK}/out)
file(WRITE ${WORK}/out/keep.csv "earlier,results\n1,2\n")

function(check_error what rc err)
  if(rc EQUAL 0)
    message(FATAL_ERROR "rigel ${what}: exited 0, expected an error")
  endif()
  string(STRIP "${err}" err)
  string(REGEX MATCHALL "\n" lines "${err}")
  list(LENGTH lines nl)
  if(NOT err MATCHES "^rigel: " OR nl GREATER 0)
    message(FATAL_ERROR "rigel ${what}: expected one 'rigel: ...' line on stderr, got:\n${err}")
  endif()
  message(STATUS "ok (${rc}): ${what} -> ${err}")
endfunction()

function(expect_error)
  execute_process(COMMAND ${RIGEL} ${ARGN} RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
  check_error("${ARGN}" "${rc}" "${err}")
endfunction()

# The same, and the line must hold `part`: a case that names the flag under
# test fails for that flag, not for some other mistake on its command line.
function(expect_error_saying part)
  execute_process(COMMAND ${RIGEL} ${ARGN} RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
  check_error("${ARGN}" "${rc}" "${err}")
  string(FIND "${err}" "${part}" at)
  if(at EQUAL -1)
    message(FATAL_ERROR "rigel ${ARGN}: expected the error to say '${part}', got:\n${err}")
  endif()
endfunction()

# The same with an empty --out last (a list cannot carry an empty argument).
function(expect_error_empty_out)
  execute_process(COMMAND ${RIGEL} ${ARGN} --out "" RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
  check_error("${ARGN} --out ''" "${rc}" "${err}")
endfunction()

expect_error(ladder --paired --verify-only --sizes 8 --out ${WORK}/out)
expect_error(launch --nproc 0 -- true)
expect_error(launch --nproc 2)
expect_error(fleet --out ${WORK}/out --suites nosuch)
expect_error(fleet --out ${WORK}/out --suites cpu)
expect_error(fleet --out ${WORK}/out --no-probes --suites)
expect_error(dist allreduce --min-bytes 3 --out ${WORK}/out)
expect_error(dist allreduce --min-bytes 4096 --max-bytes 1024 --out ${WORK}/out)
expect_error(ladder --sizes 0 --out ${WORK}/out)
expect_error(ladder --sizes -5 --out ${WORK}/out)
expect_error(ladder --sizes abc --out ${WORK}/out)
expect_error(ladder --sizes 12x34 --out ${WORK}/out)
expect_error(ladder --sizes 3000000000 --out ${WORK}/out)
expect_error(ladder --sizes 2000000000x2000000000x2000000000 --out ${WORK}/out)
expect_error(ladder --sizes 200000 --out ${WORK}/out)
expect_error(ladder --rungs k99_nothing --out ${WORK}/out)
expect_error(ladder --dtype f12 --out ${WORK}/out)
expect_error(ladder --backend cpu --dtype bf16 --out ${WORK}/out)
expect_error(ladder --backend gpu --out ${WORK}/out)
expect_error(ladder --recipe zeros --out ${WORK}/out)
expect_error(ladder --sizes 8 --out /proc/rigel_cannot_write_here)
expect_error(ladder --sizes 99999999999999999999 --out ${WORK}/out)

# Every numeric option: negative, non-finite, out-of-range and overflowing
# values are refused with one line, never read as the default, clamped or
# wrapped (--seed -1 once became 2^64-1; --warmup inf or 1e9 once hung).
foreach(bad -1 1.5 18446744073709551616 99999999999999999999999 abc 0x10 +3)
  expect_error(ladder --sizes 8 --seed ${bad} --out ${WORK}/out)
  expect_error(probe all --seed ${bad} --out ${WORK}/out)
endforeach()
foreach(option --warmup --min-time)
  foreach(bad inf -inf nan -1 -0.5 1e9 61 1e400 abc 1s)
    expect_error(ladder --sizes 8 ${option} ${bad} --out ${WORK}/out)
  endforeach()
endforeach()
foreach(bad -1 1.5 100000 99999999999999999999 abc)
  expect_error(ladder --sizes 8 --threads ${bad} --out ${WORK}/out)
endforeach()

# Options that conflict, or that would be ignored, are refused.
expect_error(ladder --list --sizes 8)
expect_error(ladder --list --out ${WORK}/out)
expect_error(ladder --verify-only --warmup 0.1 --sizes 8 --out ${WORK}/out)
expect_error(ladder --verify-only --min-time 0.1 --sizes 8 --out ${WORK}/out)
expect_error(ladder --backend cuda --threads 1 --sizes 8 --out ${WORK}/out)
expect_error(ladder --rungs k01_cpu_naive --threads 1 --sizes 8 --out ${WORK}/out)
expect_error(ladder --dtype all f32 --sizes 8 --out ${WORK}/out)
expect_error(ladder --dtype f32 f32 --sizes 8 --out ${WORK}/out)
expect_error(ladder --sizes 8 8x8x8 --out ${WORK}/out)
# A suite sets the backend, rungs, types, sizes and timing: an unknown suite,
# and any of those options beside one, are refused.
expect_error(ladder --suite no_such_suite --out ${WORK}/out)
foreach(option "--sizes;8" "--dtype;f32" "--backend;cpu" "--rungs;k01_cpu_naive" "--warmup;0.1" "--min-time;0.1")
  expect_error(ladder --suite cpu ${option} --out ${WORK}/out)
endforeach()
expect_error(ladder --suite gpu_short --threads 1 --out ${WORK}/out)
expect_error(ladder --list-suites --suite cpu)
expect_error(ladder --list-suites --out ${WORK}/out)
expect_error(probe --list all)
expect_error(probe --list --seed 3)
# An empty folder name: once ran everything, wrote nothing and exited 0.
expect_error_empty_out(ladder --sizes 8)
expect_error_empty_out(probe all)

expect_error(frobnicate)
expect_error(probe nonsense_probe --out ${WORK}/out)
expect_error(probe --out ${WORK}/out)
# rigel gemm: every option is checked before the device is looked for.
expect_error(gemm)
expect_error(gemm verify --suite no_such_suite --out ${WORK}/out)
expect_error(gemm bench --out ${WORK}/out)
expect_error(gemm bench --suite verify --out ${WORK}/out)
expect_error(gemm bench --suite gpt2 --seed -1 --out ${WORK}/out)
foreach(bad inf -1 61 abc)
  expect_error(gemm bench --suite small --min-time ${bad} --out ${WORK}/out)
  expect_error(gemm bench --suite small --warmup ${bad} --out ${WORK}/out)
endforeach()
expect_error(gemm run --m 8 --n 8 --out ${WORK}/out)
foreach(sizes "0;8;8" "8;-3;8" "8;8;3000000000" "8;8;1.5")
  list(GET sizes 0 m)
  list(GET sizes 1 n)
  list(GET sizes 2 k)
  expect_error(gemm run --m ${m} --n ${n} --k ${k} --out ${WORK}/out)
endforeach()
foreach(option "--layout;XY" "--type;f12" "--type;f32" "--out-type;e4m3" "--epilogue;gelu" "--alpha;nan" "--group-m;0"
        "--group-m;x" "--beta;1e99")
  expect_error(gemm run --m 8 --n 8 --k 8 ${option} --out ${WORK}/out)
endforeach()
expect_error(gemm run --m 8 --n 8 --k 8 --type e4m3 --layout NN --out ${WORK}/out)
# --kernel: a name the table has, and a kernel the operand type has.
expect_error(gemm bench --suite small --kernel 64x64 --out ${WORK}/out)
expect_error(gemm run --m 8 --n 8 --k 8 --kernel 64x64 --out ${WORK}/out)
expect_error(gemm run --m 8 --n 8 --k 16 --type e4m3 --kernel pingpong --out ${WORK}/out)
# --group-m orders the ping-pong kernels only.
expect_error(gemm run --m 8 --n 8 --k 8 --kernel 128x256 --group-m 2 --out ${WORK}/out)
expect_error(gemm list --suite nonsense)
expect_error(gemm list --suite small --sms 0)
expect_error_empty_out(gemm verify)
# rigel attention: the same, before the device is looked for.
expect_error(attention)
expect_error(attention verify --suite no_such_suite --out ${WORK}/out)
expect_error(attention verify --kernel fa9 --out ${WORK}/out)
expect_error(attention bench --suite gpt2 --kernel all --out ${WORK}/out)
expect_error(attention bench --out ${WORK}/out)
expect_error(attention bench --suite verify --out ${WORK}/out)
expect_error(attention bench --suite sdpa --kernel fa9 --out ${WORK}/out)
expect_error(attention bench --suite sdpa --min-time -1 --out ${WORK}/out)
expect_error(attention bench --suite gpt2 --seed -1 --out ${WORK}/out)
expect_error(attention bench --suite targets --cases no_such_case --out ${WORK}/out)
expect_error(attention bench --suite targets --cases s4096,,d128 --out ${WORK}/out)
expect_error(attention list --suite nonsense)
expect_error_empty_out(attention verify)
expect_error(train)
# rigel train run: each case on a valid token file (src/train/token_file.hpp:
# 256 int32 of header, magic 20240520, version 1, the count, then uint16
# tokens), so that only the option under test is wrong; 300 tokens hold one
# batch of the default 4 x 64, a short file of 100 does not.
find_program(PYTHON3 python3 REQUIRED)
foreach(file_and_count "tokens.bin;300" "short.bin;100")
  list(GET file_and_count 0 name)
  list(GET file_and_count 1 count)
  execute_process(COMMAND ${PYTHON3} -c "import struct, sys
n = int(sys.argv[2])
with open(sys.argv[1], 'wb') as f:
    f.write(struct.pack('<256i', 20240520, 1, n, *([0] * 253)))
    f.write(struct.pack('<%dH' % n, *[(i * 7 + 3) % 1000 for i in range(n)]))" ${WORK}/${name} ${count}
                  RESULT_VARIABLE rc)
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "cannot write the token file ${WORK}/${name}")
  endif()
endforeach()
set(tokens ${WORK}/tokens.bin)
expect_error_saying("--data is required" train run)
expect_error_saying("no_such_tokens.bin' does not exist" train run --data ${WORK}/no_such_tokens.bin)
expect_error_saying("--model 'gpt3' is not tiny or gpt2" train run --data ${tokens} --model gpt3)
expect_error_saying("--backend 'tpu' is not" train run --data ${tokens} --backend tpu)
expect_error_saying("--batch '0' is not an integer" train run --data ${tokens} --batch 0)
expect_error_saying("--lr 'nan' is not a finite number" train run --data ${tokens} --lr nan)
expect_error_saying("need a checkpoint file" train run --data ${tokens} --resume)
expect_error_saying("--shard-optimizer shards" train run --data ${tokens} --shard-optimizer)
expect_error_saying("--deterministic takes --backend cuda" train run --data ${tokens} --deterministic)
expect_error_saying("--deterministic takes --backend cuda" train run --data ${tokens} --backend cuda-vendor
                    --deterministic)
# Found before the first step, not after the last one: a validation file too
# short for one batch, and a checkpoint folder that cannot be written.
expect_error_saying("short.bin' holds 100 tokens" train run --data ${tokens} --val ${WORK}/short.bin)
expect_error_saying("cannot be written" train run --data ${tokens} --checkpoint /proc/rigel_test.ckpt)
# A checkpoint (step 0) that a fresh run will not write over, and that resumes
# only with the options it was written with (here: another schedule).
execute_process(COMMAND ${RIGEL} train run --data ${tokens} --init-only --checkpoint ${WORK}/init.ckpt
                RESULT_VARIABLE rc OUTPUT_QUIET ERROR_VARIABLE err)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "rigel train run --init-only failed (${rc}):\n${err}")
endif()
expect_error_saying("init.ckpt exists: pass --resume" train run --data ${tokens} --checkpoint ${WORK}/init.ckpt)
expect_error_saying("was written by a run with other options" train run --data ${tokens} --checkpoint
                    ${WORK}/init.ckpt --resume --steps 30)
expect_error(train sample)
expect_error(train sample --checkpoint ${WORK}/no_such.ckpt --tokenizer ${WORK}/no_such.tiktoken)
expect_error(train sample --checkpoint ${WORK}/no_such.ckpt --temperature -1)
expect_error(train check --seed -3 --out ${WORK}/out)
expect_error_empty_out(train check)
expect_error_empty_out(attention bench --suite gpt2)
expect_error_empty_out(gemm bench --suite small)
# A vendor comparison the vendor has no GEMM for: refused before the device is
# asked for (so here too, without one), nothing written.
expect_error_saying("cuBLASLt documents no e5m2 x e5m2 matmul" emulate --path wgmma_e5m2 --against cublaslt
                    --out ${WORK}/out)
expect_error_saying("cublasGemmEx, which takes no fp8 operands" emulate --path wgmma_e5m2 --against cublas
                    --out ${WORK}/out)

file(READ ${WORK}/out/keep.csv kept)
if(NOT kept STREQUAL "earlier,results\n1,2\n")
  message(FATAL_ERROR "an earlier result in the output folder was changed")
endif()
file(GLOB leftovers ${WORK}/out/*)
list(LENGTH leftovers n)
if(NOT n EQUAL 1)
  message(FATAL_ERROR "bad input left files in the output folder: ${leftovers}")
endif()

# A file already in the output folder is never replaced, whoever wrote it: here
# a sidecar under the name the run would take first, with no CSV beside it
# (the run once checked only the CSV's name, then overwrote this file).
execute_process(COMMAND ${RIGEL} env OUTPUT_VARIABLE env_out)
if(NOT env_out MATCHES "git_commit +([0-9a-z]*)")
  message(FATAL_ERROR "rigel env names no git_commit:\n${env_out}")
endif()
string(SUBSTRING "${CMAKE_MATCH_1}" 0 7 commit7)
string(TIMESTAMP today "%Y-%m-%d" UTC)
set(theirs ${WORK}/taken/${today}_${commit7}_ladder.json)
file(WRITE ${theirs} "not rigel's\n")
execute_process(COMMAND ${RIGEL} ladder --backend cpu --rungs k01_cpu_naive --sizes 8 --warmup 0 --min-time 0
                        --out ${WORK}/taken RESULT_VARIABLE rc OUTPUT_QUIET ERROR_VARIABLE err)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "a run beside a foreign sidecar failed (${rc}):\n${err}")
endif()
file(READ ${theirs} still)
if(NOT still STREQUAL "not rigel's\n")
  message(FATAL_ERROR "an existing sidecar was overwritten: ${theirs}")
endif()
file(GLOB csvs ${WORK}/taken/*.csv)
file(GLOB sidecars ${WORK}/taken/*.json)
list(LENGTH csvs ncsv)
list(LENGTH sidecars njson)
if(NOT ncsv EQUAL 1 OR NOT njson EQUAL 2)
  message(FATAL_ERROR "expected the run's own CSV and sidecar beside the foreign one: ${csvs} ${sidecars}")
endif()
string(REGEX REPLACE "\\.csv$" ".json" own ${csvs})
if(own STREQUAL theirs OR NOT EXISTS ${own})
  message(FATAL_ERROR "the run's sidecar is not its own: ${own}")
endif()
message(STATUS "ok: a foreign sidecar stayed; the run wrote ${csvs}")

# `ladder --help` lists every type the README lists, and every suite.
execute_process(COMMAND ${RIGEL} ladder --help RESULT_VARIABLE rc OUTPUT_VARIABLE help)
file(READ ${CMAKE_CURRENT_LIST_DIR}/../../README.md readme)
if(NOT rc EQUAL 0 OR NOT readme MATCHES "Types: `([a-z0-9 ]+)`")
  message(FATAL_ERROR "ladder --help failed (${rc}), or the README lists no types")
endif()
string(REPLACE " " ";" readme_types "${CMAKE_MATCH_1}")
foreach(t ${readme_types})
  if(NOT help MATCHES "[( ]${t}[ )]")
    message(FATAL_ERROR "ladder --help does not list the type ${t}:\n${help}")
  endif()
endforeach()

# Every suite holds against this build's registry (with CUDA: the CUDA rungs
# too), and each is named in the help.
execute_process(COMMAND ${RIGEL} ladder --list-suites RESULT_VARIABLE rc OUTPUT_VARIABLE suites ERROR_VARIABLE err)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "ladder --list-suites failed (${rc}):\n${err}")
endif()
string(REGEX MATCHALL "rigel ladder --suite [a-z0-9_]+" named "${suites}")
list(LENGTH named nsuites)
if(nsuites LESS 2)
  message(FATAL_ERROR "ladder --list-suites lists ${nsuites} suite(s):\n${suites}")
endif()
foreach(line ${named})
  string(REPLACE "rigel ladder --suite " "" s "${line}")
  if(NOT help MATCHES "[( ]${s}[ )]")
    message(FATAL_ERROR "ladder --help does not name the suite ${s}")
  endif()
endforeach()
message(STATUS "ok: ladder --help lists ${readme_types}; ${nsuites} suites hold")

# A suite's run names the suite in its file names and its sidecar.
execute_process(COMMAND ${RIGEL} ladder --suite cpu_f64 --verify-only --out ${WORK}/suite RESULT_VARIABLE rc
                OUTPUT_QUIET ERROR_VARIABLE err)
file(GLOB suite_json ${WORK}/suite/*_ladder_cpu_f64.json)
if(NOT rc EQUAL 0 OR NOT suite_json)
  message(FATAL_ERROR "ladder --suite cpu_f64 failed (${rc}) or wrote no *_ladder_cpu_f64.json:\n${err}")
endif()
file(READ ${suite_json} side)
if(NOT side MATCHES "\"suite\": \"cpu_f64\"" OR NOT side MATCHES "\"dtypes\": \\[\"f64\"\\]")
  message(FATAL_ERROR "the sidecar does not record the suite cpu_f64:\n${side}")
endif()

# --backend all takes each type on the backends whose rungs take it, also in a
# build without CUDA (it once stopped: "no selected cuda rung takes type ...").
foreach(types "f32" "all")
  execute_process(COMMAND ${RIGEL} ladder --backend all --dtype ${types} --verify-only --sizes 8
                  RESULT_VARIABLE rc OUTPUT_QUIET ERROR_VARIABLE err)
  if(NOT rc EQUAL 0 AND NOT rc EQUAL 77)
    message(FATAL_ERROR "ladder --backend all --dtype ${types} failed (${rc}):\n${err}")
  endif()
endforeach()
message(STATUS "ok: suite runs are named; --backend all runs")
