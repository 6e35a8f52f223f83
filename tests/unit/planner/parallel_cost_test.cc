// The parallel cost model (planner/parallel_cost.h), shared by `pagoda plan` and `pagoda bench
// --json`, against values computed by hand from the formulas in docs/design/parallel.md: bytes per
// token per layer for the TinyLlama-1.1B shape (d 2048, L 22, V 32000; the design notes' 16 KiB
// per token per layer under TP), TP / PP times on the hardware table's links, the pipeline
// schedule of pagoda's micro-batches, and the plan's TP x PP rows over several nodes.
#include <gtest/gtest.h>

#include "planner/capacity.h"
#include "planner/hardware.h"
#include "planner/model_spec.h"
#include "planner/parallel_cost.h"
#include "planner/roofline.h"

namespace pagoda::planner {
namespace {

model::ModelConfig tinyllama() {
  model::ModelConfig c;
  c.hidden_dim = 2048;
  c.num_layers = 22;
  c.vocab_size = 32000;
  c.num_heads = 32;
  c.num_kv_heads = 4;
  c.head_dim = 64;
  return c;
}

Interconnect network(const char* name) {
  auto nets = parse_networks_json(builtin_hardware_json());
  EXPECT_TRUE(nets.ok()) << nets.status().message();
  const Interconnect* n = nets.ok() ? find_network(*nets, name) : nullptr;
  EXPECT_NE(n, nullptr) << name;
  return n ? *n : Interconnect{};
}

HardwareSpec h100() {
  auto table = parse_hardware_json(builtin_hardware_json());
  EXPECT_TRUE(table.ok());
  const HardwareSpec* hw = table.ok() ? find_hardware(*table, "h100-sxm") : nullptr;
  EXPECT_NE(hw, nullptr);
  return hw ? *hw : HardwareSpec{};
}

PlanModel llama70b() {
  auto m = find_preset("llama-2-70b");
  EXPECT_TRUE(m.has_value());
  return m.value_or(PlanModel{});
}

TEST(ParallelCost, BytesPerTokenPerLayer) {
  model::ModelConfig c = tinyllama();
  c.num_experts = 8;
  c.num_experts_used = 2;
  const CommBytes f32 = comm_bytes(c, 4);
  EXPECT_EQ(f32.tensor_parallel_all_reduce_payload, 16384);  // 16 KiB: two all-reduces of d
  EXPECT_EQ(f32.pipeline_stage_boundary, 8192);
  EXPECT_EQ(f32.expert_parallel_all_reduce_payload, 8192);
  EXPECT_EQ(f32.expert_all_to_all, 2 * 2 * 8192);
  EXPECT_EQ(f32.vocab_all_gather, 128000);  // f32 logits whatever the activations
  EXPECT_EQ(comm_bytes(c, 2).tensor_parallel_all_reduce_payload, 8192);
  EXPECT_EQ(comm_bytes(c, 2).vocab_all_gather, 128000);
}

TEST(ParallelCost, LinksFromTheHardwareTable) {
  const Interconnect nvlink = h100().node_link();
  EXPECT_EQ(nvlink.name, "nvlink4");
  EXPECT_EQ(nvlink.latency_us, 10);
  EXPECT_EQ(nvlink.bandwidth_gbs, 450);
  EXPECT_FALSE(nvlink.ring_latency);
  const Interconnect eth = network("100gbe");
  EXPECT_EQ(eth.latency_us, 40);
  EXPECT_EQ(eth.bandwidth_gbs, 12.5);
  EXPECT_TRUE(eth.ring_latency);
  const Interconnect ib = network("ib-ndr400");
  EXPECT_EQ(ib.latency_us, 20);
  EXPECT_EQ(ib.bandwidth_gbs, 50);
}

TEST(ParallelCost, TensorParallelDecodeTokenByHand) {
  const model::ModelConfig c = tinyllama();
  // 4 CPU nodes on 100 GbE, f32: 44 all-reduces, each 6 ring steps of 40 us plus 2 x 3/4 of 8 KiB
  // at 12.5 GB/s; the logits row's all-gather: 3 steps plus 3/4 of 125 KiB.
  const double ar = 6 * 40e-6 + 2.0 * 3 / 4 * 8192 / 12.5e9;
  const double ag = 3 * 40e-6 + 3.0 / 4 * 128000 / 12.5e9;
  EXPECT_NEAR(tensor_parallel_seconds(c, network("100gbe"), 4, 1, 1, 4), 44 * ar + ag, 1e-12);
  // ~10.7 ms: the design notes' "more than a node computes the token in".
  EXPECT_NEAR(tensor_parallel_seconds(c, network("100gbe"), 4, 1, 1, 4) * 1e3, 10.7, 0.05);
  // NVLink (one latency per all-reduce), 16 tokens, 4 logit rows, bf16.
  const double nv = 10e-6 + 2.0 * 7 / 8 * 16 * 2048 * 2 / 450e9;
  const double gather = 10e-6 + 7.0 / 8 * 4 * 128000 / 450e9;
  EXPECT_NEAR(tensor_parallel_seconds(c, h100().node_link(), 8, 16, 4, 2), 44 * nv + gather, 1e-12);
  EXPECT_EQ(tensor_parallel_seconds(c, h100().node_link(), 1, 16, 4, 2), 0);
  EXPECT_EQ(all_reduce_seconds(network("100gbe"), 1, 1e6), 0);
}

TEST(ParallelCost, PipelineScheduleByHand) {
  const model::ModelConfig c = tinyllama();
  // pagoda cuts a step into min(stages, rows) micro-batches.
  EXPECT_EQ(pipeline_micro_batches(1, 100), 1);
  EXPECT_EQ(pipeline_micro_batches(4, 1), 1);
  EXPECT_EQ(pipeline_micro_batches(4, 2.5), 2);
  EXPECT_EQ(pipeline_micro_batches(4, 100), 4);
  EXPECT_DOUBLE_EQ(pipeline_bubble_fraction(4, 4), 3.0 / 7);
  EXPECT_DOUBLE_EQ(pipeline_bubble_fraction(2, 1), 0.5);
  EXPECT_EQ(pipeline_bubble_fraction(1, 1), 0);
  // 3 hops of one token's hidden state (8 KiB in f32) on 100 GbE: one message each.
  EXPECT_NEAR(pipeline_hops_seconds(c, network("100gbe"), 4, 1, 4), 3 * (40e-6 + 8192 / 12.5e9),
              1e-15);
  // m micro-batches through p stages: (m + p - 1) slots of a part's 1/p, plus the hops.
  EXPECT_DOUBLE_EQ(pipeline_step_seconds(4, 4, 8e-3, 1e-4), 7 * 2e-3 + 1e-4);
  EXPECT_DOUBLE_EQ(pipeline_step_seconds(2, 1, 8e-3, 1e-4), 8e-3 + 1e-4);
}

// step_cost under PP: a part's whole-model cost on one TP group (the pp = 1 step over its rows),
// scaled by the schedule, plus the hops on pp_link.
TEST(ParallelCost, RooflineStepUnderTensorTimesPipeline) {
  const PlanModel l70 = llama70b();
  const HardwareSpec hw = h100();
  QuantScheme f16;
  for (const QuantScheme& q : quant_schemes(hw, l70)) {
    if (q.name == "f16") f16 = q;
  }
  DeviceSetup one_stage{&l70, &hw, f16, 8, 2};
  DeviceSetup two_stages = one_stage;
  two_stages.pp = 2;
  two_stages.pp_link = network("ib-ndr400");
  // Decode of one sequence: one micro-batch, 2 slots of half the model, one hop of 8192 x 2 bytes.
  const StepCost part1 = step_cost(one_stage, 1, 1000, 0, 0);
  const StepCost s1 = step_cost(two_stages, 1, 1000, 0, 0);
  EXPECT_EQ(s1.micro_batches, 1);
  EXPECT_DOUBLE_EQ(s1.bubble, 0.5);
  EXPECT_NEAR(s1.seconds, part1.seconds + 20e-6 + 8192 * 2 / 50e9, 1e-12);
  // TP=8 inside the node: 160 all-reduces of one token on NVLink, and the logits row.
  EXPECT_NEAR(part1.comm_s,
              160 * (10e-6 + 2.0 * 7 / 8 * 8192 * 2 / 450e9) + 10e-6 + 7.0 / 8 * 128000 / 450e9,
              1e-12);
  // 64 sequences: 2 micro-batches of 32, 3 slots of half a part, one part's hop.
  const StepCost part64 = step_cost(one_stage, 32, 1000, 0, 0);
  const StepCost s64 = step_cost(two_stages, 64, 1000, 0, 0);
  EXPECT_EQ(s64.micro_batches, 2);
  EXPECT_NEAR(s64.seconds, 1.5 * part64.seconds + 20e-6 + 32 * 8192 * 2 / 50e9, 1e-12);
  EXPECT_NEAR(s64.seconds, s64.matmul_s + s64.attention_s + s64.comm_s + s64.overhead_s, 1e-12);
  // Each stage keeps half the layers' KV.
  EXPECT_DOUBLE_EQ(kv_bytes_per_token(two_stages), kv_bytes_per_token(one_stage) / 2);
}

TEST(ParallelCost, PlanSweepsTensorTimesPipelineOverNodes) {
  const PlanModel l70 = llama70b();
  Workload w;
  w.qps = 1;
  const Cluster cluster{8, 2, network("ib-ndr400"), 0};
  auto rows = make_plan(l70, h100(), cluster, w);
  ASSERT_TRUE(rows.ok()) << rows.status().message();
  int tp8pp2 = 0;
  for (const PlanRow& r : *rows) {
    EXPECT_LE(r.tp, 8);  // TP stays in a node
    EXPECT_TRUE(r.pp == 1 || r.pp == 2);
    if (r.quant.name != "f16") continue;
    EXPECT_NEAR(r.weight_gb_per_device, 137.95 / (r.tp * r.pp), 0.01);
    if (r.tp == 8 && r.pp == 2) {
      ++tp8pp2;
      EXPECT_EQ(r.tp_link, "nvlink4");
      EXPECT_EQ(r.pp_link, "ib-ndr400");  // 16 devices: the stages are on two nodes
      // KV: 80 layers x 8 heads x 128 x (K + V) x 2 bytes, one head per rank, half the layers.
      EXPECT_DOUBLE_EQ(r.kv_bytes_per_token, 80.0 * 8 * 128 * 2 * 2 / 8 / 2);
      EXPECT_DOUBLE_EQ(r.decode_bubble, 0.5);
      EXPECT_EQ(r.devices % 16, 0);
    }
    if (r.tp == 4 && r.pp == 2) {
      EXPECT_EQ(r.pp_link, "nvlink4");  // 8 devices: one node
    }
    if (r.tp == 1) {
      EXPECT_EQ(r.tp_link, "");
    }
  }
  EXPECT_EQ(tp8pp2, 1);
  // A fixed pipeline size; more stages than layers or devices give no row.
  const Cluster fixed{8, 1, {}, 2};
  rows = make_plan(l70, h100(), fixed, w);
  ASSERT_TRUE(rows.ok());
  for (const PlanRow& r : *rows) {
    EXPECT_EQ(r.pp, 2);
    EXPECT_LE(r.tp, 4);
    EXPECT_EQ(r.pp_link, "nvlink4");
  }
}

TEST(ParallelCost, CpuNodesSplitOverTheNetwork) {
  const PlanModel l7 = *find_preset("llama-2-7b");
  HardwareSpec cpu;
  cpu.name = "cpu";
  cpu.memory_gb = 64;
  cpu.bandwidth_gbs = 20;
  cpu.fp16_tflops = 0.5;
  Workload w;
  auto rows = make_plan(l7, cpu, Cluster{1, 4, network("100gbe"), 0}, w);
  ASSERT_TRUE(rows.ok()) << rows.status().message();
  bool tp4 = false;
  for (const PlanRow& r : *rows) {
    EXPECT_LE(r.tp * r.pp, 4);
    if (r.tp == 4 && r.pp == 1 && r.quant.name == "int4") {
      tp4 = true;
      EXPECT_EQ(r.tp_link, "100gbe");
      // A decode token's communication: 64 ring all-reduces of 4096 f32 and the logits row.
      const double ar = 6 * 40e-6 + 2.0 * 3 / 4 * 4096 * 4 / 12.5e9;
      EXPECT_NEAR(r.decode_comm_s, 64 * ar + 3 * 40e-6 + 3.0 / 4 * 128000 / 12.5e9, 1e-12);
    }
  }
  EXPECT_TRUE(tp4);
  // Errors name the option.
  auto bad = make_plan(l7, cpu, Cluster{2, 1, {}, 0}, w);
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("interconnect_gbs"), std::string::npos)
      << bad.status().message();
  bad = make_plan(l7, cpu, Cluster{1, 2, {}, 0}, w);
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("--network"), std::string::npos);
}

