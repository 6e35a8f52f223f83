// Semantic checks of well-known GGUF keys (see gguf_validate.h). Runs after the structural parse,
// so every value here is already bounds-checked; this only judges meaning.
#include "format/gguf_validate.h"

#include <fmt/format.h>

#include <string>
#include <vector>

#include "format/gguf_file.h"

namespace pagoda::format {
namespace {

std::string where(const GgufKv& kv) {
  return fmt::format("key '{}' (at offset {})", gguf_escape(kv.key, 120), kv.offset);
}

std::string describe(const GgufValue& v) {
  if (v.type == GgufType::kArray) return fmt::format("array of {}", gguf_type_name(v.elem_type));
  return std::string(gguf_type_name(v.type));
}

bool is_array_of(const GgufValue& v, GgufType elem) {
  return v.type == GgufType::kArray && v.elem_type == elem;
}

// ---- tokenizer ------------------------------------------------------------------------------

constexpr const char* kTokenIdKeys[] = {
    "tokenizer.ggml.bos_token_id",       "tokenizer.ggml.eos_token_id",
    "tokenizer.ggml.unknown_token_id",   "tokenizer.ggml.padding_token_id",
    "tokenizer.ggml.seperator_token_id",  // sic: the spelling used by GGUF writers
    "tokenizer.ggml.eot_token_id",       "tokenizer.ggml.eom_token_id",
};

Status validate_tokenizer(const GgufFile& f) {
  uint64_t n_vocab = 0;
  bool has_vocab = false;
  if (const GgufKv* kv = f.find_kv("tokenizer.ggml.tokens")) {
    if (!is_array_of(kv->value, GgufType::kString)) {
      return invalid_argument("{}: is {}, must be an array of string", where(*kv),
                              describe(kv->value));
    }
    if (kv->value.count == 0) return invalid_argument("{}: the vocabulary is empty", where(*kv));
    n_vocab = kv->value.count;
    has_vocab = true;
  }
  struct PerToken {
    const char* key;
    GgufType elem;
  };
  for (const PerToken& p : {PerToken{"tokenizer.ggml.scores", GgufType::kFloat32},
                            PerToken{"tokenizer.ggml.token_type", GgufType::kInt32}}) {
    const GgufKv* kv = f.find_kv(p.key);
    if (kv == nullptr) continue;
    if (!is_array_of(kv->value, p.elem)) {
      return invalid_argument("{}: is {}, must be an array of {}", where(*kv), describe(kv->value),
                              gguf_type_name(p.elem));
    }
    if (has_vocab && kv->value.count != n_vocab) {
      return invalid_argument("{}: has {} entries but tokenizer.ggml.tokens has {}", where(*kv),
                              kv->value.count, n_vocab);
    }
  }
  if (const GgufKv* kv = f.find_kv("tokenizer.ggml.merges")) {
    if (!is_array_of(kv->value, GgufType::kString)) {
      return invalid_argument("{}: is {}, must be an array of string", where(*kv),
                              describe(kv->value));
    }
  }
  for (const char* key : kTokenIdKeys) {
    const GgufKv* kv = f.find_kv(key);
    if (kv == nullptr) continue;
    const GgufValue& v = kv->value;
    if (!gguf_type_is_integer(v.type)) {
      return invalid_argument("{}: is {}, a token id must be an integer", where(*kv), describe(v));
    }
    // A negative or out-of-range id is not an error: as in llama.cpp, the vocabulary loader
    // (loader/gguf_vocab.cc) warns and keeps the default (some published files carry such ids).
  }
  return Status();
}

// ---- architecture hyper-parameters ----------------------------------------------------------

// An integer hyper-parameter: one value, or (per-layer keys) one value per layer.
struct HParam {
  const GgufKv* kv = nullptr;  // nullptr: absent
  std::vector<uint64_t> values;
  bool is_array = false;

