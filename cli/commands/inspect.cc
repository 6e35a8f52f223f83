// `pagoda inspect MODEL`: prints what a GGUF file holds (version, alignment, every metadata key
// with its type and value, the tensor table and totals) after full validation; for a Hugging
// Face model directory, the architecture and the configuration pagoda runs it with, the
// tokenizer mapping, generation defaults, shards and the tensor table (HF name, GGUF name,
// dtype, shape, bytes). A corrupt or missing file prints one error line and exits 1.
#include <fmt/format.h>

#include <algorithm>
#include <cstdio>
#include <map>
#include <string>

#include "cli/commands/commands.h"
#include "cli/progress.h"
#include "format/gguf_file.h"
#include "loader/hf/hf_checkpoint.h"
#include "loader/hf/hf_tokenizer_files.h"

namespace pagoda::cli {
namespace {

std::string value_type(const format::GgufValue& v) {
  if (v.type == format::GgufType::kArray) {
    return fmt::format("{}[{}]", format::gguf_type_name(v.elem_type), v.count);
  }
  return std::string(format::gguf_type_name(v.type));
}

std::string shape_of(const format::GgufTensorInfo& t) {
  return fmt::format("[{}]", fmt::join(t.dims, t.dims + t.n_dims, ", "));
}

std::string opt_str(const std::optional<float>& v) {
  return v ? fmt::format("{}", *v) : std::string("-");
}

int run_inspect_dir(const std::string& path) {
  auto opened = loader::HfCheckpoint::open(path);
  if (!opened.ok()) return fail(opened.status().message());
  const loader::HfCheckpoint& ck = **opened;
  const model::ModelConfig& c = ck.config();
  std::string out;
  auto line = [&out](std::string s) {
    out += s;
    out += '\n';
  };
  line(fmt::format("directory: {}", path));
  line(fmt::format("architecture: {} (runs as pagoda '{}')", ck.architecture(), c.arch));
  line(fmt::format(
      "config: layers {}, hidden {}, heads {} (kv {}), head_dim {}, ffn {}, vocab {}, context {}",
      c.num_layers, c.hidden_dim, c.num_heads, c.num_kv_heads, c.head_dim, c.ffn_dim, c.vocab_size,
      c.context_length));
  std::string rope_tables = ck.rope_freq_factors().empty() ? "" : ", llama3 rope factors";
  if (ck.find("rope_factors_long.weight") != nullptr) {
    rope_tables = fmt::format(
        ", LongRoPE long/short factors (the long ones past {} served tokens), attention factor "
        "{:.4f}",
        c.rope_orig_ctx, c.rope_attn_factor);
  }
  line(
      fmt::format("        rms_norm_eps {}, rope theta {} dims {} (rotate-half), linear scale {}{}",
                  c.rms_norm_eps, c.rope_theta, c.rope_dims, ck.rope_linear_factor(), rope_tables));
  if (c.num_experts > 0) {
    line(fmt::format("        experts {} (top-{})", c.num_experts, c.num_experts_used));
  }
  line(fmt::format("        qkv bias {}, tied embeddings {}", c.has_qkv_bias, c.tied_embeddings));
  auto tok = loader::load_hf_tokenizer(path);
  if (!tok.ok()) {
    line(fmt::format("tokenizer: error: {}", tok.status().message()));
  } else {
    const auto& sm = tok->summary;
    line(fmt::format("tokenizer: {}, pre-tokenizer '{}', {} model tokens + {} added, {} merges",
                     sm.style, sm.pre, sm.num_model_tokens, sm.num_added_tokens, sm.num_merges));
    for (const std::string& note : sm.notes)
      line("  note: " + note);
    line(
        fmt::format("chat template: {}", tok->chat_template.empty()
                                             ? std::string("none")
                                             : fmt::format("{} bytes", tok->chat_template.size())));
  }
  const loader::GenerationDefaults& g = ck.generation_defaults();
  line(fmt::format("generation defaults: do_sample {}, temperature {}, top_p {}, top_k {}, eos {}",
                   g.do_sample ? (*g.do_sample ? "true" : "false") : "-", opt_str(g.temperature),
                   opt_str(g.top_p), g.top_k ? std::to_string(*g.top_k) : std::string("-"),
                   fmt::join(g.eos_token_ids, ",")));
  line("");
  line(fmt::format("shards: {}", ck.shards().size()));
  for (const auto& s : ck.shards()) {
    line(fmt::format("  {}  {} tensors, header {} bytes, {}", s->name(), s->tensors().size(),
                     s->header_size(), human_bytes(s->bytes().size())));
  }
  size_t hf_width = 7, gguf_width = 4, shape_width = 5;
  auto shape_of_hf = [](const loader::HfTensor& t) {
    std::vector<int64_t> dims(t.dims, t.dims + t.n_dims);
    std::reverse(dims.begin(), dims.end());  // back to HF's row-major order
    return fmt::format("[{}]", fmt::join(dims, ", "));
  };
  for (const loader::HfTensor& t : ck.tensors()) {
    hf_width = std::max(hf_width, t.hf_name.size());
    gguf_width = std::max(gguf_width, t.gguf_name.size());
    shape_width = std::max(shape_width, shape_of_hf(t).size());
  }
  line("");
  line(fmt::format("tensors: {}", ck.tensors().size()));
  line(fmt::format("  {:<{}}  {:<{}}  {:<5}  {:<{}}  {:>12}", "hf name", hf_width, "gguf name",
                   gguf_width, "type", "shape", shape_width, "bytes"));
  uint64_t total_bytes = 0, total_params = 0;
  for (const loader::HfTensor& t : ck.tensors()) {
    uint64_t n = 1;
    for (int32_t i = 0; i < t.n_dims; ++i)
      n *= static_cast<uint64_t>(t.dims[i]);
    total_params += n;
    total_bytes += t.size_bytes;
    line(fmt::format("  {:<{}}  {:<{}}  {:<5}  {:<{}}  {:>12}",
                     t.hf_name.empty() ? "(computed)" : t.hf_name, hf_width, t.gguf_name,
                     gguf_width, tensor::dtype_name(t.dtype), shape_of_hf(t), shape_width,
                     t.size_bytes));
  }
  line("");
  line(fmt::format("totals: {} tensors, {} parameters, {} bytes ({})", ck.tensors().size(),
                   total_params, total_bytes, human_bytes(total_bytes)));
  std::fwrite(out.data(), 1, out.size(), stdout);
  return 0;
}

int run_inspect(const std::string& path, size_t max_elements, size_t max_string) {
  if (loader::HfCheckpoint::is_model_dir(path)) return run_inspect_dir(path);
  auto opened = format::GgufFile::open(path);
  if (!opened.ok()) return fail(opened.status().message());
  const format::GgufFile& f = **opened;

  std::string out;
  auto line = [&out](std::string s) {
    out += s;
    out += '\n';
  };
  line(fmt::format("file: {}", format::gguf_escape(f.name(), 4096)));
  line(fmt::format("GGUF version {}, alignment {}, data section at offset {}, file size {} ({})",
                   f.version(), f.alignment(), f.data_offset(), f.bytes().size(),
                   human_bytes(f.bytes().size())));

  size_t key_width = 0;
  size_t type_width = 0;
  for (const format::GgufKv& kv : f.metadata()) {
    key_width = std::max(key_width, format::gguf_escape(kv.key, 120).size());
    type_width = std::max(type_width, value_type(kv.value).size());
  }
  line("");
  line(fmt::format("metadata: {} keys", f.metadata().size()));
  for (const format::GgufKv& kv : f.metadata()) {
    line(fmt::format("  {:<{}}  {:<{}}  {}", format::gguf_escape(kv.key, 120), key_width,
                     value_type(kv.value), type_width,
                     format::gguf_value_to_string(kv.value, max_elements, max_string)));
  }

  size_t name_width = 4;
  size_t shape_width = 5;
  for (const format::GgufTensorInfo& t : f.tensors()) {
    name_width = std::max(name_width, format::gguf_escape(t.name, 120).size());
    shape_width = std::max(shape_width, shape_of(t).size());
  }
  line("");
  line(fmt::format("tensors: {}", f.tensors().size()));
  if (!f.tensors().empty()) {
    line(fmt::format("  {:<{}}  {:<7}  {:<{}}  {:>12}  {:>12}", "name", name_width, "type", "shape",
                     shape_width, "offset", "bytes"));
  }
  uint64_t total_params = 0;
  uint64_t total_bytes = 0;
  std::map<std::string, uint64_t> type_counts;
  for (const format::GgufTensorInfo& t : f.tensors()) {
    const std::string_view type = tensor::dtype_name(t.dtype);
    line(fmt::format("  {:<{}}  {:<7}  {:<{}}  {:>12}  {:>12}", format::gguf_escape(t.name, 120),
                     name_width, type, shape_of(t), shape_width, t.offset, t.size_bytes));
    total_params += t.num_elements;  // no overflow: each tensor's bytes lie inside the file
    total_bytes += t.size_bytes;
    ++type_counts[std::string(type)];
  }
  line("");
  std::string types;
  for (const auto& [name, count] : type_counts) {
    types += fmt::format("{}{} x{}", types.empty() ? "" : ", ", name, count);
  }
  line(fmt::format("totals: {} tensors, {} parameters, {} bytes ({}){}", f.tensors().size(),
                   total_params, total_bytes, human_bytes(total_bytes),
                   types.empty() ? "" : "; types: " + types));
  std::fwrite(out.data(), 1, out.size(), stdout);
  return 0;
}

}  // namespace

void register_inspect(CLI::App& app, CommandAction& action) {
  CLI::App* cmd = app.add_subcommand(
      "inspect", "Validate a GGUF file (or model directory) and print its contents");
  auto path = std::make_shared<std::string>();
  auto max_elements = std::make_shared<size_t>(8);
  auto max_string = std::make_shared<size_t>(80);
  cmd->add_option("model", *path, "GGUF file or Hugging Face model directory")->required();
  cmd->add_option("--array-items", *max_elements, "Array elements shown per key")
      ->capture_default_str();
  cmd->add_option("--string-bytes", *max_string, "Bytes shown per string before shortening")
      ->capture_default_str();
  cmd->callback([&action, path, max_elements, max_string] {
    action = [path, max_elements, max_string] {
      return run_inspect(*path, *max_elements, *max_string);
    };
  });
}

}  // namespace pagoda::cli
