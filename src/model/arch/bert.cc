// bert: BERT-family encoders (GGUF `bert`, as llama.cpp's converter writes BertModel): see
// model/encoder.h. Embedding models only (no LM head); served through pooling requests.
#include "model/arch/arch.h"
#include "model/encoder.h"

namespace pagoda::model {
namespace {

Status configure_bert(ModelConfig& c) {
  c.encoder = true;
  c.has_qkv_bias = true;
  c.tied_embeddings = true;  // no output matrix
  return Status();
}

Result<std::unique_ptr<Model>> build_bert(const ModelConfig& config,
                                          std::unique_ptr<TensorSource> source,
                                          backend::Backend& backend) {
  PAGODA_RETURN_IF_ERROR(validate_config(config));
  ModelConfig c = config;
  PAGODA_ASSIGN_OR_RETURN(c.num_labels, classifier_labels(*source, c.hidden_dim));
  if (c.pooling_type == 4 && c.num_labels == 0) {
    return invalid_argument("pooling_type 4 (rank) needs a classifier head (cls.output.weight)");
  }
  WeightBinder binder(*source);
  PAGODA_ASSIGN_OR_RETURN(EncoderWeights w, bind_encoder_weights(c, binder));
  return std::unique_ptr<Model>(
      std::make_unique<EncoderModel>(c, std::move(w), std::move(source), backend));
}

}  // namespace

const ArchDef kBertArch = {"bert", &configure_bert, &build_bert};

}  // namespace pagoda::model
