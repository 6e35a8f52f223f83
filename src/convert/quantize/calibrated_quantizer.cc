#include "convert/quantize/calibrated_quantizer.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <set>

#include "backend/backend.h"
#include "convert/quantize/awq.h"
#include "convert/quantize/grid_quant.h"
#include "convert/quantize/model_quantizer.h"
#include "convert/quantize/weighted_quant.h"
#include "diagnostics/activation_stats.h"
#include "diagnostics/perplexity.h"
#include "diagnostics/sequence_session.h"
#include "format/gguf_file.h"
#include "format/imatrix_file.h"
#include "kernels/matmul_observer.h"
#include "kernels/quant.h"
#include "loader/gguf_config.h"
#include "loader/gguf_tensor_source.h"
#include "model/arch/arch.h"

namespace pagoda::convert {
namespace {

using tensor::DType;

// H is [cols, cols] doubles: 32768 columns are 8 GiB per matrix.
constexpr uint64_t kMaxCalibratedCols = 32768;

// What one matrix's inputs looked like over the calibration windows.
struct InputStats {
  int64_t cols = 0;
  int64_t count = 0;            // tokens
  std::vector<double> h;        // [cols, cols] Σ x xᵀ (upper triangle while collecting)
  std::vector<double> sum_abs;  // [cols] Σ |x|
};
using StatsMap = std::map<std::string, InputStats, std::less<>>;

// Accumulates InputStats for the matrices named in the map (others are ignored).
class InputCollector final : public kernels::MatmulObserver {
 public:
  explicit InputCollector(StatsMap& stats) : stats_(stats) {}
  void observe(const kernels::WeightView& w, const float* x, int64_t m) override {
    auto it = stats_.find(w.name);
    if (it == stats_.end() || it->second.cols != w.cols) return;
    InputStats& s = it->second;
    const int64_t n = s.cols;
    for (int64_t t = 0; t < m; ++t) {
      const float* row = x + t * n;
      for (int64_t c = 0; c < n; ++c)
        s.sum_abs[c] += std::fabs(static_cast<double>(row[c]));
    }
    for (int64_t i = 0; i < n; ++i) {
      double* hi = s.h.data() + i * n;
      for (int64_t t = 0; t < m; ++t) {
        const float* row = x + t * n;
        const double a = row[i];
        if (a == 0) continue;
        for (int64_t j = i; j < n; ++j)
          hi[j] += a * row[j];
      }
    }
    s.count += m;
  }

 private:
  StatsMap& stats_;
};

// The model of `in` with the finished tensors in place of the file's.
Result<std::unique_ptr<model::Model>> overlay_model(std::shared_ptr<const format::GgufFile> in,
                                                    const model::ModelConfig& config,
                                                    const model::ArchDef& arch,
                                                    const CalibratedTensors& done) {
  std::vector<model::TensorRef> refs;
  refs.reserve(in->tensors().size());
  for (const format::GgufTensorInfo& t : in->tensors()) {
    model::TensorRef r = loader::gguf_tensor_ref(t);
    if (auto it = done.find(t.name); it != done.end()) {
      r.dtype = it->second->dtype;
      r.data = it->second->bytes.data();
      r.size_bytes = it->second->bytes.size();
    }
    refs.push_back(r);
  }
  auto owner =
      std::make_shared<std::pair<std::shared_ptr<const format::GgufFile>, CalibratedTensors>>(
          std::move(in), done);
  return arch.build(config, std::make_unique<model::RefTensorSource>(std::move(refs), owner),
                    backend::cpu_backend());
}

// The file's tensor as f32 [rows, cols].
std::vector<float> tensor_f32(const format::GgufTensorInfo& t) {
  const uint64_t cols = t.dims[0];
  const uint64_t rows = t.num_elements / cols;
  const uint64_t in_row = *tensor::row_size_bytes(t.dtype, cols);
  std::vector<float> w(static_cast<size_t>(t.num_elements));
  for (uint64_t r = 0; r < rows; ++r)
    tensor_row_to_f32(t.dtype, t.data + r * in_row, w.data() + r * cols, cols);
  return w;
}

std::shared_ptr<CalibratedTensor> f32_tensor(const std::vector<float>& v) {
  auto out = std::make_shared<CalibratedTensor>();
  out->dtype = DType::kF32;
  out->bytes.resize(v.size() * sizeof(float));
  std::memcpy(out->bytes.data(), v.data(), out->bytes.size());
  return out;
}

struct Stage {
  std::string prefix;           // "blk.3." or "" for the output stage
  std::vector<size_t> tensors;  // indices into in->tensors() to calibrate
};

class Calibrator {
 public:
  Calibrator(std::shared_ptr<const format::GgufFile> in, std::span<const TensorPlan> plans,
             const model::ModelConfig& config, const CalibrationOptions& options)
      : in_(std::move(in)), plans_(plans), config_(config), options_(options) {}

