// `pagoda bench` and `pagoda bench engine` on a fixture model with --json: the commands run, and
// the figures they report agree with what was asked for and with each other (token counts from
// the rates and the elapsed time, percentiles in order, a prefix-cache hit when requests share
// a prefix, no hit when they do not). Speed itself is measured, never asserted.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "test_support.h"
#include "tools_test_support.h"

namespace pagoda {
namespace {

using nlohmann::json;

json run_json(const std::vector<std::string>& args) {
  const testing::CliResult r = testing::run_pagoda(args);
  EXPECT_EQ(r.exit_code, 0) << r.err;
  const json j = json::parse(r.out, nullptr, /*allow_exceptions=*/false);
  EXPECT_FALSE(j.is_discarded()) << r.out;
  return j;
}

void expect_ordered_percentiles(const json& p) {
  EXPECT_GT(p["p50"].get<double>(), 0);
  EXPECT_LE(p["p50"].get<double>(), p["p90"].get<double>());
  EXPECT_LE(p["p90"].get<double>(), p["p99"].get<double>());
}

TEST(BenchCli, EngineReportsWhatItRan) {
  const std::string model = testing::fixture("models/llama-Q4_0.gguf").string();
  PAGODA_REQUIRE_FIXTURE(model);
  for (const int shared : {0, 32}) {
    SCOPED_TRACE("shared prefix " + std::to_string(shared));
    const json j = run_json({"bench", "engine", "-m", model, "--num-requests", "6", "--concurrency",
                             "3", "--input-len", "40", "--output-len", "8", "--shared-prefix",
                             std::to_string(shared), "--json"});
    ASSERT_TRUE(j.is_object());
    EXPECT_EQ(j["num_requests"], 6);
    EXPECT_EQ(j["shared_prefix"], shared);
    const double elapsed = j["elapsed_s"].get<double>();
    ASSERT_GT(elapsed, 0);
    // Every request generates exactly output-len tokens (ignore_eos) after its whole prompt.
    EXPECT_EQ(std::lround(j["output_tokens_per_s"].get<double>() * elapsed), 6 * 8);
    EXPECT_EQ(std::lround(j["total_tokens_per_s"].get<double>() * elapsed), 6 * (40 + 8));
    EXPECT_NEAR(j["requests_per_s"].get<double>() * elapsed, 6.0, 1e-6);
    expect_ordered_percentiles(j["ttft_ms"]);
    expect_ordered_percentiles(j["tpot_ms"]);
    EXPECT_GT(j["steps"].get<int64_t>(), 0);
    EXPECT_EQ(j["preemptions"], 0);
    const double fill = j["kv_fill_ratio"].get<double>();
    EXPECT_GT(fill, 0);
    EXPECT_LE(fill, 1);
    // Two full blocks of 16 are shared: every request after the first can reuse them.
    if (shared == 0) {
      EXPECT_EQ(j["prefix_cache_hit_rate"].get<double>(), 0);
    } else {
      EXPECT_GT(j["prefix_cache_hit_rate"].get<double>(), 0);
    }
    const double switches = j["context_switches_per_step"].get<double>();
    EXPECT_TRUE(std::isfinite(switches) && switches >= 0) << switches;
    // f16 K and V of 2 layers x 2 KV heads x 64 dims; no MLA comparison for a GQA model.
    EXPECT_EQ(j["kv_bytes_per_token"].get<double>(), 2 * 2 * 2 * 64 * 2);
    EXPECT_FALSE(j.contains("kv_bytes_per_token_mha"));
  }
}

// On MoE models bench reports the expert weights a decode step read (counted from the matmuls):
// one token runs exactly k experts per layer, a batch runs at most min(experts, batch x k) and at
// least k, and the bytes are the experts run times one expert's bytes, never more than token by
// token or all experts.
TEST(BenchCli, MoeReportsExpertWeightsReadPerStep) {
  struct Case {
    const char* path;
    int experts, used;
  };
  for (const Case& mc :
       {Case{"models/moe-Q8_0.gguf", 4, 2}, Case{"models/arch/qwen2moe-Q8_0.gguf", 8, 2}}) {
    const std::string model = testing::fixture(mc.path).string();
    PAGODA_REQUIRE_FIXTURE(model);
    SCOPED_TRACE(model);
    const json j = run_json({"bench", "-m", model, "-p", "8", "-n", "4", "--batch", "1,16",
                             "--repeats", "1", "--json"});
    ASSERT_TRUE(j.is_object());
    ASSERT_TRUE(j["moe_expert_reads"].is_array());
    ASSERT_EQ(j["moe_expert_reads"].size(), 2u);
    for (const json& e : j["moe_expert_reads"]) {
      const int batch = e["batch"].get<int>();
      const double runs = e["experts_run_per_layer_per_step"].get<double>();
      const double bytes = e["expert_weight_bytes_per_step"].get<double>();
      const double by_token = e["expert_weight_bytes_token_by_token"].get<double>();
      const double all = e["expert_weight_bytes_all_experts"].get<double>();
      EXPECT_EQ(e["steps"], 4);
      if (batch == 1) {
        EXPECT_DOUBLE_EQ(runs, mc.used);
        EXPECT_NEAR(bytes, by_token, 1e-6 * by_token);
      } else {
        EXPECT_GE(runs, mc.used);
        EXPECT_LE(runs, std::min(mc.experts, batch * mc.used));
        EXPECT_LE(bytes, by_token * (1 + 1e-9));
      }
      EXPECT_GT(bytes, 0);
      EXPECT_LE(bytes, all * (1 + 1e-9));
      EXPECT_NEAR(bytes / all, runs / mc.experts, 1e-9);
    }
  }
}

// deepseek2 caches the MLA latent: per layer the rope key (16) and the latent (64) in f16, against
// the equivalent MHA cache's 4 heads x (48-dim key + 32-dim value), 3 layers.
TEST(BenchCli, EngineReportsMlaKvBytesPerToken) {
  const std::string model = testing::fixture("models/arch/deepseek2-Q8_0.gguf").string();
  PAGODA_REQUIRE_FIXTURE(model);
  const json j = run_json({"bench", "engine", "-m", model, "--num-requests", "2", "--concurrency",
                           "2", "--input-len", "20", "--output-len", "2", "--json"});
  ASSERT_TRUE(j.is_object());
  EXPECT_EQ(j["kv_bytes_per_token"].get<double>(), 3 * (16 + 64) * 2);
  EXPECT_EQ(j["kv_bytes_per_token_mha"].get<double>(), 3 * 4 * (48 + 32) * 2);
}

TEST(BenchCli, KernelsReportPrefillDecodeAndEveryBatch) {
  const std::string model = testing::fixture("models/llama-Q4_0.gguf").string();
  PAGODA_REQUIRE_FIXTURE(model);
  const json j = run_json(
      {"bench", "-m", model, "-p", "8", "-n", "4", "--batch", "1,2", "--repeats", "1", "--json"});
  ASSERT_TRUE(j.is_object());
  EXPECT_EQ(j["prefill"]["prompt_tokens"], 8);
  EXPECT_GT(j["prefill"]["tokens_per_second"].get<double>(), 0);
  EXPECT_EQ(j["decode"]["tokens"], 4);
  const double decode = j["decode"]["tokens_per_second"].get<double>();
  const double roofline = j["roofline_decode_tps"].get<double>();
  EXPECT_GT(decode, 0);
  EXPECT_GT(j["read_bandwidth_gbs"].get<double>(), 0);
  // The roofline is bandwidth / weight bytes per token, and the percentage is decode against it.
  EXPECT_NEAR(
      roofline,
      j["read_bandwidth_gbs"].get<double>() * 1e9 / j["weight_bytes_per_token"].get<double>(),
      roofline * 1e-3);
  EXPECT_NEAR(j["decode"]["percent_of_roofline"].get<double>(), 100 * decode / roofline, 1e-6);
  ASSERT_EQ(j["batched_decode"].size(), 2u);
  EXPECT_EQ(j["batched_decode"][0]["batch"], 1);
  EXPECT_EQ(j["batched_decode"][1]["batch"], 2);
  for (const json& b : j["batched_decode"])
    EXPECT_GT(b["aggregate_tokens_per_second"].get<double>(), 0);
}

}  // namespace
}  // namespace pagoda
