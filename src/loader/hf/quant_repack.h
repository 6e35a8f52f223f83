// Quantised Hugging Face checkpoints (config.json "quantization_config") repacked at load time into
// tensor types the kernels stream, keeping every dequantised value exactly. A quantised Linear
// with prefix P ("model.layers.0.self_attn.q_proj") is stored as ([out, in] is the Linear's
// weight; W[n][k] the value of output n, input k):
//
//   GPTQ  P.qweight I32 [in * bits / 32, out]: input k of output n at bits bits * (k % (32 / bits))
//           of qweight[k / (32 / bits)][n]; P.qzeros I32 [groups, out * bits / 32], packed the
//           same way along outputs; P.scales F16 [groups, out]; P.g_idx I32 [in] (optional; the
//           group of input k, default k / group_size; act-order checkpoints permute it).
//           W[n][k] = scales[g][n] * (q - z), g = g_idx[k], z = qzeros + 1 in v1 checkpoints
//           ("zeros stored minus one"), qzeros as stored in gptq_v2.
//   AWQ   P.qweight I32 [in, out / 8], P.qzeros I32 [in / group, out / 8], P.scales F16
//           [in / group, out]; nibble i (bits 4i) of word c holds output 8c + {0,2,4,6,1,3,5,7}[i].
//           W[n][k] = scales[k / group][n] * (q - z).
//   FP8   P.weight F8_E4M3 [out, in] with P.weight_scale (or P.weight_scale_inv) F32/BF16/F16 of
//           shape [] or [1] (per tensor), [out] or [out, 1] (per channel), or [ceil(out / bo),
//           ceil(in / bi)] for weight_block_size [bo, bi]. W = f32(w) * f32(scale), rounded to f32.
//           P.input_scale (static activation scale) is accepted and not used.
//   INT8  P.weight I8 [out, in], P.weight_scale as FP8's (per tensor or channel); an optional
//           P.weight_zero_point must be all zero. W = f32(q * scale).
//   NF4   P.weight U8 (two 4-bit codes per byte, the first in the high nibble, over the row-major
//           [out, in] weight), P.weight.quant_map F32 [16], P.weight.absmax (F32 [blocks], or U8
//           with P.weight.nested_absmax F32 and P.weight.nested_quant_map F32 [256] when double
//           quantised), P.weight.quant_state.bitsandbytes__nf4 (U8 bytes of a JSON object, see
//           format/hf_quant_config.h). absmax[b] = nested_quant_map[a[b]] * nested_absmax[b /
//           nested_blocksize] + nested_offset (f32); W = quant_map[code] * absmax[i / blocksize]
//           (f32), rounded to the state's dtype.
//
// The stored type is the smallest exact one (docs/design-notes.md, "Quantised HF checkpoints"):
// GPTQ/AWQ with one group per 32-aligned run of inputs become Q4_0 (every q - z in [-8, 7]), Q5_0
// (in [-16, 15]) or Q8_0 (in [-128, 127]) with the F16 scale as the block scale. Zero points
// other than the type's own offset (asymmetric 4-bit: AWQ, GPTQ sym=false; 8-bit) keep the
// fastest block type instead: Q4_0 levels q - 8 (Q8_0: q - 128) with the scale s, and a zero term
// s * (8 - z) (s * (128 - z)) per group and output (RepackedWeight::zero_term, which the matmul
// adds as zero term x the input's group sums); s (q - z) = s (q - 8) + s (8 - z) exactly in f32.
// That needs groups of a fixed size G, a multiple of 32 (group -1: all inputs). Act-order GPTQ
// (g_idx not ascending) is stored with its inputs sorted by group (stably), so each group's
// columns are contiguous, plus that order (RepackedWeight::input_order, which the matmul applies
// to its input): the same blocks (and zero term) when every group then fills whole 32-runs.
// Other groupings or wider offsets become F32 in file order (s * (q - z) is exact in f32). FP8 and
// NF4 become F16 when every value is an F16 (NF4 with dtype float16 always is), else BF16 / F32.
// INT8 becomes Q8_0 when every scale is an F16 and in % 32 == 0, else F16 / F32 as above.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <string_view>
#include <vector>

#include "base/status.h"
#include "format/hf_quant_config.h"
#include "format/safetensors.h"
#include "tensor/dtype.h"

namespace pagoda::loader {

// A repacked [rows, cols] matrix (rows = output features), owned.
struct RepackedWeight {
  tensor::DType dtype = tensor::DType::kF32;
  int64_t rows = 0;
  int64_t cols = 0;
  std::vector<uint8_t> bytes;  // rows * row_size_bytes(dtype, cols)
  // Empty, or [cols]: stored column j holds input input_order[j] (a permutation; see above).
  std::vector<int32_t> input_order;
  // Empty, or [ceil(cols / zero_group), rows] f32: the zero term of stored group g and output r
  // at g * rows + r (kernels::WeightView::zero_term).
  std::vector<float> zero_term;
  int64_t zero_group = 0;
};

// Finds a checkpoint tensor by its Hugging Face name (any shard); null when absent.
using StTensorLookup = std::function<const format::StTensor*(std::string_view)>;

// If `name` is the main tensor of a quantised Linear in a `config` checkpoint (P.qweight for
// GPTQ/AWQ; P.weight of type F8_E4M3 / I8 / U8 for FP8 / INT8 / NF4), returns P; else "".
std::string quantized_linear_prefix(const format::HfQuantConfig& config,
                                    const format::StTensor& tensor);

// True if `name` is a companion tensor a quantised Linear's repacking reads (P.qzeros,
// P.scales, P.g_idx, P.weight_scale, P.weight.absmax, ...): it has no GGUF name of its own.
bool is_quant_companion(const format::HfQuantConfig& config, std::string_view name);

// Repacks the Linear with prefix `prefix`. Errors name the tensor and the field (shape, dtype,
// value range) and never allocate before the shapes are checked; a weight of more than
// `max_elements` values (the largest matrix the model's config allows) is refused. Appends to
// `companions` the names of the tensors it read.
Result<RepackedWeight> repack_quantized_linear(const format::HfQuantConfig& config,
                                               const std::string& prefix,
                                               const StTensorLookup& lookup, int64_t max_elements,
                                               std::vector<std::string>* companions);

}  // namespace pagoda::loader
