// RTLD_NEXT lookups from the loaded objects' dynamic symbol tables (see next_symbol.h).
//
// Invariants of this file (it runs inside a sanitizer runtime's start-up, before its shadow
// memory and interceptors exist):
//  1. Every function is GSHARE_NO_SANITIZE: no instrumented memory access.
//  2. No call into libc that a sanitizer intercepts (string functions, dlopen, dlclose,
//     dl_iterate_phdr, malloc): names are compared by hand, the object list is walked by hand.
//     Only dladdr1 and getauxval (not intercepted), glibc's own dlsym for TLS symbols, and
//     IFUNC resolvers.
#include "runtime/next_symbol.h"

#include <dlfcn.h>
#include <elf.h>
#include <link.h>

#include <sys/auxv.h>

#include <cstdint>

#if defined(__aarch64__)
#include <sys/ifunc.h>
#endif

namespace gshare::preload {
namespace {

using Sym = ElfW(Sym);

// What an object's dynamic section says about its symbols, with addresses made absolute.
struct SymbolTables {
  const Sym* symbols = nullptr;
  const char* strings = nullptr;
  const uint32_t* gnu_hash = nullptr;
  const uint32_t* sysv_hash = nullptr;  // ElfW(Word) is 32 bits on both ELF classes
  const ElfW(Half)* versions = nullptr;  // DT_VERSYM: one entry per symbol, or null
};

// glibc relocates the pointers of a writable dynamic section in place; a read-only one (the
// vDSO's) keeps link-time values, which are offsets below the load address.
GSHARE_NO_SANITIZE const void* Absolute(const link_map* object, ElfW(Addr) value) {
  return reinterpret_cast<const void*>(value < object->l_addr ? value + object->l_addr : value);
}

GSHARE_NO_SANITIZE SymbolTables TablesOf(const link_map* object) {
  SymbolTables t;
  if (object->l_ld == nullptr) return t;
  for (const ElfW(Dyn)* d = object->l_ld; d->d_tag != DT_NULL; ++d) {
    const void* p = Absolute(object, d->d_un.d_ptr);
    switch (d->d_tag) {
      case DT_SYMTAB: t.symbols = static_cast<const Sym*>(p); break;
      case DT_STRTAB: t.strings = static_cast<const char*>(p); break;
      case DT_GNU_HASH: t.gnu_hash = static_cast<const uint32_t*>(p); break;
      case DT_HASH: t.sysv_hash = static_cast<const uint32_t*>(p); break;
      case DT_VERSYM: t.versions = static_cast<const ElfW(Half)*>(p); break;
      default: break;
    }
  }
  return t;
}

GSHARE_NO_SANITIZE bool SameName(const char* a, const char* b) {
  while (*a != '\0' && *a == *b) {
    ++a;
    ++b;
  }
  return *a == *b;
}

GSHARE_NO_SANITIZE uint32_t GnuHash(const char* name) {
  uint32_t h = 5381;
  for (auto c = reinterpret_cast<const unsigned char*>(name); *c != 0; ++c) h = h * 33 + *c;
  return h;
}

GSHARE_NO_SANITIZE uint32_t SysvHash(const char* name) {
  uint32_t h = 0;
  for (auto c = reinterpret_cast<const unsigned char*>(name); *c != 0; ++c) {
    h = (h << 4) + *c;
    const uint32_t g = h & 0xf0000000u;
    if (g != 0) h ^= g >> 24;
    h &= ~g;
  }
  return h;
}

// A definition another object may bind to: defined, of a linkable type, global, weak or unique,
// not hidden (the rules of glibc's do_lookup_x for dlsym).
GSHARE_NO_SANITIZE bool IsDefinition(const Sym& s) {
  if (s.st_shndx == SHN_UNDEF) return false;
  const unsigned type = ELF64_ST_TYPE(s.st_info);
  if (s.st_value == 0 && type != STT_TLS) return false;
  const bool linkable = type == STT_NOTYPE || type == STT_OBJECT || type == STT_FUNC ||
                        type == STT_COMMON || type == STT_TLS || type == STT_GNU_IFUNC;
  const unsigned bind = ELF64_ST_BIND(s.st_info);
  const bool exported = bind == STB_GLOBAL || bind == STB_WEAK || bind == STB_GNU_UNIQUE;
  const unsigned visibility = ELF64_ST_VISIBILITY(s.st_other);
  return linkable && exported && visibility != STV_HIDDEN && visibility != STV_INTERNAL;
}

// Choosing among same-named definitions as dlsym does: an unversioned one (version index 0 or
// 1) at once, otherwise the non-hidden versioned one (name@@V), never a hidden one (name@V).
struct Choice {
  const Sym* best = nullptr;
  GSHARE_NO_SANITIZE bool Offer(const SymbolTables& t, uint32_t index) {  // true: stop
    const Sym& s = t.symbols[index];
    if (!IsDefinition(s) || !SameName(t.strings + s.st_name, name)) return false;
    if (t.versions == nullptr || (t.versions[index] & 0x7fff) < 2) {
      best = &s;
      return true;
    }
    if ((t.versions[index] & 0x8000) == 0 && best == nullptr) best = &s;
    return false;
  }
  const char* name;
};

GSHARE_NO_SANITIZE const Sym* FindGnu(const SymbolTables& t, const char* name) {
  const uint32_t nbuckets = t.gnu_hash[0];
  const uint32_t symoffset = t.gnu_hash[1];
  const uint32_t bloom_words = t.gnu_hash[2];
  if (nbuckets == 0) return nullptr;
  const auto* buckets = reinterpret_cast<const uint32_t*>(
      reinterpret_cast<const ElfW(Addr)*>(t.gnu_hash + 4) + bloom_words);
  const uint32_t* chain = buckets + nbuckets;
  const uint32_t h = GnuHash(name);
  Choice choice{.name = name};
  for (uint32_t i = buckets[h % nbuckets]; i >= symoffset && i != 0; ++i) {
    const uint32_t entry = chain[i - symoffset];
    if ((entry | 1u) == (h | 1u) && choice.Offer(t, i)) break;
    if ((entry & 1u) != 0) break;  // last entry of this bucket's chain
  }
  return choice.best;
}

GSHARE_NO_SANITIZE const Sym* FindSysv(const SymbolTables& t, const char* name) {
  const uint32_t nbuckets = t.sysv_hash[0];
  const uint32_t nchain = t.sysv_hash[1];
  if (nbuckets == 0) return nullptr;
  const uint32_t* buckets = t.sysv_hash + 2;
  const uint32_t* chain = buckets + nbuckets;
  Choice choice{.name = name};
  for (uint32_t i = buckets[SysvHash(name) % nbuckets]; i != STN_UNDEF && i < nchain;
       i = chain[i]) {
    if (choice.Offer(t, i)) break;
  }
  return choice.best;
}

// glibc's calling convention for IFUNC resolvers (sysdeps/<arch>/dl-irel.h).
GSHARE_NO_SANITIZE void* ResolveIfunc(ElfW(Addr) resolver) {
#if defined(__aarch64__)
  __ifunc_arg_t arg{};
  arg._size = sizeof(arg);
  arg._hwcap = getauxval(AT_HWCAP);
  arg._hwcap2 = getauxval(AT_HWCAP2);
  using Resolver = void* (*)(uint64_t, const __ifunc_arg_t*);
  return reinterpret_cast<Resolver>(resolver)(arg._hwcap | _IFUNC_ARG_HWCAP, &arg);
#else
  return reinterpret_cast<void* (*)()>(resolver)();
#endif
}

GSHARE_NO_SANITIZE const Sym* Find(const SymbolTables& t, const char* name) {
  if (t.symbols == nullptr || t.strings == nullptr) return nullptr;
  if (t.gnu_hash != nullptr) return FindGnu(t, name);
  if (t.sysv_hash != nullptr) return FindSysv(t, name);
  return nullptr;
}

// Where the definition `s` of `object` is, as dlsym reports it (not for STT_TLS).
GSHARE_NO_SANITIZE void* AddressOf(const link_map* object, const Sym& s) {
  const ElfW(Addr) value = s.st_shndx == SHN_ABS ? s.st_value : object->l_addr + s.st_value;
  if (ELF64_ST_TYPE(s.st_info) == STT_GNU_IFUNC) return ResolveIfunc(value);
  return reinterpret_cast<void*>(value);
}

}  // namespace

GSHARE_NO_SANITIZE void* DefinitionIn(const link_map* object, const char* name) {
  const Sym* s = Find(TablesOf(object), name);
  if (s == nullptr || ELF64_ST_TYPE(s->st_info) == STT_TLS) return nullptr;
  return AddressOf(object, *s);
}

GSHARE_NO_SANITIZE void* NextDefinitionAfter(const void* caller, const char* name) {
  Dl_info info{};
  link_map* self = nullptr;
  if (caller == nullptr || name == nullptr ||
      dladdr1(caller, &info, reinterpret_cast<void**>(&self), RTLD_DL_LINKMAP) == 0 ||
      self == nullptr) {
    return RealDlsym()(RTLD_NEXT, name);
  }
  const ElfW(Addr) vdso = getauxval(AT_SYSINFO_EHDR);  // linked at 0: its load bias
  for (const link_map* object = self->l_next; object != nullptr; object = object->l_next) {
    if (object->l_name == nullptr || object->l_name[0] == '\0') continue;  // the executable
    if (object->l_addr == vdso) continue;  // in the list, never in a lookup scope
    const Sym* s = Find(TablesOf(object), name);
    if (s == nullptr) continue;
    if (ELF64_ST_TYPE(s->st_info) == STT_TLS) return RealDlsym()(RTLD_NEXT, name);
    return AddressOf(object, *s);
  }
  return nullptr;
}

}  // namespace gshare::preload
