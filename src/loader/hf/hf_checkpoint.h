// HfCheckpoint: a Hugging Face model directory opened for pagoda: config.json mapped onto a
// ModelConfig, generation_config.json onto GenerationDefaults, and the safetensors weights
// (model.safetensors, or the shards model.safetensors.index.json lists) mmapped and presented
// under GGUF tensor names with ggml dims, so the GGUF model code binds them unchanged:
//
//   model.embed_tokens.weight                        token_embd.weight
//   model.norm.weight / lm_head.weight               output_norm.weight / output.weight
//   model.layers.N.input_layernorm.weight            blk.N.attn_norm.weight
//   model.layers.N.post_attention_layernorm.weight   blk.N.ffn_norm.weight
//   model.layers.N.self_attn.{q,k,v}_proj.{weight,bias}  blk.N.attn_{q,k,v}.{weight,bias}
//   model.layers.N.self_attn.o_proj.weight           blk.N.attn_output.weight
//   model.layers.N.mlp.{gate,up,down}_proj.weight    blk.N.ffn_{gate,up,down}.weight
//   model.layers.N.block_sparse_moe.gate.weight      blk.N.ffn_gate_inp.weight      (Mixtral)
//   model.layers.N.block_sparse_moe.experts.E.{w1,w3,w2}.weight
//                                                    blk.N.ffn_{gate,up,down}.E.weight
//   model.layers.N.self_attn.qkv_proj.weight         blk.N.attn_qkv.weight          (Phi-3)
//   model.layers.N.mlp.gate_up_proj.weight           blk.N.ffn_up.weight            (Phi-3)
//   (rotary_emb.inv_freq buffers are skipped; any other name is unimplemented.)
//
// Architectures: LlamaForCausalLM, MistralForCausalLM, MixtralForCausalLM → "llama";
// Qwen2ForCausalLM → "qwen2"; Phi3ForCausalLM → "phi3". sliding_window applies to every layer
// for Phi-3, Mistral and Mixtral, and for Qwen2 with use_sliding_window and max_window_layers 0
// (another max_window_layers below the depth is refused); LlamaForCausalLM ignores it;
// the families in hf_families.h (Gemma 2, Qwen2-MoE, DeepSeek-V2) with their own names.
// All run rotate-half (NEOX) RoPE on the weights as stored (HF q/k rows are not permuted the
// way llama GGUF files are). rope_scaling linear → freq scale;
// llama3 → per-dimension factors computed like llama.cpp's converter and exposed as a
// synthetic "rope_freqs.weight" tensor; other scaling types are unimplemented.
//
// Quantised checkpoints (config.json "quantization_config": GPTQ, AWQ, FP8, INT8, NF4): each
// quantised Linear's tensors (P.qweight + P.qzeros + P.scales + P.g_idx, P.weight +
// P.weight_scale, ...) are repacked at open into one tensor named after P.weight, owned by the
// checkpoint, in the exact type quant_repack.h chooses (Q4_0 / Q5_0 / Q8_0 / F16 / BF16 / F32).
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "base/status.h"
#include "format/hf_config.h"
#include "format/hf_quant_config.h"
#include "format/safetensors.h"
#include "loader/hf/generation_defaults.h"
#include "model/model_config.h"
#include "model/tensor_source.h"

namespace pagoda::loader {

// One weight under its GGUF name. dims in ggml order (dims[0] contiguous = the safetensors
// shape reversed); data points into a shard's mapping (or the checkpoint's own rope factors).
struct HfTensor {
  std::string gguf_name;
  std::string hf_name;  // "" for synthetic tensors
  tensor::DType dtype = tensor::DType::kF32;
  int32_t n_dims = 0;
  int64_t dims[4] = {1, 1, 1, 1};
  const uint8_t* data = nullptr;
  uint64_t size_bytes = 0;
  int32_t layer = -1;   // blk index, -1 for global tensors
  int32_t expert = -1;  // Mixtral expert index, -1 otherwise
  // A repacked act-order matrix's [dims[0]] input order, and a repacked asymmetric one's zero
  // term (model::TensorRef's fields of the same names), or null.
  const int32_t* input_order = nullptr;
  const float* zero_term = nullptr;
  int64_t zero_group = 0;
};

class HfCheckpoint {
 public:
  // True if `path` is a directory holding a config.json.
  static bool is_model_dir(const std::string& path);