  // Quantises a stage's matrices from their collected stats into result.
  Status gptq_stage(const Stage& stage, StatsMap& stats, CalibrationResult& result,
                    const std::function<void(size_t, size_t)>& tick) {
    size_t done = 0;
    for (size_t index : stage.tensors) {
      const format::GgufTensorInfo& t = in_->tensors()[index];
      const InputStats& s = stats.at(std::string(t.name));
      tick(done++, stage.tensors.size());
      if (s.count == 0) continue;  // not seen (e.g. an expert stack): the plain path rounds it
      const DType type = plans_[index].dtype;
      const auto cols = static_cast<int64_t>(t.dims[0]);
      const auto rows = static_cast<int64_t>(t.num_elements / t.dims[0]);
      const size_t row_bytes = *tensor::row_size_bytes(type, static_cast<uint64_t>(cols));
      const std::vector<float> w = tensor_f32(t);
      auto out = std::make_shared<CalibratedTensor>();
      out->dtype = type;
      out->bytes.resize(row_bytes * static_cast<size_t>(rows));
      const format::ImatrixEntry* imp =
          options_.imatrix != nullptr ? options_.imatrix->find(t.name) : nullptr;
      if (imp != nullptr && (!supports_weighted(type) || imp->values.size() != t.dims[0]))
        imp = nullptr;
#pragma omp parallel
      {
        std::vector<float> weights(static_cast<size_t>(cols));
#pragma omp for schedule(static)
        for (int64_t r = 0; r < rows; ++r) {
          uint8_t* dst = out->bytes.data() + static_cast<size_t>(r) * row_bytes;
          if (imp != nullptr) {
            element_weights(w.data() + r * cols, imp->values.data(), cols, weights.data());
            quantize_row_weighted(type, w.data() + r * cols, weights.data(), dst, cols);
          } else {
            kernels::quantize_row(type, w.data() + r * cols, dst, cols);
          }
        }
      }
      CalibrationRecord rec;
      rec.name = std::string(t.name);
      rec.error_rtn = output_error(w.data(), dequantized(*out, rows, cols).data(), rows, cols, s.h);
      rec.error = rec.error_rtn;
      if (grid_supported(type)) {
        PAGODA_RETURN_IF_ERROR(
            gptq_quantize(type, w.data(), rows, cols, s.h, options_.gptq, out->bytes.data())
                .with_context(std::string(t.name)));
        rec.error = output_error(w.data(), dequantized(*out, rows, cols).data(), rows, cols, s.h);
      }
      result.records.push_back(std::move(rec));
      result.tensors[std::string(t.name)] = std::move(out);
    }
    return Status();
  }