// cpu ranks sharing one machine (`--hardware cpu:2`, the shared-memory transport measured by
// `mpirun -np 2 pagoda plan --calibrate`): each rank reads half the weights at half the machine's
// rates, so a TP=2 decode step is the one-process step plus the all-reduces.
TEST(ParallelCost, CpuRanksOnOneMachineShareIt) {
  const PlanModel l7 = *find_preset("llama-2-7b");
  HardwareSpec cpu;
  cpu.name = "cpu";
  cpu.memory_gb = 64;
  cpu.bandwidth_gbs = 20;
  cpu.fp16_tflops = 0.5;
  cpu.matmul[tensor::DType::kQ4_0] = {10, 100};
  cpu.matmul[tensor::DType::kQ6_K] = {8, 80};
  Workload w;
  // No measured transport: refused, naming how to measure it.
  auto bad = make_plan(l7, cpu, Cluster{2, 1, {}, 0}, w);
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("--calibrate"), std::string::npos);
  cpu.interconnect = "shm-mpi";
  cpu.allreduce_latency_us = 5;
  cpu.interconnect_gbs = 2;
  cpu.max_devices = 2;
  auto rows = make_plan(l7, cpu, Cluster{2, 1, {}, 0}, w);
  ASSERT_TRUE(rows.ok()) << rows.status().message();
  const PlanRow *one = nullptr, *two = nullptr;
  for (const PlanRow& r : *rows) {
    if (r.quant.name != "int4") continue;
    (r.tp == 1 ? one : two) = &r;
  }
  ASSERT_TRUE(one != nullptr && two != nullptr);
  EXPECT_EQ(two->tp_link, "shm-mpi");
  const double ar = 5e-6 + 2.0 * 1 / 2 * 4096 * 4 / 2e9;
  const double comm = 64 * ar + 5e-6 + 0.5 * 128000 / 2e9;
  EXPECT_NEAR(two->decode_comm_s, comm, 1e-12);
  EXPECT_NEAR(two->tpot_s, one->tpot_s + comm, 1e-9);
  // Each rank holds half the weights in half the machine's memory.
  EXPECT_NEAR(two->weight_gb_per_device, one->weight_gb_per_device / 2, 1e-9);
  EXPECT_LT(two->kv_tokens, one->kv_tokens * 1.01);
}

}  // namespace
}  // namespace pagoda::planner
