#include "convert/quantize/quant_mix.h"

#include <algorithm>
#include <array>
#include <cctype>
#include <charconv>
#include <numeric>

namespace pagoda::convert {
namespace {

using tensor::DType;

struct FileTypeEntry {
  FileType type;
  std::string_view name;
  DType base;
};

constexpr std::array<FileTypeEntry, 17> kFileTypes = {{
    {FileType::kQ4_0, "Q4_0", DType::kQ4_0},
    {FileType::kQ4_1, "Q4_1", DType::kQ4_1},
    {FileType::kQ5_0, "Q5_0", DType::kQ5_0},
    {FileType::kQ5_1, "Q5_1", DType::kQ5_1},
    {FileType::kQ8_0, "Q8_0", DType::kQ8_0},
    {FileType::kQ2_K, "Q2_K", DType::kQ2_K},
    {FileType::kQ3_K_S, "Q3_K_S", DType::kQ3_K},
    {FileType::kQ3_K_M, "Q3_K_M", DType::kQ3_K},
    {FileType::kQ3_K_L, "Q3_K_L", DType::kQ3_K},
    {FileType::kQ4_K_S, "Q4_K_S", DType::kQ4_K},
    {FileType::kQ4_K_M, "Q4_K_M", DType::kQ4_K},
    {FileType::kQ5_K_S, "Q5_K_S", DType::kQ5_K},
    {FileType::kQ5_K_M, "Q5_K_M", DType::kQ5_K},
    {FileType::kQ6_K, "Q6_K", DType::kQ6_K},
    {FileType::kF16, "F16", DType::kF16},
    {FileType::kBF16, "BF16", DType::kBF16},
    {FileType::kAllF32, "F32", DType::kF32},
}};

bool iequals(std::string_view a, std::string_view b) {
  if (a.size() != b.size()) return false;
  for (size_t i = 0; i < a.size(); ++i) {
    if (std::toupper(static_cast<unsigned char>(a[i])) !=
        std::toupper(static_cast<unsigned char>(b[i]))) {
      return false;
    }
  }
  return true;
}

bool contains(std::string_view s, std::string_view part) {
  return s.find(part) != std::string_view::npos;
}

// The layer number of "blk.N.<rest>", or -1 (the same rule as llama.cpp's tensor ordering).
int64_t layer_of(std::string_view name) {
  constexpr std::string_view kPrefix = "blk.";
  if (!name.starts_with(kPrefix)) return -1;
  name.remove_prefix(kPrefix.size());
  int64_t layer = -1;
  const auto [end, ec] = std::from_chars(name.data(), name.data() + name.size(), layer);
  if (ec != std::errc() || end == name.data() + name.size() || *end != '.') return -1;
  return layer;
}

// First and last eighth of the layers, and every third layer in between.
bool use_more_bits(int64_t i_layer, int64_t n_layers) {
  return i_layer < n_layers / 8 || i_layer >= 7 * n_layers / 8 || (i_layer - n_layers / 8) % 3 == 2;
}

uint32_t block_of(DType t) {
  return tensor::dtype_info(t).block_size;
}

struct MixState {
  const MixModel& model;
  FileType ftype;
  bool has_output = false;
  int64_t n_attention_wv = 0;
  int64_t i_attention_wv = 0, i_ffn_down = 0, i_ffn_gate = 0, i_ffn_up = 0;

  bool is(FileType t) const { return ftype == t; }
  bool falcon() const { return model.arch == "falcon"; }
  int64_t gqa() const {
    return model.num_kv_heads > 0 && model.num_heads > 0 ? model.num_heads / model.num_kv_heads : 1;
  }
  bool eight_experts() const { return model.num_experts == 8; }
  // llama.cpp's LLM_TYPE_70B: 80 llama layers with grouped-query attention.
  bool is_70b() const {
    return model.arch == "llama" && model.num_layers == 80 && model.num_heads != model.num_kv_heads;
  }

  // (layer, n_layers) for the ffn rules: the counter for dense models, the name for MoE (whose
  // expert tensors are not in layer order in every file).
  Result<std::pair<int64_t, int64_t>> layer_info(int64_t counter, std::string_view name) const {
    const int64_t n = model.num_layers;
    if (model.num_experts > 1) {
      const int64_t layer = layer_of(name);
      if (layer < 0 || layer >= n) {
        return invalid_argument("tensor '{}': cannot tell its layer (block_count {})", name, n);
      }
      return std::make_pair(layer, n);
    }
    return std::make_pair(counter, n);
  }

