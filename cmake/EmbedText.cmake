# Script mode (cmake -P): writes OUT, a C++ file defining `extern "C" const char SYMBOL[]` with
# the bytes of PTX followed by a NUL, as cuModuleLoadData expects for PTX text.
file(READ ${PTX} hex HEX)
string(REGEX REPLACE "([0-9a-f][0-9a-f])" "0x\\1," bytes "${hex}")
file(WRITE ${OUT} "// Generated from ${PTX}; do not edit.\nextern \"C\" const char ${SYMBOL}[] = {${bytes}0x00};\n")
