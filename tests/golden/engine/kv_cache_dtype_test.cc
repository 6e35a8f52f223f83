// KV cache dtypes end to end on the fixture models (../shared/fixtures/models):
// - with a bf16, q8_0 (and f32) cache the logits of every position (a 32-token prompt in one batch,
//   then 16 teacher-forced single-token decodes) stay within a stated fraction of each row's std
//   of the f16-cache run (the reference llama.cpp uses by default): max |logit - f16 logit| / std;
// - through the public Engine with kv_cache_dtype bf16 / q8_0 (and f16 with flash attention's
//   online softmax), concurrent requests (prefix caching, chunked prefill, an n = 2 fork sharing
//   blocks) give exactly the tokens they give alone.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <condition_variable>
#include <cstdio>
#include <map>
#include <mutex>
#include <random>

#include "diagnostics/sequence_session.h"
#include "loader/model_loader.h"
#include "pagoda/engine.h"
#include "test_support.h"

namespace pagoda {
namespace {

using tensor::DType;

std::string model_path(const std::string& name) {
  return testing::fixture("models/" + name).string();
}

// All logit rows of `tokens`: the first `prompt` tokens in one batch (every row kept), then the
// rest one token at a time.
std::vector<std::vector<float>> logit_rows(model::Model& m, DType dtype,
                                           const std::vector<int32_t>& tokens, size_t prompt) {
  std::vector<std::vector<float>> rows;
  auto session =
      diagnostics::SequenceSession::create(m, static_cast<int32_t>(tokens.size()), dtype);
  EXPECT_TRUE(session.ok()) << session.status().to_string();
  if (!session.ok()) return rows;
  const auto vocab = static_cast<size_t>(m.config().vocab_size);
  std::vector<float> logits;
  const Status st =
      session->feed(std::span<const int32_t>(tokens.data(), prompt), /*all_logits=*/true, logits);
  EXPECT_TRUE(st.ok()) << st.to_string();
  for (size_t i = 0; i < prompt; ++i) {
    rows.emplace_back(logits.begin() + static_cast<std::ptrdiff_t>(i * vocab),
                      logits.begin() + static_cast<std::ptrdiff_t>((i + 1) * vocab));
  }
  for (size_t i = prompt; i < tokens.size(); ++i) {
    const Status s = session->feed(std::span<const int32_t>(&tokens[i], 1), false, logits);
    EXPECT_TRUE(s.ok()) << s.to_string();
    rows.emplace_back(logits.begin(), logits.begin() + static_cast<std::ptrdiff_t>(vocab));
  }
  return rows;
}

struct DtypeCase {
  std::string model;
  DType dtype;
  double tolerance;  // max |logit - f16-cache logit| / std(f16-cache row), over all rows
};

class KvCacheDtypeLogits : public ::testing::TestWithParam<DtypeCase> {};

TEST_P(KvCacheDtypeLogits, StayCloseToF16Cache) {
  const DtypeCase c = GetParam();
  const std::string path = model_path(c.model);
  PAGODA_REQUIRE_FIXTURE(path);
  auto loaded = loader::load_model(path);
  ASSERT_TRUE(loaded.ok()) << loaded.status().to_string();
  model::Model& m = *loaded->model;
  std::mt19937 rng(99);
  std::uniform_int_distribution<int32_t> token(3, m.config().vocab_size - 1);
  std::vector<int32_t> tokens = {1};
  while (tokens.size() < 48)
    tokens.push_back(token(rng));
  const auto ref = logit_rows(m, DType::kF16, tokens, 32);
  const auto got = logit_rows(m, c.dtype, tokens, 32);
  ASSERT_EQ(ref.size(), tokens.size());
  ASSERT_EQ(got.size(), tokens.size());
  double worst = 0, sum_rel = 0;
  int argmax_same = 0;
  for (size_t r = 0; r < ref.size(); ++r) {
    double mean = 0, var = 0, max_diff = 0;
    for (float v : ref[r])
      mean += v;
    mean /= static_cast<double>(ref[r].size());
    for (size_t i = 0; i < ref[r].size(); ++i) {
      var += (ref[r][i] - mean) * (ref[r][i] - mean);
      max_diff = std::max(max_diff, std::fabs(static_cast<double>(got[r][i]) - ref[r][i]));
    }
    const double sd = std::sqrt(var / static_cast<double>(ref[r].size()));
    const double rel = max_diff / sd;
    worst = std::max(worst, rel);
    sum_rel += rel;
    argmax_same += std::max_element(ref[r].begin(), ref[r].end()) - ref[r].begin() ==
                   std::max_element(got[r].begin(), got[r].end()) - got[r].begin();
    EXPECT_LE(rel, c.tolerance) << "position " << r;
  }
  std::printf(
      "%s kv %s vs f16: max |dlogit|/std %.5f (mean over positions %.5f), argmax same %d/%zu\n",
      c.model.c_str(), std::string(tensor::dtype_name(c.dtype)).c_str(), worst,
      sum_rel / static_cast<double>(ref.size()), argmax_same, ref.size());
  RecordProperty("max_rel_logit_diff", std::to_string(worst));
}

// Measured (2 threads, AVX2): llama-F16: f32 0.0057, bf16 0.027, q8_0 0.083; llama-Q8_0: f32 0.100,
// bf16 0.127, q8_0 0.149; qwen2-Q8_0: f32 0.141, bf16 0.191, q8_0 0.287. The F16 model shows the
// cache's own error; the Q8_0 models quantise every activation to 8 bits before each matmul, which
// turns any perturbation (even f32 vs f16 cache) into level flips, hence their looser bounds.
INSTANTIATE_TEST_SUITE_P(Fixtures, KvCacheDtypeLogits,
                         ::testing::Values(DtypeCase{"llama-F16.gguf", DType::kF32, 0.02},
                                           DtypeCase{"llama-F16.gguf", DType::kBF16, 0.06},
                                           DtypeCase{"llama-F16.gguf", DType::kQ8_0, 0.15},
                                           DtypeCase{"llama-Q8_0.gguf", DType::kBF16, 0.25},
                                           DtypeCase{"llama-Q8_0.gguf", DType::kQ8_0, 0.25},
                                           DtypeCase{"qwen2-Q8_0.gguf", DType::kBF16, 0.4},
                                           DtypeCase{"qwen2-Q8_0.gguf", DType::kQ8_0, 0.4}),
                         [](const ::testing::TestParamInfo<DtypeCase>& p) {
                           std::string name = p.param.model.substr(0, p.param.model.find('.')) +
                                              "_" + std::string(tensor::dtype_name(p.param.dtype));
                           for (auto& ch : name)
                             if (!std::isalnum(static_cast<unsigned char>(ch))) ch = '_';
                           return name;
                         });

// ---- batched == alone through the Engine ----------------------------------------------------

class Sink {
 public:
  OutputCallback callback() {
    return [this](RequestOutput o) {
      std::lock_guard<std::mutex> l(mu_);
      auto& toks = tokens_[{o.request_id, o.index}];
      toks.insert(toks.end(), o.new_token_ids.begin(), o.new_token_ids.end());
      if (o.finished) {
        ++finals_;
        cv_.notify_all();
      }
    };
  }
  bool wait(int64_t finals) {
    std::unique_lock<std::mutex> l(mu_);
    return cv_.wait_for(l, std::chrono::minutes(5), [&] { return finals_ >= finals; });
  }
  std::map<std::pair<std::string, int32_t>, std::vector<int32_t>> tokens() {
    std::lock_guard<std::mutex> l(mu_);
    return tokens_;
  }