  Status awq_stage(const Stage& stage, StatsMap& stats, CalibrationResult& result,
                   const std::function<void(size_t, size_t)>& tick) {
    // Float weights of the stage's matrices that were seen.
    WeightMap w;
    std::map<std::string, size_t, std::less<>> index_of;
    for (size_t index : stage.tensors) {
      const format::GgufTensorInfo& t = in_->tensors()[index];
      if (stats.at(std::string(t.name)).count == 0) continue;
      w[std::string(t.name)] = tensor_f32(t);
      index_of[std::string(t.name)] = index;
    }
    const WeightMap original = w;  // W, before any fold
    struct Group {
      std::string prev;
      bool prev_is_norm;
      std::vector<std::string> mats;
    };
    std::vector<Group> groups;
    const std::string& p = stage.prefix;
    if (p.empty()) {
      groups.push_back({"output_norm.weight", true, {"output.weight"}});
    } else {
      if (config_.fused_qkv) {
        groups.push_back({p + "attn_norm.weight", true, {p + "attn_qkv.weight"}});
      } else {
        groups.push_back({p + "attn_norm.weight",
                          true,
                          {p + "attn_q.weight", p + "attn_k.weight", p + "attn_v.weight"}});
      }
      groups.push_back({p + "ffn_norm.weight", true, {p + "ffn_gate.weight", p + "ffn_up.weight"}});
      if (config_.num_heads == config_.num_kv_heads && !config_.fused_qkv &&
          !config_.has_qkv_bias && !config_.mla()) {
        groups.push_back({p + "attn_v.weight", false, {p + "attn_output.weight"}});
      }
      if (!config_.fused_gate_up)
        groups.push_back({p + "ffn_up.weight", false, {p + "ffn_down.weight"}});
    }
    std::map<std::string, std::vector<float>, std::less<>> norms;
    // The scales folded into each matrix: W' = diag(row_scale)⁻¹·W·diag(col_scale).
    ScaleMap col_scale, row_scale;
    std::vector<std::pair<size_t, std::vector<std::string>>> group_records;
    size_t done = 0;
    for (Group& g : groups) {
      tick(done++, groups.size() + 1);
      std::erase_if(g.mats, [&](const std::string& m) { return !w.contains(m); });
      if (g.mats.empty()) continue;
      const InputStats& s = stats.at(g.mats[0]);
      const int64_t cols = s.cols;
      // The operation before must be foldable: an F32 norm of cols values, or a linear whose
      // rows are the matrices' input columns.
      if (g.prev_is_norm) {
        const format::GgufTensorInfo* nt = in_->find_tensor(g.prev);
        if (nt == nullptr || nt->dtype != DType::kF32 ||
            nt->num_elements != static_cast<uint64_t>(cols))
          continue;
        if (!norms.contains(g.prev)) {
          std::vector<float> v(static_cast<size_t>(cols));
          std::memcpy(v.data(), nt->data, v.size() * sizeof(float));
          norms[g.prev] = std::move(v);
        }
      } else {
        auto it = w.find(g.prev);
        if (it == w.end() || static_cast<int64_t>(it->second.size()) % cols != 0 ||
            static_cast<int64_t>(it->second.size()) / cols == 0)
          continue;
        const format::GgufTensorInfo& pt = in_->tensors()[index_of.at(g.prev)];
        if (static_cast<int64_t>(pt.num_elements / pt.dims[0]) != cols) continue;
      }
      std::vector<AwqMatrix> mats;
      bool same_input = true;
      for (const std::string& m : g.mats) {
        const InputStats& ms = stats.at(m);
        same_input &= ms.cols == cols;
        mats.push_back({plans_[index_of.at(m)].dtype, w.at(m).data(),
                        static_cast<int64_t>(w.at(m).size()) / cols});
      }
      if (!same_input || s.count == 0) continue;
      std::vector<double> mean_abs(static_cast<size_t>(cols));
      for (int64_t c = 0; c < cols; ++c)
        mean_abs[c] = s.sum_abs[c] / static_cast<double>(s.count);
      const AwqScales found = awq_search(mats, cols, mean_abs, s.h, options_.awq_grid);
      CalibrationRecord rec;
      for (const std::string& m : g.mats)
        rec.name += (rec.name.empty() ? "" : "+") + m;
      rec.error_rtn = found.error_rtn;
      rec.error = found.error;
      rec.alpha = found.alpha;
      group_records.emplace_back(result.records.size(), g.mats);
      result.records.push_back(std::move(rec));
      if (found.alpha == 0) continue;
      for (const std::string& m : g.mats) {
        std::vector<float>& mw = w.at(m);
        for (size_t i = 0; i < mw.size(); ++i)
          mw[i] *= found.s[i % static_cast<size_t>(cols)];
        col_scale[m] = found.s;
      }
      if (g.prev_is_norm) {
        std::vector<float>& nv = norms.at(g.prev);
        for (int64_t c = 0; c < cols; ++c)
          nv[c] /= found.s[c];
      } else {
        std::vector<float>& pw = w.at(g.prev);
        const size_t prev_cols = pw.size() / static_cast<size_t>(cols);
        for (int64_t r = 0; r < cols; ++r) {
          for (size_t c = 0; c < prev_cols; ++c)
            pw[r * prev_cols + c] /= found.s[r];
        }
        row_scale[g.prev] = found.s;
      }
    }
    tick(done, groups.size() + 1);
    for (const auto& [name, v] : norms)
      result.tensors[name] = f32_tensor(v);
    WeightMap scaled;  // awq-gptq: GPTQ's targets, the scaled weights before clipping
    if (options_.method == CalibrationMethod::kAwqGptq) scaled = w;
    if (options_.awq_clip) clip_stage(stats, w, index_of, col_scale, row_scale);
    // Final encoding: round to nearest, or (awq-gptq) GPTQ on the scaled weights before clipping
    // with the grid of the clipped ones, H of the scaled inputs x/s. Errors in W's space.
    std::map<std::string, double, std::less<>> final_error;
    for (const auto& [name, mw] : w) {
      const format::GgufTensorInfo& t = in_->tensors()[index_of.at(name)];
      const DType type = plans_[index_of.at(name)].dtype;
      const auto cols = static_cast<int64_t>(t.dims[0]);
      const auto rows = static_cast<int64_t>(t.num_elements / t.dims[0]);
      auto out = std::make_shared<CalibratedTensor>();
      out->dtype = type;
      out->bytes.resize(*tensor::row_size_bytes(type, static_cast<uint64_t>(cols)) *
                        static_cast<size_t>(rows));
      std::vector<float> deq(mw.size());
      rtn_scaled(type, mw.data(), rows, cols, nullptr, deq.data(), out->bytes.data());
      const float* cs = col_scale.contains(name) ? col_scale.at(name).data() : nullptr;
      const float* rs = row_scale.contains(name) ? row_scale.at(name).data() : nullptr;
      const std::vector<double>& h = stats.at(name).h;
      if (options_.method == CalibrationMethod::kAwqGptq && grid_supported(type)) {
        std::vector<double> hs = h;
        if (cs != nullptr) {
          for (int64_t i = 0; i < cols; ++i) {
            for (int64_t j = 0; j < cols; ++j)
              hs[i * cols + j] /= static_cast<double>(cs[i]) * cs[j];
          }
        }
        PAGODA_RETURN_IF_ERROR(gptq_quantize(type, scaled.at(name).data(), rows, cols, hs,
                                             options_.gptq, out->bytes.data())
                                   .with_context(name));
        deq = dequantized(*out, rows, cols);
      }
      for (int64_t r = 0; r < rows; ++r) {
        for (int64_t c = 0; c < cols; ++c) {
          float& v = deq[r * cols + c];
          if (rs != nullptr) v *= rs[r];
          if (cs != nullptr) v /= cs[c];
        }
      }
      final_error[name] = output_error(original.at(name).data(), deq.data(), rows, cols, h);
      result.tensors[name] = std::move(out);
    }
    // Records: each searched group's final error; matrices outside every group on their own.
    std::set<std::string, std::less<>> in_group;
    for (const auto& [index, mats] : group_records) {
      double e = 0;
      for (const std::string& m : mats) {
        in_group.insert(m);
        e += final_error.at(m);
      }
      result.records[index].error = e;
    }
    for (const auto& [name, e] : final_error) {
      if (in_group.contains(name)) continue;
      const std::vector<float>& ow = original.at(name);
      const int64_t cols = stats.at(name).cols;
      const int64_t rows = static_cast<int64_t>(ow.size()) / cols;
      std::vector<float> deq(ow.size());
      rtn_scaled(plans_[index_of.at(name)].dtype, ow.data(), rows, cols, nullptr, deq.data());
      result.records.push_back(
          {name, output_error(ow.data(), deq.data(), rows, cols, stats.at(name).h), e, -1});
    }
    return Status();
  }

