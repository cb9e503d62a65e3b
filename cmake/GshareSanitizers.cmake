# Sanitizer builds: -DGSHARE_SANITIZE=address (AddressSanitizer + UBSan) or thread (TSan).
# Applied globally so every library, test and tool is instrumented the same way.
if(GSHARE_SANITIZE STREQUAL "address")
  add_compile_options(-fsanitize=address,undefined -fno-omit-frame-pointer -fno-sanitize-recover=undefined)
  add_link_options(-fsanitize=address,undefined)
elseif(GSHARE_SANITIZE STREQUAL "thread")
  add_compile_options(-fsanitize=thread -fno-omit-frame-pointer)
  add_link_options(-fsanitize=thread)
elseif(NOT GSHARE_SANITIZE STREQUAL "")
  message(FATAL_ERROR "GSHARE_SANITIZE must be '', 'address' or 'thread', not '${GSHARE_SANITIZE}'")
endif()
# GCC's manual (-fsanitize): "sanitizers tend to increase the rate of false positive warnings,
# most notably those around -Wmaybe-uninitialized"; with -Werror, GCC 12 + ASan rejects
# libstdc++'s own std::regex (std::function in _StateT, tests/arbiter/metrics_test.cc), and
# GCC 12 + TSan flags a "potential null pointer dereference" inside libstdc++'s basic_string
# (tests/arbiter/config_test.cc). The normal build keeps both as errors. (-Wno-error=... because
# the project's own -Wnull-dereference comes later on the command line.)
if(NOT GSHARE_SANITIZE STREQUAL "" AND CMAKE_CXX_COMPILER_ID STREQUAL "GNU")
  add_compile_options(-Wno-maybe-uninitialized -Wno-error=null-dereference)
endif()
