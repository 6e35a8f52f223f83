#include "backend/parallel/sharded_backend.h"

#include "base/check.h"

namespace pagoda::backend::parallel {

ShardedBackend::ShardedBackend(Backend& device, Communicator& world, int32_t tensor_size,
                               int32_t pipeline_size, bool expert_parallel)
    : device_(device),
      world_(world),
      tensor_size_(tensor_size),
      pipeline_size_(pipeline_size),
      expert_parallel_(expert_parallel) {
  PAGODA_CHECK(tensor_size >= 1 && pipeline_size >= 1 &&
               int64_t{tensor_size} * pipeline_size == world.size());
  if (tensor_size > 1 && pipeline_size > 1) {
    // One group per stage, ordered by shard.
    stage_group_ = world.split(world.rank() / tensor_size, world.rank() % tensor_size);
  }
}

TensorParallel ShardedBackend::tensor_parallel() const {
  if (tensor_size_ <= 1) return {};
  Communicator& group = stage_group_ ? *stage_group_ : world_;
  return TensorParallel{&group, group.rank(), tensor_size_, expert_parallel_};
}

PipelineParallel ShardedBackend::pipeline_parallel() const {
  if (pipeline_size_ <= 1) return {};
  // (Each stage is tensor_size_ ranks of the world: see stage_peer.)
  return PipelineParallel{&world_, world_.rank() / tensor_size_, pipeline_size_};
}

}  // namespace pagoda::backend::parallel