 private:
  using ScaleMap = std::map<std::string, std::vector<float>, std::less<>>;
  using WeightMap = std::map<std::string, std::vector<float>, std::less<>>;

  // llm-awq's auto_clip (awq.h) on the stage's scaled weights, except attn_q/attn_k (and a fused
  // qkv), whose error reaches the output through the attention softmax (llm-awq skips them too).
  void clip_stage(const StatsMap& stats, WeightMap& w,
                  const std::map<std::string, size_t, std::less<>>& index_of,
                  const ScaleMap& col_scale, const ScaleMap& row_scale) const {
    for (auto& [name, mw] : w) {
      if (name.ends_with("attn_q.weight") || name.ends_with("attn_k.weight") ||
          name.ends_with("attn_qkv.weight"))
        continue;
      const format::GgufTensorInfo& t = in_->tensors()[index_of.at(name)];
      const DType type = plans_[index_of.at(name)].dtype;
      const auto cols = static_cast<int64_t>(t.dims[0]);
      const auto rows = static_cast<int64_t>(t.num_elements / t.dims[0]);
      if (cols % clip_group(type) != 0) continue;
      auto cs = col_scale.find(name);
      auto rs = row_scale.find(name);
      awq_clip(type, mw.data(), rows, cols, cs != col_scale.end() ? cs->second.data() : nullptr,
               rs != row_scale.end() ? rs->second.data() : nullptr, stats.at(name).h,
               options_.awq_grid);
    }
  }

