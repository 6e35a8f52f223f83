// LoRA adapters on the demo model: for each projection type, in PEFT and GGUF form, the logits
// with the adapter equal those of the model whose weights have it merged (W + scale x B A,
// computed by tools/lora_fixtures in float64 and stored as F16) within F16 tolerance; rows with
// different adapters (and none) batched together equal each run alone, bit for bit; bad
// adapters are refused by name.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <mutex>
#include <string>
#include <vector>

#include "backend/kv_storage.h"
#include "golden/lora/lora_fixtures.h"
#include "loader/lora_loader.h"
#include "loader/model_loader.h"
#include "model/lora.h"
#include "test_support.h"

namespace pagoda {
namespace {
namespace fs = std::filesystem;

struct Seq {
  std::vector<int32_t> tokens;
  const model::LoraAdapter* lora = nullptr;
};

// Logits of every row of every sequence, all run in one forward pass.
std::vector<std::vector<float>> run(model::Model& m, const std::vector<Seq>& seqs) {
  constexpr int32_t kBlock = 16;
  int64_t num_blocks = 1;
  for (const Seq& s : seqs)
    num_blocks += (static_cast<int64_t>(s.tokens.size()) + kBlock - 1) / kBlock;
  auto storage = backend::KvStorage::create(m.backend(), m.kv_layout(), num_blocks, kBlock,
                                            tensor::DType::kF16);
  EXPECT_TRUE(storage.ok()) << storage.status().message();
  std::vector<int32_t> tokens, positions, rows;
  std::vector<std::vector<int32_t>> tables(seqs.size());
  std::vector<model::SequenceSlice> slices;
  int32_t next_block = 1;
  for (size_t i = 0; i < seqs.size(); ++i) {
    model::SequenceSlice slice;
    slice.token_begin = static_cast<int32_t>(tokens.size());
    slice.num_tokens = static_cast<int32_t>(seqs[i].tokens.size());
    for (size_t t = 0; t < seqs[i].tokens.size(); ++t) {
      if (t % kBlock == 0) tables[i].push_back(next_block++);
      rows.push_back(static_cast<int32_t>(tokens.size()));
      tokens.push_back(seqs[i].tokens[t]);
      positions.push_back(static_cast<int32_t>(t));
    }
    slice.block_table = tables[i];
    slice.lora = seqs[i].lora;
    slices.push_back(slice);
  }
  const size_t vocab = static_cast<size_t>(m.config().vocab_size);
  std::vector<float> logits(rows.size() * vocab);
  model::ForwardBatch batch;
  batch.tokens = tokens;
  batch.positions = positions;
  batch.sequences = slices;
  batch.logit_rows = rows;
  const Status st = m.forward(batch, storage->layers(), logits.data());
  EXPECT_TRUE(st.ok()) << st.message();
  std::vector<std::vector<float>> out;
  for (size_t r = 0; r < rows.size(); ++r)
    out.emplace_back(logits.begin() + static_cast<std::ptrdiff_t>(r * vocab),
                     logits.begin() + static_cast<std::ptrdiff_t>((r + 1) * vocab));
  return out;
}

std::vector<int32_t> prompt(int32_t n, int32_t seed, int32_t vocab) {
  std::vector<int32_t> t;
  for (int32_t i = 0; i < n; ++i)
    t.push_back(1 + (seed * 131 + i * 37) % (vocab - 1));
  return t;
}

double stddev(const std::vector<float>& v) {
  double mean = 0, sq = 0;
  for (float x : v)
    mean += x;
  mean /= static_cast<double>(v.size());
  for (float x : v)
    sq += (x - mean) * (x - mean);
  return std::sqrt(sq / static_cast<double>(v.size()));
}

// Every row of `got` within 0.02 x the row's std of `want` (the fixtures' F16 tolerance), top-1
// equal; returns the largest |base - want| / std seen (how much the adapter moves the logits).
void expect_close(const std::vector<std::vector<float>>& got,
                  const std::vector<std::vector<float>>& want,
                  const std::vector<std::vector<float>>& base, const std::string& what) {
  ASSERT_EQ(got.size(), want.size());
  double worst = 0, moved = 0;
  int top1_same = 0;
  for (size_t r = 0; r < got.size(); ++r) {
    const double sd = stddev(want[r]);
    double d = 0, b = 0;
    for (size_t i = 0; i < got[r].size(); ++i) {
      d = std::max(d, static_cast<double>(std::fabs(got[r][i] - want[r][i])));
      b = std::max(b, static_cast<double>(std::fabs(base[r][i] - want[r][i])));
    }
    worst = std::max(worst, d / sd);
    moved = std::max(moved, b / sd);
    const auto argmax = [](const std::vector<float>& v) {
      return std::max_element(v.begin(), v.end()) - v.begin();
    };
    top1_same += argmax(got[r]) == argmax(want[r]) ? 1 : 0;
  }
  std::printf(
      "[ lora     ] %-10s max |adapter - merged| = %.4f std, |base - merged| = %.3f std, "
      "top-1 %d/%zu\n",
      what.c_str(), worst, moved, top1_same, got.size());
  EXPECT_LE(worst, 0.02) << what;
  EXPECT_GE(moved, 0.5) << what << ": the adapter should change the logits clearly";
  EXPECT_GE(top1_same * 10, static_cast<int>(got.size()) * 9) << what;
}

class LoraGolden : public ::testing::TestWithParam<std::string> {};

TEST_P(LoraGolden, AdapterEqualsMergedWeights) {
  REQUIRE_LORA_FIXTURES(dir);
  const std::string t = GetParam();
  auto base = loader::load_model(demo_model().string());
  ASSERT_TRUE(base.ok()) << base.status().message();
  auto merged = loader::load_model((dir / ("merged-" + t + ".gguf")).string());
  ASSERT_TRUE(merged.ok()) << merged.status().message();
  model::Model& m = *base->model;
  const std::vector<int32_t> tokens = prompt(40, 3, m.config().vocab_size);
  const auto want = run(*merged->model, {{tokens, nullptr}});
  const auto plain = run(m, {{tokens, nullptr}});
  for (const std::string& form : {"peft-" + t, "gguf-" + t + ".gguf"}) {
    auto adapter = loader::load_lora_adapter((dir / form).string(), form, m.config(), 64);
    ASSERT_TRUE(adapter.ok()) << adapter.status().message();
    expect_close(run(m, {{tokens, adapter->get()}}), want, plain, form);
  }
}

INSTANTIATE_TEST_SUITE_P(Projections, LoraGolden,
                         ::testing::Values("q", "k", "v", "o", "gate", "up", "down"));

// Five sequences of different lengths, four adapters and none, in one pass: each row's logits are
// those of its sequence run alone, bit for bit.
TEST(LoraBatch, MixedAdaptersEqualAlone) {
  REQUIRE_LORA_FIXTURES(dir);
  auto base = loader::load_model(demo_model().string());
  ASSERT_TRUE(base.ok()) << base.status().message();
  model::Model& m = *base->model;
  std::vector<std::unique_ptr<model::LoraAdapter>> adapters;
  for (int i = 0; i < 4; ++i) {
    auto a = loader::load_lora_adapter((dir / ("multi-" + std::to_string(i))).string(),
                                       "multi-" + std::to_string(i), m.config(), 16);
    ASSERT_TRUE(a.ok()) << a.status().message();
    adapters.push_back(std::move(*a));
  }
  std::vector<Seq> seqs;
  for (int i = 0; i < 6; ++i) {
    seqs.push_back(Seq{prompt(5 + 7 * i, i, m.config().vocab_size),
                       i % 5 == 4 ? nullptr : adapters[static_cast<size_t>(i % 5)].get()});
  }
  const auto together = run(m, seqs);
  size_t row = 0;
  for (size_t i = 0; i < seqs.size(); ++i) {
    const auto alone = run(m, {seqs[i]});
    for (const auto& r : alone) {
      ASSERT_LT(row, together.size());
      EXPECT_EQ(r, together[row]) << "sequence " << i << " row " << row;
      ++row;
    }
  }
  // And the adapters matter: sequence 0 with its adapter differs from the base model.
  EXPECT_NE(run(m, {Seq{seqs[0].tokens, nullptr}}).back(), together[seqs[0].tokens.size() - 1]);
}

std::string load_error(const fs::path& path, const model::ModelConfig& config, int32_t max_rank) {
  auto a = loader::load_lora_adapter(path.string(), "x", config, max_rank);
  return a.ok() ? "" : a.status().message();
}

void write_file(const fs::path& p, const std::string& text) {
  std::ofstream(p, std::ios::binary) << text;
}

TEST(LoraRefusals, NamedErrors) {
  REQUIRE_LORA_FIXTURES(dir);
  auto base = loader::load_model(demo_model().string());
  ASSERT_TRUE(base.ok()) << base.status().message();
  const model::ModelConfig& c = base->model->config();
  EXPECT_NE(load_error(dir / "peft-q", c, 4).find("max-lora-rank 4"), std::string::npos);
  EXPECT_NE(load_error(dir / "gguf-q.gguf", c, 4).find("max-lora-rank 4"), std::string::npos);
  // A target module pagoda does not adapt, a config that disagrees with the tensors, the GGUF
  // adapter of another architecture, a base model of other shapes.
  const fs::path tmp = testing::binary_dir() / "lora_fixtures_bad";
  fs::remove_all(tmp);
  fs::create_directories(tmp);
  fs::copy(dir / "peft-q", tmp / "unknown", fs::copy_options::recursive);
  write_file(tmp / "unknown/adapter_config.json",
             R"({"r": 8, "lora_alpha": 16, "target_modules": ["q_proj", "qkv_proj"]})");
  EXPECT_NE(load_error(tmp / "unknown", c, 64).find("\"qkv_proj\""), std::string::npos);
  fs::copy(dir / "peft-q", tmp / "missing", fs::copy_options::recursive);
  write_file(tmp / "missing/adapter_config.json",
             R"({"r": 8, "lora_alpha": 16, "target_modules": ["k_proj"]})");
  EXPECT_NE(load_error(tmp / "missing", c, 64).find("q_proj is not in target_modules"),
            std::string::npos);
  fs::copy(dir / "peft-q", tmp / "rank", fs::copy_options::recursive);
  write_file(tmp / "rank/adapter_config.json",
             R"({"r": 4, "lora_alpha": 16, "target_modules": ["q_proj"]})");
  EXPECT_NE(load_error(tmp / "rank", c, 64).find("adapter_config.json's r 4"), std::string::npos);
  model::ModelConfig other = c;
  other.arch = "qwen2";
  EXPECT_NE(load_error(dir / "gguf-q.gguf", other, 64).find("general.architecture"),
            std::string::npos);
  other = c;
  other.ffn_dim = c.ffn_dim + 64;
  EXPECT_NE(load_error(dir / "peft-gate", other, 64).find("the model needs ["), std::string::npos);
  EXPECT_NE(load_error(tmp / "nothing-here", c, 64), "");
}

}  // namespace
}  // namespace pagoda
