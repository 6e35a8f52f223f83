// Model: a loaded decoder-only transformer. forward() runs one ForwardBatch against a paged KV
// cache the caller owns (the runner's KvStorage) and returns logits for the requested rows.
#pragma once

#include <memory>
#include <span>
#include <string>

#include "backend/backend.h"
#include "backend/kv_storage.h"
#include "base/status.h"
#include "kernels/attention.h"
#include "model/forward_batch.h"
#include "model/model_config.h"

namespace pagoda::model {

class Model {
 public:
  virtual ~Model() = default;
  const ModelConfig& config() const { return config_; }
  // The device the weights live on and forward passes run on; KV storage for this model is
  // allocated there too (backend::KvStorage::create(model.backend(), model.kv_layout(), ...)).
  backend::Backend& backend() const { return backend_; }
  backend::KvLayout kv_layout() const { return model::kv_layout(config_); }

  // logits: [batch.logit_rows.size(), vocab_size] f32. kv_layers: one view per layer.
  // Validates the batch (token ids < vocab, positions covered by block tables, rows in range)
  // and returns invalid_argument rather than touching memory it should not.
  Status forward(const ForwardBatch& batch, std::span<const kernels::KvLayerView> kv_layers,
                 float* logits);

 protected:
  Model(ModelConfig config, backend::Backend& backend)
      : config_(std::move(config)), backend_(backend) {}
  // Called after validation.
  virtual void forward_impl(const ForwardBatch& batch,
                            std::span<const kernels::KvLayerView> kv_layers, float* logits) = 0;
  ModelConfig config_;
  backend::Backend& backend_;
};

}  // namespace pagoda::model
