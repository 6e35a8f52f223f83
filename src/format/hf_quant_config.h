// The quantisation metadata of a Hugging Face directory: config.json's "quantization_config"
// object and bitsandbytes' per-tensor quant_state JSON, parsed into plain structs and checked
// against what pagoda can load. Every refusal is invalid_argument (malformed) or unimplemented
// (a real format variant pagoda does not load) naming the field, e.g.
// "config.json: quantization_config.bits is 3, not 4 or 8".
//
// Methods (the tensors each one stores are described in loader/hf/quant_repack.h):
//   "gptq"               bits 4|8, group_size -1|>0, desc_act, sym, checkpoint_format (or
//                        GPTQModel's "format") "gptq" (v1: zero points stored minus one) or
//                        "gptq_v2" (stored as they are)
//   "awq"                bits 4, group_size > 0, zero_point true, version "gemm"
//   "fp8" / "fbgemm_fp8" float8_e4m3fn weights with weight_scale (or weight_scale_inv with
//                        weight_block_size [rows, cols])
//   "compressed-tensors" format "float-quantized" (8-bit float weights) or "int-quantized"
//                        (8-bit int weights, symmetric), strategy "tensor" or "channel"; every
//                        config group must have the same weight scheme
//   "bitsandbytes"       load_in_4bit with bnb_4bit_quant_type "nf4" (double quant optional)
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "base/status.h"

namespace pagoda::format {

enum class HfQuantMethod : uint8_t {
  kGptq,
  kAwq,
  kFp8,   // 8-bit float weights: "fp8", "fbgemm_fp8", compressed-tensors float-quantized
  kInt8,  // 8-bit int weights: compressed-tensors int-quantized (W8A8)
  kNf4,   // bitsandbytes 4-bit NormalFloat
};

std::string_view hf_quant_method_name(HfQuantMethod method);

struct HfQuantConfig {
  HfQuantMethod method = HfQuantMethod::kGptq;
  std::string quant_method;  // as written: "gptq", "compressed-tensors", ...
  // GPTQ / AWQ.
  int32_t bits = 0;
  int32_t group_size = 0;  // -1 (GPTQ): one group spans all input features
  bool desc_act = false;   // GPTQ: act-order; g_idx then maps columns to groups
  bool sym = true;         // GPTQ
  // GPTQ v1 (checkpoint_format "gptq", AutoGPTQ's historical convention): the stored zero point
  // is z - 1, so z = stored + 1. gptq_v2 stores z. Always false for AWQ.
  bool zeros_minus_one = false;
  // FP8: weight_block_size [rows, cols] of the scale blocks ("fp8" method); empty otherwise.
  std::vector<int64_t> weight_block_size;
  // compressed-tensors: "tensor" or "channel" (as declared; the scale's shape decides).
  std::string weight_strategy;
  // bitsandbytes: bnb_4bit_use_double_quant.
  bool double_quant = false;
};

// config.json's quantization_config; nullopt when the file has none (or it is null).
Result<std::optional<HfQuantConfig>> parse_hf_quant_config(std::string_view config_json);

// bitsandbytes' quant_state, stored as the bytes of a U8 tensor
// "<prefix>.weight.quant_state.bitsandbytes__nf4".
struct BnbQuantState {
  std::string quant_type;  // "nf4"
  int64_t blocksize = 0;
  std::string dtype;           // the dequantised dtype: "float16", "bfloat16" or "float32"
  std::vector<int64_t> shape;  // [rows, cols]
  bool nested = false;         // absmax is itself 8-bit quantised
  int64_t nested_blocksize = 0;
  float nested_offset = 0.0f;
};

Result<BnbQuantState> parse_bnb_quant_state(std::string_view json_text);

}  // namespace pagoda::format
