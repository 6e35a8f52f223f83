// Checks of well-known GGUF keys (see gguf_validate.h). Runs after the structural parse, so every
// value here is already bounds-checked as bytes; this judges types and lengths.
#include "format/gguf_validate.h"

#include <fmt/format.h>

#include <optional>
#include <string>

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

// The hyper-parameter keys of general.architecture are judged here only as the file format needs:
// each is an integer, and (per-layer keys, as some architectures vary heads or ffn size by layer)
// an array of integers with one entry per layer. Their values (positive, bounded, consistent) are
// the model's to judge: model::ConfigLimits and model::validate_config, applied by the loader.
constexpr const char* kScalarKeys[] = {
    "block_count",          "context_length",         "embedding_length",
    "attention.key_length", "attention.value_length", "expert_count",
    "expert_used_count",
};
constexpr const char* kPerLayerKeys[] = {
    "feed_forward_length",
    "attention.head_count",
    "attention.head_count_kv",
};

Status validate_architecture(const GgufFile& f) {
  const GgufKv* arch_kv = f.find_kv("general.architecture");
  if (arch_kv == nullptr) return Status();
  if (arch_kv->value.type != GgufType::kString) {
    return invalid_argument("{}: is {}, must be a string", where(*arch_kv),
                            describe(arch_kv->value));
  }
  const std::string a(arch_kv->value.str);
  if (a.empty()) return invalid_argument("{}: the architecture name is empty", where(*arch_kv));

  for (const char* name : kScalarKeys) {
    const GgufKv* kv = f.find_kv(a + "." + name);
    if (kv != nullptr && !gguf_type_is_integer(kv->value.type)) {
      return invalid_argument("{}: is {}, expected an integer", where(*kv), describe(kv->value));
    }
  }
  // The layer count per-layer arrays must match (when it is a usable number; its value is
  // judged by the loader).
  std::optional<uint64_t> layers;
  if (const GgufKv* kv = f.find_kv(a + ".block_count")) {
    if (!gguf_type_is_signed(kv->value.type) || kv->value.i >= 0) layers = kv->value.u;
  }
  for (const char* name : kPerLayerKeys) {
    const GgufKv* kv = f.find_kv(a + "." + name);
    if (kv == nullptr) continue;
    const GgufValue& v = kv->value;
    if (gguf_type_is_integer(v.type)) continue;
    if (v.type != GgufType::kArray || !gguf_type_is_integer(v.elem_type)) {
      return invalid_argument("{}: is {}, expected an integer or an array of integers", where(*kv),
                              describe(v));
    }
    if (v.count == 0) {
      return invalid_argument("{}: per-layer array has 0 entries", where(*kv));
    }
    if (layers && v.count != *layers) {
      return invalid_argument("{}: per-layer array has {} entries but {} is {}", where(*kv),
                              v.count, a + ".block_count", *layers);
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
