// NextDefinitionAfter / DefinitionIn (preload/src/runtime/next_symbol.h) against glibc's own
// dlsym: RTLD_NEXT from this executable (nothing is preloaded here, so glibc searches after the
// test program exactly as the shim must on a caller's behalf), and dlsym on dlopen handles.
// Covers plain functions, IFUNCs (memcpy, strlen), versioned names with a hidden old version
// (pthread_cond_wait, memcpy), data objects (environ, stdout), C++ symbols, and absent names.
#include <dlfcn.h>
#include <link.h>

#include <cmath>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "runtime/next_symbol.h"

namespace gshare::preload {
namespace {

// Any address inside this executable: the "caller" of the lookups below.
void Anchor() {}

const void* Caller() { return reinterpret_cast<const void*>(&Anchor); }

const std::vector<std::string>& Names() {
  static const std::vector<std::string> names = {
      "malloc",  "free",   "memcpy",       "strlen",    "strcmp",   "pthread_create",
      "pthread_cond_wait", "dlopen",       "dlsym",     "environ",  "stdout",
      "mmap",    "cos",    "_ZSt4cout",    "__libc_start_main",      "clock_gettime",
      "_Znwm",   "_ZdlPv", "gnu_get_libc_version",  "gshare_not_a_symbol_anywhere"};
  return names;
}

TEST(NextSymbol, AgreesWithGlibcRtldNextFromTheSameCaller) {
  volatile double keep = std::cos(0.5);  // libm stays linked
  (void)keep;
  for (const std::string& name : Names()) {
    EXPECT_EQ(NextDefinitionAfter(Caller(), name.c_str()), dlsym(RTLD_NEXT, name.c_str()))
        << name;
  }
}

// gnu_get_libc_version: only libc defines it and no sanitizer runtime intercepts it.
TEST(NextSymbol, FindsTheRealDefinitionsAndNothingForAbsentNames) {
  EXPECT_NE(NextDefinitionAfter(Caller(), "malloc"), nullptr);
  EXPECT_NE(NextDefinitionAfter(Caller(), "memcpy"), nullptr);
  EXPECT_EQ(NextDefinitionAfter(Caller(), "gshare_not_a_symbol_anywhere"), nullptr);
  Dl_info where{};
  ASSERT_NE(dladdr(NextDefinitionAfter(Caller(), "gnu_get_libc_version"), &where), 0);
  EXPECT_NE(std::string(where.dli_fname).find("libc.so"), std::string::npos) << where.dli_fname;
}

TEST(NextSymbol, SearchesOnlyAfterTheCallersObject) {
  void* in_libc = NextDefinitionAfter(Caller(), "gnu_get_libc_version");
  ASSERT_NE(in_libc, nullptr);
  // From inside libc, libc itself (and everything before it) is not searched.
  EXPECT_EQ(NextDefinitionAfter(in_libc, "gnu_get_libc_version"), nullptr);
  void* after_libc = NextDefinitionAfter(in_libc, "malloc");
  if (after_libc != nullptr) {
    Dl_info where{};
    ASSERT_NE(dladdr(after_libc, &where), 0);
    EXPECT_EQ(std::string(where.dli_fname).find("libc.so"), std::string::npos);
  }
}

TEST(NextSymbol, DefinitionInAgreesWithDlsymOnHandles) {
  for (const char* lib : {"libc.so.6", "libm.so.6", "libstdc++.so.6"}) {
    void* handle = dlopen(lib, RTLD_LAZY | RTLD_NOLOAD);
    ASSERT_NE(handle, nullptr) << lib;
    link_map* object = nullptr;
    ASSERT_EQ(dlinfo(handle, RTLD_DI_LINKMAP, &object), 0) << lib;
    for (const std::string& name : Names()) {
      void* theirs = dlsym(handle, name.c_str());
      Dl_info where{};
      link_map* owner = nullptr;
      // dlsym on a handle also searches its dependencies; compare only the object's own.
      if (theirs != nullptr &&
          (dladdr1(theirs, &where, reinterpret_cast<void**>(&owner), RTLD_DL_LINKMAP) == 0 ||
           owner != object)) {
        theirs = nullptr;
      }
      EXPECT_EQ(DefinitionIn(object, name.c_str()), theirs) << lib << " " << name;
    }
    dlclose(handle);
  }
}

TEST(NextSymbol, VersionedNamesGiveTheDefaultVersion) {
  void* handle = dlopen("libc.so.6", RTLD_LAZY | RTLD_NOLOAD);
  ASSERT_NE(handle, nullptr);
  link_map* libc = nullptr;
  ASSERT_EQ(dlinfo(handle, RTLD_DI_LINKMAP, &libc), 0);
  // pthread_cond_wait@GLIBC_2.2.5 (hidden, the old ABI) and @@GLIBC_2.3.2 differ.
  void* latest = dlvsym(handle, "pthread_cond_wait", "GLIBC_2.3.2");
  ASSERT_NE(latest, nullptr);
  EXPECT_EQ(DefinitionIn(libc, "pthread_cond_wait"), latest);
  EXPECT_NE(DefinitionIn(libc, "pthread_cond_wait"), dlvsym(handle, "pthread_cond_wait", "GLIBC_2.2.5"));
  dlclose(handle);
}

}  // namespace
}  // namespace gshare::preload
