// Hugging Face BERT directories: BertModel (embeddings) and BertForSequenceClassification
// (cross-encoders: CLS -> pooler dense + tanh -> classifier), mapped onto the GGUF `bert` layout
// llama.cpp's converter writes (model/encoder.h binds it):
//
//   [bert.]embeddings.{word,position,token_type}_embeddings   token_embd / position_embd /
//                                                              token_types
//   [bert.]embeddings.LayerNorm                                token_embd_norm
//   [bert.]encoder.layer.N.attention.self.{query,key,value}    blk.N.attn_{q,k,v}
//   [bert.]encoder.layer.N.attention.output.dense / LayerNorm  blk.N.attn_output / _output_norm
//   [bert.]encoder.layer.N.intermediate.dense / output.dense   blk.N.ffn_up / ffn_down
//   [bert.]encoder.layer.N.output.LayerNorm                    blk.N.layer_output_norm
//   [bert.]pooler.dense                                        cls          (classifiers only)
//   classifier                                                 cls.output
//
// (weights and biases alike). Skipped: the position_ids buffer, the pre-training heads
// (cls.predictions.*, cls.seq_relationship.*), and the pooler of a model without a classifier
// (BertModel's pooler is unused for embeddings; llama.cpp drops it too).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "base/status.h"
#include "format/hf_config.h"
#include "model/model_config.h"

namespace pagoda::loader {

// True for config.json files of the BERT family (architectures BertModel / BertForMaskedLM /
// BertForSequenceClassification, or model_type "bert" without architectures).
bool is_hf_bert(const format::HfConfig& hf);

// config.json -> the `bert` ModelConfig (through the architecture's configure and
// validate_config). Classifiers get pooling_type 4 (rank), the others 2 (CLS). Errors name the
// config.json field.
Result<model::ModelConfig> bert_config_from_hf(const format::HfConfig& hf,
                                               std::string* architecture);

// The GGUF name of a BERT tensor (see the table above); nullopt with *skip for tensors that carry
// nothing the model uses, nullopt without it for names pagoda cannot map.
std::optional<std::string> bert_gguf_name(std::string_view hf_name, bool* skip, int32_t* layer);

}  // namespace pagoda::loader
