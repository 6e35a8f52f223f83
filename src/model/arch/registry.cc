#include <array>

#include "model/arch/arch.h"
#include "model/decoder.h"
#include "model/tensor_shard.h"

namespace pagoda::model {
namespace {
const std::array<const ArchDef*, 11> kArchs = {
    &kLlamaArch, &kQwen2Arch, &kPhi3Arch,     &kGemma2Arch, &kQwen2MoeArch, &kDeepseek2Arch,
    &kQwen3Arch, &kBertArch,  &kQwen3MoeArch, &kGemma3Arch, &kNomicBertArch};
}

const ArchDef* find_arch(std::string_view name) {
  for (const ArchDef* a : kArchs) {
    if (a->name == name) return a;
  }
  return nullptr;
}

std::span<const ArchDef* const> all_archs() {
  return kArchs;
}

Result<std::unique_ptr<Model>> build_decoder(const ModelConfig& config,
                                             std::unique_ptr<TensorSource> source,
                                             backend::Backend& backend) {
  PAGODA_RETURN_IF_ERROR(validate_config(config));
  WeightBinder binder(*source);
  PAGODA_ASSIGN_OR_RETURN(DecoderWeights weights, bind_decoder_weights(config, binder));
  // Pipeline stage first (its layers), then the tensor shard of those layers.
  const backend::PipelineParallel pp = backend.pipeline_parallel();
  ModelConfig staged = config;
  if (pp.size > 1) {
    PAGODA_ASSIGN_OR_RETURN(staged, stage_layers(config, pp.stage, pp.size, weights));
  }
  const backend::TensorParallel tp = backend.tensor_parallel();
  if (tp.size > 1) {
    PAGODA_ASSIGN_OR_RETURN(ModelConfig local,
                            shard_config(config, tp.rank, tp.size, tp.expert_parallel));
    local.num_layers = staged.num_layers;
    PAGODA_ASSIGN_OR_RETURN(TensorShard shard, shard_decoder_weights(config, tp.rank, tp.size,
                                                                     tp.expert_parallel, weights));
    return std::unique_ptr<Model>(std::make_unique<DecoderModel>(
        std::move(local), std::move(weights), std::move(source), backend, std::move(shard)));
  }
  if (pp.size > 1) {
    return std::unique_ptr<Model>(std::make_unique<DecoderModel>(
        std::move(staged), std::move(weights), std::move(source), backend, PipelineStage{}));
  }
  return std::unique_ptr<Model>(
      std::make_unique<DecoderModel>(config, std::move(weights), std::move(source), backend));
}

}  // namespace pagoda::model
