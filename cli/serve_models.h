// The models `pagoda serve` serves: repeatable `-m [NAME=]PATH` and `--models-dir DIR` (every
// *.gguf file and every Hugging Face model directory (config.json inside) in DIR, named after
// the file's stem / the directory's name), with their names checked (1..128 of letters, digits
// and . _ - : /, starting with a letter or digit; no two alike).
#pragma once

#include <string>
#include <vector>

namespace pagoda::cli {

struct ServedModel {
  std::string name;
  std::string path;
};

// "" when `name` is a valid served-model name, else why not.
std::string check_model_name(const std::string& name);

// Resolves `-m` values (each "PATH" or "NAME=PATH"; a PATH's name is its file stem) and the
// directory (may be ""). An error message ("" when fine) naming the bad value; `out` in order:
// the -m models, then the directory's entries sorted by name.
std::string resolve_served_models(const std::vector<std::string>& model_args,
                                  const std::string& models_dir, std::vector<ServedModel>& out);

}  // namespace pagoda::cli
