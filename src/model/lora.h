// LoRA adapters in the forward pass: a projection y = W x of a layer becomes
// y = W x + B (A x) for the rows whose sequence runs an adapter adapting it (A [rank, in],
// B [out, rank] kept transposed, the adapter's scale folded into B at load, both F16). The
// base matmul stays shared by the whole batch; the low-rank products of all adapters run in
// one parallel op per input (kernels::lora_apply): punica/SGMV's shrink, every A over its
// adapter's rows (read in place when consecutive, else by row number), and its expand, adding
// (A x) Bt straight into y; so rows without an adapter cost nothing extra and a row's result
// never depends on which other rows share its step.
#pragma once

#include <array>
#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "base/status.h"
#include "model/blocks/scratch.h"
#include "model/forward_batch.h"
#include "model/model_config.h"
#include "tensor/dtype.h"

namespace pagoda::model {

// The projections an adapter may adapt (PEFT's target_modules names without "_proj").
enum class LoraTarget : uint8_t { kQ, kK, kV, kO, kGate, kUp, kDown };
inline constexpr int kNumLoraTargets = 7;

// "q_proj", "k_proj", ..., "down_proj" (PEFT's module names).
std::string_view lora_target_name(LoraTarget target);
// The target for a PEFT module name ("q_proj") or a GGUF tensor base ("attn_q"); false if none.
bool lora_target_from_peft(std::string_view module, LoraTarget& target);
bool lora_target_from_gguf(std::string_view tensor_base, LoraTarget& target);
// [out, in] of the target's base matrix in `config`.
std::array<int64_t, 2> lora_target_shape(const ModelConfig& config, LoraTarget target);

struct LoraProjection {
  int64_t rank = 0;  // 0: this projection is not adapted
  // How a and b are stored: kF16 (half the bytes a batched step streams), or kF32 when a value
  // is beyond F16's range (or PAGODA_LORA_F32=1, for A/B measurements).
  tensor::DType dtype = tensor::DType::kF16;
  std::vector<uint8_t> a;  // [rank, in] of dtype
  std::vector<uint8_t> b;  // B transposed: [rank, out] of dtype, times the adapter's scale
};

// Stores a [rank, in] and b [out, rank] (f32, scale folded in; kept transposed) in p.
// precondition: a.size() and b.size() are multiples of rank > 0.
void set_lora_projection(LoraProjection& p, int64_t rank, std::span<const float> a,
                         std::span<const float> b);

struct LoraAdapter {
  std::string name;
  int32_t rank = 0;  // the largest rank of its projections
  float scale = 1;   // as folded into every b (for reports)
  // [num_layers][target]
  std::vector<std::array<LoraProjection, kNumLoraTargets>> layers;
};

// Checks `adapter` against the model it is to run on: one entry per layer, every adapted
// projection's A and B sized [rank, in] and [out, rank] for `config`, rank <= max_rank, and only
// projections the model has as plain matrices (MLA attention and expert FFNs are refused).
Status validate_lora_adapter(const ModelConfig& config, const LoraAdapter& adapter,
                             int32_t max_rank);

// One forward batch's rows grouped by adapter (sequence slices' `lora`).
class LoraBatch {
 public:
  void build(const ForwardBatch& batch);
  bool empty() const { return num_groups_ == 0; }
  // Reserves the scratch add() uses (rows up to the batch, dims up to max_dim).
  void reserve_scratch(int64_t max_dim, Scratch& scratch) const;

  // One adapted projection's output: y [T, out].
  struct Output {
    LoraTarget target;
    float* y;
    int64_t out;
  };
  static constexpr size_t kMaxOutputs = 3;  // q, k and v read the same input

  // y[t, out] += B (A x[t, in]) for each output and each row t whose adapter adapts (layer,
  // output.target). Every output reads x [T, in] (1 to kMaxOutputs of them: q/k/v, gate/up, o,
  // down): every adapter's A and B products run in one kernels::lora_apply (one parallel op).
  // Runs inside the kernels' team like the other ops (every thread calls it).
  void add(int32_t layer, std::span<const Output> outputs, const float* x, int64_t in,
           Scratch& scratch) const;

 private:
  // Consecutive rows [begin, begin + count) of one adapter (a sequence's, or neighbours').
  struct Run {
    int64_t begin = 0;
    int64_t count = 0;
  };
  struct Group {
    const LoraAdapter* adapter = nullptr;
    std::vector<Run> runs;      // in batch order
    std::vector<int32_t> rows;  // with several runs: every row, in batch order (else empty)
    int64_t num_rows = 0;
  };
  // groups_[0, num_groups_): this batch's; the rest keep their capacity for later steps.
  std::vector<Group> groups_;
  size_t num_groups_ = 0;
  int64_t max_rows_ = 0;
  int64_t max_rank_ = 0;
};

// What a block needs to apply its layer's adapters: null batch = none.
struct LoraLayer {
  const LoraBatch* batch = nullptr;
  int32_t layer = 0;
  void add(std::span<const LoraBatch::Output> outputs, const float* x, int64_t in,
           Scratch& scratch) const {
    if (batch != nullptr && !batch->empty()) batch->add(layer, outputs, x, in, scratch);
  }
  void add(LoraTarget target, const float* x, int64_t in, float* y, int64_t out,
           Scratch& scratch) const {
    const LoraBatch::Output o{target, y, out};
    add(std::span<const LoraBatch::Output>(&o, 1), x, in, scratch);
  }
};

}  // namespace pagoda::model
