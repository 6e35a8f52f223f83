// comm_bench: the tensor-parallel transport's all-reduce latency and bandwidth, and what they
// predict per decode token for a model shape (the cost model of docs/design-notes.md).
//   mpirun --oversubscribe -np 2 build/bench/parallel/comm_bench [hidden layers]
// Prints one JSON object (rank 0). Sizes: 1 float to 4 Mi floats; each timed over enough
// repetitions for ~0.2 s, median of 5 such runs.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "backend/parallel/communicator.h"

namespace {
using pagoda::backend::parallel::Communicator;

double seconds_per_call(Communicator& comm, std::vector<float>& buf, size_t n) {
  int reps = 1;
  // Agree on a repetition count (rank 0's) so every rank makes the same calls.
  for (;;) {
    comm.barrier();
    const auto t0 = std::chrono::steady_clock::now();
    for (int i = 0; i < reps; ++i)
      comm.all_reduce_sum(buf.data(), n);
    double dt = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    comm.broadcast(&dt, sizeof(dt), 0);
    if (dt > 0.2 || reps >= (1 << 20)) return dt / reps;
    reps *= 4;
  }
}

}  // namespace

int main(int argc, char** argv) {
  Communicator& comm = pagoda::backend::parallel::world();
  const long hidden = argc > 1 ? std::atol(argv[1]) : 2048;  // TinyLlama-1.1B
  const long layers = argc > 2 ? std::atol(argv[2]) : 22;
  std::vector<float> buf(size_t{4} << 20, 1.0f);
  std::string rows;
  double latency = 0, bandwidth = 0;
  for (size_t n = 1; n <= buf.size(); n *= 16) {
    std::vector<double> runs;
    for (int k = 0; k < 5; ++k)
      runs.push_back(seconds_per_call(comm, buf, n));
    std::sort(runs.begin(), runs.end());
    const double t = runs[2];
    if (n == 1) latency = t;
    bandwidth = static_cast<double>(n * sizeof(float)) / t;
    char line[160];
    std::snprintf(line, sizeof(line), "%s{\"floats\": %zu, \"us\": %.2f, \"GB_per_s\": %.3f}",
                  rows.empty() ? "" : ", ", n, t * 1e6, bandwidth / 1e9);
    rows += line;
  }
  if (comm.rank() == 0) {
    // Decode, one token: 2 all-reduces of `hidden` f32 per layer.
    const double bytes = 2.0 * static_cast<double>(layers) * static_cast<double>(hidden) * 4;
    const double per_token = 2.0 * static_cast<double>(layers) * latency + bytes / bandwidth;
    std::printf(
        "{\"ranks\": %d, \"transport\": \"%s\", \"all_reduce\": [%s], \"latency_us\": %.2f, "
        "\"bandwidth_GB_per_s\": %.3f, \"model\": {\"hidden\": %ld, \"layers\": %ld}, "
        "\"tp_bytes_per_token\": %.0f, \"tp_comm_ms_per_decode_token\": %.3f}\n",
        comm.size(), std::string(comm.name()).c_str(), rows.c_str(), latency * 1e6, bandwidth / 1e9,
        hidden, layers, bytes, per_token * 1e3);
  }
  pagoda::backend::parallel::finalize_world();
  return 0;
}
