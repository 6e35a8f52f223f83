#include "cli/commands/bench_moe.h"

#include <cctype>

namespace pagoda::cli {

bool is_expert_weight(std::string_view name) {
  if (name.find("_exps.") != std::string_view::npos) return true;
  // blk.N.ffn_{gate,up,down}.E.weight
  for (std::string_view p : {".ffn_gate.", ".ffn_up.", ".ffn_down."}) {
    const size_t at = name.find(p);
    if (at == std::string_view::npos) continue;
    std::string_view rest = name.substr(at + p.size());
    size_t digits = 0;
    while (digits < rest.size() && std::isdigit(static_cast<unsigned char>(rest[digits])) != 0)
      ++digits;
    if (digits > 0 && rest.substr(digits) == ".weight") return true;
  }
  return false;
}

void ExpertReadCounter::observe(const kernels::WeightView& w, const float* /*x*/, int64_t /*m*/) {
  // One expert of a stacked GGUF tensor is bound without a name (model/weight_binding.cc's
  // matrices(): ActivationStats keys its sums by name and skips unnamed weights); every other
  // weight of a forward pass has its tensor's name.
  if (!w.name.empty() && !is_expert_weight(w.name)) return;
  bytes_ += static_cast<uint64_t>(w.rows) * w.row_bytes;
  ++matmuls_;
}

nlohmann::json expert_reads(const model::ModelConfig& c, int32_t batch, int32_t steps,
                            const ExpertReadCounter& counter) {
  int64_t moe_layers = 0;
  for (int32_t i = 0; i < c.num_layers; ++i)
    moe_layers += c.layer_has_experts(i) ? 1 : 0;
  // Each expert run is three matmuls (gate, up, down).
  const double runs = static_cast<double>(counter.matmuls()) / 3;
  const double expert_bytes = runs > 0 ? static_cast<double>(counter.bytes()) / runs : 0;
  const double per_step = static_cast<double>(counter.bytes()) / steps;
  const double layers = static_cast<double>(moe_layers);
  nlohmann::json j;
  j["batch"] = batch;
  j["steps"] = steps;
  j["experts_run_per_layer_per_step"] = layers > 0 ? runs / steps / layers : 0;
  j["expert_weight_bytes_per_step"] = per_step;
  j["expert_weight_bytes_token_by_token"] =
      static_cast<double>(batch) * c.num_experts_used * layers * expert_bytes;
  j["expert_weight_bytes_all_experts"] = static_cast<double>(c.num_experts) * layers * expert_bytes;
  return j;
}

}  // namespace pagoda::cli
