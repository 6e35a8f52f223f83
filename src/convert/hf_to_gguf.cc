#include "convert/hf_to_gguf.h"

#include <omp.h>

#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <map>
#include <string_view>

#include "kernels/quant.h"
#include "tensor/float16.h"

namespace pagoda::convert {
namespace {

using format::GgufWriteValue;
using loader::HfCheckpoint;
using loader::HfTensor;
using loader::HfTokenizerFiles;
using model::ModelConfig;
using tensor::DType;

// Elements converted per chunk handed to the writer.
constexpr uint64_t kChunkElements = uint64_t{1} << 20;

// One output tensor: the HF tensors it is made of (one, or one per expert, stacked along the
// slowest dim) and how its rows are ordered.
struct OutTensor {
  std::string name;
  std::vector<const HfTensor*> parts;  // all with the same dims and dtype
  int32_t n_dims = 0;
  uint64_t dims[4] = {1, 1, 1, 1};  // ggml order, experts last when stacked
  int32_t permute_heads = 0;        // > 0: llama q/k rows permuted over this many heads
  int32_t layer = -1;
};

int64_t rows_of(const OutTensor& t) {
  int64_t rows = 1;
  for (int32_t i = 1; i < t.n_dims; ++i)
    rows *= static_cast<int64_t>(t.dims[i]);
  return rows;
}

// The part holding output row `r`, and the row within it.
std::pair<const HfTensor*, int64_t> source_row(const OutTensor& t, int64_t r) {
  const int64_t rows_per_part = rows_of(t) / static_cast<int64_t>(t.parts.size());
  const HfTensor* part = t.parts[static_cast<size_t>(r / rows_per_part)];
  int64_t row = r % rows_per_part;
  if (t.permute_heads > 0) row = gguf_qk_source_row(row, rows_per_part, t.permute_heads);
  return {part, row};
}

// True if a part's rows are not its values alone: a repacked act-order (input order) or
// asymmetric (zero term) GPTQ/AWQ matrix, dequantised with kernels::dequantize_weight_row.
bool needs_weight_rows(const OutTensor& t) {
  return std::any_of(t.parts.begin(), t.parts.end(), [](const HfTensor* p) {
    return p->input_order != nullptr || p->zero_term != nullptr;
  });
}

kernels::WeightView weight_view(const HfTensor& t, uint64_t row_bytes) {
  kernels::WeightView w;
  w.dtype = t.dtype;
  w.rows = t.dims[1];
  w.cols = t.dims[0];
  w.row_bytes = static_cast<size_t>(row_bytes);
  w.data = t.data;
  w.input_order = t.input_order;
  w.zero_term = t.zero_term;
  w.zero_group = t.zero_group;
  w.zero_stride = t.dims[1];
  return w;
}

struct SharedProgress {
  QuantizeProgressFn callback;
  size_t num_tensors = 0;
  uint64_t in_bytes_total = 0;
  uint64_t in_bytes_done = 0;

