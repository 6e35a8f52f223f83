#include "convert/shapes/synth_model.h"

#include <omp.h>

#include <algorithm>
#include <cstring>
#include <memory>
#include <string_view>
#include <vector>

#include "format/gguf_file.h"
#include "tensor/float16.h"

namespace pagoda::convert {
namespace {

constexpr uint64_t kGolden = 0x9E3779B97F4A7C15ull;
// Elements generated per chunk handed to the writer (bounds memory to a few MB).
constexpr uint64_t kChunkElements = uint64_t{1} << 20;

uint64_t mix64(uint64_t z) {
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}

uint64_t tensor_key(uint64_t seed, std::string_view name) {
  uint64_t h = 0xcbf29ce484222325ull;  // FNV-1a
  for (char c : name) {
    h ^= static_cast<uint8_t>(c);
    h *= 0x100000001b3ull;
  }
  return mix64(seed ^ mix64(h));
}

// Irwin-Hall: the sum of four 16-bit uniforms, centred and scaled to unit variance.
inline float normal_at(uint64_t key, uint64_t index) {
  const uint64_t r = mix64(key + (index + 1) * kGolden);
  const uint32_t sum = static_cast<uint32_t>(r & 0xffff) +
                       static_cast<uint32_t>((r >> 16) & 0xffff) +
                       static_cast<uint32_t>((r >> 32) & 0xffff) + static_cast<uint32_t>(r >> 48);
  constexpr float kMean = 4 * 32767.5f;
  constexpr float kInvStd = 1.0f / 37837.23f;  // sqrt(4 * (65536^2 - 1) / 12)
  return (static_cast<float>(sum) - kMean) * kInvStd;
}

enum class Init { kMatrix, kNorm, kBias, kConst };

struct TensorSpec {
  std::string name;
  std::vector<uint64_t> dims;  // ggml order
  tensor::DType dtype;
  Init init;
  std::vector<float> values;  // kConst only
};

std::string blk(int32_t i, std::string_view name) {
  return "blk." + std::to_string(i) + "." + std::string(name);
}

std::vector<TensorSpec> tensor_specs(const ModelShape& s, int32_t num_layers, int32_t vocab,
                                     tensor::DType dtype) {
  using tensor::DType;
  const uint64_t hidden = static_cast<uint64_t>(s.hidden_dim);
  const uint64_t q_dim = static_cast<uint64_t>(s.num_heads) * static_cast<uint64_t>(s.head_dim);
  const uint64_t kv_dim = static_cast<uint64_t>(s.num_kv_heads) * static_cast<uint64_t>(s.head_dim);
  const uint64_t ffn = static_cast<uint64_t>(s.ffn_dim);
  const uint64_t experts = static_cast<uint64_t>(s.num_experts);
  std::vector<TensorSpec> out;
  auto matrix = [&](std::string name, std::vector<uint64_t> dims) {
    out.push_back({std::move(name), std::move(dims), dtype, Init::kMatrix, {}});
  };
  auto f32 = [&](std::string name, uint64_t n, Init init) {
    out.push_back({std::move(name), {n}, DType::kF32, init, {}});
  };
  if (s.llama3_rope) {
    std::vector<float> factors = llama3_rope_factors(*s.llama3_rope, s.rope_theta, s.head_dim);
    const uint64_t n = factors.size();
    out.push_back({"rope_freqs.weight", {n}, DType::kF32, Init::kConst, std::move(factors)});
  }
  matrix("token_embd.weight", {hidden, static_cast<uint64_t>(vocab)});
  for (int32_t i = 0; i < num_layers; ++i) {
    f32(blk(i, "attn_norm.weight"), hidden, Init::kNorm);
    matrix(blk(i, "attn_q.weight"), {hidden, q_dim});
    matrix(blk(i, "attn_k.weight"), {hidden, kv_dim});
    matrix(blk(i, "attn_v.weight"), {hidden, kv_dim});
    if (s.qkv_bias) {
      f32(blk(i, "attn_q.bias"), q_dim, Init::kBias);
      f32(blk(i, "attn_k.bias"), kv_dim, Init::kBias);
      f32(blk(i, "attn_v.bias"), kv_dim, Init::kBias);
    }
    matrix(blk(i, "attn_output.weight"), {q_dim, hidden});
    f32(blk(i, "ffn_norm.weight"), hidden, Init::kNorm);
    if (experts > 0) {
      // The router stays F32, as llama.cpp's converter keeps it.
      out.push_back(
          {blk(i, "ffn_gate_inp.weight"), {hidden, experts}, DType::kF32, Init::kMatrix, {}});
      matrix(blk(i, "ffn_gate_exps.weight"), {hidden, ffn, experts});
      matrix(blk(i, "ffn_up_exps.weight"), {hidden, ffn, experts});
      matrix(blk(i, "ffn_down_exps.weight"), {ffn, hidden, experts});
      if (s.shared_expert_ffn_dim > 0) {  // qwen2moe's shared expert and its sigmoid gate
        const auto shared = static_cast<uint64_t>(s.shared_expert_ffn_dim);
        f32(blk(i, "ffn_gate_inp_shexp.weight"), hidden, Init::kMatrix);
        matrix(blk(i, "ffn_gate_shexp.weight"), {hidden, shared});
        matrix(blk(i, "ffn_up_shexp.weight"), {hidden, shared});
        matrix(blk(i, "ffn_down_shexp.weight"), {shared, hidden});
      }
    } else {
      matrix(blk(i, "ffn_gate.weight"), {hidden, ffn});
      matrix(blk(i, "ffn_up.weight"), {hidden, ffn});
      matrix(blk(i, "ffn_down.weight"), {ffn, hidden});
    }
  }
  f32("output_norm.weight", hidden, Init::kNorm);
  if (!s.tied_embeddings) matrix("output.weight", {hidden, static_cast<uint64_t>(vocab)});
  return out;
}

uint32_t llama_file_type(tensor::DType dtype) {
  switch (dtype) {
    case tensor::DType::kF32:
      return 0;
    case tensor::DType::kBF16:
      return 32;
    default:
      return 1;
  }
}

// Shared by every tensor source of one writer.
struct ProgressState {
  SynthProgress callback;
  size_t num_tensors = 0;
  uint64_t bytes_total = 0;
  uint64_t bytes_done = 0;
};

// Fills dst[0..count) with the values of elements first..first+count.
void fill_values(const TensorSpec& spec, uint64_t key, float weight_std, uint64_t first,
                 uint64_t count, float* dst) {
  switch (spec.init) {
    case Init::kMatrix:
    case Init::kBias:
      for (uint64_t j = 0; j < count; ++j)
        dst[j] = weight_std * normal_at(key, first + j);
      break;
    case Init::kNorm:
      for (uint64_t j = 0; j < count; ++j)
        dst[j] = 1.0f + 0.02f * normal_at(key, first + j);
      break;
    case Init::kConst:
      std::memcpy(dst, spec.values.data() + first, count * sizeof(float));
      break;
  }
}

void encode_values(tensor::DType dtype, const float* src, uint64_t count, uint8_t* dst) {
  if (dtype == tensor::DType::kF32) {
    std::memcpy(dst, src, count * sizeof(float));
  } else if (dtype == tensor::DType::kF16) {
    for (uint64_t j = 0; j < count; ++j) {
      const uint16_t h = tensor::fp32_to_fp16(src[j]);
      std::memcpy(dst + 2 * j, &h, 2);
    }
  } else {
    for (uint64_t j = 0; j < count; ++j) {
      const uint16_t h = tensor::fp32_to_bf16(src[j]);
      std::memcpy(dst + 2 * j, &h, 2);
    }
  }
}

Status generate(const TensorSpec& spec, uint64_t key, float weight_std, int num_threads,
                size_t tensor_index, ProgressState& progress,
                const format::GgufWriter::ByteSink& sink) {
  constexpr uint64_t kPiece = 4096;  // elements generated then encoded by one thread at a time
  uint64_t n = 1;
  for (uint64_t d : spec.dims)
    n *= d;
  const size_t elem_bytes = spec.dtype == tensor::DType::kF32 ? 4 : 2;
  std::vector<uint8_t> bytes;
  for (uint64_t first = 0; first < n; first += kChunkElements) {
    const uint64_t count = std::min<uint64_t>(kChunkElements, n - first);
    bytes.resize(static_cast<size_t>(count) * elem_bytes);
    uint8_t* dst = bytes.data();
    const auto pieces = static_cast<int64_t>((count + kPiece - 1) / kPiece);
#pragma omp parallel for num_threads(num_threads) schedule(static)
    for (int64_t p = 0; p < pieces; ++p) {
      float values[kPiece];
      const uint64_t begin = static_cast<uint64_t>(p) * kPiece;
      const uint64_t len = std::min(kPiece, count - begin);
      fill_values(spec, key, weight_std, first + begin, len, values);
      encode_values(spec.dtype, values, len, dst + begin * elem_bytes);
    }
    PAGODA_RETURN_IF_ERROR(sink(bytes));
    progress.bytes_done += bytes.size();
    if (progress.callback) {
      progress.callback(tensor_index, progress.num_tensors, progress.bytes_done,
                        progress.bytes_total);
    }
  }
  return Status();
}

}  // namespace

float synth_normal(uint64_t seed, std::string_view name, uint64_t index) {
  return normal_at(tensor_key(seed, name), index);
}

Result<format::GgufWriter> build_synth_model(const ModelShape& shape, const format::GgufFile& vocab,
                                             const SynthOptions& options, SynthProgress progress) {
  using format::GgufWriteValue;
  using tensor::DType;
  if (options.dtype != DType::kF32 && options.dtype != DType::kF16 &&
      options.dtype != DType::kBF16) {
    return invalid_argument("synth writes F32, F16 or BF16 weights, not {}",
                            tensor::dtype_name(options.dtype));
  }
  const int32_t num_layers = options.num_layers > 0 ? options.num_layers : shape.num_layers;
  if (options.num_layers < 0 || num_layers > 1024) {
    return invalid_argument("--layers {} is out of range [1, 1024]", options.num_layers);
  }
  if (!(options.weight_std > 0) || options.weight_std > 1) {
    return invalid_argument("weight std {} is out of range (0, 1]", options.weight_std);
  }
  const format::GgufValue* tokens = vocab.find("tokenizer.ggml.tokens");
  if (tokens == nullptr) {
    return invalid_argument("{}: no tokenizer.ggml.tokens (not a vocab file?)", vocab.name());
  }
  if (tokens->type != format::GgufType::kArray || tokens->count == 0 ||
      tokens->count > (uint64_t{1} << 22)) {
    return invalid_argument("{}: tokenizer.ggml.tokens must be a non-empty array of at most 2^22",
                            vocab.name());
  }
  const auto vocab_size = static_cast<int32_t>(tokens->count);

  format::GgufWriter w;
  const std::string a = std::string(shape.arch) + ".";
  auto u32 = [](int64_t v) { return GgufWriteValue::u32(static_cast<uint32_t>(v)); };
  w.set("general.architecture", GgufWriteValue::string(shape.arch));
  w.set("general.name", GgufWriteValue::string("synth-" + std::string(shape.name)));
  w.set("general.file_type", u32(llama_file_type(options.dtype)));
  w.set("general.quantization_version", u32(2));
  w.set(a + "vocab_size", u32(vocab_size));
  w.set(a + "context_length", u32(shape.context_length));
  w.set(a + "embedding_length", u32(shape.hidden_dim));
  w.set(a + "block_count", u32(num_layers));
  w.set(a + "feed_forward_length", u32(shape.ffn_dim));
  w.set(a + "attention.head_count", u32(shape.num_heads));
  w.set(a + "attention.head_count_kv", u32(shape.num_kv_heads));
  w.set(a + "rope.freq_base", GgufWriteValue::f32(shape.rope_theta));
  w.set(a + "attention.layer_norm_rms_epsilon", GgufWriteValue::f32(shape.rms_norm_eps));
  w.set(a + "rope.dimension_count", u32(shape.head_dim));
  if (shape.num_experts > 0) {
    w.set(a + "expert_count", u32(shape.num_experts));
    w.set(a + "expert_used_count", u32(shape.num_experts_used));
  }
  if (shape.shared_expert_ffn_dim > 0) {  // as llama.cpp's converter writes qwen2moe
    w.set(a + "expert_feed_forward_length", u32(shape.ffn_dim));
    w.set(a + "expert_shared_feed_forward_length", u32(shape.shared_expert_ffn_dim));
  }
  for (const format::GgufKv& kv : vocab.metadata()) {
    if (kv.key.starts_with("tokenizer.")) {
      w.set(std::string(kv.key), GgufWriteValue::copy_of(kv.value));
    }
  }

  auto specs = std::make_shared<std::vector<TensorSpec>>(
      tensor_specs(shape, num_layers, vocab_size, options.dtype));
  auto state = std::make_shared<ProgressState>();
  state->callback = std::move(progress);
  state->num_tensors = specs->size();
  for (const TensorSpec& spec : *specs) {
    uint64_t n = 1;
    for (uint64_t d : spec.dims)
      n *= d;
    state->bytes_total += n * (spec.dtype == DType::kF32 ? 4 : 2);
  }
  const int num_threads = options.num_threads > 0 ? options.num_threads : omp_get_max_threads();
  for (size_t i = 0; i < specs->size(); ++i) {
    const TensorSpec& spec = (*specs)[i];
    const uint64_t key = tensor_key(options.seed, spec.name);
    const float std_dev = options.weight_std;
    w.add_tensor(
        spec.name, spec.dtype, spec.dims,
        [specs, state, i, key, std_dev, num_threads](const format::GgufWriter::ByteSink& sink) {
          return generate((*specs)[i], key, std_dev, num_threads, i, *state, sink);
        });
  }
  return w;
}

}  // namespace pagoda::convert
