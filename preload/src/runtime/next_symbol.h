// dlsym(RTLD_NEXT, name) on behalf of another object, answered from the loaded objects' own
// dynamic symbol tables: no dlopen, no dlsym, no libc string calls. The shim interposes dlsym,
// so a caller's RTLD_NEXT lookup reaches us and glibc would search after libgshare.so instead of
// after the caller; sanitizer runtimes make such lookups while they initialise, when their
// interceptors of dlopen, dlclose, strcmp ... cannot run yet (docs/security.md, "Sanitizers").
//
// glibc only (link_map from <link.h>, GNU or SysV hash tables, symbol versions). A dlopen handle
// cannot stand in for a link_map here: glibc builds an object's own search list only when it is
// dlopen'ed, and dlsym on the link_map of an object loaded at start-up crashes.
//
// Thread-safety: reads the loader's object list without its lock, like dladdr's callers do;
// an object unloaded (dlclose) concurrently with a lookup that walks past it is not supported.
// Async-signal-safe apart from the IFUNC resolvers it may call.
#pragma once

#include <link.h>

#include "runtime/real_driver.h"  // GSHARE_NO_SANITIZE

namespace gshare::preload {

// The address dlsym(RTLD_NEXT, name) returns to code in the object that contains `caller`: the
// definition (default version, IFUNCs resolved) in the first object loaded after the caller's
// that defines `name` itself; null when none does. Thread-local (STT_TLS) definitions are
// answered by glibc's dlsym(RTLD_NEXT) from the shim (only the shim's own position differs).
// REQUIRES: `caller` is an address inside a loaded object, `name` a NUL-terminated string.
GSHARE_NO_SANITIZE void* NextDefinitionAfter(const void* caller, const char* name);

// The definition of `name` in the object `object` itself (not its dependencies), or null:
// what glibc's dlsym picks in that object — an unversioned or default-version (name@@V)
// global or weak symbol; IFUNCs are resolved. Thread-local definitions give null.
GSHARE_NO_SANITIZE void* DefinitionIn(const link_map* object, const char* name);

}  // namespace gshare::preload
