// Module image scanning: finds kernel entry names in PTX text, ELF cubins and fatbins.
// The layouts are documented in docs/simcuda-kernels.md ("Image formats").
//
// Invariants: every read of the image goes through a ByteView whose bounds were established from
// the image's own headers (or the caller's size), so a corrupt header yields an error, never a
// read past the image. Compressed fatbin entries are decoded with the system's libzstd / liblz4
// runtime libraries, opened with dlopen on first need (they are optional).
#include "module_image.h"

#include <dlfcn.h>
#include <elf.h>

#include <algorithm>
#include <cstring>
#include <string_view>

namespace simcuda {
namespace {

// --- Fatbin layout (reverse-engineered, stable since CUDA 4; see docs/simcuda-kernels.md). ---
struct FatbinWrapper {  // __fatBinC_Wrapper_t from fatbinary_section.h
  int32_t magic;
  int32_t version;
  const void* data;
  const void* filename_or_fatbins;
};
struct FatbinHeader {
  uint32_t magic;
  uint16_t version;
  uint16_t header_size;
  uint64_t fat_size;  // bytes of entries that follow the header
};
struct FatbinEntryHeader {
  uint16_t kind;  // kFatbinKindPtx, kFatbinKindElf, ...
  uint16_t version;
  uint32_t header_size;
  uint64_t size;  // bytes of payload after the header (padded)
  uint32_t compressed_size;
  uint32_t reserved0;
  uint16_t minor;
  uint16_t major;
  uint32_t arch;  // e.g. 80 for sm_80 / compute_80
  uint32_t obj_name_offset;
  uint32_t obj_name_len;
  uint64_t flags;  // kFatbinFlag*
  uint64_t reserved1;
  uint64_t uncompressed_size;
};
static_assert(sizeof(FatbinHeader) == 16);
static_assert(sizeof(FatbinEntryHeader) == 64);
static_assert(offsetof(FatbinEntryHeader, flags) == 40);
static_assert(offsetof(FatbinEntryHeader, uncompressed_size) == 56);

constexpr uint16_t kFatbinKindPtx = 1;
constexpr uint16_t kFatbinKindElf = 2;
constexpr uint64_t kFatbinFlagCompressedLz4 = 0x2000;
constexpr uint64_t kFatbinFlagCompressedZstd = 0x8000;
// Refuse absurd sizes from corrupt headers before allocating.
constexpr uint64_t kMaxImageBytes = uint64_t{1} << 32;
constexpr uint8_t kStoCudaEntry = 0x10;  // st_other bit nvcc sets on kernel symbols

// A bounds-checked window on the image.
class ByteView {
 public:
  ByteView(const unsigned char* data, size_t size) : data_(data), size_(size) {}
  size_t size() const { return size_; }
  const unsigned char* data() const { return data_; }
  bool Has(uint64_t offset, uint64_t len) const {
    return offset <= size_ && len <= size_ - offset;
  }
  template <typename T>
  bool Read(uint64_t offset, T* out) const {
    if (!Has(offset, sizeof(T))) return false;
    std::memcpy(out, data_ + offset, sizeof(T));
    return true;
  }
  ByteView Sub(uint64_t offset, uint64_t len) const {  // REQUIRES: Has(offset, len)
    return ByteView(data_ + offset, static_cast<size_t>(len));
  }

