# gshare_add_all_subdirectories(): adds every direct subdirectory that has a CMakeLists.txt,
# in sorted order, so parts (tests/<area>, tools/<tool>, bench/<area>) can be added without
# editing a shared list.
function(gshare_add_all_subdirectories)
  file(GLOB children RELATIVE ${CMAKE_CURRENT_SOURCE_DIR} ${CMAKE_CURRENT_SOURCE_DIR}/*/CMakeLists.txt)
  list(SORT children)
  foreach(child ${children})
    get_filename_component(dir ${child} DIRECTORY)
    add_subdirectory(${dir})
  endforeach()
endfunction()