 private:
  std::mutex mu_;
  std::condition_variable cv_;
  std::map<std::pair<std::string, int32_t>, std::vector<int32_t>> tokens_;
  int64_t finals_ = 0;
};

// 12 greedy requests: prompt lengths 1..~90, a third sharing a 40-token prefix, one with n = 2.
std::vector<GenerateRequest> make_requests() {
  std::mt19937 rng(31);
  std::uniform_int_distribution<int32_t> token(3, 31999);
  std::vector<int32_t> shared;
  for (int i = 0; i < 40; ++i)
    shared.push_back(token(rng));
  std::vector<GenerateRequest> out;
  for (int i = 0; i < 12; ++i) {
    GenerateRequest r;
    r.request_id = "req-" + std::to_string(i);
    r.prompt_tokens.push_back(1);
    if (i % 3 == 1) r.prompt_tokens.insert(r.prompt_tokens.end(), shared.begin(), shared.end());
    const int len = static_cast<int>(rng() % 50);
    for (int k = 0; k < len; ++k)
      r.prompt_tokens.push_back(token(rng));
    r.stop.max_tokens = 1 + static_cast<int32_t>(rng() % 12);
    r.stop.ignore_eos = true;
    r.sampling.temperature = 0.0f;
    r.n = i == 4 ? 2 : 1;
    out.push_back(std::move(r));
  }
  return out;
}

class KvCacheDtypeEngine : public ::testing::TestWithParam<std::string> {};

TEST_P(KvCacheDtypeEngine, ConcurrentEqualsSolo) {
  const std::string path = model_path("llama-Q8_0.gguf");
  PAGODA_REQUIRE_FIXTURE(path);
  EngineConfig c;
  c.model_path = path;
  c.block_size = 16;
  c.kv_cache_bytes = 16ull << 20;
  // "DTYPE" or "DTYPE flash".
  const std::string param = GetParam();
  c.kv_cache_dtype = param.substr(0, param.find(' '));
  c.flash_attention = param.find(" flash") != std::string::npos;
  c.max_num_seqs = 32;
  c.max_num_batched_tokens = 48;  // long prompts take several chunks, mixed with decodes
  c.max_model_len = 256;
  c.num_threads = 2;
  const auto requests = make_requests();

  std::map<std::string, std::vector<int32_t>> solo;
  {
    EngineConfig sc = c;
    sc.enable_prefix_caching = false;
    auto engine = Engine::create(sc);
    ASSERT_TRUE(engine.ok()) << engine.status().to_string();
    for (const GenerateRequest& r : requests) {
      GenerateRequest one = r;
      one.n = 1;
      Sink sink;
      ASSERT_TRUE((*engine)->add_request(one, sink.callback()).ok());
      ASSERT_TRUE(sink.wait(1));
      solo[r.request_id] = sink.tokens().at({r.request_id, 0});
      ASSERT_EQ(solo[r.request_id].size(), static_cast<size_t>(r.stop.max_tokens));
    }
  }
  c.enable_prefix_caching = true;
  auto engine = Engine::create(c);
  ASSERT_TRUE(engine.ok()) << engine.status().to_string();
  Sink sink;
  int64_t finals = 0;
  for (const GenerateRequest& r : requests) {
    ASSERT_TRUE((*engine)->add_request(r, sink.callback()).ok());
    finals += r.n;
  }
  ASSERT_TRUE(sink.wait(finals));
  ASSERT_TRUE((*engine)->wait_idle(std::chrono::minutes(1)));
  const auto got = sink.tokens();
  for (const GenerateRequest& r : requests) {
    for (int32_t i = 0; i < r.n; ++i) {
      EXPECT_EQ(got.at({r.request_id, i}), solo.at(r.request_id))
          << r.request_id << " sample " << i;
    }
  }
  EXPECT_GT((*engine)->stats().prefix_cache_hits, 0);
}

INSTANTIATE_TEST_SUITE_P(Dtypes, KvCacheDtypeEngine, ::testing::Values("bf16", "q8_0", "f16 flash"),
                         [](const ::testing::TestParamInfo<std::string>& param_info) {
                           std::string name = param_info.param;
                           std::replace(name.begin(), name.end(), ' ', '_');
                           return name;
                         });

}  // namespace
}  // namespace pagoda
