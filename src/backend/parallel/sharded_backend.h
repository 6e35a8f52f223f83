// ShardedBackend: a device backend (the CPU's) for one rank of a parallel job of T x P ranks:
// tensor parallelism over T ranks (every layer's matrices split), pipeline parallelism over P
// stages (the layers split into consecutive runs), or both. World rank = stage * T + shard.
// Memory, copies and forward passes are the wrapped backend's; tensor_parallel() and
// pipeline_parallel() tell the model built on it which part to load and which communicators
// join the parts: the stage's own group (split from the world when T and P are both above 1)
// for the all-reduces after the attention output and the FFN down projection and the all-gather
// of the vocabulary-split logits; the world for the hidden states sent stage to stage.
#pragma once

#include <memory>

#include "backend/backend.h"
#include "backend/parallel/communicator.h"

namespace pagoda::backend::parallel {

// Under tensor x pipeline parallelism each stage is comm->size() / pp.size ranks of pp.comm: the
// rank in pp.comm of this rank's counterpart (the same shard) on stage `stage`. Each shard sends
// its hidden states to the same shard of the next stage.
inline int32_t stage_peer(const PipelineParallel& pp, int32_t stage) {
  const int32_t tensor_size = pp.comm->size() / pp.size;
  return stage * tensor_size + pp.comm->rank() % tensor_size;
}

// This rank's shard index within its stage (0 for plain pipeline parallelism).
inline int32_t stage_shard(const PipelineParallel& pp) {
  return pp.comm->rank() % (pp.comm->size() / pp.size);
}

class ShardedBackend final : public Backend {
 public:
  // Collective over `world` (it splits the stage groups). Precondition: tensor_size *
  // pipeline_size == world.size(). `device` and `world` must outlive this.
  // expert_parallel: MoE layers keep whole experts per rank (TensorParallel::expert_parallel).
  ShardedBackend(Backend& device, Communicator& world, int32_t tensor_size, int32_t pipeline_size,
                 bool expert_parallel = false);

  std::string_view name() const override { return device_.name(); }
  Result<std::unique_ptr<DeviceBuffer>> allocate(uint64_t bytes, MemoryKind kind) override {
    return device_.allocate(bytes, kind);
  }
  void copy(uint8_t* dst, const uint8_t* src, uint64_t bytes) override {
    device_.copy(dst, src, bytes);
  }
  std::unique_ptr<DeviceBuffer> place_weights(
      std::span<kernels::WeightView* const> views) override {
    return device_.place_weights(views);
  }
  void execute(const std::function<void()>& pass) override { device_.execute(pass); }
  TensorParallel tensor_parallel() const override;
  PipelineParallel pipeline_parallel() const override;

 private:
  Backend& device_;
  Communicator& world_;
  int32_t tensor_size_, pipeline_size_;
  bool expert_parallel_;
  std::unique_ptr<Communicator> stage_group_;  // null: the stage is the whole world
};

}  // namespace pagoda::backend::parallel
