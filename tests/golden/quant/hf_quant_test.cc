// Quantised Hugging Face directories end to end. tools/quant_fixtures/make_quant_fixtures.py
// writes, at test time, one small random Llama per case in its method's published packing
// (GPTQ v1/v2 4- and 8-bit with group sizes 32/64/all, act-order, sym and asym; AWQ GEMM; FP8 per
// tensor / channel / block; INT8 W8A8 per channel / tensor; NF4 with and without double quant)
// and, beside it, the same model with every weight dequantised by numpy (NAME.f32, plain F32).
// - DequantIsBitExact: each repacked weight, dequantised by kernels::dequantize_weight_row (the
//   blocks, plus the zero term of zero-point formats, in file order for act-order ones), equals
//   numpy's F32 values bit for bit, and has the type, input order and zero term quant_repack.h
//   promises (Mixtral-shaped experts too);
// - LogitsMatchDequantisedF32: logits of NAME equal those of NAME.f32 within the quantised
//   tolerance (our Q4_0/Q5_0/Q8_0 matmuls round activations to 8 bits; F16/F32 ones do not);
// - CliTakesQuantisedDirs: `pagoda logits -m DIR` runs every case; `pagoda convert` of the GPTQ
//   4-bit directory to Q4_0 copies the repacked blocks unchanged (attn_v: no q/k permutation),
//   and of an act-order one to F32 gives numpy's values in file order;
// - HostileRefused: corrupt variants (bad bits, missing scales, wrong shapes, g_idx out of range,
//   garbage quant_state, ...) fail to load with an error naming the problem, without crashing.
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <mutex>

#include "diagnostics/sequence_session.h"
#include "format/gguf_file.h"
#include "golden/tools/tools_test_support.h"
#include "kernels/quant.h"
#include "loader/hf/hf_checkpoint.h"
#include "loader/model_loader.h"
#include "test_support.h"

