#include "cli/serve_models.h"

#include <algorithm>
#include <cctype>
#include <filesystem>
#include <set>
#include <system_error>

namespace pagoda::cli {

namespace fs = std::filesystem;

std::string check_model_name(const std::string& name) {
  if (name.empty() || name.size() > 128) return "must be 1 to 128 characters";
  if (!std::isalnum(static_cast<unsigned char>(name.front()))) {
    return "must start with a letter or digit";
  }
  for (const char c : name) {
    if (!std::isalnum(static_cast<unsigned char>(c)) && c != '.' && c != '_' && c != '-' &&
        c != ':' && c != '/') {
      return "may hold only letters, digits and . _ - : /";
    }
  }
  return "";
}

namespace {

// A model path must be a GGUF file or a directory (checked again by the loader).
std::string check_model_path(const std::string& path) {
  std::error_code ec;
  const fs::file_type kind = fs::status(path, ec).type();
  if (ec || kind == fs::file_type::not_found) return "model not found: " + path;
  // A FIFO would block the loader's open forever.
  if (kind != fs::file_type::regular && kind != fs::file_type::directory) {
    return "model path " + path +
           " is not a regular file or a directory (a GGUF file or an HF model directory)";
  }
  return "";
}

}  // namespace

std::string resolve_served_models(const std::vector<std::string>& model_args,
                                  const std::string& models_dir, std::vector<ServedModel>& out) {
  out.clear();
  for (const std::string& arg : model_args) {
    ServedModel m;
    const size_t eq = arg.find('=');
    // NAME=PATH when what precedes '=' is a valid name (no path separator: a path may hold '=').
    if (eq != std::string::npos && eq > 0 && arg.substr(0, eq).find('/') == std::string::npos &&
        check_model_name(arg.substr(0, eq)).empty()) {
      m.name = arg.substr(0, eq);
      m.path = arg.substr(eq + 1);
    } else {
      m.path = arg;
      m.name = fs::path(arg).stem().string();
    }
    if (m.path.empty()) return "-m " + arg + ": no path";
    if (std::string err = check_model_path(m.path); !err.empty()) return err;
    if (std::string err = check_model_name(m.name); !err.empty()) {
      return "-m " + arg + ": the model name '" + m.name + "' " + err +
             " (give one as -m NAME=PATH)";
    }
    out.push_back(std::move(m));
  }
  if (!models_dir.empty()) {
    std::error_code ec;
    if (!fs::is_directory(models_dir, ec)) return "--models-dir: not a directory: " + models_dir;
    std::vector<ServedModel> found;
    for (fs::directory_iterator it(models_dir, ec), end; !ec && it != end; it.increment(ec)) {
      const fs::path& p = it->path();
      std::error_code kind_ec;
      const bool is_dir = fs::is_directory(p, kind_ec);
      if (is_dir ? fs::is_regular_file(p / "config.json", kind_ec)
                 : (p.extension() == ".gguf" && fs::is_regular_file(p, kind_ec))) {
        found.push_back({is_dir ? p.filename().string() : p.stem().string(), p.string()});
      }
    }
    if (ec) return "--models-dir " + models_dir + ": " + ec.message();
    std::sort(found.begin(), found.end(),
              [](const ServedModel& a, const ServedModel& b) { return a.name < b.name; });
    if (found.empty()) {
      return "--models-dir " + models_dir +
             ": no *.gguf file or model directory (with config.json) in it";
    }
    for (ServedModel& m : found) {
      if (std::string err = check_model_name(m.name); !err.empty()) {
        return "--models-dir: " + m.path + ": the model name '" + m.name + "' " + err +
               " (rename the file)";
      }
      out.push_back(std::move(m));
    }
  }
  std::set<std::string> names;
  for (const ServedModel& m : out) {
    if (!names.insert(m.name).second) {
      return "two models are named '" + m.name + "' (name one with -m NAME=PATH)";
    }
  }
  return "";
}

}  // namespace pagoda::cli