  static std::vector<float> dequantized(const CalibratedTensor& t, int64_t rows, int64_t cols) {
    std::vector<float> out(static_cast<size_t>(rows * cols));
    const size_t row_bytes = t.bytes.size() / static_cast<size_t>(rows);
    for (int64_t r = 0; r < rows; ++r)
      kernels::dequantize_row(t.dtype, t.bytes.data() + static_cast<size_t>(r) * row_bytes,
                              out.data() + r * cols, cols);
    return out;
  }

  std::shared_ptr<const format::GgufFile> in_;
  std::span<const TensorPlan> plans_;
  const model::ModelConfig& config_;
  const CalibrationOptions& options_;
};

}  // namespace

Result<CalibrationResult> calibrate(std::shared_ptr<const format::GgufFile> in,
                                    std::span<const TensorPlan> plans,
                                    std::span<const int32_t> tokens,
                                    const CalibrationOptions& options,
                                    const CalibrationProgressFn& progress) {
  if (plans.size() != in->tensors().size())
    return internal_error("calibrate: {} plans for {} tensors", plans.size(), in->tensors().size());
  PAGODA_ASSIGN_OR_RETURN(model::ModelConfig config, loader::config_from_gguf(*in));
  const model::ArchDef* arch = model::find_arch(config.arch);
  if (arch == nullptr) return unimplemented("architecture '{}' is not supported", config.arch);
  PAGODA_RETURN_IF_ERROR(arch->configure(config));
  if (options.n_ctx > config.context_length) {
    return invalid_argument("calibration window {} exceeds the model's context length {}",
                            options.n_ctx, config.context_length);
  }
  if (options.n_ctx <= 0 || tokens.size() < static_cast<size_t>(options.n_ctx)) {
    return invalid_argument(
        "the calibration text has {} tokens, fewer than one calibration window of {}",
        tokens.size(), options.n_ctx);
  }
  PAGODA_ASSIGN_OR_RETURN(
      std::vector<diagnostics::PerplexityWindow> windows,
      diagnostics::plan_windows(static_cast<int64_t>(tokens.size()), options.n_ctx, 0));
  if (options.max_windows > 0 && windows.size() > static_cast<size_t>(options.max_windows))
    windows.resize(static_cast<size_t>(options.max_windows));

  // Stages: each layer's quantised 2-D matrices, then the output matrix.
  std::vector<Stage> stages(static_cast<size_t>(config.num_layers) + 1);
  for (int32_t l = 0; l < config.num_layers; ++l)
    stages[static_cast<size_t>(l)].prefix = "blk." + std::to_string(l) + ".";
  for (size_t i = 0; i < in->tensors().size(); ++i) {
    const format::GgufTensorInfo& t = in->tensors()[i];
    if (!plans[i].quantize || t.n_dims != 2 || !kernels::can_dequantize(t.dtype)) continue;
    if (!tensor::row_size_bytes(t.dtype, t.dims[0]).ok() ||
        !tensor::row_size_bytes(plans[i].dtype, t.dims[0]).ok()) {
      continue;  // build_quantized_model reports it
    }
    if (t.dims[0] > kMaxCalibratedCols) {
      return invalid_argument(
          "tensor '{}' has {} columns: its Hessian ({} GiB) is beyond the calibrated quantisers' "
          "limit of {} columns",
          t.name, t.dims[0], t.dims[0] * t.dims[0] * 8 >> 30, kMaxCalibratedCols);
    }
    if (t.name == "output.weight") {
      stages.back().tensors.push_back(i);
      continue;
    }
    for (Stage& s : stages) {
      if (!s.prefix.empty() && t.name.starts_with(s.prefix)) s.tensors.push_back(i);
    }
  }

  CalibrationResult result;
  result.num_tokens = windows.size() * static_cast<size_t>(options.n_ctx);
  Calibrator calibrator(in, plans, config, options);
  std::vector<int32_t> window(static_cast<size_t>(options.n_ctx));
  std::vector<float> logits;
  const auto num_stages = static_cast<int32_t>(stages.size());
  for (int32_t si = 0; si < num_stages; ++si) {
    const Stage& stage = stages[static_cast<size_t>(si)];
    if (stage.tensors.empty()) continue;
    StatsMap stats;
    for (size_t index : stage.tensors) {
      const format::GgufTensorInfo& t = in->tensors()[index];
      InputStats s;
      s.cols = static_cast<int64_t>(t.dims[0]);
      s.h.assign(static_cast<size_t>(s.cols * s.cols), 0.0);
      s.sum_abs.assign(static_cast<size_t>(s.cols), 0.0);
      stats.emplace(std::string(t.name), std::move(s));
    }
    {
      PAGODA_ASSIGN_OR_RETURN(std::unique_ptr<model::Model> m,
                              overlay_model(in, config, *arch, result.tensors));
      PAGODA_ASSIGN_OR_RETURN(diagnostics::SequenceSession session,
                              diagnostics::SequenceSession::create(*m, options.n_ctx, DType::kF16));
      InputCollector collector(stats);
      diagnostics::ScopedMatmulObserver scope(&collector);
      for (size_t wi = 0; wi < windows.size(); ++wi) {
        std::copy_n(tokens.begin() + windows[wi].start, options.n_ctx, window.begin());
        if (options.bos_id) window[0] = *options.bos_id;
        session.reset();
        PAGODA_RETURN_IF_ERROR(session.feed(window, /*all_logits=*/false, logits));
        if (progress) progress({si, num_stages, "forward", wi + 1, windows.size()});
      }
    }
    for (auto& [name, s] : stats) {  // mirror the upper triangle
      for (int64_t i = 0; i < s.cols; ++i) {
        for (int64_t j = 0; j < i; ++j)
          s.h[i * s.cols + j] = s.h[j * s.cols + i];
      }
    }
    auto tick = [&](size_t done, size_t total) {
      if (progress) progress({si, num_stages, "quantize", done, total});
    };
    if (options.method == CalibrationMethod::kGptq) {
      PAGODA_RETURN_IF_ERROR(calibrator.gptq_stage(stage, stats, result, tick));
    } else {
      PAGODA_RETURN_IF_ERROR(calibrator.awq_stage(stage, stats, result, tick));
    }
  }
  return result;
}

}  // namespace pagoda::convert
