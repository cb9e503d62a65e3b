// Test helper for gshare-run: prints its environment, one VAR=value per line (what /usr/bin/env
// prints). Built with the project's flags, so in a sanitizer build it links the sanitizer
// runtime itself and an instrumented libgshare.so can be preloaded into it (an uninstrumented
// /usr/bin/env cannot load an ASan-built preload library: the runtime must come first).
#include <cstdio>

extern char** environ;

int main() {
  for (char** e = environ; *e != nullptr; ++e) std::printf("%s\n", *e);
  return 0;
}
