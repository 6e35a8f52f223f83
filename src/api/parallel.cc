// The public tensor-parallel entry points (pagoda/parallel.h) over backend/parallel.
#include "pagoda/parallel.h"

#include <cstdio>

#include "api/parallel_backend.h"
#include "backend/parallel/communicator.h"
#include "backend/parallel/sharded_backend.h"
#include "kernels/isa.h"
#include "loader/model_loader.h"

namespace pagoda {

namespace api {

backend::Backend& model_backend(int32_t tensor_parallel_size, int32_t pipeline_parallel_size) {
  using backend::parallel::ShardedBackend;
  if (pipeline_parallel_size > 1) {
    static ShardedBackend stages(backend::cpu_backend(), backend::parallel::world(),
                                 ShardedBackend::Split::kPipeline);
    return stages;
  }
  if (tensor_parallel_size <= 1) return backend::cpu_backend();
  static ShardedBackend sharded(backend::cpu_backend(), backend::parallel::world());
  return sharded;
}

}  // namespace api

int parallel_rank() {
  return backend::parallel::world().rank();
}

int parallel_size() {
  return backend::parallel::world().size();
}

Status check_parallel_sizes(int32_t tp, int32_t pp) {
  if (pp < 1) return invalid_argument("pipeline_parallel_size must be >= 1, got {}", pp);
  if (pp > 1 && tp > 1) {
    return unimplemented("tensor_parallel_size {} with pipeline_parallel_size {}: not yet", tp, pp);
  }
  if (pp > 1 && pp != parallel_size()) {
    return invalid_argument(
        "pipeline_parallel_size {} needs a job of {} ranks (mpirun -np {}), this one has {}", pp,
        pp, pp, parallel_size());
  }
  if (pp > 1) return Status();
  return check_tensor_parallel_size(tp);
}

Status check_tensor_parallel_size(int32_t tp) {
  if (tp < 1) return invalid_argument("tensor_parallel_size must be >= 1, got {}", tp);
  if (tp != 1 && tp != parallel_size()) {
    return invalid_argument(
        "tensor_parallel_size {} needs a job of {} ranks (mpirun -np {}), this one has {}", tp, tp,
        tp, parallel_size());
  }
  return Status();
}

Status run_parallel_worker(const EngineConfig& config) {
  backend::parallel::Communicator& comm = backend::parallel::world();
  if (Status s = check_parallel_sizes(config.tensor_parallel_size, config.pipeline_parallel_size);
      !s.ok()) {
    comm.abort(1, s.message());
  }
  if (config.num_threads > 0) kernels::set_num_threads(config.num_threads);
  auto loaded = loader::load_model(
      config.model_path,
      api::model_backend(config.tensor_parallel_size, config.pipeline_parallel_size));
  if (!loaded.ok()) comm.abort(1, "cannot load my shard: " + loaded.status().message());
  return loaded->model->run_worker();
}

int finish_parallel(int exit_code, const std::string& message) {
  if (!backend::parallel::launched_as_job()) return exit_code;
  backend::parallel::Communicator& comm = backend::parallel::world();
  if (exit_code != 0) {
    comm.abort(exit_code,
               message.empty() ? "failed (exit code " + std::to_string(exit_code) + ")" : message);
  }
  backend::parallel::finalize_world();
  return exit_code;
}

}  // namespace pagoda
