// The planner's arithmetic against published figures: parameter counts (Hugging Face model cards
// and config.json: Llama-2-7B 6,738,415,616 and Llama-2-70B 68,976,648,192 parameters, norms
// included; Mixtral-8x7B 46.7B total / 12.9B active per Mistral's announcement; DeepSeek-V3 671B
// total / 37B active per its report), F16 weights (Llama-2-7B: 13.5 GB), KV bytes per token
// (Llama-2-7B 0.5 MiB at f16: 2 x 32 layers x 32 heads x 128 x 2 bytes; Llama-2-70B with GQA
// 320 KiB; DeepSeek-V3's MLA latent (512 + 64) x 61 layers x 2 bytes), the roofline of one
// decode step recomputed by hand, Erlang C against its closed form, and the plan's fit decisions.
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <utility>

#include "backend/kv_storage.h"
#include "model/model_config.h"
#include "planner/capacity.h"
#include "planner/hardware.h"
#include "planner/model_spec.h"
#include "planner/roofline.h"

namespace pagoda::planner {
namespace {

PlanModel preset(const char* name) {
  auto m = find_preset(name);
  EXPECT_TRUE(m.has_value()) << name;
  return m.value_or(PlanModel{});
}

// Norm vectors are not matrices; published counts include them (2 per layer + the final one).
int64_t norms(const PlanModel& m) {
  return (2 * static_cast<int64_t>(m.config.num_layers) + 1) * m.config.hidden_dim;
}

HardwareSpec gpu(const char* name) {
  auto table = parse_hardware_json(builtin_hardware_json());
  EXPECT_TRUE(table.ok()) << table.status().message();
  const HardwareSpec* hw = table.ok() ? find_hardware(*table, name) : nullptr;
  EXPECT_NE(hw, nullptr) << name;
  return hw ? *hw : HardwareSpec{};
}

QuantScheme scheme(const HardwareSpec& hw, const PlanModel& m, const char* name) {
  for (const QuantScheme& q : quant_schemes(hw, m)) {
    if (q.name == name) return q;
  }
  ADD_FAILURE() << "no scheme " << name;
  return {};
}

TEST(PlanModel, LlamaParameterCountsMatchThePublishedOnes) {
  const PlanModel l7 = preset("llama-2-7b");
  EXPECT_EQ(l7.num_params() + norms(l7), 6'738'415'616);
  const PlanModel l70 = preset("llama-2-70b");
  EXPECT_EQ(l70.num_params() + norms(l70), 68'976'648'192);
  const PlanModel l13 = preset("llama-2-13b");
  EXPECT_NEAR((l13.num_params() + norms(l13)) / 1e9, 13.016, 0.001);  // 13,015,864,320
}

TEST(PlanModel, MoeTotalAndActiveParameters) {
  const PlanModel mx = preset("mixtral-8x7b");
  EXPECT_NEAR(mx.num_params() / 1e9, 46.7, 0.05);
  // Mistral's 12.9B active counts the embedding row table too.
  const double embedding = 32000.0 * 4096;
  EXPECT_NEAR((mx.num_active_params() + embedding) / 1e9, 12.9, 0.05);
  const PlanModel ds = preset("deepseek-v3");
  EXPECT_NEAR(ds.num_params() / 1e9, 671, 671 * 0.01);
  EXPECT_NEAR(ds.num_active_params() / 1e9, 37, 37 * 0.03);
}

TEST(PlanModel, WeightBytesPerScheme) {
  const PlanModel l7 = preset("llama-2-7b");
  const HardwareSpec a100 = gpu("a100-80g");
  // F16: 2 bytes per parameter, 13.5 GB.
  EXPECT_NEAR(weight_bytes(l7, scheme(a100, l7, "f16")) / 1e9, 13.48, 0.005);
  // AWQ/GPTQ g128: 4 bits + (F16 scale + 4-bit zero) per 128 weights in the blocks; the
  // embedding and lm_head stay F16 (2 x 131,072,000 x 2 bytes).
  const double blocks = 6'476'005'376.0;  // the 32 layers' matrices
  EXPECT_NEAR(weight_bytes(l7, scheme(a100, l7, "int4")),
              blocks * (0.5 + 2.5 / 128) + 2 * 131'072'000.0 * 2, 1e3);
  // CPU Q4_0: 18 bytes per 32 weights; the output in Q6_K (210 bytes per 256).
  HardwareSpec cpu = a100;
  cpu.name = "cpu";
  EXPECT_NEAR(weight_bytes(l7, scheme(cpu, l7, "int4")),
              (blocks + 131'072'000.0) * 18 / 32 + 131'072'000.0 * 210 / 256, 1e3);
  EXPECT_NEAR(weight_bytes(l7, scheme(cpu, l7, "int8")), (blocks + 2 * 131'072'000.0) * 34 / 32,
              1e3);
}

TEST(PlanModel, KvBytesPerToken) {
  EXPECT_EQ(preset("llama-2-7b").kv_elements_per_token(1) * 2, 512 * 1024);  // 0.5 MiB
  EXPECT_EQ(preset("llama-2-70b").kv_elements_per_token(1) * 2, 320 * 1024);
  // 8 KV heads over 8 ranks: one each; over 16 ranks still one each (replicated).
  EXPECT_EQ(preset("llama-2-70b").kv_elements_per_token(8) * 2, 40 * 1024);
  EXPECT_EQ(preset("llama-2-70b").kv_elements_per_token(16) * 2, 40 * 1024);
  // MLA: the latent and the rope key, the same on every rank.
  EXPECT_EQ(preset("deepseek-v3").kv_elements_per_token(1) * 2, 61 * (512 + 64) * 2);
  EXPECT_EQ(preset("deepseek-v3").kv_elements_per_token(8) * 2, 61 * (512 + 64) * 2);
}

// The planner's KV bytes per token are the engine's: KvStorage's bytes per block for
// model::kv_layout (what Engine::create sizes its cache with) over the block size, for GQA and for
// MLA (whose cache is the rope key + the kv_lora_rank latent per layer), in every cache dtype.
TEST(PlanModel, KvBytesPerTokenAreTheEngineCaches) {
  const std::pair<tensor::DType, double> dtypes[] = {{tensor::DType::kF32, 4.0},
                                                     {tensor::DType::kF16, 2.0},
                                                     {tensor::DType::kBF16, 2.0},
                                                     {tensor::DType::kQ8_0, 34.0 / 32.0}};
  for (const char* name : {"llama-2-7b", "llama-2-70b", "deepseek-v3"}) {
    const PlanModel m = preset(name);
    for (const auto& [dtype, per_value] : dtypes) {
      auto block = backend::KvStorage::bytes_per_block(model::kv_layout(m.config), 16, dtype);
      ASSERT_TRUE(block.ok()) << name << ": " << block.status().to_string();
      EXPECT_EQ(m.kv_elements_per_token(1) * per_value, static_cast<double>(*block) / 16) << name;
    }
  }
  // DeepSeek-V3's latent against the equivalent multi-head cache (61 layers x 128 heads x (192-dim
  // key + 128-dim value)): 61 x 576 values against 61 x 40960, 71.1x fewer bytes.
  const PlanModel ds = preset("deepseek-v3");
  EXPECT_EQ(model::mha_kv_bytes_per_token(ds.config, tensor::DType::kF16), 61.0 * 128 * 320 * 2);
  EXPECT_NEAR(model::mha_kv_bytes_per_token(ds.config, tensor::DType::kF16) /
                  (ds.kv_elements_per_token(1) * 2),
              40960.0 / 576, 1e-9);
}

TEST(Roofline, DecodeStepIsWeightsPlusKvOverBandwidth) {
  const PlanModel l7 = preset("llama-2-7b");
  const HardwareSpec a100 = gpu("a100-80g");
  DeviceSetup s{&l7, &a100, scheme(a100, l7, "f16"), 1, 2};
  const double bw = 2039e9 * 0.8;
  const double ctx = 1000;
  // Batch 1: every matrix read once (the embedding: one row), the KV of 1000 tokens once.
  const double weights = 2.0 * (l7.num_params() - 131'072'000) + 4096 * 2;
  const double kv = 1000 * 512.0 * 1024;
  const StepCost one = step_cost(s, 1, ctx, 0, 0);
  EXPECT_NEAR(one.seconds, (weights + kv) / bw, 1e-6);
  EXPECT_EQ(one.comm_s, 0);
  // Batch 64: weights still read once, KV per sequence; compute still below the memory time.
  const StepCost many = step_cost(s, 64, ctx, 0, 0);
  EXPECT_NEAR(many.matmul_s, (weights - 4096 * 2 + 64 * 4096 * 2) / bw, 1e-6);
  EXPECT_NEAR(many.attention_s, 64 * kv / bw, 1e-6);
  // Prefill of 2048 tokens is compute-bound: 2 x params x tokens over the derated peak.
  const double flops = 2.0 * (l7.num_params() - 131'072'000) * 2048;
  EXPECT_NEAR(step_cost(s, 0, 0, 2048, 0).matmul_s, flops / (312e12 * 0.6) + 2048 * 4096 * 2 / bw,
              1e-6);
  // Tensor parallel 2: half the weights, plus 2 all-reduces per layer.
  DeviceSetup s2 = s;
  s2.tp = 2;
  const StepCost two = step_cost(s2, 1, ctx, 0, 0);
  // (and the logits row's all-gather: half of 4 x 32000 bytes through each link)
  EXPECT_NEAR(two.comm_s,
              2 * 32 * (10e-6 + 2.0 * 1 / 2 * 4096 * 2 / 300e9) + 10e-6 + 0.5 * 4 * 32000 / 300e9,
              1e-9);
  EXPECT_NEAR(two.matmul_s, one.matmul_s / 2, 1e-9);
}

// cpu with the model's probed shapes: each matrix of a probed shape costs its measured time per
// call at the step's token count (once per matrix in the model), the rest the per-type rates;
// every layer adds kSyncsPerLayer barriers of sync_us.
TEST(Roofline, CpuProbedShapesAndBarriers) {
  const PlanModel l7 = preset("llama-2-7b");
  HardwareSpec cpu;
  cpu.name = "cpu";
  cpu.memory_gb = 64;
  cpu.bandwidth_gbs = 20;
  cpu.fp16_tflops = 0.5;
  cpu.bandwidth_efficiency = cpu.compute_efficiency = 1;
  cpu.matmul[tensor::DType::kQ8_0] = {10, 100};
  DeviceSetup s{&l7, &cpu, scheme(cpu, l7, "int8"), 1, 2};
  const StepCost before = step_cost(s, 4, 100, 0, 0);
  // The 4096 x 4096 projections (q, k, v, o: 128 of them) probed: 3 ms per call at 1 token, 5 ms
  // at 8.
  cpu.shapes.push_back({tensor::DType::kQ8_0, 4096, 4096, {1, 8}, {3e-3, 5e-3}});
  cpu.sync_us = 20;
  int64_t probed = 0;
  for (const WeightMatrix& m : l7.matrices) {
    if (m.rows == 4096 && m.cols == 4096) probed += m.count;
  }
  ASSERT_EQ(probed, 128);
  const double q8 = 34.0 / 32;  // bytes per weight
  // One such matrix at the Q8_0 rates: memory-bound at 4 tokens (17.8 MB / 10 GB/s = 1.8 ms
  // against 134 MFLOP / 100 GFLOP/s = 1.3 ms).
  const double per_type = 4096.0 * 4096 * q8 / 10e9;
  const StepCost after = step_cost(s, 4, 100, 0, 0);
  // 4 tokens: 3 ms + 3/7 of the way to 5 ms, per matrix.
  const double shape_s = 3e-3 + (4.0 - 1) / 7 * 2e-3;
  EXPECT_NEAR(after.matmul_s, before.matmul_s - 128 * per_type + 128 * shape_s, 1e-9);
  EXPECT_NEAR(after.overhead_s, 32 * kSyncsPerLayer * 20e-6, 1e-12);
  EXPECT_EQ(before.overhead_s, 0);
  EXPECT_EQ(after.attention_s, before.attention_s);
  EXPECT_NEAR(after.seconds, after.matmul_s + after.attention_s + after.overhead_s, 1e-12);
  // A shape of another type is not this model's (its matrices are Q8_0 under this scheme).
  cpu.shapes[0].dtype = tensor::DType::kQ4_0;
  EXPECT_NEAR(step_cost(s, 4, 100, 0, 0).matmul_s, before.matmul_s, 1e-12);
}

TEST(Roofline, MoeBatchTouchesMoreExperts) {
  const PlanModel mx = preset("mixtral-8x7b");
  const WeightMatrix* up = nullptr;
  for (const auto& m : mx.matrices) {
    if (m.role == "ffn_up_exps") up = &m;
  }
  ASSERT_NE(up, nullptr);
  EXPECT_DOUBLE_EQ(up->touched_count(1), 32 * 2);
  // Two tokens: 8 x (1 - (6/8)^2) = 3.5 experts per layer expected.
  EXPECT_DOUBLE_EQ(up->touched_count(2), 32 * 3.5);
  EXPECT_NEAR(up->touched_count(1000), 32 * 8, 1e-9);
}

TEST(Queueing, ErlangC) {
  EXPECT_NEAR(erlang_c(1, 0.5), 0.5, 1e-12);      // M/M/1: the utilisation
  EXPECT_NEAR(erlang_c(2, 1.0), 1.0 / 3, 1e-12);  // closed form
  // c = 10, a = 8: P0 = 1 / (sum_{k<10} 8^k/k! + 8^10/10! x 5) and C = 8^10/10! x 5 x P0.
  double sum = 0, term = 1;
  for (int k = 0; k < 10; ++k) {
    sum += term;
    term *= 8.0 / (k + 1);
  }
  const double tail = term * 5;
  EXPECT_NEAR(erlang_c(10, 8), tail / (sum + tail), 1e-12);
  EXPECT_EQ(erlang_c(4, 4), 1);
}

TEST(Plan, SeventyBillionF16NeedsTwoA100s) {
  const PlanModel l70 = preset("llama-2-70b");
  Workload w;
  w.qps = 1;
  auto rows = make_plan(l70, gpu("a100-80g"), Cluster{8}, w);
  ASSERT_TRUE(rows.ok()) << rows.status().message();
  for (const PlanRow& r : *rows) {
    if (r.quant.name != "f16") continue;
    // 138 GB of weights; each 80 GB card holds 80 x 0.9 - 1.5 = 70.5 GB.
    EXPECT_EQ(r.fits, r.tp >= 2) << r.tp;
    if (r.tp == 4) {
      EXPECT_NEAR(r.weight_gb_per_device, 137.95 / 4, 0.01);
      EXPECT_EQ(r.kv_tokens,
                static_cast<int64_t>((70.5e9 - r.weight_gb_per_device * 1e9) /
                                     (80 * 2 * 2 * 128 * 2)));  // 2 KV heads per rank
      EXPECT_TRUE(r.meets_targets);
      EXPECT_GE(r.capacity_qps * r.replicas, 1.0);
    }
  }
}

TEST(Plan, TargetsAreMetOrReported) {
  const PlanModel l7 = preset("llama-2-7b");
  Workload w;
  w.qps = 100;
  w.input_len = 512;
  w.output_len = 128;
  w.p99_ttft_s = 0.5;
  w.p99_tpot_s = 0.05;
  auto rows = make_plan(l7, gpu("h100-sxm"), Cluster{1}, w);
  ASSERT_TRUE(rows.ok());
  ASSERT_EQ(rows->size(), 3u);
  for (const PlanRow& r : *rows) {
    ASSERT_TRUE(r.meets_targets) << r.quant.name;
    EXPECT_LE(r.batch_p99_tpot_s, w.p99_tpot_s);
    EXPECT_LE(r.load_p99_ttft_s, w.p99_ttft_s + 1e-9);
    EXPECT_GE(r.capacity_qps * r.replicas, w.qps);
    EXPECT_LT(r.capacity_qps * (r.replicas - 1), w.qps);
  }
  // A TPOT target no step can meet.
  w.p99_tpot_s = 1e-6;
  rows = make_plan(l7, gpu("h100-sxm"), Cluster{1}, w);
  ASSERT_TRUE(rows.ok());
  for (const PlanRow& r : *rows)
    EXPECT_FALSE(r.meets_targets);
}

TEST(Plan, BadWorkloadsAreErrorsNamingTheField) {
  const PlanModel l7 = preset("llama-2-7b");
  Workload w;
  w.input_len = 4000;
  w.output_len = 200;  // 4200 > 4096
  auto rows = make_plan(l7, gpu("h100-sxm"), Cluster{1}, w);
  ASSERT_FALSE(rows.ok());
  EXPECT_NE(rows.status().message().find("context"), std::string::npos);
  w = Workload{};
  w.qps = -1;
  rows = make_plan(l7, gpu("h100-sxm"), Cluster{1}, w);
  ASSERT_FALSE(rows.ok());
  EXPECT_NE(rows.status().message().find("--qps"), std::string::npos);
  w.qps = std::nan("");
  EXPECT_FALSE(make_plan(l7, gpu("h100-sxm"), Cluster{1}, w).ok());
}

TEST(PlanModel, HostileConfigJsonIsAClearError) {
  const auto dir =
      std::filesystem::temp_directory_path() / ("planner_test_" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);
  const auto write = [&](const std::string& text) { std::ofstream(dir / "config.json") << text; };
  write(R"({"architectures": ["LlamaForCausalLM"], "model_type": "llama", "hidden_size": 4096,
            "intermediate_size": 11008, "num_hidden_layers": 1000000000000,
            "num_attention_heads": 32, "vocab_size": 32000, "max_position_embeddings": 4096})");
  auto m = load_plan_model(dir.string());
  ASSERT_FALSE(m.ok());
  EXPECT_NE(m.status().message().find("num_hidden_layers"), std::string::npos)
      << m.status().message();
  write(R"({"architectures": ["LlamaForCausalLM"], "hidden_size": "big"})");
  m = load_plan_model((dir / "config.json").string());
  ASSERT_FALSE(m.ok());
  EXPECT_NE(m.status().message().find("hidden_size"), std::string::npos) << m.status().message();
  // A valid one: Llama-2-7B's shapes read from config.json equal the preset's.
  write(R"({"architectures": ["LlamaForCausalLM"], "model_type": "llama", "hidden_size": 4096,
            "intermediate_size": 11008, "num_hidden_layers": 32, "num_attention_heads": 32,
            "num_key_value_heads": 32, "vocab_size": 32000, "max_position_embeddings": 4096,
            "tie_word_embeddings": false})");
  m = load_plan_model((dir / "config.json").string());
  ASSERT_TRUE(m.ok()) << m.status().message();
  EXPECT_EQ(m->num_params(), preset("llama-2-7b").num_params());
  EXPECT_FALSE(load_plan_model((dir / "missing.gguf").string()).ok());
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace pagoda::planner
