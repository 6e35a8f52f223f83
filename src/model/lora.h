// LoRA adapters in the forward pass: a projection y = W x of a layer becomes
// y = W x + B (A x) for the rows whose sequence runs an adapter adapting it (A [rank, in],
// B [out, rank], the adapter's scale already folded into B at load). The base matmul stays shared
// by the whole batch; the low-rank products run per adapter over that adapter's rows only
// (gathered, two F32 matmuls, scattered back), so rows without an adapter cost nothing extra and
// a row's result never depends on which other rows share its step.
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "base/status.h"
#include "model/blocks/scratch.h"
#include "model/forward_batch.h"
#include "model/model_config.h"

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
  int64_t rank = 0;      // 0: this projection is not adapted
  std::vector<float> a;  // [rank, in]
  std::vector<float> b;  // [out, rank], times the adapter's scale
};

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
  bool empty() const { return groups_.empty(); }
  // Reserves the scratch add() uses (rows up to the batch, dims up to max_dim).
  void reserve_scratch(int64_t max_dim, Scratch& scratch) const;

  // y[t, out] += B (A x[t, in]) for each row t whose adapter adapts (layer, target). Runs inside
  // the kernels' team like the other ops (every thread calls it).
  void add(int32_t layer, LoraTarget target, const float* x, int64_t in, float* y, int64_t out,
           Scratch& scratch) const;

 private:
  struct Group {
    const LoraAdapter* adapter = nullptr;
    std::vector<int64_t> rows;
  };
  std::vector<Group> groups_;
  int64_t max_rows_ = 0;
  int64_t max_rank_ = 0;
};

// What a block needs to apply its layer's adapters: null batch = none.
struct LoraLayer {
  const LoraBatch* batch = nullptr;
  int32_t layer = 0;
  void add(LoraTarget target, const float* x, int64_t in, float* y, int64_t out,
           Scratch& scratch) const {
    if (batch != nullptr && !batch->empty()) batch->add(layer, target, x, in, y, out, scratch);
  }
};

}  // namespace pagoda::model
