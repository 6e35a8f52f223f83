// The roofline of one engine step on one tensor-parallel group: every weight matrix is read once
// per step for the whole batch (MoE: the experts the batch's tokens pick) and multiplied with
// every token of the step; each sequence's KV is read once per decode token; a step's time is,
// per matrix, the larger of its memory and compute times, plus attention, plus two all-reduces
// per layer over the interconnect when tp > 1. GPUs use peak x achievable fraction; `cpu` uses
// the matmul rates its probe measured per weight type (cpu_probe.h), or, for a matrix whose shape
// and type it probed, that shape's measured time per call at the step's token count
// (ShapeRate::seconds_at: the batch efficiency of the real kernels), plus the thread team's
// barriers of the non-matmul ops: kSyncsPerLayer per layer x sync_us. The communication of a
// split (tensor and pipeline parallel) is parallel_cost.h's, the cost model `pagoda bench --json`
// reports: TP's all-reduces over `tp_link`, PP's stage hops over `pp_link` and the pipeline
// schedule of pagoda's micro-batches (each stage computes 1/pp of the layers; a step of m
// micro-batches takes m + pp - 1 stage slots).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "planner/hardware.h"
#include "planner/model_spec.h"
#include "planner/parallel_cost.h"

namespace pagoda::planner {

// How the weights are stored. Matrices of the transformer blocks use `linear`; the embedding and
// the output projection their own (GPU INT8/INT4 checkpoints keep them F16).
struct QuantScheme {
  enum class Layout {
    kType,         // a ggml type: rows x row_size_bytes(dtype, cols)
    kInt8Channel,  // INT8 weights + one F16 scale per output row (W8A8, per-channel)
    kInt4Group,    // 4-bit weights + an F16 scale and a 4-bit zero per 128 weights (AWQ/GPTQ g128)
    kFile,         // each matrix's own type (a GGUF file)
  };
  std::string name;    // "f16", "int8", "int4", "file"
  std::string format;  // what it means here: "Q4_0 (output Q6_K)", "AWQ/GPTQ g128", ...
  Layout layout = Layout::kType;
  tensor::DType linear = tensor::DType::kF16;
  tensor::DType embedding = tensor::DType::kF16;
  tensor::DType output = tensor::DType::kF16;
  bool int8_compute = false;  // prefill on the INT8 peak
};

// The schemes planned on this hardware: f16, int8, int4 (GPU: W8A8 / AWQ-GPTQ g128; cpu:
// pagoda's Q8_0 / Q4_0), plus "file" for a GGUF model.
std::vector<QuantScheme> quant_schemes(const HardwareSpec& hw, const PlanModel& model);

// Bytes of one matrix of m (count 1) under the scheme.
double matrix_bytes(const WeightMatrix& m, const QuantScheme& q);
// All weights of the model under the scheme (whole model, before tensor parallelism).
double weight_bytes(const PlanModel& model, const QuantScheme& q);

struct DeviceSetup {
  const PlanModel* model = nullptr;
  const HardwareSpec* hw = nullptr;
  QuantScheme quant;
  int32_t tp = 1;
  double kv_bytes_per_element = 2;  // f16 2, q8_0 34/32, fp8 1
  int32_t pp = 1;                   // pipeline stages, each a TP group of tp devices
  // Ranks of the replica sharing one device's compute and bandwidth (cpu: several ranks on one
  // machine, each with its share of the cores; 1 elsewhere). Each rank's matmuls and attention
  // run at 1/ranks_per_device of the device's rates.
  int32_t ranks_per_device = 1;
  // The links TP's all-reduces and PP's hops cross (no bandwidth set: hw->node_link()).
  Interconnect tp_link{}, pp_link{};

  Interconnect tp_interconnect() const;
  Interconnect pp_interconnect() const;
};

// Bytes per activation crossing a link: pagoda's CPU forward pass keeps f32 activations (4); GPU
// engines all-reduce f16/bf16 (2).
double activation_bytes(const HardwareSpec& hw);

// KV bytes one token occupies on each device (its stage's layers, its KV heads).
double kv_bytes_per_token(const DeviceSetup& s);

// Barriers per layer a step pays outside the matmuls (cpu): the two norms, rope, the KV write,
// attention, the activation and the two residual adds, each followed by the team's barrier. An
// estimate from the decoder's op sequence (src/model/blocks), not a measurement.
constexpr double kSyncsPerLayer = 8;

// Under PP each part is the step's time of that component (slots x stage share); comm_s includes
// the stage hops; bubble is the idle share of each stage, (pp-1) / (m+pp-1).
struct StepCost {
  double seconds = 0;
  double matmul_s = 0, attention_s = 0, comm_s = 0, overhead_s = 0;
  int32_t micro_batches = 1;
  double bubble = 0;
};

// One step computing `decode_seqs` sequences' next token at context `decode_ctx` plus
// `prefill_tokens` prompt tokens attending to `prefill_ctx` earlier tokens on average.
StepCost step_cost(const DeviceSetup& s, double decode_seqs, double decode_ctx,
                   double prefill_tokens, double prefill_ctx);

// A whole prompt of `len` tokens as one step (as `pagoda bench` measures prefill).
inline double prefill_seconds(const DeviceSetup& s, double len) {
  return step_cost(s, 0, 0, len, len / 2).seconds;
}

}  // namespace pagoda::planner