  bool present() const { return kv != nullptr; }
  // The value for layer `l` (scalars apply to every layer).
  uint64_t at(size_t l) const { return is_array ? values[l] : values[0]; }
};

// Reads `key`; scalars must be in [min, max], array elements in [0, max]. Arrays are only
// accepted when `per_layer` (some architectures vary heads or ffn size by layer).
Result<HParam> read_hparam(const GgufFile& f, const std::string& key, uint64_t min, uint64_t max,
                           bool per_layer) {
  HParam p;
  p.kv = f.find_kv(key);
  if (p.kv == nullptr) return p;
  const GgufValue& v = p.kv->value;
  auto check = [&](const GgufValue& e, uint64_t lo, std::string_view what) -> Result<uint64_t> {
    if (gguf_type_is_signed(e.type) && e.i < 0) {
      return invalid_argument("{}: {}{} is negative", where(*p.kv), what, e.i);
    }
    if (e.u < lo || e.u > max) {
      return invalid_argument("{}: {}{} is out of range (must be {}..{})", where(*p.kv), what, e.u,
                              lo, max);
    }
    return e.u;
  };
  if (gguf_type_is_integer(v.type)) {
    PAGODA_ASSIGN_OR_RETURN(uint64_t x, check(v, min, ""));
    p.values.push_back(x);
    return p;
  }
  if (per_layer && v.type == GgufType::kArray && gguf_type_is_integer(v.elem_type)) {
    if (v.count == 0 || v.count > GgufLimits::kMaxLayers) {
      return invalid_argument("{}: per-layer array has {} entries (must be 1..{})", where(*p.kv),
                              v.count, GgufLimits::kMaxLayers);
    }
    p.is_array = true;
    p.values.reserve(v.count);
    Status st;
    gguf_for_each_element(v, [&](uint64_t k, const GgufValue& e) {
      auto x = check(e, 0, fmt::format("layer {}: ", k));
      if (!x.ok()) {
        st = std::move(x).take_status();
        return false;
      }
      p.values.push_back(*x);
      return true;
    });
    PAGODA_RETURN_IF_ERROR(st);
    return p;
  }
  return invalid_argument("{}: is {}, expected an integer{}", where(*p.kv), describe(v),
                          per_layer ? " or an array of integers" : "");
}

Status validate_architecture(const GgufFile& f) {
  const GgufKv* arch_kv = f.find_kv("general.architecture");
  if (arch_kv == nullptr) return Status();
  if (arch_kv->value.type != GgufType::kString) {
    return invalid_argument("{}: is {}, must be a string", where(*arch_kv),
                            describe(arch_kv->value));
  }
  const std::string a(arch_kv->value.str);
  if (a.empty()) return invalid_argument("{}: the architecture name is empty", where(*arch_kv));
  using L = GgufLimits;

  PAGODA_ASSIGN_OR_RETURN(HParam layers,
                          read_hparam(f, a + ".block_count", 1, L::kMaxLayers, false));
  PAGODA_ASSIGN_OR_RETURN(HParam context,
                          read_hparam(f, a + ".context_length", 1, L::kMaxContext, false));
  PAGODA_ASSIGN_OR_RETURN(HParam embd,
                          read_hparam(f, a + ".embedding_length", 1, L::kMaxEmbedding, false));
  PAGODA_ASSIGN_OR_RETURN(HParam ffn,
                          read_hparam(f, a + ".feed_forward_length", 1, L::kMaxFeedForward, true));
  PAGODA_ASSIGN_OR_RETURN(HParam heads,
                          read_hparam(f, a + ".attention.head_count", 1, L::kMaxHeads, true));
  PAGODA_ASSIGN_OR_RETURN(HParam heads_kv,
                          read_hparam(f, a + ".attention.head_count_kv", 1, L::kMaxHeads, true));
  PAGODA_ASSIGN_OR_RETURN(HParam key_len,
                          read_hparam(f, a + ".attention.key_length", 1, L::kMaxHeadDim, false));
  PAGODA_ASSIGN_OR_RETURN(HParam value_len,
                          read_hparam(f, a + ".attention.value_length", 1, L::kMaxHeadDim, false));
  PAGODA_ASSIGN_OR_RETURN(HParam experts,
                          read_hparam(f, a + ".expert_count", 0, L::kMaxExperts, false));
  PAGODA_ASSIGN_OR_RETURN(HParam experts_used,
                          read_hparam(f, a + ".expert_used_count", 0, L::kMaxExperts, false));
  (void)context;
  (void)value_len;

  // Per-layer arrays have one entry per layer.
  for (const HParam* p : {&ffn, &heads, &heads_kv}) {
    if (p->is_array && layers.present() && p->values.size() != layers.values[0]) {
      return invalid_argument("{}: per-layer array has {} entries but {} is {}", where(*p->kv),
                              p->values.size(), a + ".block_count", layers.values[0]);
    }
  }

  // Grouped-query attention: every KV head serves a whole number of query heads.
  if (heads.present() && heads_kv.present()) {
    size_t n = 1;
    if (heads.is_array) n = heads.values.size();
    if (heads_kv.is_array) n = heads_kv.values.size();
    if (heads.is_array && heads_kv.is_array && heads.values.size() != heads_kv.values.size()) {
      return invalid_argument("{}: has {} entries but {} has {}", where(*heads_kv.kv),
                              heads_kv.values.size(), a + ".attention.head_count",
                              heads.values.size());
    }
    for (size_t l = 0; l < n; ++l) {
      const uint64_t h = heads.at(l);
      const uint64_t hkv = heads_kv.at(l);
      const std::string layer = n > 1 ? fmt::format("layer {}: ", l) : "";
      if (hkv > h) {
        return invalid_argument("{}: {}head_count_kv {} exceeds head_count {}", where(*heads_kv.kv),
                                layer, hkv, h);
      }
      if (hkv > 0 && h % hkv != 0) {
        return invalid_argument("{}: {}head_count {} is not a multiple of head_count_kv {}",
                                where(*heads_kv.kv), layer, h, hkv);
      }
    }
  }

  // Without an explicit key_length the head dimension is embedding_length / head_count.
  if (embd.present() && heads.present() && !heads.is_array && !key_len.present()) {
    const uint64_t e = embd.values[0];
    const uint64_t h = heads.values[0];
    if (e % h != 0) {
      return invalid_argument("{}: embedding_length {} is not a multiple of head_count {}",
                              where(*heads.kv), e, h);
    }
    if (e / h > L::kMaxHeadDim) {
      return invalid_argument(
          "{}: head dimension {} (embedding_length {} / head_count {}) exceeds {}",
          where(*heads.kv), e / h, e, h, L::kMaxHeadDim);
    }
  }

  if (experts_used.present()) {
    const uint64_t n_experts = experts.present() ? experts.values[0] : 0;
    const uint64_t used = experts_used.values[0];
    if (used > n_experts) {
      return invalid_argument("{}: expert_used_count {} exceeds expert_count {}",
                              where(*experts_used.kv), used, n_experts);
    }
    if (n_experts > 0 && used == 0) {
      return invalid_argument("{}: expert_used_count is 0 but expert_count is {}",
                              where(*experts_used.kv), n_experts);
    }
  }
  return Status();
}

}  // namespace

Status validate_gguf_metadata(const GgufFile& file) {
  PAGODA_RETURN_IF_ERROR(validate_tokenizer(file));
  return validate_architecture(file);
}

}  // namespace pagoda::format
