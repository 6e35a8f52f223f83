#include "loader/lora_loader.h"

#include <charconv>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string_view>

#include "format/gguf_file.h"
#include "format/lora_adapter_config.h"
#include "format/safetensors.h"
#include "kernels/quant.h"

namespace pagoda::loader {
namespace {

using model::LoraAdapter;
using model::LoraTarget;

// One named A or B matrix, before conversion.
struct RawMatrix {
  std::string name;
  tensor::DType dtype = tensor::DType::kF32;
  int64_t rows = 0, cols = 0;
  const uint8_t* data = nullptr;
  uint64_t size_bytes = 0;
};

struct RawPair {
  RawMatrix a, b;
  bool has_a = false, has_b = false;
};

Result<std::vector<float>> to_f32(const RawMatrix& m) {
  if (!kernels::can_dequantize(m.dtype)) {
    return unimplemented("{}: dtype {} is not supported", m.name, tensor::dtype_name(m.dtype));
  }
  const uint64_t n = static_cast<uint64_t>(m.rows) * static_cast<uint64_t>(m.cols);
  if (n % tensor::dtype_info(m.dtype).block_size != 0) {
    return invalid_argument("{}: {} values do not fill {} blocks", m.name, n,
                            tensor::dtype_name(m.dtype));
  }
  PAGODA_ASSIGN_OR_RETURN(uint64_t bytes, tensor::row_size_bytes(m.dtype, n));
  if (bytes != m.size_bytes) {
    return invalid_argument("{}: {} bytes, [{}, {}] {} needs {}", m.name, m.size_bytes, m.rows,
                            m.cols, tensor::dtype_name(m.dtype), bytes);
  }
  std::vector<float> out(static_cast<size_t>(n));
  kernels::dequantize_row(m.dtype, m.data, out.data(), static_cast<int64_t>(n));
  for (float v : out) {
    if (!std::isfinite(v)) return invalid_argument("{}: holds a non-finite value", m.name);
  }
  return out;
}

// GGUF llama's q/k row order (llama.cpp's convert permute): within each head, rows
// [half, 2] instead of [2, half].
std::vector<float> permute_rows(const std::vector<float>& b, int64_t out, int64_t rank,
                                int64_t n_head) {
  std::vector<float> p(b.size());
  const int64_t hd = out / n_head, half = hd / 2;
  for (int64_t h = 0; h < n_head; ++h) {
    for (int64_t i = 0; i < half; ++i) {
      for (int64_t j = 0; j < 2; ++j) {
        const int64_t dst = h * hd + i * 2 + j, src = h * hd + j * half + i;
        std::memcpy(p.data() + dst * rank, b.data() + src * rank,
                    static_cast<size_t>(rank) * sizeof(float));
      }
    }
  }
  return p;
}

Result<int32_t> parse_layer(std::string_view s, const model::ModelConfig& c,
                            const std::string& name) {
  int32_t layer = -1;
  const auto [ptr, ec] = std::from_chars(s.data(), s.data() + s.size(), layer);
  if (ec != std::errc() || ptr != s.data() + s.size() || s.empty() || layer < 0 ||
      layer >= c.num_layers) {
    return invalid_argument("{}: layer \"{}\" is not one of the model's {} layers", name, s,
                            c.num_layers);
  }
  return layer;
}

// Converts the pairs into the adapter (shapes checked against the model, scale folded into B).
Result<std::unique_ptr<LoraAdapter>> build(
    std::vector<std::array<RawPair, model::kNumLoraTargets>>& pairs,
    const format::LoraAdapterConfig& cfg, bool permute_qk, const std::string& name,
    const model::ModelConfig& c, int32_t max_rank) {
  auto adapter = std::make_unique<LoraAdapter>();
  adapter->name = name;
  adapter->layers.resize(static_cast<size_t>(c.num_layers));
  bool any = false;
  for (int32_t l = 0; l < c.num_layers; ++l) {
    for (int t = 0; t < model::kNumLoraTargets; ++t) {
      RawPair& raw = pairs[static_cast<size_t>(l)][static_cast<size_t>(t)];
      if (!raw.has_a && !raw.has_b) continue;
      const auto target = static_cast<LoraTarget>(t);
      if (raw.has_a != raw.has_b) {
        return invalid_argument("layer {} {}: lora {} without its {}", l,
                                model::lora_target_name(target), raw.has_a ? "A" : "B",
                                raw.has_a ? "B" : "A");
      }
      const auto [out, in] = model::lora_target_shape(c, target);
      const int64_t rank = raw.a.rows;
      if (rank < 1 || rank > max_rank) {
        return invalid_argument("{}: rank {} is not in [1, --max-lora-rank {}]", raw.a.name, rank,
                                max_rank);
      }
      if (cfg.rank > 0 && rank != cfg.rank) {
        return invalid_argument("{}: rank {} differs from adapter_config.json's r {}", raw.a.name,
                                rank, cfg.rank);
      }
      if (raw.a.cols != in) {
        return invalid_argument("{}: [{}, {}], the model's {} takes {} inputs", raw.a.name,
                                raw.a.rows, raw.a.cols, model::lora_target_name(target), in);
      }
      if (raw.b.rows != out || raw.b.cols != rank) {
        return invalid_argument("{}: [{}, {}], the model needs [{}, {}]", raw.b.name, raw.b.rows,
                                raw.b.cols, out, rank);
      }
      PAGODA_ASSIGN_OR_RETURN(std::vector<float> a, to_f32(raw.a));
      PAGODA_ASSIGN_OR_RETURN(std::vector<float> b, to_f32(raw.b));
      const float scale = static_cast<float>(cfg.scale(rank));
      for (float& v : b)
        v *= scale;
      if (permute_qk && (target == LoraTarget::kQ || target == LoraTarget::kK)) {
        const int64_t heads = target == LoraTarget::kQ ? c.num_heads : c.num_kv_heads;
        b = permute_rows(b, out, rank, heads);
      }
      model::set_lora_projection(adapter->layers[static_cast<size_t>(l)][static_cast<size_t>(t)],
                                 rank, a, b);
      adapter->rank = std::max<int32_t>(adapter->rank, static_cast<int32_t>(rank));
      adapter->scale = scale;
      any = true;
    }
  }
  if (!any) return invalid_argument("the adapter adapts no projection");
  PAGODA_RETURN_IF_ERROR(model::validate_lora_adapter(c, *adapter, max_rank));
  return adapter;
}

Result<std::string> read_text(const std::filesystem::path& p) {
  std::error_code ec;
  const auto size = std::filesystem::file_size(p, ec);
  if (ec) return not_found("{}: {}", p.string(), ec.message());
  if (size > (uint64_t{1} << 20))
    return invalid_argument("{}: {} bytes is too large", p.string(), size);
  std::ifstream in(p, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

Result<std::unique_ptr<LoraAdapter>> load_peft(const std::string& dir, const std::string& name,
                                               const model::ModelConfig& c, int32_t max_rank) {
  const std::filesystem::path root(dir);
  PAGODA_ASSIGN_OR_RETURN(std::string text, read_text(root / "adapter_config.json"));
  PAGODA_ASSIGN_OR_RETURN(format::LoraAdapterConfig cfg, format::parse_peft_lora_config(text));
  std::vector<LoraTarget> targets;
  for (const std::string& m : cfg.target_modules) {
    LoraTarget t;
    if (!model::lora_target_from_peft(m, t)) {
      return unimplemented(
          "adapter_config.json: target module \"{}\" is not supported (q_proj, "
          "k_proj, v_proj, o_proj, gate_proj, up_proj, down_proj)",
          m.substr(0, 64));
    }
    targets.push_back(t);
  }
  PAGODA_ASSIGN_OR_RETURN(
      auto file, format::SafetensorsFile::open((root / "adapter_model.safetensors").string()));
  std::vector<std::array<RawPair, model::kNumLoraTargets>> pairs(static_cast<size_t>(c.num_layers));
  constexpr std::string_view kPrefix = "base_model.model.model.layers.";
  for (const format::StTensor& t : file->tensors()) {
    std::string_view n = t.name;
    const auto bad = [&] {
      return unimplemented("tensor {} is not a LoRA A/B of a supported projection",
                           t.name.substr(0, 120));
    };
    if (n.substr(0, kPrefix.size()) != kPrefix) return bad();
    n.remove_prefix(kPrefix.size());
    const size_t dot = n.find('.');
    if (dot == std::string_view::npos) return bad();
    PAGODA_ASSIGN_OR_RETURN(int32_t layer, parse_layer(n.substr(0, dot), c, t.name));
    n.remove_prefix(dot + 1);
    if (n.substr(0, 10) == "self_attn.") {
      n.remove_prefix(10);
    } else if (n.substr(0, 4) == "mlp.") {
      n.remove_prefix(4);
    } else {
      return bad();
    }
    bool is_a;
    if (n.size() > 14 && n.substr(n.size() - 14) == ".lora_A.weight") {
      is_a = true;
    } else if (n.size() > 14 && n.substr(n.size() - 14) == ".lora_B.weight") {
      is_a = false;
    } else {
      return bad();
    }
    const std::string_view module = n.substr(0, n.size() - 14);
    LoraTarget target;
    if (!model::lora_target_from_peft(module, target)) return bad();
    if (std::find(targets.begin(), targets.end(), target) == targets.end()) {
      return invalid_argument("tensor {}: {} is not in target_modules", t.name, module);
    }
    const bool attn_module = target <= LoraTarget::kO;
    if (attn_module != (t.name.find(".self_attn.") != std::string::npos)) return bad();
    if (t.shape.size() != 2) {
      return invalid_argument("tensor {}: {} dims, not 2", t.name, t.shape.size());
    }
    PAGODA_ASSIGN_OR_RETURN(tensor::DType dtype, format::SafetensorsFile::compute_dtype(t));
    RawPair& pair = pairs[static_cast<size_t>(layer)][static_cast<size_t>(target)];
    RawMatrix& m = is_a ? pair.a : pair.b;
    bool& has = is_a ? pair.has_a : pair.has_b;
    if (t.shape[0] > (uint64_t{1} << 30) || t.shape[1] > (uint64_t{1} << 30)) {
      return invalid_argument("tensor {}: shape too large", t.name);
    }
    m = RawMatrix{
        t.name, dtype,         static_cast<int64_t>(t.shape[0]), static_cast<int64_t>(t.shape[1]),
        t.data, t.size_bytes()};
    has = true;
  }
  const bool permute = c.rope_style == kernels::RopeStyle::kInterleaved;
  return build(pairs, cfg, permute, name, c, max_rank);
}

Result<std::unique_ptr<LoraAdapter>> load_gguf(const std::string& path, const std::string& name,
                                               const model::ModelConfig& c, int32_t max_rank) {
  PAGODA_ASSIGN_OR_RETURN(std::unique_ptr<format::GgufFile> file, format::GgufFile::open(path));
  PAGODA_ASSIGN_OR_RETURN(format::LoraAdapterConfig cfg, format::read_gguf_lora_config(*file));
  if (cfg.architecture != c.arch) {
    return invalid_argument("general.architecture is \"{}\", the base model's is \"{}\"",
                            cfg.architecture.substr(0, 64), c.arch);
  }
  std::vector<std::array<RawPair, model::kNumLoraTargets>> pairs(static_cast<size_t>(c.num_layers));
  for (const format::GgufTensorInfo& t : file->tensors()) {
    std::string_view n = t.name;
    const std::string tname(t.name.substr(0, 120));
    const auto bad = [&] {
      return unimplemented("tensor {} is not a LoRA a/b of a supported projection", tname);
    };
    if (n.substr(0, 4) != "blk.") return bad();
    n.remove_prefix(4);
    const size_t dot = n.find('.');
    if (dot == std::string_view::npos) return bad();
    PAGODA_ASSIGN_OR_RETURN(int32_t layer, parse_layer(n.substr(0, dot), c, tname));
    n.remove_prefix(dot + 1);
    bool is_a;
    if (n.size() > 14 && n.substr(n.size() - 14) == ".weight.lora_a") {
      is_a = true;
    } else if (n.size() > 14 && n.substr(n.size() - 14) == ".weight.lora_b") {
      is_a = false;
    } else {
      return bad();
    }
    LoraTarget target;
    if (!model::lora_target_from_gguf(n.substr(0, n.size() - 14), target)) return bad();
    if (t.n_dims != 2) return invalid_argument("tensor {}: {} dims, not 2", tname, t.n_dims);
    RawPair& pair = pairs[static_cast<size_t>(layer)][static_cast<size_t>(target)];
    RawMatrix& m = is_a ? pair.a : pair.b;
    (is_a ? pair.has_a : pair.has_b) = true;
    if (t.dims[0] > (uint64_t{1} << 30) || t.dims[1] > (uint64_t{1} << 30)) {
      return invalid_argument("tensor {}: shape too large", tname);
    }
    m = RawMatrix{
        tname,  t.dtype,     static_cast<int64_t>(t.dims[1]), static_cast<int64_t>(t.dims[0]),
        t.data, t.size_bytes};
  }
  // llama.cpp's converter already permuted q/k for GGUF llama bases.
  return build(pairs, cfg, /*permute_qk=*/false, name, c, max_rank);
}

}  // namespace

bool is_peft_adapter_dir(const std::string& path) {
  std::error_code ec;
  return std::filesystem::is_directory(path, ec) &&
         std::filesystem::exists(std::filesystem::path(path) / "adapter_config.json", ec);
}

Result<std::unique_ptr<model::LoraAdapter>> load_lora_adapter(const std::string& path,
                                                              const std::string& name,
                                                              const model::ModelConfig& config,
                                                              int32_t max_rank) {
  auto result = is_peft_adapter_dir(path) ? load_peft(path, name, config, max_rank)
                                          : load_gguf(path, name, config, max_rank);
  if (!result.ok()) return result.status().with_context(path);
  return result;
}

}  // namespace pagoda::loader
