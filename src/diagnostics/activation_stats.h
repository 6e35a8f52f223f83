// ActivationStats: what the calibration-based quantisers need to know about each weight's
// inputs, gathered by watching every matmul of forward passes over a calibration text
// (kernels::MatmulObserver):
// - the importance matrix of llama-imatrix: per input column, the sum of squared activations
//   over all tokens (format/imatrix_file.h stores its mean);
// - optionally the Hessian of the layer-wise least-squares problem that GPTQ and AWQ solve,
//   H = Σ_t x_t x_tᵀ [cols, cols], for the weights `want_hessian` selects (one layer at a time
//   keeps memory bounded: a 4096-wide layer's seven matrices are ~0.5 GB in double).
// The output matrix is skipped, as llama-imatrix does by default (its input is only the final
// rows and its imatrix is not used by the mixes).
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <mutex>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "base/status.h"
#include "format/imatrix_file.h"
#include "kernels/matmul_observer.h"
#include "loader/model_loader.h"

namespace pagoda::diagnostics {

struct WeightInputStats {
  int64_t cols = 0;
  int64_t num_rows = 0;         // tokens seen
  int32_t ncall = 0;            // matmul calls seen
  std::vector<double> sum_sq;   // [cols] Σ x²
  std::vector<double> hessian;  // [cols, cols] Σ x xᵀ (row-major), empty when not wanted
};

class ActivationStats final : public kernels::MatmulObserver {
 public:
  using Select = std::function<bool(std::string_view name)>;
  // want_hessian: which weights also get H (nullptr: none).
  explicit ActivationStats(Select want_hessian = nullptr)
      : want_hessian_(std::move(want_hessian)) {}

  void observe(const kernels::WeightView& w, const float* x, int64_t m) override;

  const std::map<std::string, WeightInputStats, std::less<>>& weights() const { return weights_; }
  // Per weight: mean squared activation per column, ncall = calls seen.
  format::Imatrix to_imatrix(const std::string& dataset) const;

 private:
  Select want_hessian_;
  std::map<std::string, WeightInputStats, std::less<>> weights_;
};

// Installs an observer for its lifetime.
class ScopedMatmulObserver {
 public:
  explicit ScopedMatmulObserver(kernels::MatmulObserver* o) { kernels::set_matmul_observer(o); }
  ~ScopedMatmulObserver() { kernels::set_matmul_observer(nullptr); }
  ScopedMatmulObserver(const ScopedMatmulObserver&) = delete;
  ScopedMatmulObserver& operator=(const ScopedMatmulObserver&) = delete;
};

// Runs the calibration tokens through the model in non-overlapping windows of n_ctx (first token
// of each replaced by BOS, as for perplexity; at most max_windows when > 0) while `stats` watches.
// on_window(done, total) after each. Errors: fewer tokens than one window.
Status collect_activations(loader::LoadedModel& loaded, std::span<const int32_t> tokens,
                           int32_t n_ctx, int32_t max_windows, ActivationStats& stats,
                           const std::function<void(size_t, size_t)>& on_window = nullptr);

}  // namespace pagoda::diagnostics