  Result<DType> choose(const MixTensor& t, DType type) {
    const std::string_view name = t.name;
    const uint64_t nx = t.dims[0];
    if (name == "output.weight" || (!has_output && name == "token_embd.weight")) {
      if (falcon() || nx % block_of(type) != 0) {
        type = DType::kQ8_0;
      } else if (type != DType::kQ8_0) {
        type = DType::kQ6_K;
      }
    } else if (name == "token_embd.weight") {
      // The base type (only the IQ mixes change it).
    } else if (contains(name, "attn_v.weight")) {
      if (is(FileType::kQ2_K)) {
        type = gqa() >= 4 ? DType::kQ4_K : DType::kQ3_K;
      } else if (is(FileType::kQ3_K_M)) {
        type = i_attention_wv < 2 ? DType::kQ5_K : DType::kQ4_K;
      } else if (is(FileType::kQ3_K_L)) {
        type = DType::kQ5_K;
      } else if ((is(FileType::kQ4_K_M) || is(FileType::kQ5_K_M)) &&
                 use_more_bits(i_attention_wv, n_attention_wv)) {
        type = DType::kQ6_K;
      } else if (is(FileType::kQ4_K_S) && i_attention_wv < 4) {
        type = DType::kQ5_K;
      }
      // attn_v is 8x smaller than attn_q in the 70B model: more bits cost little there.
      if (is_70b() && (type == DType::kQ3_K || type == DType::kQ4_K)) type = DType::kQ5_K;
      if (eight_experts()) type = DType::kQ8_0;
      ++i_attention_wv;
    } else if (contains(name, "attn_k.weight")) {
      if (eight_experts()) type = DType::kQ8_0;
    } else if (contains(name, "attn_q.weight")) {
      // Only the IQ3 mixes change attn_q.
    } else if (contains(name, "ffn_down")) {
      PAGODA_ASSIGN_OR_RETURN(auto info, layer_info(i_ffn_down, name));
      const auto [i, n] = info;
      const bool more = use_more_bits(i, n);
      if (is(FileType::kQ2_K)) {
        type = DType::kQ3_K;
      } else if (is(FileType::kQ3_K_M)) {
        type = i < n / 16 ? DType::kQ5_K : (!falcon() || more) ? DType::kQ4_K : DType::kQ3_K;
      } else if (is(FileType::kQ3_K_L)) {
        type = falcon() ? DType::kQ4_K : DType::kQ5_K;
      } else if (is(FileType::kQ4_K_M)) {
        if (falcon()) {
          type = i < n / 16 ? DType::kQ6_K : more ? DType::kQ5_K : DType::kQ4_K;
        } else if (more) {
          type = DType::kQ6_K;
        }
      } else if (is(FileType::kQ5_K_M) && more) {
        type = DType::kQ6_K;
      } else if (is(FileType::kQ4_K_S) && !falcon() && i < n / 8) {
        type = DType::kQ5_K;
      }
      ++i_ffn_down;
    } else if (contains(name, "attn_output.weight")) {
      if (!falcon()) {
        if (eight_experts()) {
          if (is(FileType::kQ2_K) || is(FileType::kQ3_K_S) || is(FileType::kQ3_K_M) ||
              is(FileType::kQ4_K_S) || is(FileType::kQ4_K_M)) {
            type = DType::kQ5_K;
          }
        } else if (is(FileType::kQ2_K)) {
          type = DType::kQ3_K;
        } else if (is(FileType::kQ3_K_M)) {
          type = DType::kQ4_K;
        } else if (is(FileType::kQ3_K_L)) {
          type = DType::kQ5_K;
        }
      } else if (is(FileType::kQ3_K_L)) {
        type = DType::kQ4_K;
      }
    } else if (contains(name, "attn_qkv.weight")) {
      if (is(FileType::kQ3_K_M) || is(FileType::kQ3_K_L)) {
        type = DType::kQ4_K;
      } else if (is(FileType::kQ4_K_M)) {
        type = DType::kQ5_K;
      } else if (is(FileType::kQ5_K_M)) {
        type = DType::kQ6_K;
      }
    } else if (contains(name, "ffn_gate")) {
      PAGODA_RETURN_IF_ERROR(layer_info(i_ffn_gate, name).status());
      ++i_ffn_gate;  // only the IQ3_XS mix has a rule here
    } else if (contains(name, "ffn_up")) {
      PAGODA_RETURN_IF_ERROR(layer_info(i_ffn_up, name).status());
      ++i_ffn_up;
    }
    return type;
  }
};

DType fallback_for(DType type, uint64_t nx) {
  DType out;
  switch (type) {
    case DType::kQ2_K:
    case DType::kQ3_K:
      out = DType::kQ4_0;  // llama.cpp: IQ4_NL
      break;
    case DType::kQ4_K:
      out = DType::kQ5_0;
      break;
    case DType::kQ5_K:
      out = DType::kQ5_1;
      break;
    case DType::kQ6_K:
      out = DType::kQ8_0;
      break;
    default:
      out = DType::kF16;  // llama.cpp gives up here; a wider type keeps the model usable
      break;
  }
  if (nx % block_of(out) != 0) out = DType::kF16;
  return out;
}

}  // namespace

std::optional<FileType> file_type_from_name(std::string_view name) {
  for (const FileTypeEntry& e : kFileTypes) {
    if (iequals(e.name, name)) return e.type;
  }
  if (iequals(name, "Q3_K")) return FileType::kQ3_K_M;
  if (iequals(name, "Q4_K")) return FileType::kQ4_K_M;
  if (iequals(name, "Q5_K")) return FileType::kQ5_K_M;
  return std::nullopt;
}

std::string_view file_type_name(FileType type) {
  for (const FileTypeEntry& e : kFileTypes) {
    if (e.type == type) return e.name;
  }
  return "?";
}

std::string file_type_names() {
  std::string out;
  for (const FileTypeEntry& e : kFileTypes) {
    if (!out.empty()) out += ", ";
    out += e.name;
  }
  return out;
}

DType file_type_base(FileType type) {
  for (const FileTypeEntry& e : kFileTypes) {
    if (e.type == type) return e.base;
  }
  return DType::kF16;
}

bool is_quantizable(const MixTensor& t) {
  const std::string_view name = t.name;
  if (!name.ends_with("weight") || t.n_dims < 2) return false;
  if (contains(name, "_norm.weight") || contains(name, "ffn_gate_inp.weight")) return false;
  // Small special weights llama.cpp never quantises (BERT positions/token types, Mamba conv,
  // RWKV time-mix, T5 relative bias).
  for (std::string_view keep :
       {"position_embd.weight", "token_types.weight", "ssm_conv1d.weight", "time_mix_first.weight",
        "time_mix_w1.weight", "time_mix_w2.weight", "time_mix_decay_w1.weight",
        "time_mix_decay_w2.weight", "time_mix_lerp_fused.weight", "attn_rel_b.weight"}) {
    if (contains(name, keep)) return false;
  }
  return true;
}

Result<std::vector<TensorPlan>> plan_tensor_types(const MixModel& model, FileType type,
                                                  std::span<const MixTensor> tensors) {
  MixState state{model, type};
  for (const MixTensor& t : tensors) {
    if (contains(t.name, "attn_v.weight") || contains(t.name, "attn_qkv.weight") ||
        contains(t.name, "attn_kv_b.weight")) {
      ++state.n_attention_wv;
    } else if (t.name == "output.weight") {
      state.has_output = true;
    }
  }
  // llama.cpp visits tensors ordered by layer number (non-layer tensors first), then by name.
  std::vector<size_t> order(tensors.size());
  std::iota(order.begin(), order.end(), size_t{0});
  std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) {
    const int64_t la = layer_of(tensors[a].name), lb = layer_of(tensors[b].name);
    if (la != lb) return la < lb;
    return tensors[a].name < tensors[b].name;
  });

  const DType base = file_type_base(type);
  const bool base_quantized = tensor::dtype_info(base).is_quantized;
  std::vector<TensorPlan> plans(tensors.size());
  for (size_t idx : order) {
    const MixTensor& t = tensors[idx];
    TensorPlan& plan = plans[idx];
    plan.dtype = t.dtype;
    if (!is_quantizable(t)) continue;
    DType chosen = base;
    if (base_quantized) {
      PAGODA_ASSIGN_OR_RETURN(chosen, state.choose(t, base));
      if (t.dims[0] % block_of(chosen) != 0) {
        chosen = fallback_for(chosen, t.dims[0]);
        plan.fallback = true;
      }
    } else if (t.dims[0] % block_of(chosen) != 0) {
      chosen = DType::kF16;
      plan.fallback = true;
    }
    plan.dtype = chosen;
    plan.quantize = chosen != t.dtype;
  }
  return plans;
}

}  // namespace pagoda::convert
