// Tests of simcuda::ScanModuleImage on real nvcc output (PTX, cubin, fatbins: single, multi-arch,
// zstd-compressed, wrapped) and on hand-made and garbage input.
#include "module_image.h"

#include <elf.h>
#include <gtest/gtest.h>

#include <cstring>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

namespace simcuda {
namespace {

using Names = std::vector<std::string>;
const Names kExpected = {"_Z13image_mangledPi", "image_add", "image_scale"};

std::string ReadImage(const std::string& name) {
  std::ifstream in(std::string(SIMCUDA_TEST_IMAGE_DIR) + "/" + name, std::ios::binary);
  EXPECT_TRUE(in.good()) << name;
  std::ostringstream bytes;
  bytes << in.rdbuf();
  return bytes.str();
}

TEST(ModuleImageTest, PtxFromNvcc) {
  std::string ptx = ReadImage("images.ptx");  // std::string keeps a trailing NUL
  std::string error;
  auto info = ScanModuleImage(ptx.c_str(), &error);
  ASSERT_TRUE(info) << error;
  EXPECT_EQ(info->kind, ImageKind::kPtx);
  EXPECT_EQ(info->entries, kExpected);
}

TEST(ModuleImageTest, CubinFromNvccSkipsDeviceFunctions) {
  std::string cubin = ReadImage("images.cubin");
  std::string error;
  auto info = ScanModuleImage(cubin.data(), &error);
  ASSERT_TRUE(info) << error;
  EXPECT_EQ(info->kind, ImageKind::kCubin);
  EXPECT_EQ(info->entries, kExpected);  // image_helper is a FUNC symbol but not an entry
  auto sized = ScanModuleImageSized(cubin.data(), cubin.size(), &error);
  ASSERT_TRUE(sized) << error;
  EXPECT_EQ(sized->entries, kExpected);
}

TEST(ModuleImageTest, FatbinsFromNvcc) {
  for (const char* file :
       {"images.fatbin", "images_multi.fatbin", "images_zstd.fatbin", "images_lz4.fatbin"}) {
    std::string fat = ReadImage(file);
    std::string error;
    auto info = ScanModuleImage(fat.data(), &error);
    ASSERT_TRUE(info) << file << ": " << error;
    EXPECT_EQ(info->kind, ImageKind::kFatbin) << file;
    EXPECT_EQ(info->entries, kExpected) << file;
    auto sized = ScanModuleImageSized(fat.data(), fat.size(), &error);
    ASSERT_TRUE(sized) << file << ": " << error;
    EXPECT_EQ(sized->entries, kExpected) << file;
  }
}

TEST(ModuleImageTest, FatbinWrapperPointsAtData) {
  std::string fat = ReadImage("images_multi.fatbin");
  struct {
    int magic;
    int version;
    const void* data;
    const void* filename;
  } wrapper{static_cast<int>(kFatbinWrapperMagic), 1, fat.data(), nullptr};
  std::string error;
  auto info = ScanModuleImage(&wrapper, &error);
  ASSERT_TRUE(info) << error;
  EXPECT_EQ(info->kind, ImageKind::kFatbin);
  EXPECT_EQ(info->entries, kExpected);

  wrapper.data = nullptr;
  EXPECT_FALSE(ScanModuleImage(&wrapper, &error));
  EXPECT_NE(error.find("null data"), std::string::npos) << error;
}

TEST(ModuleImageTest, PtxCommentsAndSpacingAreHandled) {
  const char* ptx =
      "// .entry commented_out(\n"
      ".version 8.0\n.target sm_80\n"
      "/* .visible .entry also_commented( */\n"
      ".visible .entry   spaced_name (\n.param .u64 p)\n{ ret; }\n"
      ".entry\tplain(){ ret; }\n"
      ".weak .entry weak_one(){ ret; }\n"
      ".func not_an_entry(){ ret; }\n"
      ".file 1 \"/src//dir/*odd*/k.cu\"\n"
      ".entry after_file(){ ret; }\n";
  std::string error;
  auto info = ScanModuleImage(ptx, &error);
  ASSERT_TRUE(info) << error;
  EXPECT_EQ(info->entries, (Names{"after_file", "plain", "spaced_name", "weak_one"}));
}

TEST(ModuleImageTest, PtxWithoutEntriesIsValid) {
  std::string error;
  auto info = ScanModuleImage(".version 8.0\n.target sm_80\n.func f(){ ret; }\n", &error);
  ASSERT_TRUE(info) << error;
  EXPECT_TRUE(info->entries.empty());
}

TEST(ModuleImageTest, GarbageIsRejectedWithAClearError) {
  std::string error;
  EXPECT_FALSE(ScanModuleImage("hello world, not a module", &error));
  EXPECT_NE(error.find("not a module image"), std::string::npos) << error;
  EXPECT_FALSE(ScanModuleImage("", &error));
  EXPECT_FALSE(ScanModuleImage("a", &error));
  EXPECT_FALSE(ScanModuleImage(nullptr, &error));
  EXPECT_NE(error.find("null"), std::string::npos);
  // Must not crash without an error string either.
  EXPECT_FALSE(ScanModuleImage("xyz", nullptr));
}

TEST(ModuleImageTest, TruncatedImagesAreRejectedNotOverread) {
  for (const char* file :
       {"images.cubin", "images.fatbin", "images_zstd.fatbin", "images_lz4.fatbin"}) {
    std::string full = ReadImage(file);
    for (size_t cut : {size_t{3}, size_t{20}, size_t{70}, full.size() / 2, full.size() - 1}) {
      // A heap copy of exactly `cut` bytes, so ASan would catch any read past the end.
      std::vector<unsigned char> part(full.begin(), full.begin() + static_cast<long>(cut));
      std::string error;
      EXPECT_FALSE(ScanModuleImageSized(part.data(), part.size(), &error)) << file << " " << cut;
      EXPECT_FALSE(error.empty());
    }
  }
}

TEST(ModuleImageTest, CorruptFatbinHeadersAreRejected) {
  std::string fat = ReadImage("images.fatbin");
  std::string error;
  std::string bad = fat;
  uint64_t huge = uint64_t{1} << 40;
  std::memcpy(bad.data() + 8, &huge, sizeof(huge));  // fat_size
  EXPECT_FALSE(ScanModuleImage(bad.data(), &error));
  EXPECT_FALSE(error.empty());

  bad = fat;
  uint64_t entry_size = uint64_t{1} << 20;
  std::memcpy(bad.data() + 16 + 8, &entry_size, sizeof(entry_size));  // first entry's size
  EXPECT_FALSE(ScanModuleImage(bad.data(), &error));
  EXPECT_NE(error.find("entry 0"), std::string::npos) << error;
}

TEST(ModuleImageTest, CorruptCompressedPayloadsAreRejected) {
  for (auto [file, codec] : {std::pair{"images_zstd.fatbin", "zstd"}, {"images_lz4.fatbin", "LZ4"}}) {
    std::string bad = ReadImage(file);
    // Scramble the first entry's compressed payload (after the 16-byte fatbin header and the
    // 64-byte entry header), keeping the headers intact.
    for (size_t i = 16 + 64 + 4; i < 16 + 64 + 64 && i < bad.size(); ++i) bad[i] ^= 0x5a;
    std::string error;
    EXPECT_FALSE(ScanModuleImage(bad.data(), &error)) << file;
    EXPECT_NE(error.find(std::string(codec) + "-compressed entry could not be decoded"),
              std::string::npos)
        << file << ": " << error;
  }
}

TEST(ModuleImageTest, CorruptElfIsRejected) {
  std::string cubin = ReadImage("images.cubin");
  std::string bad = cubin;
  uint64_t far = uint64_t{1} << 30;
  std::memcpy(bad.data() + offsetof(Elf64_Ehdr, e_shoff), &far, sizeof(far));
  std::string error;
  EXPECT_FALSE(ScanModuleImageSized(bad.data(), bad.size(), &error));
  EXPECT_NE(error.find("cubin"), std::string::npos) << error;

  bad = cubin;
  bad[EI_CLASS] = ELFCLASS32;
  EXPECT_FALSE(ScanModuleImage(bad.data(), &error));
}

TEST(ModuleImageTest, KindNames) {
  EXPECT_STREQ(ImageKindName(ImageKind::kPtx), "PTX");
  EXPECT_STREQ(ImageKindName(ImageKind::kCubin), "cubin");
  EXPECT_STREQ(ImageKindName(ImageKind::kFatbin), "fatbin");
}

}  // namespace
}  // namespace simcuda