  // Reads the JSON files, maps the architecture, opens and validates every shard, maps every
  // tensor name and checks the index (each tensor in the file it names, no tensor twice).
  // Shapes are checked later, by the model's weight binding. Errors start with the path.
  static Result<std::unique_ptr<HfCheckpoint>> open(const std::string& dir);

  const std::string& dir() const { return dir_; }
  const format::HfConfig& hf_config() const { return hf_config_; }
  // The ModelConfig the model code runs with (rope_style kNeox, tied_embeddings when there is
  // no lm_head.weight), already through the architecture's configure() and validate_config().
  const model::ModelConfig& config() const { return config_; }
  const std::string& architecture() const { return architecture_; }  // "LlamaForCausalLM"
  const GenerationDefaults& generation_defaults() const { return generation_; }
  const std::vector<HfTensor>& tensors() const { return tensors_; }
  const HfTensor* find(std::string_view gguf_name) const;
  // Llama-3 rope factors ([rope_dims / 2]); empty without llama3 scaling.
  const std::vector<float>& rope_freq_factors() const { return rope_freq_factors_; }
  const std::vector<std::shared_ptr<const format::SafetensorsFile>>& shards() const {
    return shards_;
  }
  // config.json's quantization_config, when the checkpoint is quantised.
  const std::optional<format::HfQuantConfig>& quant_config() const { return quant_config_; }
  // rope_scaling "linear" factor (1 when none).
  double rope_linear_factor() const { return rope_linear_factor_; }

 private:
  HfCheckpoint() = default;
  Status open_shards();
  Status map_tensors();
  // The largest number of values any Linear of this config can have (bounds repacking).
  int64_t max_matrix_elements() const;

  // Replaces a Gemma norm weight w by an F32 copy of 1 + w owned by the checkpoint.
  Status add_one(HfTensor& t);
  // A computed 1-D F32 tensor over `values`, which the checkpoint keeps (rope_freq_factors_,
  // owned_; a vector's buffer stays put when the vector moves).
  void add_f32_tensor(std::string name, const std::vector<float>& values);

  std::string dir_;
  format::HfConfig hf_config_;
  model::ModelConfig config_;
  std::string architecture_;
  GenerationDefaults generation_;
  std::vector<std::shared_ptr<const format::SafetensorsFile>> shards_;
  std::optional<format::HfWeightIndex> index_;
  std::vector<HfTensor> tensors_;
  std::vector<float> rope_freq_factors_;
  std::optional<format::HfQuantConfig> quant_config_;
  std::vector<std::vector<uint8_t>> repacked_;      // storage of repacked quantised weights
  std::vector<std::vector<int32_t>> input_orders_;  // their act-order input orders
  std::vector<std::vector<float>> zero_terms_;      // and zero terms

  std::vector<std::vector<float>> owned_;  // tensors the checkpoint computed (Gemma's 1 + w)
  double rope_linear_factor_ = 1.0;
};

// A TensorSource over the checkpoint's tensors (GGUF names), keeping it alive.
std::unique_ptr<model::TensorSource> make_hf_tensor_source(
    std::shared_ptr<const HfCheckpoint> checkpoint);

// config.json → ModelConfig (arch, sizes, rope); exposed for tests. Fills `architecture`.
Result<model::ModelConfig> model_config_from_hf(const format::HfConfig& hf,
                                                std::string* architecture);

// Llama-3 RoPE factors for rope dims `rope_dims` (llama.cpp's convert_hf_to_gguf formula).
std::vector<float> llama3_rope_factors(const format::HfRopeScaling& scaling, float rope_theta,
                                       int32_t rope_dims);

// The GGUF name of a Hugging Face tensor name: nullopt with *skip = true for buffers that carry
// no weights (rotary_emb.inv_freq), nullopt with *skip = false for names pagoda cannot map.
// `layer`/`expert` receive the indices in the name (-1 if none). `arch` (ModelConfig::arch) picks
// the family's own names (hf_families.h) before the llama ones.
std::optional<std::string> gguf_name_of(std::string_view hf_name, bool* skip, int32_t* layer,
                                        int32_t* expert, std::string_view arch = {});

// Reads a whole small file of the directory (config files, tokenizer.json); not_found if absent.
Result<std::string> read_model_file(const std::string& dir, const std::string& name,
                                    uint64_t max_bytes);

}  // namespace pagoda::loader
