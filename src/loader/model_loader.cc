#include "loader/model_loader.h"

#include <filesystem>

#include "format/gguf_file.h"
#include "kernels/quant.h"
#include "loader/gguf_config.h"
#include "loader/gguf_tensor_source.h"
#include "loader/gguf_vocab.h"
#include "loader/hf/hf_checkpoint.h"
#include "loader/hf/hf_tokenizer_files.h"
#include "loader/requantized_tensor_source.h"
#include "model/arch/arch.h"

namespace pagoda::loader {

using model::ArchDef;
using model::ModelConfig;

Result<std::unique_ptr<model::Model>> load_model_from_gguf(
    std::shared_ptr<const format::GgufFile> file, backend::Backend& backend) {
  PAGODA_ASSIGN_OR_RETURN(ModelConfig config, config_from_gguf(*file));
  const ArchDef* arch = model::find_arch(config.arch);
  if (arch == nullptr) {
    std::string names;
    for (const ArchDef* a : model::all_archs())
      names += (names.empty() ? "" : ", ") + std::string(a->name);
    return unimplemented("architecture '{}' is not supported (supported: {})", config.arch, names);
  }
  PAGODA_RETURN_IF_ERROR(arch->configure(config));
  return arch->build(config, make_gguf_tensor_source(std::move(file)), backend);
}

namespace {

// The tokenizer's vocabulary may be smaller than the model's (padded embeddings), not larger.
Status check_vocab_sizes(const std::string& path, const LoadedModel& out) {
  if (out.model->config().vocab_size < out.tokenizer->num_tokens()) {
    return invalid_argument("{}: model vocab {} is smaller than the tokenizer's {}", path,
                            out.model->config().vocab_size, out.tokenizer->num_tokens());
  }
  return Status();
}

Result<LoadedModel> load_hf_model(const std::string& path, backend::Backend& backend) {
  PAGODA_ASSIGN_OR_RETURN(std::unique_ptr<HfCheckpoint> opened, HfCheckpoint::open(path));
  std::shared_ptr<const HfCheckpoint> checkpoint(std::move(opened));
  LoadedModel out;
  out.path = path;
  out.generation = checkpoint->generation_defaults();
  PAGODA_ASSIGN_OR_RETURN(HfTokenizerFiles files, load_hf_tokenizer(path));
  out.chat_template = std::move(files.chat_template);
  auto tok = tokenizer::Tokenizer::create(std::move(files.vocab));
  if (!tok.ok()) return tok.status().with_context(path + "/tokenizer.json");
  out.tokenizer = std::move(tok).value();
  const ModelConfig config = checkpoint->config();
  const ArchDef* arch = model::find_arch(config.arch);
  if (arch == nullptr) return internal_error("architecture {} is not registered", config.arch);
  auto model = arch->build(config, make_hf_tensor_source(std::move(checkpoint)), backend);
  if (!model.ok()) return model.status().with_context(path);
  out.model = std::move(model).value();
  PAGODA_RETURN_IF_ERROR(check_vocab_sizes(path, out));
  return out;
}

}  // namespace

Result<std::unique_ptr<tokenizer::Tokenizer>> load_tokenizer(const std::string& path,
                                                             std::string* chat_template) {
  std::error_code ec;
  if (HfCheckpoint::is_model_dir(path) ||
      std::filesystem::is_regular_file(std::filesystem::path(path) / "tokenizer.json", ec)) {
    PAGODA_ASSIGN_OR_RETURN(HfTokenizerFiles files, load_hf_tokenizer(path));
    if (chat_template != nullptr) *chat_template = std::move(files.chat_template);
    auto tok = tokenizer::Tokenizer::create(std::move(files.vocab));
    if (!tok.ok()) return tok.status().with_context(path + "/tokenizer.json");
    return tok;
  }
  PAGODA_ASSIGN_OR_RETURN(std::unique_ptr<format::GgufFile> file, format::GgufFile::open(path));
  auto vocab = load_vocab(*file);
  if (!vocab.ok()) return vocab.status().with_context(path);
  if (chat_template != nullptr && file->find("tokenizer.chat_template") != nullptr) {
    PAGODA_ASSIGN_OR_RETURN(std::string_view tmpl, file->get_string("tokenizer.chat_template"));
    *chat_template = std::string(tmpl);
  }
  auto tok = tokenizer::Tokenizer::create(std::move(vocab).value());
  if (!tok.ok()) return tok.status().with_context(path);
  return tok;
}

Result<LoadedModel> load_model(const std::string& path, backend::Backend& backend) {
  if (HfCheckpoint::is_model_dir(path)) return load_hf_model(path, backend);
  PAGODA_ASSIGN_OR_RETURN(std::unique_ptr<format::GgufFile> opened, format::GgufFile::open(path));
  std::shared_ptr<const format::GgufFile> file(std::move(opened));
  LoadedModel out;
  out.path = path;
  PAGODA_ASSIGN_OR_RETURN(tokenizer::Vocab vocab, load_vocab(*file));
  PAGODA_ASSIGN_OR_RETURN(out.tokenizer, tokenizer::Tokenizer::create(std::move(vocab)));
  if (file->find("tokenizer.chat_template") != nullptr) {
    PAGODA_ASSIGN_OR_RETURN(std::string_view tmpl, file->get_string("tokenizer.chat_template"));
    out.chat_template = std::string(tmpl);
  }
  auto model = load_model_from_gguf(file, backend);
  if (!model.ok()) return model.status().with_context(path);
  out.model = std::move(model).value();
  if (out.model->config().vocab_size != out.tokenizer->num_tokens()) {
    // Models may pad the embedding beyond the tokenizer; fewer rows than tokens is an error.
    if (out.model->config().vocab_size < out.tokenizer->num_tokens()) {
      return invalid_argument("{}: model vocab {} is smaller than the tokenizer's {}", path,
                              out.model->config().vocab_size, out.tokenizer->num_tokens());
    }
  }
  return out;
}

Result<std::unique_ptr<model::Model>> load_requantized_model(const std::string& path,
                                                             tensor::DType dtype,
                                                             backend::Backend& backend) {
  if (!kernels::can_quantize(dtype)) {
    return invalid_argument("weights cannot be re-encoded as {}", tensor::dtype_name(dtype));
  }
  ModelConfig config;
  std::unique_ptr<model::TensorSource> source;
  if (HfCheckpoint::is_model_dir(path)) {
    PAGODA_ASSIGN_OR_RETURN(std::unique_ptr<HfCheckpoint> opened, HfCheckpoint::open(path));
    std::shared_ptr<const HfCheckpoint> checkpoint(std::move(opened));
    config = checkpoint->config();
    source = make_hf_tensor_source(std::move(checkpoint));
  } else {
    PAGODA_ASSIGN_OR_RETURN(std::unique_ptr<format::GgufFile> opened, format::GgufFile::open(path));
    std::shared_ptr<const format::GgufFile> file(std::move(opened));
    PAGODA_ASSIGN_OR_RETURN(config, config_from_gguf(*file));
    source = make_gguf_tensor_source(std::move(file));
  }
  const ArchDef* arch = model::find_arch(config.arch);
  if (arch == nullptr) return unimplemented("architecture '{}' is not supported", config.arch);
  // (A checkpoint's config is configured already, as load_hf_model uses it.)
  if (!HfCheckpoint::is_model_dir(path)) PAGODA_RETURN_IF_ERROR(arch->configure(config));
  auto model = arch->build(
      config, std::make_unique<RequantizedTensorSource>(std::move(source), dtype), backend);
  if (!model.ok()) return model.status().with_context(path);
  return model;
}

}  // namespace pagoda::loader
