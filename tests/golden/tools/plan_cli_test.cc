// `pagoda plan` end to end: --json on presets and a fixture GGUF (its "file" row carries the
// file's own tensor bytes), a cpu calibration file given by hand (no probe), and clear errors on
// hostile input (a config.json with huge values, a corrupt hardware file, bad workload values).
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "format/gguf_file.h"
#include "test_support.h"
#include "tools_test_support.h"

namespace pagoda {
namespace {

using nlohmann::json;

json plan_json(const std::vector<std::string>& extra) {
  std::vector<std::string> args = {"plan"};
  args.insert(args.end(), extra.begin(), extra.end());
  args.push_back("--json");
  const testing::CliResult r = testing::run_pagoda(args);
  EXPECT_EQ(r.exit_code, 0) << r.err;
  const json j = json::parse(r.out, nullptr, /*allow_exceptions=*/false);
  EXPECT_TRUE(j.is_object()) << r.out;
  return j;
}

const json* find_row(const json& j, const std::string& quant, int tp) {
  for (const json& r : j["plans"]) {
    if (r["quant"] == quant && r["tp"] == tp) return &r;
  }
  return nullptr;
}

TEST(PlanCli, SevenBillionAtHundredQps) {
  const json j =
      plan_json({"-m", "llama-2-7b", "--hardware", "a100-80gx2", "--qps", "100", "--input-len",
                 "512", "--output-len", "128", "--p99-ttft", "1", "--p99-tpot", "0.05",
                 "--price-per-hour", "2", "--api-price-per-1m-tokens", "1"});
  EXPECT_EQ(j["model"]["params"].get<int64_t>(), 6'738'149'376);  // matrices only, no norms
  EXPECT_EQ(j["max_devices"], 2);
  // f16, int8, int4 at tp 1 and 2.
  ASSERT_EQ(j["plans"].size(), 6u);
  const json* f16 = find_row(j, "f16", 1);
  ASSERT_NE(f16, nullptr);
  EXPECT_NEAR((*f16)["weight_gb_per_device"].get<double>(), 13.48, 0.01);
  EXPECT_EQ((*f16)["kv_bytes_per_token_per_device"].get<double>(), 524288);
  ASSERT_TRUE((*f16)["meets_targets"].get<bool>());
  const double capacity = (*f16)["capacity_qps_per_replica"].get<double>();
  const int64_t replicas = (*f16)["replicas"].get<int64_t>();
  EXPECT_GE(capacity * replicas, 100);
  EXPECT_LT(capacity * (replicas - 1), 100);
  EXPECT_LE((*f16)["p99_ttft_s_at_load"].get<double>(), 1.0 + 1e-9);
  EXPECT_LE((*f16)["batch_p99_tpot_s"].get<double>(), 0.05);
  // Cost: devices x $2 x 730 h; per 1M tokens over 100 x 640 tokens/s for 730 h.
  const double monthly = (*f16)["devices"].get<double>() * 2 * 730;
  EXPECT_NEAR((*f16)["monthly_cost"].get<double>(), monthly, 1e-6);
  EXPECT_NEAR((*f16)["cost_per_1m_tokens"].get<double>(),
              monthly / (100.0 * 640 * 3600 * 730) * 1e6, 1e-9);
  EXPECT_NEAR((*f16)["api_monthly_cost"].get<double>(), 100.0 * 640 * 3600 * 730 / 1e6, 1e-6);
  // Halving the weight bytes (int4) never needs more devices.
  const json* int4 = find_row(j, "int4", 1);
  ASSERT_NE(int4, nullptr);
  EXPECT_LE((*int4)["devices"].get<int64_t>(), (*f16)["devices"].get<int64_t>());
}

TEST(PlanCli, SeventyBillionNeedsSeveralGpus) {
  const json j = plan_json({"-m", "llama-2-70b", "--hardware", "h100-sxm", "--qps", "1"});
  const json* tp1 = find_row(j, "f16", 1);
  ASSERT_NE(tp1, nullptr);
  EXPECT_FALSE((*tp1)["fits"].get<bool>());
  EXPECT_EQ((*tp1)["why_not"], "weights do not fit");
  const json* tp2 = find_row(j, "f16", 2);
  ASSERT_NE(tp2, nullptr);
  EXPECT_TRUE((*tp2)["fits"].get<bool>());
  // int4 fits one card.
  EXPECT_TRUE((*find_row(j, "int4", 1))["fits"].get<bool>());
}

// Two nodes of 8 H100s: rows for every tp <= 8 and pp in {1, 2}; TP=8 x PP=2 crosses the
// InfiniBand network between its stages, and its communication is the cost model's.
TEST(PlanCli, TensorTimesPipelineOverTwoNodes) {
  const json j =
      plan_json({"-m", "llama-2-70b", "--hardware", "h100-sxmx8", "--nodes", "2", "--qps", "1"});
  EXPECT_EQ(j["nodes"], 2);
  EXPECT_EQ(j["network"]["name"], "ib-ndr400");
  int pp2 = 0;
  for (const json& r : j["plans"]) {
    EXPECT_LE(r["tp"].get<int>(), 8);
    if (r["pp"] != 2) continue;
    ++pp2;
    if (r["quant"] == "f16" && r["tp"] == 8) {
      EXPECT_EQ(r["tp_link"], "nvlink4");
      EXPECT_EQ(r["pp_link"], "ib-ndr400");
      EXPECT_DOUBLE_EQ(r["decode_pipeline_bubble"].get<double>(), 0.5);
      // 160 NVLink all-reduces of one token (bf16), the logits row, one 20 us hop.
      const double comm = 160 * (10e-6 + 2.0 * 7 / 8 * 8192 * 2 / 450e9) + 10e-6 +
                          7.0 / 8 * 128000 / 450e9 + 20e-6 + 8192 * 2 / 50e9;
      EXPECT_NEAR(r["decode_comm_s"].get<double>(), comm, 1e-12);
    }
  }
  EXPECT_EQ(pp2, 12);  // 3 schemes x tp 1, 2, 4, 8
}

TEST(PlanCli, GgufFileRowUsesTheFilesTensorBytes) {
  const std::string model = testing::fixture("models/llama-Q4_0.gguf").string();
  PAGODA_REQUIRE_FIXTURE(model);
  auto file = format::GgufFile::open(model);
  ASSERT_TRUE(file.ok());
  uint64_t bytes = 0;
  for (const auto& t : (*file)->tensors())
    bytes += t.size_bytes;
  // A calibration file written by hand: no probe, numbers a person can check.
  const auto calib = testing::scratch_dir() / "cpu.json";
  std::ofstream(calib) << R"({"name": "cpu", "memory_gb": 8, "bandwidth_gbs": 10,
      "fp16_tflops": 0.1, "bandwidth_efficiency": 1, "compute_efficiency": 1,
      "matmul": {"Q4_0": {"gemv_gbs": 5, "gemm_gflops": 100}}})";
  const json j = plan_json({"-m", model, "--hardware", "cpu", "--calibration", calib.string(),
                            "--input-len", "64", "--output-len", "16"});
  const json* row = find_row(j, "file", 1);
  ASSERT_NE(row, nullptr);
  // The file's bytes minus the 1D norm vectors... all its tensors count, at their real types.
  EXPECT_NEAR((*row)["weight_gb_per_device"].get<double>(), bytes / 1e9, 1e-12);
  EXPECT_EQ(j["plans"].size(), 4u);  // f16, int8, int4, file; cpu has no tp > 1
  EXPECT_EQ(j["hardware"]["name"], "cpu");
}

TEST(PlanCli, HostileInputIsAClearError) {
  const auto dir = testing::scratch_dir() / "hostile";
  std::filesystem::create_directories(dir);
  std::ofstream(dir / "config.json")
      << R"({"architectures": ["LlamaForCausalLM"], "hidden_size": 99999999999,
             "intermediate_size": 11008, "num_hidden_layers": 32, "num_attention_heads": 32,
             "vocab_size": 32000, "max_position_embeddings": 4096})";
  const std::vector<std::pair<std::vector<std::string>, std::string>> cases = {
      {{"-m", dir.string()}, "hidden_size"},
      {{"-m", "llama-2-7b", "--qps", "-3"}, "--qps"},
      {{"-m", "llama-2-7b", "--input-len", "5000"}, "context"},
      {{"-m", "llama-2-7b", "--hardware", "tpu-v9"}, "unknown"},
      {{"-m", "llama-2-7b", "--hardware", "h100-sxmx64"}, "at most 8"},
      {{"-m", "llama-2-7b", "--kv-cache-dtype", "q3"}, "--kv-cache-dtype"},
      {{"-m", "no-such-model"}, "preset"},
      {{"-m", "llama-2-7b", "--nodes", "2", "--network", "token-ring"}, "--network: unknown"},
      {{"-m", "llama-2-7b", "--nodes", "0"}, "--nodes"},
  };
  for (const auto& [args, expect] : cases) {
    std::vector<std::string> all = {"plan"};
    all.insert(all.end(), args.begin(), args.end());
    const testing::CliResult r = testing::run_pagoda(all);
    EXPECT_NE(r.exit_code, 0) << args[1];
    EXPECT_NE(r.err.find(expect), std::string::npos) << r.err;
  }
  std::ofstream(dir / "hw.json") << R"({"hardware": [{"name": "x", "memory_gb": 1e300}]})";
  const testing::CliResult r = testing::run_pagoda({"plan", "-m", "llama-2-7b", "--hardware", "x",
                                                    "--hardware-file", (dir / "hw.json").string()});
  EXPECT_NE(r.exit_code, 0);
  EXPECT_NE(r.err.find("memory_gb"), std::string::npos) << r.err;
}

}  // namespace
}  // namespace pagoda
