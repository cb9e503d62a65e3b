// Tests of the model catalog: TOML parsing (good file, missing keys, bad units, unknown keys,
// duplicates), the built-in default against the shipped file, and the SLO rule.
#include "gshare/workload/catalog.h"

#include <gtest/gtest.h>

#include "gshare/workload/data_dir.h"
#include "test_util.h"

namespace gshare::workload {
namespace {

using testing::TempDir;

constexpr const char* kGood = R"(context = "300MiB"
[[model]]
name = "resnet50"
weights = "49MiB"
activation = 1048576
exec = "2.1ms"
exec_cv = 0.1

[[model]]
name = "llm"
weights = "14GB"
exec = "1s"
slo = "3s"
prefill_per_token = "100us"
decode_per_token = "8ms"
share = 2
)";

TEST(Catalog, ParsesAGoodFile) {
  TempDir dir;
  Result<Catalog> catalog = LoadCatalog(dir.Write("c.toml", kGood));
  ASSERT_TRUE(catalog.ok()) << catalog.status().message();
  EXPECT_EQ(catalog->context_bytes, 300u << 20);
  ASSERT_EQ(catalog->models.size(), 2u);
  const ModelSpec& r = catalog->models[0];
  EXPECT_EQ(r.name, "resnet50");
  EXPECT_EQ(r.weights_bytes, 49u << 20);
  EXPECT_EQ(r.activation_bytes, 1048576u);
  EXPECT_DOUBLE_EQ(r.exec_ms_mean, 2.1);
  EXPECT_DOUBLE_EQ(r.exec_ms_cv, 0.1);
  EXPECT_FALSE(r.slo_ms.has_value());
  EXPECT_DOUBLE_EQ(r.share, 1.0);
  const ModelSpec& l = catalog->models[1];
  EXPECT_EQ(l.weights_bytes, 14'000'000'000u);
  EXPECT_DOUBLE_EQ(l.exec_ms_mean, 1000.0);
  EXPECT_DOUBLE_EQ(l.slo_ms.value_or(0), 3000.0);
  EXPECT_DOUBLE_EQ(l.prefill_ms_per_token, 0.1);
  EXPECT_DOUBLE_EQ(l.decode_ms_per_token, 8.0);
  EXPECT_DOUBLE_EQ(l.share, 2.0);
  EXPECT_EQ(catalog->Find("llm"), 1);
  EXPECT_EQ(catalog->Find("nope"), -1);
}

// Each case: a file and a fragment its error message must contain.
struct BadCase {
  const char* toml;
  const char* expected;
};

TEST(Catalog, BadFilesGiveClearErrors) {
  const BadCase cases[] = {
      {"[[model]]\nweights = \"1MiB\"\nexec = \"1ms\"\n", "c.toml:1: model #1: missing key 'name'"},
      {"[[model]]\nname = \"m\"\nexec = \"1ms\"\n", "missing key 'weights'"},
      {"[[model]]\nname = \"m\"\nweights = \"1MiB\"\n", "missing key 'exec'"},
      {"[[model]]\nname = \"m\"\nweights = \"12 parsecs\"\nexec = \"1ms\"\n",
       "c.toml:3: model 'm': weights '12 parsecs' is not a byte size"},
      {"[[model]]\nname = \"m\"\nweights = \"1MiB\"\nexec = \"20\"\n",
       "c.toml:4: model 'm': exec '20' is not a duration"},
      {"[[model]]\nname = \"m\"\nweights = \"1MiB\"\nexec = \"1ms\"\nslo = \"fast\"\n",
       "slo 'fast' is not a duration"},
      {"[[model]]\nname = \"m\"\nweights = -5\nexec = \"1ms\"\n", "weights must not be negative"},
      {"[[model]]\nname = \"m\"\nweights = \"1MiB\"\nexec = \"1ms\"\nexec_cv = \"x\"\n",
       "exec_cv must be a number"},
      {"[[model]]\nname = \"m\"\nweights = \"1MiB\"\nexec = \"1ms\"\nwieghts = 3\n",
       "c.toml:5: model 'm': unknown key 'wieghts'"},
      {"contxt = \"1MiB\"\n[[model]]\nname = \"m\"\nweights = \"1MiB\"\nexec = \"1ms\"\n",
       "unknown key 'contxt'"},
      {"[[model]]\nname = \"m\"\nweights = \"1MiB\"\nexec = \"1ms\"\n"
       "[[model]]\nname = \"m\"\nweights = \"1MiB\"\nexec = \"1ms\"\n",
       "c.toml:5: model 'm' is defined twice"},
      {"context = \"1MiB\"\n", "no [[model]] tables"},
      {"model = 3\n", "must be an array of tables"},
      {"[[model]]\nname = \"m\n", "c.toml:2:"},  // TOML syntax error
      {"[[model]]\nname = \"m\"\nweights = \"0MiB\"\nexec = \"1ms\"\n", "weights must be positive"},
  };
  for (const BadCase& c : cases) {
    Result<Catalog> catalog = ParseCatalog(c.toml, "c.toml");
    ASSERT_FALSE(catalog.ok()) << c.toml;
    EXPECT_NE(catalog.status().message().find(c.expected), std::string::npos)
        << "expected '" << c.expected << "' in '" << catalog.status().message() << "'";
  }
}

TEST(Catalog, MissingFileIsAnError) {
  Result<Catalog> catalog = LoadCatalog("/nonexistent/gshare/catalog.toml");
  ASSERT_FALSE(catalog.ok());
  EXPECT_NE(catalog.status().message().find("cannot open"), std::string::npos);
}

void ExpectSameModels(const Catalog& a, const Catalog& b) {
  EXPECT_EQ(a.context_bytes, b.context_bytes);
  ASSERT_EQ(a.models.size(), b.models.size());
  for (size_t i = 0; i < a.models.size(); ++i) {
    const ModelSpec& x = a.models[i];
    const ModelSpec& y = b.models[i];
    EXPECT_EQ(x.name, y.name);
    EXPECT_EQ(x.weights_bytes, y.weights_bytes) << x.name;
    EXPECT_EQ(x.activation_bytes, y.activation_bytes) << x.name;
    EXPECT_DOUBLE_EQ(x.exec_ms_mean, y.exec_ms_mean) << x.name;
    EXPECT_DOUBLE_EQ(x.exec_ms_cv, y.exec_ms_cv) << x.name;
    EXPECT_DOUBLE_EQ(x.prefill_ms_per_token, y.prefill_ms_per_token) << x.name;
    EXPECT_DOUBLE_EQ(x.decode_ms_per_token, y.decode_ms_per_token) << x.name;
    EXPECT_EQ(x.slo_ms, y.slo_ms) << x.name;
    EXPECT_DOUBLE_EQ(x.share, y.share) << x.name;
    EXPECT_DOUBLE_EQ(x.compute_demand, y.compute_demand) << x.name;
    EXPECT_DOUBLE_EQ(x.bandwidth_demand, y.bandwidth_demand) << x.name;
  }
}

TEST(Catalog, ShippedFileMatchesTheBuiltInDefault) {
  Result<Catalog> source = LoadCatalog(GSHARE_TEST_WORKLOAD_SOURCE_CATALOG);
  ASSERT_TRUE(source.ok()) << source.status().message();
  ExpectSameModels(*source, DefaultCatalog());
  Result<std::filesystem::path> shipped = ShippedCatalogPath();
  ASSERT_TRUE(shipped.ok()) << shipped.status().message();
  Result<Catalog> copy = LoadCatalog(*shipped);
  ASSERT_TRUE(copy.ok()) << copy.status().message();
  ExpectSameModels(*copy, DefaultCatalog());
}

TEST(Catalog, ShippedLlmCatalogIsTheDefaultsTokenDrivenModels) {
  Result<std::filesystem::path> path = ShippedLlmCatalogPath();
  ASSERT_TRUE(path.ok()) << path.status().message();
  Result<Catalog> llm = LoadCatalog(*path);
  ASSERT_TRUE(llm.ok()) << llm.status().message();
  Catalog expected = DefaultCatalog();
  std::erase_if(expected.models, [](const ModelSpec& m) { return m.decode_ms_per_token == 0; });
  ASSERT_EQ(expected.models.size(), 3u);
  ExpectSameModels(*llm, expected);
}

TEST(Catalog, DefaultCatalogFollowsTheReferenceTable) {
  const Catalog c = DefaultCatalog();
  ASSERT_GE(c.Find("resnet50"), 0);
  const ModelSpec& resnet = c.models[static_cast<size_t>(c.Find("resnet50"))];
  EXPECT_EQ(resnet.weights_bytes, 49u << 20);
  EXPECT_DOUBLE_EQ(resnet.exec_ms_mean, 2.1);
  // Shares: about two thirds of functions get a model under 1 GB, 78% under 4 GB.
  double under_1g = 0, under_4g = 0, total = 0;
  for (const ModelSpec& m : c.models) {
    total += m.share;
    if (m.weights_bytes < 1'000'000'000) under_1g += m.share;
    if (m.weights_bytes < 4'000'000'000) under_4g += m.share;
  }
  EXPECT_NEAR(under_1g / total, 0.664, 0.01);
  EXPECT_NEAR(under_4g / total, 0.781, 0.01);
}

TEST(Catalog, QuantilesAndSlo) {
  ModelSpec m;
  m.exec_ms_mean = 10;
  m.exec_ms_cv = 0;
  EXPECT_DOUBLE_EQ(ExecQuantileMs(m, 0.9), 10);
  EXPECT_DOUBLE_EQ(SloMs(m), 15);
  EXPECT_DOUBLE_EQ(SloMs(m, 2.0, 30.0), 30);
  m.exec_ms_cv = 0.5;
  // Log-normal, mean 10, CV 0.5: sigma^2 = ln 1.25, mu = ln 10 - sigma^2/2; p90 = exp(mu + 1.2816 sigma) = 16.385.
  EXPECT_NEAR(ExecQuantileMs(m, 0.9), 16.385, 0.01);
  EXPECT_NEAR(ExecQuantileMs(m, 0.5), 8.944, 0.01);
  m.slo_ms = 7;
  EXPECT_DOUBLE_EQ(SloMs(m), 7);
}

}  // namespace
}  // namespace gshare::workload
