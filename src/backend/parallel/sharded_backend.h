// ShardedBackend: a device backend (the CPU's) for one rank of a tensor-parallel job. Memory,
// copies and forward passes are the wrapped backend's; tensor_parallel() tells the model built
// on it which shard to load and which communicator joins the shards (one all-reduce after the
// attention output and one after the FFN down projection, an all-gather of the vocabulary-split
// logits).
#pragma once

#include "backend/backend.h"
#include "backend/parallel/communicator.h"

namespace pagoda::backend::parallel {

class ShardedBackend final : public Backend {
 public:
  enum class Split {
    kTensor,    // every layer's matrices split (tensor_parallel())
    kPipeline,  // the layers split into stages (pipeline_parallel())
  };
  // Rank comm.rank() of comm.size() shards. `device` and `comm` must outlive this.
  ShardedBackend(Backend& device, Communicator& comm, Split split = Split::kTensor)
      : device_(device), comm_(comm), split_(split) {}

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
  TensorParallel tensor_parallel() const override {
    if (split_ != Split::kTensor) return {};
    return TensorParallel{&comm_, comm_.rank(), comm_.size()};
  }
  PipelineParallel pipeline_parallel() const override {
    if (split_ != Split::kPipeline) return {};
    return PipelineParallel{&comm_, comm_.rank(), comm_.size()};
  }

 private:
  Backend& device_;
  Communicator& comm_;
  Split split_;
};

}  // namespace pagoda::backend::parallel
