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
  // Rank 0 of a tensor-parallel job: tells the other ranks' run_worker to return.
  virtual ~Model();
  const ModelConfig& config() const { return config_; }
  // The device the weights live on and forward passes run on; KV storage for this model is
  // allocated there too (backend::KvStorage::create(model.backend(), model.kv_layout(), ...)).
  // kv_groups: a hybrid model's layer groups share arrays (model::kv_layout; then every forward
  // pass gives each sequence its sliding_block_table).
  backend::Backend& backend() const { return backend_; }
  backend::KvLayout kv_layout(bool kv_groups = false) const {
    return model::kv_layout(config_, kv_groups);
  }
  // Bytes of weights this process holds in memory it owns (the backend's copies; a shard's
  // under tensor parallelism), for the startup report. 0 when unknown.
  virtual uint64_t weight_bytes() const { return 0; }

  // The longest sequence this model will serve (the engine's max_model_len; until called, the
  // model's config().context_length). A LongRoPE model (rope_factors_long/short tensors) rotates
  // by its long factor table when that exceeds config().rope_orig_ctx, else by its short one
  // (use_long_rope_factors). Call before the first forward pass (keys cached under one table are
  // wrong under the other), on every rank of a parallel job alike. No-op for other models.
  virtual void set_served_context(int32_t tokens) { (void)tokens; }

  // logits: [batch.logit_rows.size(), vocab_size] f32. kv_layers: one view per layer.
  // Validates the batch (token ids < vocab, positions covered by block tables, rows in range)
  // and returns invalid_argument rather than touching memory it should not.
  // Under tensor parallelism (backend().tensor_parallel().size > 1) rank 0 first sends the
  // batch to the other ranks (model/step_message.h), whose run_worker makes the same pass; the
  // logits are complete on every rank.
  Status forward(const ForwardBatch& batch, std::span<const kernels::KvLayerView> kv_layers,
                 float* logits);

  // On a tensor-parallel rank other than 0: runs every forward pass rank 0's model runs, on KV
  // caches of the same shapes (this rank's KV heads), until rank 0's model is destroyed. A
  // message or pass that fails aborts the whole job (rank 0 could not go on without this rank).
  // failed_precondition on rank 0 or without tensor parallelism.
  Status run_worker();

  // Cross-encoders (config().num_labels > 0): the classifier head on `rows` pooled rows
  // ([rows, hidden_dim] f32) into scores ([rows, num_labels] f32). failed_precondition without one.
  virtual Status classify(const float* pooled, int64_t rows, float* scores) const;

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
