// Architecture registry: one ArchDef per supported `general.architecture`, each in its own
// arch/<name>.cc, listed once in arch/registry.cc.
#pragma once

#include <memory>
#include <span>
#include <string_view>

#include "base/status.h"
#include "model/model.h"
#include "model/model_config.h"
#include "model/tensor_source.h"

namespace pagoda::model {

struct ArchDef {
  std::string_view name;
  // Sets fields fixed by the architecture (rope style, biases) and checks arch constraints.
  Status (*configure)(ModelConfig& config);
  // Binds weights from `source` and builds the model (which keeps `source` alive).
  // Its weights go to `backend`'s memory and its forward passes run there.
  Result<std::unique_ptr<Model>> (*build)(const ModelConfig& config,
                                          std::unique_ptr<TensorSource> source,
                                          backend::Backend& backend);
};

const ArchDef* find_arch(std::string_view name);
std::span<const ArchDef* const> all_archs();

extern const ArchDef kLlamaArch;
extern const ArchDef kQwen2Arch;
extern const ArchDef kPhi3Arch;
extern const ArchDef kGemma2Arch;
extern const ArchDef kQwen2MoeArch;
extern const ArchDef kDeepseek2Arch;
extern const ArchDef kQwen3Arch;
extern const ArchDef kBertArch;       // an encoder (model/encoder.h)
extern const ArchDef kNomicBertArch;  // an encoder (model/encoder.h)
extern const ArchDef kQwen3MoeArch;
extern const ArchDef kGemma3Arch;

// The shared build for llama-family decoders (arch files may use it).
Result<std::unique_ptr<Model>> build_decoder(const ModelConfig& config,
                                             std::unique_ptr<TensorSource> source,
                                             backend::Backend& backend);

}  // namespace pagoda::model
