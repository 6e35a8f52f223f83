// `pagoda inspect MODEL`: prints what a GGUF file holds (version, alignment, every metadata key
// with its type and value, the tensor table and totals) after full validation. A corrupt or
// missing file prints one error line and exits 1.
#include <fmt/format.h>

#include <algorithm>
#include <cstdio>
#include <map>
#include <string>

#include "cli/commands/commands.h"
#include "format/gguf_file.h"

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

std::string human_bytes(uint64_t n) {
  if (n >= (uint64_t{1} << 30)) return fmt::format("{:.2f} GiB", n / double(uint64_t{1} << 30));
  if (n >= (uint64_t{1} << 20)) return fmt::format("{:.2f} MiB", n / double(uint64_t{1} << 20));
  if (n >= (uint64_t{1} << 10)) return fmt::format("{:.2f} KiB", n / double(uint64_t{1} << 10));
  return fmt::format("{} B", n);
}

int run_inspect(const std::string& path, size_t max_elements, size_t max_string) {
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
  CLI::App* cmd = app.add_subcommand("inspect", "Validate a GGUF file and print its contents");
  auto path = std::make_shared<std::string>();
  auto max_elements = std::make_shared<size_t>(8);
  auto max_string = std::make_shared<size_t>(80);
  cmd->add_option("model", *path, "GGUF file")->required();
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
