// LongRoPE in GGUF files (phi3's rope_factors_long/short tables, llama.cpp's layout), on copies
// of the phi3 fixture written at test time:
//  - the tables divide each pair's angle: long and short tables of all 2 equal the same model
//    with linear scaling 2, and tables of all 1 equal the unscaled fixture (whose path is checked
//    against the peer's logits);
//  - the table follows the served context as llama.cpp chooses it: a copy whose long table is
//    all 2 and short table all 1 (original context 64) runs like linear-2 when it serves its
//    whole context and like the fixture when served at most 64 tokens, by Model::
//    set_served_context and by the engine's max_model_len (greedy tokens).
// Per-pair tables, partial rotary dims and the attention factor are checked against a float64
// PyTorch forward on a Hugging Face directory (hf_golden_test, phi3-longrope-f32).
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <condition_variable>
#include <mutex>

#include "diagnostics/sequence_session.h"
#include "golden/gguf_copy.h"
#include "loader/model_loader.h"
#include "pagoda/engine.h"

namespace pagoda {
namespace {

constexpr int32_t kOriginal = 64;  // rope.scaling.original_context_length of the copies
constexpr size_t kPairs = 32;      // the fixture's rope dims (64) / 2

std::filesystem::path fixture_model() {
  return pagoda::testing::fixture("models/arch/phi3-Q8_0.gguf");
}

// The fixture with original_context_length 64 and `edit` applied, as `name`.
std::string copy(const std::string& name, std::function<void(format::GgufWriter&)> metadata,
                 std::function<void(std::vector<testing::GgufCopyTensor>&)> tensors) {
  auto out = testing::write_gguf_copy(fixture_model(),
                                      {[&](format::GgufWriter& w) {
                                         w.set("phi3.rope.scaling.original_context_length",
                                               format::GgufWriteValue::u32(kOriginal));
                                         if (metadata) metadata(w);
                                       },
                                       std::move(tensors)},
                                      "longrope_" + name + ".gguf");
  EXPECT_TRUE(out.ok()) << out.status().to_string();
  return out.ok() ? *out : "";
}

std::string longrope_copy(const std::string& name, float long_factor, float short_factor) {
  return copy(name, nullptr, [=](std::vector<testing::GgufCopyTensor>& ts) {
    ts.push_back(
        testing::f32_tensor("rope_factors_long.weight", std::vector<float>(kPairs, long_factor)));
    ts.push_back(
        testing::f32_tensor("rope_factors_short.weight", std::vector<float>(kPairs, short_factor)));
  });
}

std::string linear_copy(const std::string& name, float factor) {
  return copy(
      name,
      [=](format::GgufWriter& w) {
        w.set("phi3.rope.scaling.type", format::GgufWriteValue::string("linear"));
        w.set("phi3.rope.scaling.factor", format::GgufWriteValue::f32(factor));
      },
      nullptr);
}

std::vector<int32_t> prompt(int n) {
  std::vector<int32_t> t;
  uint32_t x = 12345;
  for (int i = 0; i < n; ++i) {
    x = x * 1664525u + 1013904223u;
    t.push_back(static_cast<int32_t>(100 + (x >> 8) % 30000));
  }
  return t;
}

// Logits of every prompt token; served: Model::set_served_context's argument (0: not called).
std::vector<float> logits(const std::string& path, int32_t served = 0) {
  auto loaded = loader::load_model(path);
  EXPECT_TRUE(loaded.ok()) << loaded.status().to_string();
  if (!loaded.ok()) return {};
  if (served > 0) loaded->model->set_served_context(served);
  const std::vector<int32_t> tokens = prompt(48);
  auto session = diagnostics::SequenceSession::create(*loaded->model, 48);
  EXPECT_TRUE(session.ok()) << session.status().to_string();
  std::vector<float> out;
  if (!session.ok()) return out;
  const Status st = session->feed(tokens, /*all_logits=*/true, out);
  EXPECT_TRUE(st.ok()) << st.to_string();
  return out;
}

// max |a - b| / max |b|.
double relative_gap(const std::vector<float>& a, const std::vector<float>& b) {
  EXPECT_EQ(a.size(), b.size());
  if (a.size() != b.size() || b.empty()) return INFINITY;
  double gap = 0, scale = 0;
  for (size_t i = 0; i < a.size(); ++i) {
    gap = std::max(gap, static_cast<double>(std::fabs(a[i] - b[i])));
    scale = std::max(scale, static_cast<double>(std::fabs(b[i])));
  }
  return gap / scale;
}

class LongRopeGolden : public ::testing::Test {
 protected:
  void SetUp() override { PAGODA_REQUIRE_FIXTURE(fixture_model()); }
};

TEST_F(LongRopeGolden, TablesDivideEachPairsAngle) {
  const std::vector<float> plain = logits(fixture_model().string());
  const std::vector<float> linear2 = logits(linear_copy("linear2", 2.0f));
  // The comparison can fail: scaling changes the logits well beyond the equalities' bound.
  ASSERT_GT(relative_gap(linear2, plain), 1e-2);
  EXPECT_LE(relative_gap(logits(longrope_copy("all2", 2.0f, 2.0f)), linear2), 1e-6);
  EXPECT_LE(relative_gap(logits(longrope_copy("all1", 1.0f, 1.0f)), plain), 1e-6);
}

TEST_F(LongRopeGolden, ServedContextChoosesTheTable) {
  const std::string model = longrope_copy("long2_short1", 2.0f, 1.0f);
  const std::vector<float> plain = logits(fixture_model().string());
  const std::vector<float> linear2 = logits(linear_copy("linear2", 2.0f));
  ASSERT_GT(relative_gap(linear2, plain), 1e-2);
  // Not called: the model's whole context (4096 > 64): the long table.
  EXPECT_LE(relative_gap(logits(model), linear2), 1e-6);
  EXPECT_LE(relative_gap(logits(model, kOriginal + 1), linear2), 1e-6);
  EXPECT_LE(relative_gap(logits(model, kOriginal), plain), 1e-6);
}

// 16 greedy tokens after a 40-token prompt with max_model_len `max_len` (0: the model's).
std::vector<int32_t> greedy(const std::string& path, int32_t max_len) {
  EngineConfig c;
  c.model_path = path;
  c.block_size = 16;
  c.kv_cache_bytes = 8ull << 20;
  c.max_num_seqs = 2;
  c.max_model_len = max_len;
  c.num_threads = 2;
  c.warm_up = false;
  auto e = Engine::create(c);
  EXPECT_TRUE(e.ok()) << e.status().to_string();
  if (!e.ok()) return {};
  std::mutex mu;
  std::condition_variable cv;
  std::vector<int32_t> out;
  bool done = false;
  GenerateRequest r;
  r.request_id = "r";
  r.prompt_tokens = prompt(40);
  r.sampling.temperature = 0.0f;
  r.stop.max_tokens = 16;
  r.stop.ignore_eos = true;
  const Status st = (*e)->add_request(std::move(r), [&](RequestOutput o) {
    std::lock_guard<std::mutex> l(mu);
    out.insert(out.end(), o.new_token_ids.begin(), o.new_token_ids.end());
    if (o.finished) {
      EXPECT_NE(o.finish_reason, FinishReason::kError) << o.error;
      done = true;
      cv.notify_all();
    }
  });
  EXPECT_TRUE(st.ok()) << st.to_string();
  std::unique_lock<std::mutex> l(mu);
  EXPECT_TRUE(cv.wait_for(l, std::chrono::minutes(2), [&] { return done; }));
  EXPECT_EQ(out.size(), 16u);
  return out;
}

TEST_F(LongRopeGolden, EngineChoosesByMaxModelLen) {
  const std::string model = longrope_copy("long2_short1", 2.0f, 1.0f);
  const std::vector<int32_t> plain = greedy(fixture_model().string(), kOriginal);
  const std::vector<int32_t> linear2 = greedy(linear_copy("linear2", 2.0f), kOriginal);
  ASSERT_NE(plain, linear2);  // the two tables give different tokens here
  EXPECT_EQ(greedy(model, kOriginal), plain);
  EXPECT_EQ(greedy(model, 0), linear2);  // max_model_len 4096
  EXPECT_EQ(greedy(model, kOriginal + 16), linear2);
}

}  // namespace
}  // namespace pagoda
