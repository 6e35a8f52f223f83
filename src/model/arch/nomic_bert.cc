// nomic-bert: nomic-embed-text encoders (GGUF `nomic-bert`, llama.cpp's LLM_ARCH_NOMIC_BERT): the
// BERT block with rotary positions, a fused attn_qkv and a SwiGLU FFN; see model/encoder.h.
// Embedding models only (no LM head, no classifier); served through pooling requests.
#include "model/arch/arch.h"
#include "model/encoder.h"

namespace pagoda::model {
namespace {

Status configure_nomic_bert(ModelConfig& c) {
  c.encoder = true;
  c.tied_embeddings = true;  // no output matrix
  // llama.cpp runs nomic-bert's rope as NEOX (HF nomic-bert: rotary_emb_interleaved false).
  c.rope_style = kernels::RopeStyle::kNeox;
  // Its converter asserts rotary_emb_fraction == 1 (the whole head rotates), no rotary scaling and
  // no experts (those are `nomic-bert-moe`); a file that says otherwise is refused by name.
  if (c.rope_dims != c.head_dim) {
    return unimplemented(
        "nomic-bert with rope.dimension_count {} of head_dim {} (a rotary fraction other than "
        "1) is not supported",
        c.rope_dims, c.head_dim);
  }
  if (c.rope_freq_scale != 1.0f || c.rope_ext_factor != 0.0f) {
    return unimplemented("nomic-bert with rope scaling is not supported");
  }
  if (c.num_experts > 0) {
    return unimplemented("nomic-bert with experts (nomic-bert-moe) is not supported");
  }
  return Status();
}

Result<std::unique_ptr<Model>> build_nomic_bert(const ModelConfig& config,
                                                std::unique_ptr<TensorSource> source,
                                                backend::Backend& backend) {
  PAGODA_RETURN_IF_ERROR(validate_config(config));
  if (config.pooling_type == 4) {
    return invalid_argument("nomic-bert.pooling_type 4 (rank) needs a classifier head");
  }
  WeightBinder binder(*source);
  PAGODA_ASSIGN_OR_RETURN(EncoderWeights w,
                          bind_encoder_weights(config, binder, EncoderKind::kNomicBert));
  return std::unique_ptr<Model>(
      std::make_unique<EncoderModel>(config, std::move(w), std::move(source), backend));
}

}  // namespace

const ArchDef kNomicBertArch = {"nomic-bert", &configure_nomic_bert, &build_nomic_bert};

}  // namespace pagoda::model
