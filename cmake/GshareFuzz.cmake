# Fuzzing build: -DGSHARE_FUZZ=ON (with CMAKE_CXX_COMPILER=clang++, in its own build directory;
# scripts/fuzz.sh does this). Every target is compiled with libFuzzer's coverage
# instrumentation plus ASan and UBSan, and tests/fuzz builds real libFuzzer binaries.
# In the ordinary (gcc) build, tests/fuzz instead links each target with a replay driver so the
# checked-in corpus runs as CTest tests. See docs/security.md.
option(GSHARE_FUZZ "Build tests/fuzz as libFuzzer binaries (clang, ASan+UBSan)" OFF)
if(GSHARE_FUZZ)
  if(NOT CMAKE_CXX_COMPILER_ID MATCHES "Clang")
    message(FATAL_ERROR "GSHARE_FUZZ needs clang (-DCMAKE_C_COMPILER=clang -DCMAKE_CXX_COMPILER=clang++)")
  endif()
  if(NOT GSHARE_SANITIZE STREQUAL "")
    message(FATAL_ERROR "GSHARE_FUZZ brings its own sanitizers; leave GSHARE_SANITIZE empty")
  endif()
  add_compile_options(-fsanitize=fuzzer-no-link,address,undefined -fno-omit-frame-pointer
                      -fno-sanitize-recover=undefined)
  add_link_options(-fsanitize=address,undefined)
endif()
