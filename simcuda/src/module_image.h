// Scans a module image, as a program passes it to cuModuleLoadData / cuLibraryLoadData, for the
// names of its kernel entry points. Understands NUL-terminated PTX text, ELF cubins, and fatbins
// (the __fatbinwrapper struct that nvcc embeds in host code, or the raw fatbin data).
// Format details: docs/simcuda-kernels.md.
#ifndef SIMCUDA_SRC_MODULE_IMAGE_H_
#define SIMCUDA_SRC_MODULE_IMAGE_H_

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace simcuda {

enum class ImageKind { kPtx, kCubin, kFatbin };

struct ModuleImageInfo {
  ImageKind kind;
  // Entry (kernel) names, sorted and without duplicates. For a fatbin: the union over all of its
  // entries (every PTX and cubin inside).
  std::vector<std::string> entries;
};

// Magic numbers of the formats understood (see docs/simcuda-kernels.md).
inline constexpr uint32_t kFatbinWrapperMagic = 0x466243b1;  // __fatBinC_Wrapper_t::magic
inline constexpr uint32_t kFatbinDataMagic = 0xBA55ED50;     // raw fatbin header magic

// Scans an image as passed to cuModuleLoadData: NUL-terminated PTX text, an ELF cubin, or a
// fatbin (wrapped or raw). The image's size is not passed (as in cuModuleLoadData), so it is
// taken from the format's own headers; the caller must pass a complete, readable image.
// Returns nullopt and sets *error (if error is non-null) to a one-line explanation when the
// image is not understood (unknown magic, truncated or inconsistent headers, compressed PTX that
// cannot be decoded). Thread-safe; never throws.
std::optional<ModuleImageInfo> ScanModuleImage(const void* image, std::string* error);

// As ScanModuleImage, for an image whose size is known (e.g. a file read into memory): never
// reads past image + size. Used by cuModuleLoad / cuLibraryLoadFromFile and by the tests.
std::optional<ModuleImageInfo> ScanModuleImageSized(const void* image, size_t size,
                                                    std::string* error);

// The name of a kind ("PTX", "cubin", "fatbin"), for messages.
const char* ImageKindName(ImageKind kind);

}  // namespace simcuda

#endif  // SIMCUDA_SRC_MODULE_IMAGE_H_
