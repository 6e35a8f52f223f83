// The public tensor-parallel entry points (pagoda/parallel.h) over backend/parallel.
#include "pagoda/parallel.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <map>
#include <memory>
#include <mutex>
#include <tuple>
#include <utility>
#include <vector>

#include "api/kv_cache_sizing.h"
#include "api/parallel_backend.h"
#include "backend/parallel/communicator.h"
#include "backend/parallel/sharded_backend.h"
#include "kernels/isa.h"
#include "loader/model_loader.h"

namespace pagoda {

namespace api {

backend::Backend& model_backend(int32_t tensor_parallel_size, int32_t pipeline_parallel_size,
                                bool expert_parallel) {
  using backend::parallel::ShardedBackend;
  if (tensor_parallel_size <= 1 && pipeline_parallel_size <= 1) return backend::cpu_backend();
  // One per layout, made on first use (collective: every rank asks for the same layouts in the
  // same order, as they load the same models).
  static std::mutex mu;
  static std::map<std::tuple<int32_t, int32_t, bool>, std::unique_ptr<ShardedBackend>> layouts;
  std::lock_guard<std::mutex> lock(mu);
  auto& slot = layouts[{tensor_parallel_size, pipeline_parallel_size, expert_parallel}];
  if (!slot) {
    slot = std::make_unique<ShardedBackend>(backend::cpu_backend(), backend::parallel::world(),
                                            tensor_parallel_size, pipeline_parallel_size,
                                            expert_parallel);
  }
  return *slot;
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
  if (pp == 1) return check_tensor_parallel_size(tp);
  if (tp < 1) return invalid_argument("tensor_parallel_size must be >= 1, got {}", tp);
  if (int64_t{tp} * pp != parallel_size()) {
    return invalid_argument(
        "tensor_parallel_size {} x pipeline_parallel_size {} needs a job of {} ranks (mpirun -np "
        "{}), this one has {}",
        tp, pp, int64_t{tp} * pp, int64_t{tp} * pp, parallel_size());
  }
  return Status();
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
      config.model_path, api::model_backend(config.tensor_parallel_size,
                                            config.pipeline_parallel_size, config.expert_parallel));
  if (!loaded.ok()) comm.abort(1, "cannot load my shard: " + loaded.status().message());
  // As rank 0's engine resolves max_model_len (a LongRoPE model's table depends on it). A value
  // rank 0 would refuse ends the job there: clamped here, a worker never fails on it. Beside a
  // rank 0 that runs the model without an engine (bench, tp_check's logits), max_model_len 0 (or
  // at least the context) leaves the whole context, as rank 0's model has by default.
  const auto max_model_len = api::resolve_max_model_len(config.max_model_len, /*clamp=*/true,
                                                        loaded->model->config().context_length);
  if (max_model_len.ok()) loaded->model->set_served_context(*max_model_len);
  return loaded->model->run_worker();
}

namespace {

// Seconds per all-reduce of n floats: enough calls for ~0.1 s (rank 0's count, so every rank
// makes the same calls).
double seconds_per_all_reduce(backend::parallel::Communicator& comm, std::vector<float>& buf,
                              size_t n) {
  for (int reps = 1;; reps *= 4) {
    comm.barrier();
    const auto t0 = std::chrono::steady_clock::now();
    for (int i = 0; i < reps; ++i)
      comm.all_reduce_sum(buf.data(), n);
    double dt = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    comm.broadcast(&dt, sizeof(dt), 0);
    if (dt > 0.1 || reps >= (1 << 20)) return dt / reps;
  }
}

}  // namespace

TransportFigures measure_transport() {
  backend::parallel::Communicator& comm = backend::parallel::world();
  TransportFigures f;
  f.name = std::string(comm.name());
  f.ranks = comm.size();
  if (comm.size() <= 1) return f;
  std::vector<float> buf(size_t{1} << 20, 0.0f);
  auto median_of_5 = [&](size_t n) {
    std::vector<double> runs;
    for (int k = 0; k < 5; ++k)
      runs.push_back(seconds_per_all_reduce(comm, buf, n));
    std::sort(runs.begin(), runs.end());
    return runs[2];
  };
  f.all_reduce_latency_us = median_of_5(1) * 1e6;
  f.all_reduce_bandwidth_gbs =
      static_cast<double>(buf.size() * sizeof(float)) / median_of_5(buf.size()) / 1e9;
  return f;
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
