# gshare_add_ptx(TARGET CU_FILE): compiles a CUDA source to PTX with nvcc (no GPU needed) and
# embeds the PTX text in TARGET as `extern "C" const char <stem>_ptx[]`, so the same program
# loads its kernels with cuModuleLoadData on simcuda and on a real GPU.
set(GSHARE_PTX_ARCH "compute_80" CACHE STRING "Virtual architecture for the samples' PTX")
function(gshare_add_ptx target cu_file)
  get_filename_component(stem ${cu_file} NAME_WE)
  get_filename_component(cu_abs ${cu_file} ABSOLUTE)
  set(ptx ${CMAKE_CURRENT_BINARY_DIR}/${stem}.ptx)
  set(cpp ${CMAKE_CURRENT_BINARY_DIR}/${stem}_ptx.cpp)
  add_custom_command(
    OUTPUT ${ptx}
    COMMAND ${CUDAToolkit_NVCC_EXECUTABLE} -ptx -arch=${GSHARE_PTX_ARCH} -o ${ptx} ${cu_abs}
    DEPENDS ${cu_abs}
    COMMENT "nvcc -ptx ${stem}.cu"
    VERBATIM)
  add_custom_command(
    OUTPUT ${cpp}
    COMMAND ${CMAKE_COMMAND} -DPTX=${ptx} -DOUT=${cpp} -DSYMBOL=${stem}_ptx
            -P ${CMAKE_SOURCE_DIR}/cmake/EmbedText.cmake
    DEPENDS ${ptx} ${CMAKE_SOURCE_DIR}/cmake/EmbedText.cmake
    VERBATIM)
  target_sources(${target} PRIVATE ${cpp})
endfunction()
