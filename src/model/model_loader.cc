#include "model/model_loader.h"

#include "format/gguf_file.h"
#include "model/arch/arch.h"
#include "model/gguf_vocab.h"

namespace pagoda::model {

Result<std::unique_ptr<Model>> load_model_from_gguf(std::shared_ptr<const format::GgufFile> file) {
  PAGODA_ASSIGN_OR_RETURN(ModelConfig config, config_from_gguf(*file));
  const ArchDef* arch = find_arch(config.arch);
  if (arch == nullptr) {
    std::string names;
    for (const ArchDef* a : all_archs())
      names += (names.empty() ? "" : ", ") + std::string(a->name);
    return unimplemented("architecture '{}' is not supported (supported: {})", config.arch, names);
  }
  PAGODA_RETURN_IF_ERROR(arch->configure(config));
  return arch->build(config, make_gguf_tensor_source(std::move(file)));
}

Result<LoadedModel> load_model(const std::string& path) {
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
  auto model = load_model_from_gguf(file);
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

}  // namespace pagoda::model