  void advance(size_t index, std::string_view name, uint64_t bytes) {
    in_bytes_done += bytes;
    if (callback) callback({index, num_tensors, name, in_bytes_done, in_bytes_total});
  }
};

// Everything the writer's callbacks read: kept alive by them.
struct ConvertState {
  std::shared_ptr<const HfCheckpoint> checkpoint;
  std::vector<OutTensor> tensors;
  SharedProgress progress;
  int num_threads = 1;
};

Status write_tensor(const ConvertState& state, const OutTensor& t, DType out_type, size_t index,
                    SharedProgress& progress, const format::GgufWriter::ByteSink& sink) {
  const DType in_type = t.parts.front()->dtype;
  const uint64_t nx = t.dims[0];
  const int64_t rows = rows_of(t);
  const uint64_t in_row = *tensor::row_size_bytes(in_type, nx);  // checked when planning
  const uint64_t out_row = *tensor::row_size_bytes(out_type, nx);
  const bool copy = in_type == out_type && !needs_weight_rows(t);
  const int64_t rows_per_chunk = std::max<int64_t>(1, static_cast<int64_t>(kChunkElements / nx));
  std::vector<uint8_t> out(static_cast<size_t>(std::min(rows, rows_per_chunk)) * out_row);
  for (int64_t first = 0; first < rows; first += rows_per_chunk) {
    const int64_t count = std::min(rows_per_chunk, rows - first);
    std::atomic<int64_t> bad_row{-1};
    uint8_t* dst = out.data();
#pragma omp parallel num_threads(state.num_threads)
    {
      std::vector<float> row(copy ? 0 : static_cast<size_t>(nx));
      std::vector<float> scratch(copy ? 0 : static_cast<size_t>(nx));
#pragma omp for schedule(static)
      for (int64_t r = 0; r < count; ++r) {
        const auto [part, part_row] = source_row(t, first + r);
        const uint8_t* src = part->data + static_cast<uint64_t>(part_row) * in_row;
        uint8_t* out_ptr = dst + static_cast<uint64_t>(r) * out_row;
        if (copy) {
          std::memcpy(out_ptr, src, in_row);
          continue;
        }
        if (part->input_order != nullptr || part->zero_term != nullptr) {
          kernels::dequantize_weight_row(weight_view(*part, in_row), part_row, row.data(),
                                         scratch.data());
        } else {
          kernels::dequantize_row(in_type, src, row.data(), static_cast<int64_t>(nx));
        }
        bool finite = true;
        for (float v : row)
          finite &= std::isfinite(v);
        if (!finite) {
          int64_t expected = -1;
          bad_row.compare_exchange_strong(expected, first + r);
          continue;
        }
        kernels::quantize_row(out_type, row.data(), out_ptr, static_cast<int64_t>(nx));
      }
    }
    if (bad_row.load() >= 0) {
      return invalid_argument("tensor '{}' row {} holds a non-finite value", t.name,
                              bad_row.load());
    }
    PAGODA_RETURN_IF_ERROR(
        sink(std::span<const uint8_t>(dst, static_cast<size_t>(count) * out_row)));
    progress.advance(index, t.name, static_cast<uint64_t>(count) * in_row);
  }
  return Status();
}

// "blk.3.ffn_gate.1.weight" -> "blk.3.ffn_gate_exps.weight".
std::string stacked_name(const HfTensor& t) {
  const std::string& n = t.gguf_name;
  const std::string prefix = "blk." + std::to_string(t.layer) + ".";
  const size_t base_end = n.find('.', prefix.size());
  return n.substr(0, base_end) + "_exps.weight";
}

// Output tensors in llama.cpp's order: globals first, then by layer, by name within a layer.
Result<std::vector<OutTensor>> plan_outputs(const HfCheckpoint& ckpt) {
  const ModelConfig& c = ckpt.config();
  const bool permute = c.arch == "llama";
  std::map<std::string, OutTensor> stacked;
  std::vector<OutTensor> out;
  for (const HfTensor& t : ckpt.tensors()) {
    if (t.expert >= 0) {
      OutTensor& s = stacked[stacked_name(t)];
      if (s.parts.empty()) {
        s.name = stacked_name(t);
        s.layer = t.layer;
        s.parts.assign(static_cast<size_t>(c.num_experts), nullptr);
      }
      if (t.expert >= c.num_experts) {
        return invalid_argument("tensor \"{}\": expert {} >= num_local_experts {}", t.hf_name,
                                t.expert, c.num_experts);
      }
      s.parts[static_cast<size_t>(t.expert)] = &t;
      continue;
    }
    OutTensor o;
    o.name = t.gguf_name;
    o.parts = {&t};
    o.n_dims = t.n_dims;
    for (int32_t i = 0; i < 4; ++i)
      o.dims[i] = static_cast<uint64_t>(t.dims[i]);
    o.layer = t.layer;
    if (t.gguf_name.ends_with(".ffn_gate_inp_shexp.weight") && t.n_dims == 2 && t.dims[1] == 1) {
      o.n_dims = 1;  // HF's [1, hidden] Linear; GGUF stores the vector
    }
    if (permute && t.n_dims == 2) {
      if (t.gguf_name.ends_with(".attn_q.weight")) o.permute_heads = c.num_heads;
      if (t.gguf_name.ends_with(".attn_k.weight")) o.permute_heads = c.num_kv_heads;
    }
    if (o.permute_heads > 0) {
      const int64_t rows = t.dims[1];
      if (rows % o.permute_heads != 0 || (rows / o.permute_heads) % 2 != 0) {
        return invalid_argument("tensor \"{}\": {} rows do not split into {} heads of even size",
                                t.hf_name, rows, o.permute_heads);
      }
    }
    out.push_back(std::move(o));
  }
  for (auto& [name, s] : stacked) {
    for (size_t e = 0; e < s.parts.size(); ++e) {
      if (s.parts[e] == nullptr) return invalid_argument("{}: expert {} is missing", name, e);
      const HfTensor& p = *s.parts[e];
      const HfTensor& f = *s.parts[0];
      if (p.dtype != f.dtype || p.n_dims != 2 || p.dims[0] != f.dims[0] || p.dims[1] != f.dims[1]) {
        return invalid_argument("tensor \"{}\": its dtype or shape differs from expert 0's",
                                p.hf_name);
      }
    }
    const HfTensor& f = *s.parts[0];
    s.n_dims = 3;
    s.dims[0] = static_cast<uint64_t>(f.dims[0]);
    s.dims[1] = static_cast<uint64_t>(f.dims[1]);
    s.dims[2] = s.parts.size();
    out.push_back(std::move(s));
  }
  auto rank = [](const OutTensor& t) {
    if (t.name == "token_embd.weight") return 0;
    if (t.name.starts_with("rope_f")) return 1;  // rope_freqs, rope_factors_long/short
    if (t.layer >= 0) return 2;
    if (t.name == "output_norm.weight") return 3;
    return 4;
  };
  std::stable_sort(out.begin(), out.end(), [&](const OutTensor& a, const OutTensor& b) {
    if (rank(a) != rank(b)) return rank(a) < rank(b);
    if (a.layer != b.layer) return a.layer < b.layer;
    return a.name < b.name;
  });
  return out;
}

auto u32(int32_t v) {
  return GgufWriteValue::u32(static_cast<uint32_t>(v));
}

// The keys of the families beyond llama, as llama.cpp's converter writes them.
void set_family_metadata(format::GgufWriter& w, const ModelConfig& c) {
  const std::string a = c.arch + ".";
  if (c.attn_softcap > 0) w.set(a + "attn_logit_softcapping", GgufWriteValue::f32(c.attn_softcap));
  if (c.final_softcap > 0) {
    w.set(a + "final_logit_softcapping", GgufWriteValue::f32(c.final_softcap));
  }
  if (c.num_experts > 0 && c.expert_ffn_dim > 0) {
    w.set(a + "expert_feed_forward_length", u32(c.expert_ffn_dim));
  }
  if (c.arch == "qwen2moe") {
    w.set(a + "expert_shared_feed_forward_length", u32(c.shared_expert_ffn_dim));
  }
  if (c.mla()) {
    if (c.q_lora_rank > 0) w.set(a + "attention.q_lora_rank", u32(c.q_lora_rank));
    w.set(a + "attention.kv_lora_rank", u32(c.kv_lora_rank));
    w.set(a + "leading_dense_block_count", u32(c.leading_dense_layers));
    if (c.num_experts > 0) {
      w.set(a + "expert_shared_count", u32(c.expert_shared_count));
      w.set(a + "expert_weights_scale", GgufWriteValue::f32(c.moe_weights_scale));
      w.set(a + "expert_weights_norm", GgufWriteValue::boolean(c.moe_norm_weights));
      w.set(a + "expert_gating_func", u32(c.expert_gating > 0 ? c.expert_gating : 1));
      if (c.expert_groups > 1) {  // DeepSeek-V3's grouped top-k
        w.set(a + "expert_group_count", u32(c.expert_groups));
        w.set(a + "expert_group_used_count", u32(c.expert_groups_used));
      }
    }
  }
}

// The query scale llama.cpp takes for gemma2 / gemma3 files (they carry none): 1 / sqrt(head_dim),
// or 1 / sqrt(hidden / heads) for Gemma-2 27B (46 layers) and Gemma-3 27B (62 layers).
float gemma_gguf_attn_scale(const ModelConfig& c) {
  const int32_t big = c.arch == "gemma2" ? 46 : 62;
  const int32_t scalar = c.num_layers == big && c.hidden_dim % c.num_heads == 0
                             ? c.hidden_dim / c.num_heads
                             : c.head_dim;
  return 1.0f / std::sqrt(static_cast<float>(scalar));
}

// What a GGUF file of `c.arch` cannot say, refused by name rather than written wrong: Gemma's
// query scale; Gemma 3's layer pattern (llama.cpp fixes 1 global in 6), local rope base (10000)
// and soft-caps (its gemma3 graph has none); Qwen-MoE dense layers among MoE ones, and a weight
// normalisation other than the architecture's (qwen2moe never, qwen3moe always).
Status check_representable(const ModelConfig& c) {
  if (c.arch == "gemma2" || c.arch == "gemma3") {
    const float gguf_scale = gemma_gguf_attn_scale(c);
    if (std::fabs(c.attn_scale - gguf_scale) > 1e-6f * gguf_scale) {
      return unimplemented(
          "query_pre_attn_scalar gives a query scale {} that a {} GGUF file cannot state "
          "(llama.cpp uses {})",
          c.attn_scale, c.arch, gguf_scale);
    }
  }
  if (c.arch == "gemma3") {
    if (c.sliding_pattern != 6) {
      return unimplemented(
          "sliding_window_pattern {} cannot be stated in a gemma3 GGUF file (llama.cpp uses 6)",
          c.sliding_pattern);
    }
    if (c.rope_local_theta != 10000.0f) {
      return unimplemented(
          "rope_local_base_freq {} cannot be stated in a gemma3 GGUF file (llama.cpp uses 10000)",
          c.rope_local_theta);
    }
    if (c.attn_softcap > 0 || c.final_softcap > 0) {
      return unimplemented(
          "attn_logit_softcapping / final_logit_softcapping cannot be stated in a gemma3 GGUF "
          "file (llama.cpp's gemma3 has no soft-caps)");
    }
  }
  if (c.arch == "qwen2moe" || c.arch == "qwen3moe") {
    if (!c.dense_layers.empty()) {
      return unimplemented(
          "mlp_only_layers / decoder_sparse_step (dense layer {} among MoE ones) cannot be stated "
          "in a {} GGUF file",
          c.dense_layers.front(), c.arch);
    }
    const bool gguf_norm = c.arch == "qwen3moe";
    if (c.moe_norm_weights != gguf_norm) {
      return unimplemented("norm_topk_prob {} cannot be stated in a {} GGUF file ({} is)",
                           c.moe_norm_weights, c.arch, gguf_norm);
    }
  }
  return Status();
}

void set_model_metadata(format::GgufWriter& w, const HfCheckpoint& ckpt, const std::string& name,
                        FileType file_type) {
  const ModelConfig& c = ckpt.config();
  const std::string a = c.arch + ".";
  w.set("general.architecture", GgufWriteValue::string(c.arch));
  w.set("general.name", GgufWriteValue::string(name));
  w.set(a + "context_length", GgufWriteValue::u32(static_cast<uint32_t>(c.context_length)));
  w.set(a + "embedding_length", GgufWriteValue::u32(static_cast<uint32_t>(c.hidden_dim)));
  w.set(a + "block_count", GgufWriteValue::u32(static_cast<uint32_t>(c.num_layers)));
  w.set(a + "feed_forward_length", GgufWriteValue::u32(static_cast<uint32_t>(c.ffn_dim)));
  w.set(a + "attention.head_count", GgufWriteValue::u32(static_cast<uint32_t>(c.num_heads)));
  w.set(a + "attention.head_count_kv", GgufWriteValue::u32(static_cast<uint32_t>(c.num_kv_heads)));
  if (c.hidden_dim % c.num_heads != 0 || c.head_dim != c.hidden_dim / c.num_heads ||
      c.value_dim() != c.head_dim) {
    w.set(a + "attention.key_length", GgufWriteValue::u32(static_cast<uint32_t>(c.head_dim)));
    w.set(a + "attention.value_length", GgufWriteValue::u32(static_cast<uint32_t>(c.value_dim())));
  }
  if (c.encoder) {  // BERT: no rope; LayerNorm epsilon, bidirectional, its pooling
    w.set(a + "attention.layer_norm_epsilon", GgufWriteValue::f32(c.layer_norm_eps));
    w.set(a + "attention.causal", GgufWriteValue::boolean(false));
    w.set(a + "pooling_type", u32(c.pooling_type));
    w.set(a + "vocab_size", u32(c.vocab_size));
    w.set("general.file_type", GgufWriteValue::u32(static_cast<uint32_t>(file_type)));
    w.set("general.quantization_version", GgufWriteValue::u32(2));
    return;
  }
  w.set(a + "rope.dimension_count", GgufWriteValue::u32(static_cast<uint32_t>(c.rope_dims)));
  w.set(a + "rope.freq_base", GgufWriteValue::f32(c.rope_theta));
  if (ckpt.rope_linear_factor() != 1.0) {
    w.set(a + "rope.scaling.type", GgufWriteValue::string("linear"));
    w.set(a + "rope.scaling.factor",
          GgufWriteValue::f32(static_cast<float>(ckpt.rope_linear_factor())));
  }
  if (c.rope_ext_factor != 0.0f) {  // yarn, as llama.cpp's converter writes it
    w.set(a + "rope.scaling.type", GgufWriteValue::string("yarn"));
    w.set(a + "rope.scaling.factor", GgufWriteValue::f32(1.0f / c.rope_freq_scale));
    w.set(a + "rope.scaling.original_context_length",
          GgufWriteValue::u32(static_cast<uint32_t>(c.rope_orig_ctx)));
    if (c.rope_attn_factor != 1.0f) {
      w.set(a + "rope.scaling.attn_factor", GgufWriteValue::f32(c.rope_attn_factor));
    }
    if (c.rope_yarn_beta_fast != 32.0f || c.rope_yarn_beta_slow != 1.0f) {
      w.set(a + "rope.scaling.yarn_beta_fast", GgufWriteValue::f32(c.rope_yarn_beta_fast));
      w.set(a + "rope.scaling.yarn_beta_slow", GgufWriteValue::f32(c.rope_yarn_beta_slow));
    }
    if (c.rope_yarn_log_mul != 0.0f) {  // DeepSeek: 0.1 x mscale_all_dim
      w.set(a + "rope.scaling.yarn_log_multiplier", GgufWriteValue::f32(c.rope_yarn_log_mul));
    }
  }
  if (ckpt.find("rope_factors_long.weight") != nullptr) {  // LongRoPE, as llama.cpp writes it
    w.set(a + "rope.scaling.attn_factor", GgufWriteValue::f32(c.rope_attn_factor));
    w.set(a + "rope.scaling.original_context_length", u32(c.rope_orig_ctx));
  }
  w.set(a + "attention.layer_norm_rms_epsilon", GgufWriteValue::f32(c.rms_norm_eps));
  if (c.sliding_window > 0) {  // set only where applied: phi3, gemma, Mistral/Qwen2 (llama/qwen2)
    w.set(a + "attention.sliding_window",
          GgufWriteValue::u32(static_cast<uint32_t>(c.sliding_window)));
  }
  w.set(a + "vocab_size", GgufWriteValue::u32(static_cast<uint32_t>(c.vocab_size)));
  if (c.num_experts > 0) {
    w.set(a + "expert_count", GgufWriteValue::u32(static_cast<uint32_t>(c.num_experts)));
    w.set(a + "expert_used_count", GgufWriteValue::u32(static_cast<uint32_t>(c.num_experts_used)));
  }
  set_family_metadata(w, c);
  w.set("general.file_type", GgufWriteValue::u32(static_cast<uint32_t>(file_type)));
  w.set("general.quantization_version", GgufWriteValue::u32(2));
}

// BERT's WordPiece as llama.cpp's converter writes it: model "bert", tokens in "phantom space"
// form (a word's first piece prefixed with U+2581, a "##" continuation without its prefix,
// [CLS]-style specials as they are), the cls / separator ids.
Status set_wordpiece_metadata(format::GgufWriter& w, const tokenizer::Vocab& v,
                              std::vector<std::string> tokens, const std::vector<int32_t>& types) {
  for (size_t i = 0; i < v.tokens.size(); ++i) {
    std::string& t = tokens[i];
    const bool special = t.size() >= 2 && t.front() == '[' && t.back() == ']';
    if (special) continue;
    if (t.starts_with("##")) {
      t.erase(0, 2);
    } else {
      t.insert(0, "\u2581");
    }
  }
  w.set("tokenizer.ggml.model", GgufWriteValue::string("bert"));
  w.set("tokenizer.ggml.tokens",
        GgufWriteValue::string_array(std::span<const std::string>(tokens)));
  w.set("tokenizer.ggml.token_type", GgufWriteValue::array(std::span<const int32_t>(types)));
  auto set_id = [&w](const char* key, const std::optional<tokenizer::TokenId>& id) {
    if (id) w.set(key, GgufWriteValue::u32(static_cast<uint32_t>(*id)));
  };
  set_id("tokenizer.ggml.cls_token_id", v.bos_id);
  set_id("tokenizer.ggml.seperator_token_id", v.sep_id);
  set_id("tokenizer.ggml.unknown_token_id", v.unk_id);
  set_id("tokenizer.ggml.padding_token_id", v.pad_id);
  return Status();
}

Status set_tokenizer_metadata(format::GgufWriter& w, const HfTokenizerFiles& files,
                              int32_t model_vocab) {
  const tokenizer::Vocab& v = files.vocab;
  if (v.tokens.size() > static_cast<size_t>(model_vocab)) {
    return invalid_argument("the tokenizer has {} tokens, more than the model's vocab_size {}",
                            v.tokens.size(), model_vocab);
  }
  const size_t n = static_cast<size_t>(model_vocab);
  std::vector<std::string> tokens = v.tokens;
  std::vector<int32_t> types(n, static_cast<int32_t>(tokenizer::TokenType::kNormal));
  for (size_t i = 0; i < v.token_types.size(); ++i)
    types[i] = static_cast<int32_t>(v.token_types[i]);
  for (size_t i = tokens.size(); i < n; ++i) {
    tokens.push_back("[PAD" + std::to_string(i) + "]");
    types[i] = static_cast<int32_t>(tokenizer::TokenType::kUnused);
  }
  const bool spm = v.kind == tokenizer::VocabKind::kSpm;
  if (v.kind == tokenizer::VocabKind::kWordPiece)
    return set_wordpiece_metadata(w, v, tokens, types);
  w.set("tokenizer.ggml.model", GgufWriteValue::string(spm ? "llama" : "gpt2"));
  w.set("tokenizer.ggml.pre", GgufWriteValue::string(v.pre));
  w.set("tokenizer.ggml.tokens",
        GgufWriteValue::string_array(std::span<const std::string>(tokens)));
  if (!v.scores.empty() || spm) {
    std::vector<float> scores(n, 0.0f);
    for (size_t i = 0; i < v.scores.size(); ++i)
      scores[i] = v.scores[i];
    w.set("tokenizer.ggml.scores", GgufWriteValue::array(std::span<const float>(scores)));
  }
  w.set("tokenizer.ggml.token_type", GgufWriteValue::array(std::span<const int32_t>(types)));
  if (!spm) {
    w.set("tokenizer.ggml.merges",
          GgufWriteValue::string_array(std::span<const std::string>(v.merges)));
  }
  auto set_id = [&w](const char* key, const std::optional<tokenizer::TokenId>& id) {
    if (id) w.set(key, GgufWriteValue::u32(static_cast<uint32_t>(*id)));
  };
  set_id("tokenizer.ggml.bos_token_id", v.bos_id);
  set_id("tokenizer.ggml.eos_token_id", v.eos_id);
  set_id("tokenizer.ggml.unknown_token_id", v.unk_id);
  set_id("tokenizer.ggml.padding_token_id", v.pad_id);
  set_id("tokenizer.ggml.seperator_token_id", v.sep_id);
  set_id("tokenizer.ggml.eot_token_id", v.eot_id);
  set_id("tokenizer.ggml.eom_token_id", v.eom_id);
  w.set("tokenizer.ggml.add_bos_token", GgufWriteValue::boolean(v.add_bos));
  w.set("tokenizer.ggml.add_eos_token", GgufWriteValue::boolean(v.add_eos));
  if (spm) w.set("tokenizer.ggml.add_space_prefix", GgufWriteValue::boolean(v.add_space_prefix));
  if (!files.chat_template.empty()) {
    w.set("tokenizer.chat_template", GgufWriteValue::string(files.chat_template));
  }
  return Status();
}

}  // namespace

int64_t gguf_qk_source_row(int64_t gguf_row, int64_t rows, int32_t n_head) {
  const int64_t head_rows = rows / n_head;
  const int64_t half = head_rows / 2;
  const int64_t h = gguf_row / head_rows;
  const int64_t within = gguf_row % head_rows;  // = 2 * i + s
  return h * head_rows + (within % 2) * half + within / 2;
}

Result<QuantizedModel> build_gguf_from_hf(std::shared_ptr<const HfCheckpoint> checkpoint,
                                          const HfTokenizerFiles& tokenizer,
                                          const ConvertOptions& options,
                                          QuantizeProgressFn progress) {
  auto state = std::make_shared<ConvertState>();
  state->checkpoint = checkpoint;
  state->num_threads = options.num_threads > 0 ? options.num_threads : omp_get_max_threads();
  state->progress.callback = std::move(progress);
  PAGODA_ASSIGN_OR_RETURN(state->tensors, plan_outputs(*checkpoint));
  const ModelConfig& c = checkpoint->config();
  PAGODA_RETURN_IF_ERROR(check_representable(c));

  MixModel mix;
  mix.arch = c.arch;
  mix.num_layers = c.num_layers;
  mix.num_heads = c.num_heads;
  mix.num_kv_heads = c.num_kv_heads;
  mix.num_experts = c.num_experts;
  std::vector<MixTensor> descs;
  for (const OutTensor& t : state->tensors) {
    MixTensor d;
    d.name = t.name;
    d.n_dims = static_cast<uint32_t>(t.n_dims);
    std::copy(t.dims, t.dims + 4, d.dims);
    // An act-order or zero-term part is planned as the F32 it dequantises to (its blocks alone are
    // not its values in file order, so they cannot be copied).
    d.dtype = needs_weight_rows(t) ? DType::kF32 : t.parts.front()->dtype;
    descs.push_back(d);
  }
  QuantizedModel out;
  PAGODA_ASSIGN_OR_RETURN(out.plans, plan_tensor_types(mix, options.file_type, descs));

  std::string name = options.name;
  if (name.empty()) {
    name = std::filesystem::path(checkpoint->dir()).lexically_normal().filename().string();
    if (name.empty()) {
      name = std::filesystem::path(checkpoint->dir())
                 .lexically_normal()
                 .parent_path()
                 .filename()
                 .string();
    }
  }
  set_model_metadata(out.writer, *checkpoint, name, options.file_type);
  PAGODA_RETURN_IF_ERROR(set_tokenizer_metadata(out.writer, tokenizer, c.vocab_size));

  state->progress.num_tensors = state->tensors.size();
  for (size_t i = 0; i < state->tensors.size(); ++i) {
    const OutTensor& t = state->tensors[i];
    TensorPlan& plan = out.plans[i];
    const DType in_type = t.parts.front()->dtype;
    // Tensors llama.cpp never quantises (norms, rope factors, the MoE router) are written as F32,
    // as its converter does; the others get the mix's type.
    if (!is_quantizable(descs[i])) plan.dtype = DType::kF32;
    plan.quantize = plan.dtype != in_type || needs_weight_rows(t);
    if (!kernels::can_dequantize(in_type) || !kernels::can_quantize(plan.dtype)) {
      return unimplemented("tensor '{}': cannot convert {} to {}", t.name,
                           tensor::dtype_name(in_type), tensor::dtype_name(plan.dtype));
    }
    auto in_row = tensor::row_size_bytes(in_type, t.dims[0]);
    auto out_row = tensor::row_size_bytes(plan.dtype, t.dims[0]);
    if (!in_row.ok() || !out_row.ok()) {
      return internal_error("tensor '{}': no whole {} rows of {}", t.name,
                            tensor::dtype_name(plan.dtype), t.dims[0]);
    }
    const uint64_t rows = static_cast<uint64_t>(rows_of(t));
    state->progress.in_bytes_total += *in_row * rows;
    out.in_bytes += *in_row * rows;
    out.out_bytes += *out_row * rows;
    const DType type = plan.dtype;
    out.writer.add_tensor(t.name, type, std::vector<uint64_t>(t.dims, t.dims + t.n_dims),
                          [state, i, type](const format::GgufWriter::ByteSink& sink) {
                            return write_tensor(*state, state->tensors[i], type, i, state->progress,
                                                sink);
                          });
  }
  return out;
}

}  // namespace pagoda::convert
