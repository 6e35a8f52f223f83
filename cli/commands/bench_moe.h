// `pagoda bench` on a mixture-of-experts model: the expert weights a decode step reads. A
// kernels::MatmulObserver installed for a few untimed decode steps adds up the bytes of every
// expert matrix a matmul reads (each active expert's gate, up and down once per step, since
// moe_block runs an expert once over all its rows), so the figure is what the kernels did, not a
// formula: distinct experts touched x one expert's bytes, against k x batch x that when tokens run
// one by one and every expert when all are read.
#pragma once

#include <cstdint>
#include <string_view>

#include <nlohmann/json.hpp>

#include "kernels/matmul_observer.h"
#include "model/model_config.h"

namespace pagoda::cli {

// True for an expert's matrix name: a stacked GGUF tensor (blk.N.ffn_gate_exps.weight) or one
// expert's (blk.N.ffn_up.E.weight, Hugging Face Mixtral checkpoints). The counter also counts
// unnamed weights: the views of one expert in a stacked tensor carry no name.
bool is_expert_weight(std::string_view name);

class ExpertReadCounter final : public kernels::MatmulObserver {
 public:
  void observe(const kernels::WeightView& w, const float* x, int64_t m) override;
  uint64_t bytes() const { return bytes_; }
  int64_t matmuls() const { return matmuls_; }

 private:
  uint64_t bytes_ = 0;
  int64_t matmuls_ = 0;
};

// The figures of one batch size: `counter` watched `steps` decode steps of `batch` sequences.
nlohmann::json expert_reads(const model::ModelConfig& c, int32_t batch, int32_t steps,
                            const ExpertReadCounter& counter);

}  // namespace pagoda::cli
