# gshare_project_target(TARGET): warnings (as errors unless GSHARE_WERROR=OFF) for project code.
# Third-party headers are included as SYSTEM so their warnings never fail our build.
function(gshare_project_target target)
  target_compile_options(${target} PRIVATE
    $<$<COMPILE_LANGUAGE:CXX,C>:-Wall -Wextra -Wpedantic -Wshadow -Wnon-virtual-dtor
      -Wcast-align -Wunused -Wnull-dereference -Wdouble-promotion -Wformat=2
      -Wimplicit-fallthrough>)
  if(GSHARE_WERROR)
    target_compile_options(${target} PRIVATE $<$<COMPILE_LANGUAGE:CXX,C>:-Werror>)
  endif()
endfunction()
