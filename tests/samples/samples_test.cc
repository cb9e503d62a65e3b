// End-to-end tests of the sample servers on simcuda: real processes answering the Open
// Inference Protocol, results checked against host references and the digest formula,
// malformed requests rejected with 4xx while the server keeps serving, clean SIGTERM shutdown.
#include <cmath>
#include <string>
#include <vector>

#include <gtest/gtest.h>
#include <httplib.h>
#include <nlohmann/json.hpp>

#include "gshare/loadgen/requests.h"
#include "reference.h"
#include "sample_process.h"

namespace sample_test {
namespace {

using nlohmann::json;

struct Reply {
  int status = 0;
  json body;
};

Reply Get(const SampleProcess& p, const std::string& path) {
  httplib::Client c("127.0.0.1", p.port());
  auto r = c.Get(path);
  if (!r) return {};
  return {r->status, json::parse(r->body, nullptr, false)};
}

Reply Post(const SampleProcess& p, const std::string& path, const std::string& body) {
  httplib::Client c("127.0.0.1", p.port());
  c.set_read_timeout(std::chrono::seconds(60));
  auto r = c.Post(path, body, "application/json");
  if (!r) return {};
  return {r->status, json::parse(r->body, nullptr, false)};
}

const json* Output(const json& response, const std::string& name) {
  if (!response.contains("outputs")) return nullptr;
  for (const json& o : response["outputs"]) {
    if (o["name"] == name) return &o;
  }
  return nullptr;
}

json Tensor(const std::string& name, const std::string& type, const std::vector<int64_t>& shape,
            const json& data) {
  return {{"name", name}, {"datatype", type}, {"shape", shape}, {"data", data}};
}

std::vector<float> TestImage() {
  std::vector<float> img(3 * 32 * 32);
  for (size_t i = 0; i < img.size(); ++i) img[i] = static_cast<float>((i * 37) % 101) / 101.0f;
  return img;
}

// The digest the server must return, computed with the load generator's implementation.
std::string Digest(const std::string& model, uint64_t seed,
                   const std::vector<std::pair<std::string, std::vector<uint32_t>>>& inputs) {
  gshare::loadgen::DigestBuilder d(model, seed);
  for (const auto& [name, words] : inputs) {
    d.Input(name);
    for (uint32_t w : words) d.Word(w);
  }
  return d.Hex();
}

std::vector<uint32_t> Words(const std::vector<float>& f) {
  std::vector<uint32_t> w(f.size());
  for (size_t i = 0; i < f.size(); ++i) std::memcpy(&w[i], &f[i], 4);
  return w;
}
std::vector<uint32_t> Words(const std::vector<int32_t>& v) {
  return std::vector<uint32_t>(v.begin(), v.end());
}

TEST(SampleCnn, HealthMetadataAndInferenceMatchTheHostReference) {
  SampleProcess p;
  ASSERT_EQ(p.Start(SAMPLE_CNN_BIN, {"--seed", "7", "--name", "classifier"}), "");
  EXPECT_NE(p.ready_line().find("name=classifier weight_bytes=62467872"), std::string::npos)
      << p.ready_line();
  EXPECT_EQ(Get(p, "/v2/health/live").status, 200);
  EXPECT_EQ(Get(p, "/v2/health/ready").status, 200);
  EXPECT_EQ(Get(p, "/v2/models/classifier/ready").status, 200);
  const Reply meta = Get(p, "/v2/models/classifier");
  ASSERT_EQ(meta.status, 200);
  EXPECT_EQ(meta.body["name"], "classifier");
  EXPECT_EQ(meta.body["platform"], "sample-cnn");
  EXPECT_EQ(meta.body["inputs"][0]["name"], "image");
  EXPECT_EQ(meta.body["inputs"][0]["shape"], json({-1, 3, 32, 32}));
  EXPECT_EQ(meta.body["parameters"]["seed"], 7);

  const std::vector<float> img = TestImage();
  const json req = {{"id", "r1"}, {"inputs", {Tensor("image", "FP32", {1, 3, 32, 32}, img)}}};
  const Reply r = Post(p, "/v2/models/classifier/infer", req.dump());
  ASSERT_EQ(r.status, 200) << r.body.dump();
  EXPECT_EQ(r.body["id"], "r1");
  EXPECT_EQ(r.body["model_name"], "classifier");
  const json* logits = Output(r.body, "logits");
  const json* cls = Output(r.body, "class");
  const json* digest = Output(r.body, "digest");
  ASSERT_TRUE(logits && cls && digest);
  EXPECT_EQ((*logits)["shape"], json({1, 1000}));
  const std::vector<double> ref = CnnLogits(7, img);
  ASSERT_EQ((*logits)["data"].size(), ref.size());
  size_t best = 0;
  for (size_t i = 0; i < ref.size(); ++i) {
    EXPECT_NEAR((*logits)["data"][i].get<double>(), ref[i], 1e-3 + 1e-3 * std::fabs(ref[i])) << i;
    if (ref[i] > ref[best]) best = i;
  }
  EXPECT_EQ((*cls)["data"][0].get<size_t>(), best);
  EXPECT_EQ((*digest)["data"][0], Digest("classifier", 7, {{"image", Words(img)}}));

  // Batch of two: the same image twice gives the same logits twice.
  std::vector<float> two = img;
  two.insert(two.end(), img.begin(), img.end());
  const Reply b = Post(p, "/v2/models/classifier/infer",
                       json{{"inputs", {Tensor("image", "FP32", {2, 3, 32, 32}, two)}}}.dump());
  ASSERT_EQ(b.status, 200) << b.body.dump();
  const json* bl = Output(b.body, "logits");
  ASSERT_TRUE(bl);
  EXPECT_EQ((*bl)["data"][5], (*bl)["data"][1005]);
  EXPECT_EQ(p.Stop(), 0);
}

TEST(SampleCnn, MalformedRequestsGet4xxAndTheServerKeepsServing) {
  SampleProcess p;
  ASSERT_EQ(p.Start(SAMPLE_CNN_BIN, {}), "");
  const std::vector<float> img = TestImage();
  struct Case {
    std::string body, expect;
  };
  const std::vector<Case> cases = {
      {"{not json", "not valid JSON"},
      {"[1,2]", "JSON object"},
      {"{}", "\"inputs\""},
      {R"({"inputs":[{"name":"pixels","shape":[1],"datatype":"FP32","data":[1]}]})", "unknown input 'pixels'"},
      {R"({"inputs":[{"name":"image","shape":[1,3,32,32],"datatype":"INT32","data":[1]}]})", "datatype INT32 is not FP32"},
      {R"({"inputs":[{"name":"image","shape":[1,3,32],"datatype":"FP32","data":[1]}]})", "dimensions"},
      {R"({"inputs":[{"name":"image","shape":[1,3,32,32],"datatype":"FP32","data":[1,2,3]}]})", "needs 3072"},
      {R"({"inputs":[{"name":"image","shape":[1,3,32,32],"datatype":"FP32","data":"x"}]})", "\"data\""},
      {json{{"inputs", {Tensor("image", "FP32", {9, 3, 32, 32}, std::vector<float>(9 * 3072, 0.5f))}}}.dump(), "batch must be 1..8"},
      {json{{"inputs", {Tensor("image", "FP32", {1, 3, 32, 32}, img), Tensor("image", "FP32", {1, 3, 32, 32}, img)}}}.dump(), "given twice"},
  };
  for (const Case& c : cases) {
    const Reply r = Post(p, "/v2/models/cnn/infer", c.body);
    EXPECT_EQ(r.status, 400) << c.body.substr(0, 80);
    ASSERT_TRUE(r.body.is_object() && r.body.contains("error")) << c.body.substr(0, 80);
    EXPECT_NE(r.body["error"].get<std::string>().find(c.expect), std::string::npos)
        << r.body["error"] << " for " << c.body.substr(0, 80);
  }
  EXPECT_EQ(Post(p, "/v2/models/other/infer", "{}").status, 404);
  EXPECT_EQ(Get(p, "/v2/models/other").status, 404);
  EXPECT_EQ(Get(p, "/v2/nothing").status, 404);
  const Reply ok = Post(p, "/v2/models/cnn/infer",
                        json{{"inputs", {Tensor("image", "FP32", {1, 3, 32, 32}, img)}}}.dump());
  EXPECT_EQ(ok.status, 200);
  const Reply stats = Get(p, "/v2/models/cnn/stats");
  EXPECT_EQ(stats.body["inference_count"], 1);
  EXPECT_EQ(stats.body["error_count"], cases.size());
  EXPECT_EQ(p.Stop(), 0);
}

TEST(SampleBert, EncoderOutputMatchesTheHostReference) {
  SampleProcess p;
  ASSERT_EQ(p.Start(SAMPLE_BERT_BIN, {"--seed", "3"}), "");
  EXPECT_NE(p.ready_line().find("weight_bytes=271674368"), std::string::npos) << p.ready_line();
  const std::vector<int32_t> ids = {101, 524287, 7, 0, 4242, 99999, 12, 102};
  const Reply r = Post(p, "/v2/models/bert/infer",
                       json{{"inputs", {Tensor("input_ids", "INT32", {1, 8}, ids)}}}.dump());
  ASSERT_EQ(r.status, 200) << r.body.dump();
  const json* emb = Output(r.body, "embedding");
  ASSERT_TRUE(emb);
  const std::vector<double> ref = BertEmbedding(3, ids);
  ASSERT_EQ((*emb)["data"].size(), ref.size());
  for (size_t i = 0; i < ref.size(); ++i) {
    EXPECT_NEAR((*emb)["data"][i].get<double>(), ref[i], 2e-3 + 1e-3 * std::fabs(ref[i])) << i;
  }
  EXPECT_EQ((*Output(r.body, "digest"))["data"][0], Digest("bert", 3, {{"input_ids", Words(ids)}}));
  const Reply bad = Post(p, "/v2/models/bert/infer",
                         json{{"inputs", {Tensor("input_ids", "INT32", {1, 2}, {5, 524288})}}}.dump());
  EXPECT_EQ(bad.status, 400);
  EXPECT_NE(bad.body["error"].get<std::string>().find("outside"), std::string::npos);
  EXPECT_EQ(Post(p, "/v2/models/bert/infer",
                 json{{"inputs", {Tensor("input_ids", "INT32", {1, 2}, {1.5, 2})}}}.dump()).status, 400);
  EXPECT_EQ(p.Stop(), 0);
}

TEST(SampleLlm, GreedyDecodingMatchesTheHostReference) {
  SampleProcess p;
  ASSERT_EQ(p.Start(SAMPLE_LLM_BIN, {"--seed", "5"}), "");
  EXPECT_NE(p.ready_line().find("weight_bytes=1082790912"), std::string::npos) << p.ready_line();
  const std::vector<int32_t> prompt = {17, 4095, 3, 256, 1000};
  const int n = 6;
  const Reply r = Post(p, "/v2/models/llm/infer",
                       json{{"inputs", {Tensor("input_ids", "INT32", {1, 5}, prompt),
                                        Tensor("max_tokens", "INT32", {1}, {n})}}}.dump());
  ASSERT_EQ(r.status, 200) << r.body.dump();
  const json* out = Output(r.body, "output_ids");
  ASSERT_TRUE(out);
  EXPECT_EQ((*out)["shape"], json({1, n}));
  std::vector<double> margin;
  const std::vector<int32_t> ref = LlmGenerate(5, prompt, n, &margin);
  // Compare until the reference's choice is too close to call in float32.
  for (int i = 0; i < n; ++i) {
    EXPECT_EQ((*out)["data"][static_cast<size_t>(i)].get<int32_t>(), ref[static_cast<size_t>(i)]) << i;
    if (margin[static_cast<size_t>(i)] < 1e-3) break;
  }
  EXPECT_EQ((*Output(r.body, "digest"))["data"][0],
            Digest("llm", 5, {{"input_ids", Words(prompt)}, {"max_tokens", {static_cast<uint32_t>(n)}}}));
  // max_tokens is optional (default 16) and bounded by the context of 256 positions.
  const Reply d = Post(p, "/v2/models/llm/infer",
                       json{{"inputs", {Tensor("input_ids", "INT32", {1, 5}, prompt)}}}.dump());
  ASSERT_EQ(d.status, 200);
  EXPECT_EQ((*Output(d.body, "output_ids"))["shape"], json({1, 16}));
  const Reply too_long = Post(p, "/v2/models/llm/infer",
                              json{{"inputs", {Tensor("input_ids", "INT32", {1, 5}, prompt),
                                               Tensor("max_tokens", "INT32", {1}, {252})}}}.dump());
  EXPECT_EQ(too_long.status, 400);
  EXPECT_EQ(p.Stop(), 0);
}

TEST(SampleCli, BadFlagsExitWithStatus2) {
  const ProgramResult r = RunProgram(SAMPLE_CNN_BIN, {"--port", "70000"});
  EXPECT_EQ(r.status, 2) << r.err;
  const ProgramResult n = RunProgram(SAMPLE_CNN_BIN, {"--name", "a/b"});
  EXPECT_EQ(n.status, 2) << n.err;
}

TEST(SampleCli, ADeviceTooSmallForTheWeightsFailsCleanly) {
  const ProgramResult r = RunProgram(SAMPLE_CNN_BIN, {"--port", "0"}, 120, {"SIMCUDA_DEVICES=32MiB"});
  EXPECT_EQ(r.status, 1) << r.err;  // not a crash
  EXPECT_NE(r.err.find("cuMemAlloc(weights) failed: CUDA_ERROR_OUT_OF_MEMORY"), std::string::npos) << r.err;
  EXPECT_NE(r.out.find("PORT="), std::string::npos);
  EXPECT_EQ(r.out.find("READY"), std::string::npos);
}

}  // namespace
}  // namespace sample_test