 private:
  const unsigned char* data_;
  size_t size_;
};

bool Fail(std::string* error, std::string message) {
  if (error != nullptr) *error = std::move(message);
  return false;
}

// --- PTX ---

// Copies the text with comments replaced by spaces. String literals (file names in .file
// directives) are copied as they are, so a "//" or "/*" inside one starts no comment.
std::string StripPtxComments(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  size_t i = 0;
  while (i < text.size()) {
    if (text[i] == '"') {
      size_t end = text.find_first_of("\"\n", i + 1);
      end = end == std::string_view::npos ? text.size() : end + 1;
      out.append(text.substr(i, end - i));
      i = end;
    } else if (text.compare(i, 2, "//") == 0) {
      size_t end = text.find('\n', i);
      i = end == std::string_view::npos ? text.size() : end;
      out.push_back(' ');
    } else if (text.compare(i, 2, "/*") == 0) {
      size_t end = text.find("*/", i + 2);
      i = end == std::string_view::npos ? text.size() : end + 2;
      out.push_back(' ');
    } else {
      out.push_back(text[i++]);
    }
  }
  return out;
}

bool IsIdentChar(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
         c == '_' || c == '$' || c == '%';
}
bool IsSpace(char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f'; }

// True if `text` contains `word` as a whole token (not part of a longer identifier/directive).
bool HasToken(std::string_view text, std::string_view word) {
  for (size_t pos = text.find(word); pos != std::string_view::npos;
       pos = text.find(word, pos + 1)) {
    bool start_ok = pos == 0 || !IsIdentChar(text[pos - 1]);
    size_t end = pos + word.size();
    bool end_ok = end == text.size() || !IsIdentChar(text[end]);
    if (start_ok && end_ok) return true;
  }
  return false;
}

bool ScanPtx(std::string_view raw, std::vector<std::string>* entries, std::string* error) {
  std::string text = StripPtxComments(raw);
  if (!HasToken(text, ".version")) {
    return Fail(error, "not a module image: no fatbin/ELF magic and no PTX .version directive");
  }
  constexpr std::string_view kEntry = ".entry";
  for (size_t pos = text.find(kEntry); pos != std::string::npos;
       pos = text.find(kEntry, pos + 1)) {
    if (pos > 0 && !IsSpace(text[pos - 1])) continue;
    size_t i = pos + kEntry.size();
    if (i >= text.size() || !IsSpace(text[i])) continue;  // e.g. ".entry_x"
    while (i < text.size() && IsSpace(text[i])) ++i;
    size_t start = i;
    while (i < text.size() && IsIdentChar(text[i])) ++i;
    if (i == start) return Fail(error, "PTX: .entry without a name");
    entries->emplace_back(text.substr(start, i - start));
  }
  return true;
}

// --- ELF cubin ---

bool ScanElf(ByteView elf, std::vector<std::string>* entries, std::string* error) {
  Elf64_Ehdr eh;
  if (!elf.Read(0, &eh) || std::memcmp(eh.e_ident, ELFMAG, SELFMAG) != 0) {
    return Fail(error, "cubin: truncated ELF header");
  }
  if (eh.e_ident[EI_CLASS] != ELFCLASS64 || eh.e_ident[EI_DATA] != ELFDATA2LSB) {
    return Fail(error, "cubin: not a little-endian ELF64 file");
  }
  if (eh.e_shentsize != sizeof(Elf64_Shdr) ||
      !elf.Has(eh.e_shoff, uint64_t{eh.e_shnum} * sizeof(Elf64_Shdr))) {
    return Fail(error, "cubin: section header table out of bounds");
  }
  auto section = [&](uint32_t index, Elf64_Shdr* sh) {
    return index < eh.e_shnum && elf.Read(eh.e_shoff + uint64_t{index} * sizeof(Elf64_Shdr), sh);
  };
  auto name_at = [&](const Elf64_Shdr& strtab, uint64_t offset, std::string_view* out) {
    if (offset >= strtab.sh_size || !elf.Has(strtab.sh_offset, strtab.sh_size)) return false;
    const char* s = reinterpret_cast<const char*>(elf.data() + strtab.sh_offset + offset);
    size_t len = strnlen(s, strtab.sh_size - offset);
    if (len == strtab.sh_size - offset) return false;  // not terminated inside the table
    *out = std::string_view(s, len);
    return true;
  };

  std::vector<std::string> all_funcs;
  std::vector<std::string> flagged;
  bool have_symtab = false;
  for (uint32_t i = 0; i < eh.e_shnum; ++i) {
    Elf64_Shdr sh, strtab;
    if (!section(i, &sh) || sh.sh_type != SHT_SYMTAB) continue;
    have_symtab = true;
    if (sh.sh_entsize != sizeof(Elf64_Sym) || !elf.Has(sh.sh_offset, sh.sh_size) ||
        !section(sh.sh_link, &strtab)) {
      return Fail(error, "cubin: malformed symbol table");
    }
    for (uint64_t off = 0; off + sizeof(Elf64_Sym) <= sh.sh_size; off += sizeof(Elf64_Sym)) {
      Elf64_Sym sym;
      elf.Read(sh.sh_offset + off, &sym);
      if (ELF64_ST_TYPE(sym.st_info) != STT_FUNC || ELF64_ST_BIND(sym.st_info) == STB_LOCAL) {
        continue;
      }
      std::string_view name;
      if (!name_at(strtab, sym.st_name, &name)) return Fail(error, "cubin: bad symbol name");
      if (name.empty()) continue;
      all_funcs.emplace_back(name);
      if ((sym.st_other & kStoCudaEntry) != 0) flagged.emplace_back(name);
    }
  }
  if (have_symtab) {
    // Kernels carry STO_CUDA_ENTRY; plain device functions do not. Old tools may not set it.
    auto& chosen = flagged.empty() ? all_funcs : flagged;
    entries->insert(entries->end(), chosen.begin(), chosen.end());
    return true;
  }
  // No symbol table: fall back to the ".text.NAME" sections.
  Elf64_Shdr shstr;
  if (!section(eh.e_shstrndx, &shstr)) return Fail(error, "cubin: no section name table");
  for (uint32_t i = 0; i < eh.e_shnum; ++i) {
    Elf64_Shdr sh;
    std::string_view name;
    if (section(i, &sh) && sh.sh_type == SHT_PROGBITS && name_at(shstr, sh.sh_name, &name) &&
        name.starts_with(".text.") && name.size() > 6) {
      entries->emplace_back(name.substr(6));
    }
  }
  return true;
}

// Size of an ELF image from its headers: the furthest byte any header or section refers to.
bool ElfExtent(const unsigned char* p, size_t* size, std::string* error) {
  Elf64_Ehdr eh;
  std::memcpy(&eh, p, sizeof(eh));
  if (eh.e_ident[EI_CLASS] != ELFCLASS64) return Fail(error, "cubin: not an ELF64 file");
  if (eh.e_shentsize != sizeof(Elf64_Shdr) || eh.e_shoff > kMaxImageBytes) {
    return Fail(error, "cubin: bad section header table");
  }
  if (eh.e_phoff > kMaxImageBytes) return Fail(error, "cubin: bad program header table");
  uint64_t end = std::max<uint64_t>(sizeof(eh), eh.e_shoff + uint64_t{eh.e_shnum} * sizeof(Elf64_Shdr));
  end = std::max<uint64_t>(end, eh.e_phoff + uint64_t{eh.e_phnum} * eh.e_phentsize);
  for (uint32_t i = 0; i < eh.e_shnum; ++i) {
    Elf64_Shdr sh;
    std::memcpy(&sh, p + eh.e_shoff + uint64_t{i} * sizeof(Elf64_Shdr), sizeof(sh));
    if (sh.sh_type == SHT_NOBITS) continue;
    if (sh.sh_offset > kMaxImageBytes || sh.sh_size > kMaxImageBytes) {
      return Fail(error, "cubin: section out of range");
    }
    end = std::max(end, sh.sh_offset + sh.sh_size);
  }
  *size = static_cast<size_t>(end);
  return true;
}

// --- Compressed fatbin entries (optional system libraries) ---

struct Decompressors {
  using ZstdDecompress = size_t (*)(void*, size_t, const void*, size_t);
  using ZstdIsError = unsigned (*)(size_t);
  using Lz4Decompress = int (*)(const char*, char*, int, int);
  ZstdDecompress zstd = nullptr;
  ZstdIsError zstd_is_error = nullptr;
  Lz4Decompress lz4 = nullptr;
};

const Decompressors& GetDecompressors() {
  static const Decompressors* d = [] {
    auto* out = new Decompressors;  // never destroyed: usable while the process exits
    if (void* h = dlopen("libzstd.so.1", RTLD_NOW | RTLD_LOCAL)) {
      out->zstd = reinterpret_cast<Decompressors::ZstdDecompress>(dlsym(h, "ZSTD_decompress"));
      out->zstd_is_error = reinterpret_cast<Decompressors::ZstdIsError>(dlsym(h, "ZSTD_isError"));
    }
    if (void* h = dlopen("liblz4.so.1", RTLD_NOW | RTLD_LOCAL)) {
      out->lz4 = reinterpret_cast<Decompressors::Lz4Decompress>(dlsym(h, "LZ4_decompress_safe"));
    }
    return out;
  }();
  return *d;
}

bool Decompress(const FatbinEntryHeader& eh, ByteView payload, std::string* out,
                std::string* error) {
  if (eh.uncompressed_size == 0 || eh.uncompressed_size > kMaxImageBytes ||
      eh.compressed_size > payload.size()) {
    return Fail(error, "fatbin: compressed entry with inconsistent sizes");
  }
  const Decompressors& d = GetDecompressors();
  out->resize(static_cast<size_t>(eh.uncompressed_size));
  if ((eh.flags & kFatbinFlagCompressedZstd) != 0) {
    if (d.zstd == nullptr || d.zstd_is_error == nullptr) {
      return Fail(error, "fatbin: entry is zstd-compressed and libzstd.so.1 is not available; "
                         "rebuild with nvcc -compress-mode=none or install libzstd1");
    }
    size_t n = d.zstd(out->data(), out->size(), payload.data(), eh.compressed_size);
    if (d.zstd_is_error(n) != 0u || n != out->size()) {
      return Fail(error, "fatbin: zstd-compressed entry could not be decoded");
    }
    return true;
  }
  if (d.lz4 == nullptr) {
    return Fail(error, "fatbin: entry is LZ4-compressed and liblz4.so.1 is not available; "
                       "rebuild with nvcc -compress-mode=none or install liblz4-1");
  }
  int n = d.lz4(reinterpret_cast<const char*>(payload.data()), out->data(),
                static_cast<int>(eh.compressed_size), static_cast<int>(out->size()));
  if (n < 0 || static_cast<size_t>(n) != out->size()) {
    return Fail(error, "fatbin: LZ4-compressed entry could not be decoded");
  }
  return true;
}

// --- Fatbin ---

bool ScanFatbin(ByteView fat, std::vector<std::string>* entries, std::string* error) {
  FatbinHeader fh;
  if (!fat.Read(0, &fh) || fh.magic != kFatbinDataMagic) {
    return Fail(error, "fatbin: truncated header or bad magic");
  }
  if (fh.header_size < sizeof(fh) || !fat.Has(fh.header_size, fh.fat_size)) {
    return Fail(error, "fatbin: header sizes out of bounds");
  }
  ByteView body = fat.Sub(fh.header_size, fh.fat_size);
  uint64_t off = 0;
  int index = 0;
  while (off < body.size()) {
    FatbinEntryHeader eh;
    if (!body.Read(off, &eh) || eh.header_size < sizeof(eh) ||
        !body.Has(off + eh.header_size, eh.size)) {
      return Fail(error, "fatbin: entry " + std::to_string(index) + " out of bounds");
    }
    ByteView payload = body.Sub(off + eh.header_size, eh.size);
    std::string decoded;
    if ((eh.flags & (kFatbinFlagCompressedLz4 | kFatbinFlagCompressedZstd)) != 0) {
      if (!Decompress(eh, payload, &decoded, error)) return false;
      payload = ByteView(reinterpret_cast<const unsigned char*>(decoded.data()), decoded.size());
    }
    std::string sub_error;
    bool ok = true;
    if (eh.kind == kFatbinKindPtx) {
      const char* text = reinterpret_cast<const char*>(payload.data());
      ok = ScanPtx(std::string_view(text, strnlen(text, payload.size())), entries, &sub_error);
    } else if (eh.kind == kFatbinKindElf) {
      ok = ScanElf(payload, entries, &sub_error);
    }  // other kinds (e.g. LTO IR) carry no loadable entries: skipped
    if (!ok) {
      return Fail(error, "fatbin entry " + std::to_string(index) + " (arch " +
                             std::to_string(eh.arch) + "): " + sub_error);
    }
    off += eh.header_size + eh.size;
    ++index;
  }
  return true;
}

uint32_t ReadMagic(const unsigned char* p) {
  uint32_t m;
  std::memcpy(&m, p, sizeof(m));
  return m;
}

std::optional<ModuleImageInfo> Finish(ImageKind kind, std::vector<std::string> entries) {
  std::sort(entries.begin(), entries.end());
  entries.erase(std::unique(entries.begin(), entries.end()), entries.end());
  return ModuleImageInfo{kind, std::move(entries)};
}

}  // namespace

const char* ImageKindName(ImageKind kind) {
  switch (kind) {
    case ImageKind::kPtx: return "PTX";
    case ImageKind::kCubin: return "cubin";
    case ImageKind::kFatbin: return "fatbin";
  }
  return "unknown";
}

std::optional<ModuleImageInfo> ScanModuleImageSized(const void* image, size_t size,
                                                    std::string* error) {
  if (image == nullptr) {
    Fail(error, "null module image");
    return std::nullopt;
  }
  ByteView view(static_cast<const unsigned char*>(image), size);
  std::vector<std::string> entries;
  uint32_t magic = 0;
  view.Read(0, &magic);
  if (magic == kFatbinWrapperMagic) {
    Fail(error, "a fatbin wrapper holds a pointer; pass it to ScanModuleImage instead");
    return std::nullopt;
  }
  if (magic == kFatbinDataMagic) {
    if (!ScanFatbin(view, &entries, error)) return std::nullopt;
    return Finish(ImageKind::kFatbin, std::move(entries));
  }
  if (view.Has(0, SELFMAG) && std::memcmp(view.data(), ELFMAG, SELFMAG) == 0) {
    if (!ScanElf(view, &entries, error)) return std::nullopt;
    return Finish(ImageKind::kCubin, std::move(entries));
  }
  const char* text = static_cast<const char*>(image);
  if (!ScanPtx(std::string_view(text, strnlen(text, size)), &entries, error)) {
    return std::nullopt;
  }
  return Finish(ImageKind::kPtx, std::move(entries));
}

std::optional<ModuleImageInfo> ScanModuleImage(const void* image, std::string* error) {
  if (image == nullptr) {
    Fail(error, "null module image");
    return std::nullopt;
  }
  const auto* p = static_cast<const unsigned char*>(image);
  // Read the magic only if no NUL precedes it (a short PTX string may be under four bytes).
  uint32_t magic = 0;
  if (p[0] != 0 && p[1] != 0 && p[2] != 0 && p[3] != 0) magic = ReadMagic(p);
  if (magic == kFatbinWrapperMagic) {
    FatbinWrapper w;
    std::memcpy(&w, p, sizeof(w));
    if (w.data == nullptr) {
      Fail(error, "fatbin wrapper: null data pointer");
      return std::nullopt;
    }
    auto result = ScanModuleImage(w.data, error);
    if (result && result->kind != ImageKind::kFatbin) {
      Fail(error, "fatbin wrapper: data is not a fatbin");
      return std::nullopt;
    }
    return result;
  }
  size_t size = 0;
  if (magic == kFatbinDataMagic) {
    FatbinHeader fh;
    std::memcpy(&fh, p, sizeof(fh));
    if (fh.header_size < sizeof(fh) || fh.fat_size > kMaxImageBytes) {
      Fail(error, "fatbin: implausible header");
      return std::nullopt;
    }
    size = fh.header_size + fh.fat_size;
  } else if (magic != 0 && std::memcmp(p, ELFMAG, SELFMAG) == 0) {
    if (!ElfExtent(p, &size, error)) return std::nullopt;
  } else {
    size = std::strlen(reinterpret_cast<const char*>(p));
  }
  return ScanModuleImageSized(image, size, error);
}

}  // namespace simcuda
