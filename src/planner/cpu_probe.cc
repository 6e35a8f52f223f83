#include "planner/cpu_probe.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstring>
#include <fstream>
#include <functional>
#include <random>
#include <sstream>
#include <thread>

#include "backend/backend.h"
#include "kernels/isa.h"
#include "kernels/ops.h"
#include "kernels/quant.h"
#include "kernels/team.h"
#include "planner/bandwidth_probe.h"

namespace pagoda::planner {
namespace {

using Clock = std::chrono::steady_clock;

double seconds_since(Clock::time_point t0) {
  return std::chrono::duration<double>(Clock::now() - t0).count();
}

// A rows x cols matrix of `dtype`: one random row quantised, repeated (speed does not depend on
// the values), placed by the CPU backend as a model's weights are.
struct Matrix {
  std::vector<uint8_t> data;
  kernels::WeightView view;
  std::unique_ptr<backend::DeviceBuffer> placed;
};

Result<Matrix> make_matrix(tensor::DType dtype, int64_t rows, int64_t cols) {
  Matrix m;
  PAGODA_ASSIGN_OR_RETURN(uint64_t row_bytes, tensor::row_size_bytes(dtype, cols));
  std::vector<float> row(static_cast<size_t>(cols));
  std::mt19937 rng(7);
  std::normal_distribution<float> dist(0.0f, 0.02f);
  for (float& v : row)
    v = dist(rng);
  m.data.resize(row_bytes * static_cast<size_t>(rows));
  kernels::quantize_row(dtype, row.data(), m.data.data(), cols);
  for (int64_t r = 1; r < rows; ++r)
    std::memcpy(m.data.data() + row_bytes * r, m.data.data(), row_bytes);
  m.view = {dtype, rows, cols, row_bytes, m.data.data(), nullptr, {}};
  kernels::WeightView* views[] = {&m.view};
  m.placed = backend::cpu_backend().place_weights(views);
  if (m.placed) m.data = {};  // the view points at the placed copy
  return m;
}

double mem_available_gb() {
  std::ifstream in("/proc/meminfo");
  std::string key;
  uint64_t kb = 0;
  std::string unit;
  while (in >> key >> kb >> unit) {
    if (key == "MemAvailable:") return static_cast<double>(kb) * 1024 / 1e9;
  }
  return 0;
}

// Seconds of the median of `repeats` passes of fn() in one thread team: the statistic `pagoda
// bench` reports, so that on a busy machine the probe sees the same contention the benchmarks do.
double median_team_pass(int repeats, const std::function<void()>& fn) {
  std::vector<double> t;
  for (int r = 0; r < std::max(1, repeats); ++r) {
    const auto t0 = Clock::now();
    kernels::run_in_team(fn);
    t.push_back(seconds_since(t0));
  }
  std::nth_element(t.begin(), t.begin() + static_cast<std::ptrdiff_t>(t.size() / 2), t.end());
  return t[t.size() / 2];
}

// One small op and the team barrier after it, microseconds: a decode-sized add (the team's
// first thread alone) whose result the whole team then reads, as a norm's or a residual add's
// is (barriers are lazy: team_sync waits only after a write).
double probe_sync_us(int repeats) {
  constexpr int kOps = 20000;
  std::vector<float> a(256, 1.0f), b(256, 0.0f);
  const double ops = median_team_pass(repeats, [&] {
    for (int i = 0; i < kOps; ++i) {
      kernels::add_inplace(b.data(), a.data(), static_cast<int64_t>(a.size()));
      kernels::team_sync();
    }
  });
  return ops / kOps * 1e6;  // the one fork/join is noise next to 20,000 ops
}

// The model's dense matmul shapes (distinct type x rows x cols of its file matrices, experts and
// the embedding lookup left out), each timed per call at o.shape_tokens.
Status probe_shapes(const CpuProbeOptions& o, HardwareSpec* hw) {
  const PlanModel& model = *o.model;
  double model_bytes = 0;
  std::vector<const WeightMatrix*> todo;
  for (const WeightMatrix& m : model.file_matrices) {
    if (!m.dtype) continue;
    PAGODA_ASSIGN_OR_RETURN(uint64_t row_bytes, tensor::row_size_bytes(*m.dtype, m.cols));
    model_bytes +=
        static_cast<double>(row_bytes) * static_cast<double>(m.rows) * static_cast<double>(m.count);
    if (m.embedding || m.num_experts > 0 || m.rows < 2 || m.cols < 2) continue;
    if (!kernels::can_quantize(*m.dtype)) continue;
    if (hw->find_shape(*m.dtype, m.rows, m.cols) != nullptr) continue;
    bool seen = false;
    for (const WeightMatrix* t : todo)
      seen = seen || (t->dtype == m.dtype && t->rows == m.rows && t->cols == m.cols);
    if (!seen) todo.push_back(&m);
  }
  const double working_set = std::min(model_bytes, static_cast<double>(o.max_working_set));
  for (const WeightMatrix* m : todo) {
    PAGODA_ASSIGN_OR_RETURN(uint64_t row_bytes, tensor::row_size_bytes(*m->dtype, m->cols));
    const double matrix_bytes = static_cast<double>(row_bytes) * static_cast<double>(m->rows);
    const auto max_copies =
        static_cast<size_t>(std::clamp(std::ceil(working_set / matrix_bytes), 1.0, 4096.0));
    std::vector<Matrix> copies;
    for (size_t i = 0; i < max_copies; ++i) {
      PAGODA_ASSIGN_OR_RETURN(Matrix c, make_matrix(*m->dtype, m->rows, m->cols));
      copies.push_back(std::move(c));
    }
    ShapeRate rate{*m->dtype, m->rows, m->cols, {}, {}};
    for (double tokens : o.shape_tokens) {
      const auto n = static_cast<int64_t>(tokens);
      // Past one token the work is compute: a few copies (about 1 GFLOP a pass) are enough.
      const double flops =
          2.0 * static_cast<double>(m->rows) * static_cast<double>(m->cols) * tokens;
      const size_t used =
          n == 1 ? copies.size()
                 : std::min(copies.size(), static_cast<size_t>(std::max(1.0, 1e9 / flops)));
      std::vector<float> x(static_cast<size_t>(n * m->cols), 0.5f),
          y(static_cast<size_t>(n * m->rows));
      auto pass = [&] {
        for (size_t i = 0; i < used; ++i)
          kernels::matmul(copies[i].view, x.data(), n, y.data());
      };
      median_team_pass(1, pass);  // warm
      rate.m.push_back(tokens);
      rate.seconds.push_back(median_team_pass(o.repeats, pass) / static_cast<double>(used));
    }
    // A call over fewer rows is never slower than over more: noise (the only thing a shared
    // machine adds) inflated any point above a later one.
    for (size_t i = rate.seconds.size(); i-- > 1;)
      rate.seconds[i - 1] = std::min(rate.seconds[i - 1], rate.seconds[i]);
    hw->shapes.push_back(std::move(rate));
  }
  return Status::ok_status();
}

}  // namespace

Result<HardwareSpec> probe_cpu(const CpuProbeOptions& o) {
  if (o.threads > 0) kernels::set_num_threads(o.threads);
  HardwareSpec hw;
  hw.name = "cpu";
  hw.description = fmt::format("this machine: {} threads, {}", kernels::num_threads(),
                               kernels::isa_name(kernels::active_isa()));
  hw.interconnect = "none";
  hw.max_devices = 1;
  // Measured rates are what the kernels reach: no further efficiency discount.
  hw.bandwidth_efficiency = 1;
  hw.compute_efficiency = 1;
  hw.memory_utilization = 0.9;
  hw.reserved_gb = 0.5;
  hw.allreduce_latency_us = 0;
  hw.memory_gb = mem_available_gb();
  if (!(hw.memory_gb > 0))
    return io_error("cpu probe: cannot read MemAvailable from /proc/meminfo");
  {
    PAGODA_ASSIGN_OR_RETURN(BandwidthProbe probe, BandwidthProbe::create());
    hw.bandwidth_gbs = probe.measure(o.repeats + 2);
  }
  constexpr int64_t kCols = 4096;
  for (tensor::DType dtype : o.types) {
    if (!kernels::can_quantize(dtype)) continue;
    MatmulRate rate;
    {  // decode: one row against a matrix far larger than the caches
      PAGODA_ASSIGN_OR_RETURN(uint64_t row_bytes, tensor::row_size_bytes(dtype, kCols));
      const int64_t rows = std::max<int64_t>(1, static_cast<int64_t>(o.gemv_bytes / row_bytes));
      PAGODA_ASSIGN_OR_RETURN(Matrix m, make_matrix(dtype, rows, kCols));
      std::vector<float> x(kCols, 0.5f), y(static_cast<size_t>(rows));
      kernels::matmul(m.view, x.data(), 1, y.data());  // warm
      double best = 0;
      for (int r = 0; r < o.repeats; ++r) {
        const auto t0 = Clock::now();
        kernels::matmul(m.view, x.data(), 1, y.data());
        best = std::max(best, static_cast<double>(row_bytes * rows) / seconds_since(t0) / 1e9);
      }
      rate.gemv_gbs = best;
    }
    {  // prefill: m rows against a 4096 x 4096 matrix
      PAGODA_ASSIGN_OR_RETURN(Matrix m, make_matrix(dtype, kCols, kCols));
      std::vector<float> x(static_cast<size_t>(o.prefill_rows * kCols), 0.5f),
          y(static_cast<size_t>(o.prefill_rows * kCols));
      kernels::matmul(m.view, x.data(), o.prefill_rows, y.data());  // warm
      double best = 0;
      for (int r = 0; r < o.repeats; ++r) {
        const auto t0 = Clock::now();
        kernels::matmul(m.view, x.data(), o.prefill_rows, y.data());
        best = std::max(best, 2.0 * kCols * kCols * static_cast<double>(o.prefill_rows) /
                                  seconds_since(t0) / 1e9);
      }
      rate.gemm_gflops = best;
    }
    hw.matmul[dtype] = rate;
  }
  // Attention and unmeasured types fall back to these: the F16 matmul's speed.
  if (auto it = hw.matmul.find(tensor::DType::kF16); it != hw.matmul.end()) {
    hw.fp16_tflops = it->second.gemm_gflops / 1e3;
  } else {
    hw.fp16_tflops = 0.1;
  }
  hw.sync_us = probe_sync_us(o.repeats);
  if (o.model != nullptr) PAGODA_RETURN_IF_ERROR(probe_shapes(o, &hw));
  hw.sources = {"measured by `pagoda plan --calibrate` (src/planner/cpu_probe.cc)"};
  return hw;
}

}  // namespace pagoda::planner
