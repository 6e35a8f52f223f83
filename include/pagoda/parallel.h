// Tensor parallelism across processes: `mpirun -np N pagoda ... --tensor-parallel-size N`.
// Every rank runs the same command line; rank 0 is the engine (server, scheduler, sampling),
// the other ranks load their shard of the model and repeat rank 0's forward passes
// (run_parallel_worker). Outside mpirun the process is rank 0 of 1.
#pragma once

#include <string>

#include "pagoda/engine.h"
#include "pagoda/status.h"

namespace pagoda {

// This process's rank in the job and the number of ranks (0 and 1 outside mpirun).
int parallel_rank();
int parallel_size();

// Checks that a tensor-parallel size fits the job: invalid_argument naming
// tensor_parallel_size unless it is 1 (rank 0 alone holds a whole model) or parallel_size().
Status check_tensor_parallel_size(int32_t tensor_parallel_size);

// The same for a tensor x pipeline layout: pipeline_parallel_size 1 (then as above), or
// tensor_parallel_size x pipeline_parallel_size == parallel_size() (world rank = stage x
// tensor_parallel_size + shard).
Status check_parallel_sizes(int32_t tensor_parallel_size, int32_t pipeline_parallel_size);

// The transport between the job's ranks, measured (collective: every rank calls it): an
// all-reduce of one float (latency) and of 1 Mi floats (bandwidth: payload bytes / time), each
// the median of 5 timings of enough calls for ~0.1 s. Outside a job: ranks 1 and zeros.
struct TransportFigures {
  std::string name;  // "mpi", "local"
  int ranks = 1;
  double all_reduce_latency_us = 0;
  double all_reduce_bandwidth_gbs = 0;
};
TransportFigures measure_transport();

// On a rank other than 0: loads this rank's shard of config.model_path and runs every forward
// pass rank 0 runs until rank 0's engine (or model) is destroyed. A load failure aborts the whole
// job with the message (rank 0 cannot go on without this rank's shard).
Status run_parallel_worker(const EngineConfig& config);

// The last call of main() on every rank: exit_code 0 ends the job's transport normally; any other
// code aborts every rank of the job (after printing `message`), so a failed rank 0 never leaves
// workers waiting. Returns exit_code (outside a job: does nothing else).
int finish_parallel(int exit_code, const std::string& message = "");

}  // namespace pagoda
