#include "diagnostics/activation_stats.h"

#include <algorithm>

#include "diagnostics/perplexity.h"
#include "diagnostics/sequence_session.h"

namespace pagoda::diagnostics {

void ActivationStats::observe(const kernels::WeightView& w, const float* x, int64_t m) {
  if (w.name.empty() || w.name == "output.weight") return;
  auto it = weights_.find(w.name);
  if (it == weights_.end()) {
    WeightInputStats s;
    s.cols = w.cols;
    s.sum_sq.assign(static_cast<size_t>(w.cols), 0.0);
    if (want_hessian_ && want_hessian_(w.name))
      s.hessian.assign(static_cast<size_t>(w.cols * w.cols), 0.0);
    it = weights_.emplace(std::string(w.name), std::move(s)).first;
  }
  WeightInputStats& s = it->second;
  const auto cols = static_cast<size_t>(s.cols);
  for (int64_t r = 0; r < m; ++r) {
    const float* row = x + static_cast<size_t>(r) * cols;
    for (size_t c = 0; c < cols; ++c)
      s.sum_sq[c] += static_cast<double>(row[c]) * row[c];
    if (s.hessian.empty()) continue;
    for (size_t i = 0; i < cols; ++i) {
      const double xi = row[i];
      double* h = s.hessian.data() + i * cols;
      for (size_t j = 0; j < cols; ++j)
        h[j] += xi * row[j];
    }
  }
  s.num_rows += m;
  s.ncall += 1;
}

format::Imatrix ActivationStats::to_imatrix(const std::string& dataset) const {
  format::Imatrix m;
  m.dataset = dataset;
  for (const auto& [name, s] : weights_) {
    if (s.num_rows == 0) continue;
    format::ImatrixEntry e;
    e.name = name;
    e.ncall = s.ncall;
    e.values.resize(s.sum_sq.size());
    for (size_t c = 0; c < s.sum_sq.size(); ++c)
      e.values[c] = static_cast<float>(s.sum_sq[c] / static_cast<double>(s.num_rows));
    m.entries.push_back(std::move(e));
    m.last_call = std::max(m.last_call, s.ncall);
  }
  return m;
}

Status collect_activations(loader::LoadedModel& loaded, std::span<const int32_t> tokens,
                           int32_t n_ctx, int32_t max_windows, ActivationStats& stats,
                           const std::function<void(size_t, size_t)>& on_window) {
  if (n_ctx > loaded.model->config().context_length) {
    return invalid_argument("--ctx {} exceeds the model's context length {}", n_ctx,
                            loaded.model->config().context_length);
  }
  PAGODA_ASSIGN_OR_RETURN(std::vector<PerplexityWindow> windows,
                          plan_windows(static_cast<int64_t>(tokens.size()), n_ctx, 0));
  if (max_windows > 0 && windows.size() > static_cast<size_t>(max_windows))
    windows.resize(static_cast<size_t>(max_windows));
  const tokenizer::Vocab& vocab = loaded.tokenizer->vocab();
  const bool replace_bos = vocab.add_bos && vocab.bos_id.has_value();
  PAGODA_ASSIGN_OR_RETURN(SequenceSession session,
                          SequenceSession::create(*loaded.model, n_ctx, tensor::DType::kF16));
  std::vector<int32_t> window(static_cast<size_t>(n_ctx));
  std::vector<float> logits;
  ScopedMatmulObserver scope(&stats);
  for (size_t w = 0; w < windows.size(); ++w) {
    std::copy_n(tokens.begin() + windows[w].start, n_ctx, window.begin());
    if (replace_bos) window[0] = *vocab.bos_id;
    session.reset();
    PAGODA_RETURN_IF_ERROR(session.feed(window, /*all_logits=*/false, logits));
    if (on_window) on_window(w + 1, windows.size());
  }
  return Status();
}

}  // namespace pagoda::diagnostics