namespace pagoda {
namespace {

namespace fs = std::filesystem;

// Makes the fixture directories once per run (under a second). Returns "" and sets *why on
// failure.
fs::path quant_fixtures(std::string* why) {
  static std::once_flag once;
  static fs::path dir;
  static std::string error;
  std::call_once(once, [] {
    const fs::path script = testing::source_dir() / "tools/quant_fixtures/make_quant_fixtures.py";
    const fs::path out = testing::binary_dir() / "quant_fixtures";
    const std::string cmd =
        "/usr/bin/python3 '" + script.string() + "' --out '" + out.string() + "'";
    if (std::system(cmd.c_str()) != 0 || !fs::exists(out / ".complete")) {
      error = "make_quant_fixtures.py failed: " + cmd;
      return;
    }
    dir = out;
  });
  *why = error;
  return dir;
}

nlohmann::json manifest(const fs::path& dir) {
  std::ifstream in(dir / "manifest.json");
  return nlohmann::json::parse(in);
}

#define REQUIRE_QUANT_FIXTURES(var)                \
  std::string var##_why;                           \
  const fs::path var = quant_fixtures(&var##_why); \
  ASSERT_FALSE(var.empty()) << var##_why;

// The weight in file order, by kernels::dequantize_weight_row: rows dequantised, plus the zero
// term of an asymmetric one, and an act-order one's stored column j put back at input
// t.input_order[j] (which must be a permutation).
std::vector<float> dequantize(const loader::HfTensor& t) {
  const int64_t cols = t.dims[0];
  const int64_t rows = t.n_dims >= 2 ? t.dims[1] : 1;
  std::vector<bool> seen(static_cast<size_t>(cols), false);
  for (int64_t j = 0; t.input_order != nullptr && j < cols; ++j) {
    const int32_t k = t.input_order[j];
    EXPECT_TRUE(k >= 0 && k < cols && !seen[static_cast<size_t>(k)])
        << "not a permutation at " << j;
    if (k < 0 || k >= cols) return {};
    seen[static_cast<size_t>(k)] = true;
  }
  kernels::WeightView w;
  w.dtype = t.dtype;
  w.rows = rows;
  w.cols = cols;
  w.row_bytes = *tensor::row_size_bytes(t.dtype, static_cast<uint64_t>(cols));
  w.data = t.data;
  w.input_order = t.input_order;
  w.zero_term = t.zero_term;
  w.zero_group = t.zero_group;
  w.zero_stride = rows;
  std::vector<float> out(static_cast<size_t>(rows * cols)), scratch(static_cast<size_t>(cols));
  for (int64_t r = 0; r < rows; ++r)
    kernels::dequantize_weight_row(w, r, out.data() + r * cols, scratch.data());
  return out;
}

TEST(HfQuantTest, DequantIsBitExact) {
  REQUIRE_QUANT_FIXTURES(dir);
  const auto m = manifest(dir);
  int num_cases = 0;
  for (const auto& c : m["cases"]) {
    const std::string name = c["name"];
    SCOPED_TRACE(name);
    auto q = loader::HfCheckpoint::open((dir / c["dir"].get<std::string>()).string());
    ASSERT_TRUE(q.ok()) << q.status().to_string();
    auto f = loader::HfCheckpoint::open((dir / c["reference_dir"].get<std::string>()).string());
    ASSERT_TRUE(f.ok()) << f.status().to_string();
    ASSERT_TRUE((*q)->quant_config().has_value());
    int num_quantized = 0;
    for (const std::string& hf_name : c["quantized"].get<std::vector<std::string>>()) {
      bool skip = false;
      int32_t layer = -1, expert = -1;
      const auto gguf = loader::gguf_name_of(hf_name, &skip, &layer, &expert);
      ASSERT_TRUE(gguf.has_value()) << hf_name;
      const loader::HfTensor* qt = (*q)->find(*gguf);
      const loader::HfTensor* ft = (*f)->find(*gguf);
      ASSERT_NE(qt, nullptr) << *gguf;
      ASSERT_NE(ft, nullptr) << *gguf;
      ASSERT_EQ(ft->dtype, tensor::DType::kF32);
      ASSERT_EQ(qt->dims[0], ft->dims[0]) << *gguf;
      ASSERT_EQ(qt->dims[1], ft->dims[1]) << *gguf;
      if (!c["dtype"].is_null()) {
        EXPECT_EQ(tensor::dtype_name(qt->dtype), c["dtype"].get<std::string>()) << *gguf;
      }
      EXPECT_EQ(qt->input_order != nullptr, c["ordered"].get<bool>()) << *gguf;
      if (!c["zero_term"].is_null()) {
        EXPECT_EQ(qt->zero_term != nullptr, c["zero_term"].get<bool>()) << *gguf;
      }
      const std::vector<float> ours = dequantize(*qt);
      ASSERT_EQ(ours.size() * sizeof(float), ft->size_bytes);
      size_t mismatches = 0, first = 0;
      for (size_t i = 0; i < ours.size(); ++i) {
        float ref;
        std::memcpy(&ref, ft->data + i * sizeof(float), sizeof(float));
        if (std::memcmp(&ref, &ours[i], sizeof(float)) != 0 && mismatches++ == 0) first = i;
      }
      EXPECT_EQ(mismatches, 0u) << *gguf << " (" << tensor::dtype_name(qt->dtype) << "): first at "
                                << first;
      ++num_quantized;
    }
    // 7 Linears x 2 layers, or 4 attention Linears + 4 experts x 3 in each of 2 MoE layers.
    EXPECT_EQ(num_quantized, name.ends_with("mixtral") ? 32 : 14);
    ++num_cases;
  }
  EXPECT_EQ(num_cases, 17);
}

// max over positions of max |ours - ref| / std(ref row).
double worst_ratio(const std::vector<float>& ours, const std::vector<float>& ref, size_t vocab) {
  double worst = 0;
  for (size_t r = 0; r * vocab < ref.size(); ++r) {
    double mean = 0, var = 0, max_delta = 0;
    for (size_t j = 0; j < vocab; ++j)
      mean += ref[r * vocab + j];
    mean /= static_cast<double>(vocab);
    for (size_t j = 0; j < vocab; ++j)
      var += (ref[r * vocab + j] - mean) * (ref[r * vocab + j] - mean);
    for (size_t j = 0; j < vocab; ++j)
      max_delta = std::max(max_delta, std::fabs(double{ours[r * vocab + j]} - ref[r * vocab + j]));
    worst = std::max(worst, max_delta / std::sqrt(var / static_cast<double>(vocab)));
  }
  return worst;
}

std::vector<float> all_logits(const fs::path& dir, const std::vector<int32_t>& tokens) {
  auto loaded = loader::load_model(dir.string());
  EXPECT_TRUE(loaded.ok()) << loaded.status().to_string();
  if (!loaded.ok()) return {};
  auto session =
      diagnostics::SequenceSession::create(*loaded->model, static_cast<int32_t>(tokens.size()));
  EXPECT_TRUE(session.ok()) << session.status().to_string();
  if (!session.ok()) return {};
  std::vector<float> logits;
  const Status st = session->feed(tokens, /*all_logits=*/true, logits);
  EXPECT_TRUE(st.ok()) << st.to_string();
  return logits;
}

// Weights are identical (DequantIsBitExact); what differs is the arithmetic: block-quantised
// weights multiply 8-bit-rounded activations (as llama.cpp's Q8 dot products do), F16/F32 ones
// do not. Measured worst ratios: see docs/design-notes.md ("Quantised HF checkpoints").
constexpr double kBlockTolerance = 0.1;
constexpr double kFloatTolerance = 0.01;

TEST(HfQuantTest, LogitsMatchDequantisedF32) {
  REQUIRE_QUANT_FIXTURES(dir);
  const auto m = manifest(dir);
  for (const auto& c : m["cases"]) {
    const std::string name = c["name"];
    SCOPED_TRACE(name);
    const auto tokens = c["tokens"].get<std::vector<int32_t>>();
    const auto ours = all_logits(dir / c["dir"].get<std::string>(), tokens);
    const auto ref = all_logits(dir / c["reference_dir"].get<std::string>(), tokens);
    ASSERT_EQ(ours.size(), ref.size());
    ASSERT_EQ(ref.size(), tokens.size() * 257);
    const double ratio = worst_ratio(ours, ref, 257);
    const std::string dtype = c["dtype"].is_null() ? "" : c["dtype"].get<std::string>();
    const bool block = dtype.starts_with("Q");
    std::printf("[ quant    ] %-26s %-5s worst |dlogit| / std = %.5f\n", name.c_str(),
                dtype.empty() ? "float" : dtype.c_str(), ratio);
    EXPECT_LE(ratio, block ? kBlockTolerance : kFloatTolerance);
  }
}

TEST(HfQuantTest, CliTakesQuantisedDirs) {
  REQUIRE_QUANT_FIXTURES(dir);
  const auto m = manifest(dir);
  for (const auto& c : m["cases"]) {
    const std::string path = (dir / c["dir"].get<std::string>()).string();
    auto r = testing::run_pagoda({"logits", "-m", path, "-p", "Hello"});
    EXPECT_EQ(r.exit_code, 0) << c["name"] << ": " << r.err;
    EXPECT_NE(r.out.find("\"n_vocab\": 257"), std::string::npos) << r.out.substr(0, 200);
  }
  const fs::path gptq = dir / "gptq-4b-g32-sym";
  const fs::path out = testing::scratch_dir() / "gptq-Q4_0.gguf";
  auto r = testing::run_pagoda({"convert", gptq.string(), out.string(), "--type", "Q4_0"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  auto file = format::GgufFile::open(out.string());
  ASSERT_TRUE(file.ok()) << file.status().to_string();
  auto ck = loader::HfCheckpoint::open(gptq.string());
  ASSERT_TRUE(ck.ok()) << ck.status().to_string();
  for (const char* name : {"blk.0.attn_v.weight", "blk.1.ffn_down.weight"}) {
    const format::GgufTensorInfo* g = (*file)->find_tensor(name);
    const loader::HfTensor* h = (*ck)->find(name);
    ASSERT_NE(g, nullptr) << name;
    ASSERT_NE(h, nullptr) << name;
    EXPECT_EQ(g->dtype, tensor::DType::kQ4_0) << name;
    ASSERT_EQ(g->size_bytes, h->size_bytes) << name;
    EXPECT_EQ(std::memcmp(g->data, h->data, h->size_bytes), 0) << name;
  }
  // An act-order directory (stored in group order) converts to its weights in file order: F32
  // equal to numpy's dequantisation bit for bit.
  const fs::path act = dir / "gptq-4b-g32-sym-actorder";
  const fs::path act_out = testing::scratch_dir() / "gptq-actorder-F32.gguf";
  r = testing::run_pagoda({"convert", act.string(), act_out.string(), "--type", "F32"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  auto act_file = format::GgufFile::open(act_out.string());
  ASSERT_TRUE(act_file.ok()) << act_file.status().to_string();
  auto ref = loader::HfCheckpoint::open((dir / "gptq-4b-g32-sym-actorder.f32").string());
  ASSERT_TRUE(ref.ok()) << ref.status().to_string();
  for (const char* name : {"blk.0.attn_v.weight", "blk.0.attn_output.weight",
                           "blk.1.ffn_gate.weight", "blk.1.ffn_down.weight"}) {
    const format::GgufTensorInfo* g = (*act_file)->find_tensor(name);
    const loader::HfTensor* h = (*ref)->find(name);
    ASSERT_NE(g, nullptr) << name;
    ASSERT_NE(h, nullptr) << name;
    EXPECT_EQ(g->dtype, tensor::DType::kF32) << name;
    ASSERT_EQ(g->size_bytes, h->size_bytes) << name;
    EXPECT_EQ(std::memcmp(g->data, h->data, h->size_bytes), 0) << name;
  }
}

TEST(HfQuantTest, HostileRefused) {
  REQUIRE_QUANT_FIXTURES(dir);
  int n = 0;
  const auto m = manifest(dir);
  for (const auto& h : m["hostile"]) {
    const std::string name = h["name"];
    SCOPED_TRACE(name);
    auto loaded = loader::load_model((dir / h["dir"].get<std::string>()).string());
    ASSERT_FALSE(loaded.ok());
    const std::string msg = loaded.status().to_string();
    EXPECT_NE(msg.find(h["error"].get<std::string>()), std::string::npos) << msg;
    ++n;
  }
  EXPECT_GE(n, 15);
}

}  // namespace
}  // namespace pagoda
