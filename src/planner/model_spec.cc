#include "planner/model_spec.h"

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <map>

#include "base/checked_math.h"
#include "format/gguf_file.h"
#include "format/hf_config.h"
#include "loader/gguf_config.h"
#include "loader/hf/hf_checkpoint.h"
#include "model/arch/arch.h"

namespace pagoda::planner {
namespace {

namespace fs = std::filesystem;

constexpr uint64_t kMaxConfigBytes = 1 << 20;

int64_t i64(int32_t v) {
  return static_cast<int64_t>(v);
}

WeightMatrix mat(std::string role, int64_t rows, int64_t cols, int64_t count) {
  WeightMatrix m;
  m.role = std::move(role);
  m.rows = rows;
  m.cols = cols;
  m.count = count;
  return m;
}

// rows x cols x count with every product checked.
Status add(std::vector<WeightMatrix>& out, WeightMatrix m) {
  auto p = checked_mul<int64_t>(m.rows, m.cols);
  if (p) p = checked_mul<int64_t>(*p, m.count);
  if (!p || m.rows <= 0 || m.cols <= 0 || m.count <= 0) {
    return invalid_argument("model: {} matrix {} x {} x {} is out of range", m.role, m.rows, m.cols,
                            m.count);
  }
  out.push_back(std::move(m));
  return Status::ok_status();
}

Status validate(const model::ModelConfig& c) {
  const model::ArchDef* arch = model::find_arch(c.arch);
  if (arch == nullptr) return model::validate_config(c);
  model::ModelConfig copy = c;
  PAGODA_RETURN_IF_ERROR(arch->configure(copy));
  return model::validate_config(copy);
}

// A GGUF tensor as a matrix of its real type: dims[0] = cols; experts stacked in dims[2].
Status add_file_tensor(std::vector<WeightMatrix>& out, const format::GgufTensorInfo& t,
                       const model::ModelConfig& c) {
  const std::string_view name = t.name;
  WeightMatrix m;
  const size_t dot = name.rfind(".weight");
  m.role = std::string(name.substr(0, dot));
  if (const size_t blk = m.role.find('.', 4);
      m.role.rfind("blk.", 0) == 0 && blk != std::string::npos) {
    m.role = m.role.substr(blk + 1);  // "blk.3.attn_q" -> "attn_q"
  }
  m.dtype = t.dtype;
  m.cols = static_cast<int64_t>(t.dims[0]);
  m.rows = static_cast<int64_t>(t.dims[1]);
  m.count = static_cast<int64_t>(t.dims[2] * t.dims[3]);
  if (name.find("_exps.") != std::string_view::npos && c.num_experts > 0) {
    m.num_experts = c.num_experts;
    m.num_experts_used = c.num_experts_used;
  }
  m.embedding = name == "token_embd.weight" && !c.tied_embeddings;
  m.output = name == "output.weight" || (name == "token_embd.weight" && c.tied_embeddings);
  // Merge with a tensor of the same role, shape and type (the same matrix in another layer).
  for (WeightMatrix& e : out) {
    if (e.role == m.role && e.rows == m.rows && e.cols == m.cols && e.dtype == m.dtype &&
        e.num_experts == m.num_experts) {
      auto sum = checked_add<int64_t>(e.count, m.count);
      if (!sum) return invalid_argument("{}: too many tensors", name);
      e.count = *sum;
      return Status::ok_status();
    }
  }
  return add(out, std::move(m));
}

Result<PlanModel> from_gguf(const std::string& path) {
  PAGODA_ASSIGN_OR_RETURN(auto file, format::GgufFile::open(path));
  PAGODA_ASSIGN_OR_RETURN(model::ModelConfig c, loader::config_from_gguf(*file));
  PAGODA_RETURN_IF_ERROR(validate(c));
  PlanModel m;
  m.name = c.name.empty() ? fs::path(path).filename().string() : c.name;
  m.source = "gguf: " + path;
  m.config = c;
  PAGODA_ASSIGN_OR_RETURN(m.matrices, matrices_from_config(c));
  std::map<std::string, uint64_t> type_bytes;
  for (const auto& t : file->tensors()) {
    PAGODA_RETURN_IF_ERROR(add_file_tensor(m.file_matrices, t, c));
    type_bytes[std::string(tensor::dtype_name(t.dtype))] += t.size_bytes;
  }
  // The types by the bytes they hold, the largest first: "Q4_0 (+Q6_K, F32)".
  std::vector<std::pair<uint64_t, std::string>> by_size;
  for (const auto& [name, bytes] : type_bytes)
    by_size.emplace_back(bytes, name);
  std::sort(by_size.rbegin(), by_size.rend());
  for (size_t i = 0; i < by_size.size(); ++i) {
    m.file_types += i == 0 ? by_size[i].second : (i == 1 ? " (+" : ", ") + by_size[i].second;
  }
  if (by_size.size() > 1) m.file_types += ")";
  return m;
}

Result<PlanModel> from_hf_config(const std::string& dir, const std::string& file_name) {
  PAGODA_ASSIGN_OR_RETURN(std::string text,
                          loader::read_model_file(dir, file_name, kMaxConfigBytes));
  PAGODA_ASSIGN_OR_RETURN(format::HfConfig hf, format::parse_hf_config(text));
  std::string architecture;
  PAGODA_ASSIGN_OR_RETURN(model::ModelConfig c, loader::model_config_from_hf(hf, &architecture));
  c.tied_embeddings = hf.tie_word_embeddings.value_or(false);
  PlanModel m;
  m.name = c.name.empty() ? architecture : c.name;
  m.source = "config.json: " + (fs::path(dir) / file_name).string();
  m.config = c;
  PAGODA_ASSIGN_OR_RETURN(m.matrices, matrices_from_config(c));
  return m;
}

}  // namespace

double WeightMatrix::active_count() const {
  if (embedding) return 0;
  if (num_experts <= 0) return static_cast<double>(count);
  return static_cast<double>(count) / num_experts * num_experts_used;
}

double WeightMatrix::touched_count(double tokens) const {
  if (embedding) return 0;
  if (num_experts <= 0 || tokens <= 0) return tokens <= 0 ? 0 : static_cast<double>(count);
  const double layers = static_cast<double>(count) / num_experts;
  const double miss = 1.0 - static_cast<double>(num_experts_used) / num_experts;
  return layers * num_experts * (1.0 - std::pow(miss, tokens));
}

int64_t PlanModel::num_params() const {
  int64_t n = 0;
  for (const WeightMatrix& m : matrices)
    n += m.num_params();  // each checked in add(); the sum of a validated config fits
  return n;
}

int64_t PlanModel::num_active_params() const {
  double n = 0;
  for (const WeightMatrix& m : matrices)
    n += m.active_count() * static_cast<double>(m.rows * m.cols);
  return static_cast<int64_t>(n);
}

double PlanModel::kv_elements_per_token(int32_t tp) const {
  const model::ModelConfig& c = config;
  if (c.mla()) return static_cast<double>(c.num_layers) * (c.kv_lora_rank + c.rope_dims);
  // KV heads split over the ranks; with more ranks than heads each rank keeps one (replicated).
  const double heads = std::max(1.0, std::ceil(static_cast<double>(c.num_kv_heads) / tp));
  return static_cast<double>(c.num_layers) * heads * (c.head_dim + c.value_dim());
}

Result<std::vector<WeightMatrix>> matrices_from_config(const model::ModelConfig& c) {
  std::vector<WeightMatrix> out;
  const int64_t h = c.hidden_dim, layers = c.num_layers;
  if (c.mla()) {
    // DeepSeek MLA: q through a rank-q_lora_rank compression (or one matrix), K/V from the
    // kv_lora_rank latent plus a shared rope key; per head a head_dim key (nope + rope) and a
    // value_dim value.
    const int64_t q_out = i64(c.num_heads) * c.head_dim;
    if (c.q_lora_rank > 0) {
      PAGODA_RETURN_IF_ERROR(add(out, mat("attn_q_a", c.q_lora_rank, h, layers)));
      PAGODA_RETURN_IF_ERROR(add(out, mat("attn_q_b", q_out, c.q_lora_rank, layers)));
    } else {
      PAGODA_RETURN_IF_ERROR(add(out, mat("attn_q", q_out, h, layers)));
    }
    PAGODA_RETURN_IF_ERROR(
        add(out, mat("attn_kv_a", i64(c.kv_lora_rank) + c.rope_dims, h, layers)));
    const int64_t nope = i64(c.head_dim) - c.rope_dims;
    PAGODA_RETURN_IF_ERROR(add(
        out, mat("attn_kv_b", i64(c.num_heads) * (nope + c.value_dim()), c.kv_lora_rank, layers)));
    PAGODA_RETURN_IF_ERROR(
        add(out, mat("attn_output", h, i64(c.num_heads) * c.value_dim(), layers)));
  } else {
    PAGODA_RETURN_IF_ERROR(add(out, mat("attn_q", i64(c.num_heads) * c.head_dim, h, layers)));
    PAGODA_RETURN_IF_ERROR(add(out, mat("attn_k", i64(c.num_kv_heads) * c.head_dim, h, layers)));
    PAGODA_RETURN_IF_ERROR(add(out, mat("attn_v", i64(c.num_kv_heads) * c.value_dim(), h, layers)));
    PAGODA_RETURN_IF_ERROR(
        add(out, mat("attn_output", h, i64(c.num_heads) * c.value_dim(), layers)));
  }
  int64_t moe_layers = 0;
  for (int32_t i = 0; i < c.num_layers; ++i)
    moe_layers += c.layer_has_experts(i) ? 1 : 0;
  const int64_t dense_layers = layers - moe_layers;
  if (dense_layers > 0) {
    for (const char* role : {"ffn_gate", "ffn_up"})
      PAGODA_RETURN_IF_ERROR(add(out, mat(role, c.ffn_dim, h, dense_layers)));
    PAGODA_RETURN_IF_ERROR(add(out, mat("ffn_down", h, c.ffn_dim, dense_layers)));
  }
  if (moe_layers > 0) {
    const int64_t e = c.num_experts, f = c.expert_ffn();
    auto experts = checked_mul<int64_t>(moe_layers, e);
    if (!experts) return invalid_argument("model: too many experts");
    for (const char* role : {"ffn_gate_exps", "ffn_up_exps", "ffn_down_exps"}) {
      const bool down = std::string_view(role) == "ffn_down_exps";
      WeightMatrix m = mat(role, down ? h : f, down ? f : h, *experts);
      m.num_experts = c.num_experts;
      m.num_experts_used = c.num_experts_used;
      PAGODA_RETURN_IF_ERROR(add(out, std::move(m)));
    }
    PAGODA_RETURN_IF_ERROR(add(out, mat("ffn_gate_inp", e, h, moe_layers)));
    const int64_t shared =
        c.shared_expert_ffn_dim > 0 ? c.shared_expert_ffn_dim : i64(c.expert_shared_count) * f;
    if (shared > 0) {
      for (const char* role : {"ffn_gate_shexp", "ffn_up_shexp"})
        PAGODA_RETURN_IF_ERROR(add(out, mat(role, shared, h, moe_layers)));
      PAGODA_RETURN_IF_ERROR(add(out, mat("ffn_down_shexp", h, shared, moe_layers)));
    }
  }
  WeightMatrix embd = mat("token_embd", c.vocab_size, h, 1);
  embd.embedding = !c.tied_embeddings;
  embd.output = c.tied_embeddings;
  PAGODA_RETURN_IF_ERROR(add(out, std::move(embd)));
  if (!c.tied_embeddings) {
    WeightMatrix output = mat("output", c.vocab_size, h, 1);
    output.output = true;
    PAGODA_RETURN_IF_ERROR(add(out, std::move(output)));
  }
  return out;
}

Result<PlanModel> load_plan_model(const std::string& model_or_config) {
  if (auto preset = find_preset(model_or_config)) return *preset;
  std::error_code ec;
  const fs::path path(model_or_config);
  if (fs::is_directory(path, ec)) return from_hf_config(model_or_config, "config.json");
  if (!fs::is_regular_file(path, ec)) {
    return not_found("-m: \"{}\" is neither a file, a directory nor a preset ({})",
                     model_or_config.substr(0, 256), preset_names());
  }
  if (path.extension() == ".json") {
    return from_hf_config(path.parent_path().empty() ? "." : path.parent_path().string(),
                          path.filename().string());
  }
  return from_gguf(model_or_config);
}

}  // namespace pagoda::planner
