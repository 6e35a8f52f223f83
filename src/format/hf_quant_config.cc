#include "format/hf_quant_config.h"

#include <cmath>

#include "base/strict_json.h"
#include "format/json_fields.h"

namespace pagoda::format {
namespace {

using nlohmann::json;

constexpr std::string_view kFile = "config.json";
constexpr int64_t kMaxGroupSize = int64_t{1} << 20;

Result<json> parse_root(std::string_view text, std::string_view file) {
  PAGODA_ASSIGN_OR_RETURN(json root, parse_strict_json(text, file));
  if (!root.is_object()) return invalid_argument("{}: not a JSON object", file);
  return root;
}

Status read_required(const Fields& f, std::string_view field, std::optional<int64_t>& out) {
  PAGODA_RETURN_IF_ERROR(f.read(field, out));
  if (!out) return invalid_argument("{}: quantization_config.{} is missing", kFile, field);
  return Status();
}

Status parse_gptq_awq(const Fields& f, bool awq, HfQuantConfig& q) {
  std::optional<int64_t> bits, group;
  PAGODA_RETURN_IF_ERROR(read_required(f, "bits", bits));
  PAGODA_RETURN_IF_ERROR(read_required(f, "group_size", group));
  if (awq ? *bits != 4 : (*bits != 4 && *bits != 8)) {
    return unimplemented("{}: quantization_config.bits is {}, not {}", kFile, *bits,
                         awq ? "4" : "4 or 8");
  }
  if (*group == 0 || *group < -1 || *group > kMaxGroupSize || (awq && *group < 0)) {
    return invalid_argument("{}: quantization_config.group_size is {}, not {}", kFile, *group,
                            awq ? "a positive size" : "-1 or a positive size");
  }
  q.bits = static_cast<int32_t>(*bits);
  q.group_size = static_cast<int32_t>(*group);
  if (awq) {
    std::optional<bool> zero_point;
    std::optional<std::string> version;
    PAGODA_RETURN_IF_ERROR(f.read("zero_point", zero_point));
    PAGODA_RETURN_IF_ERROR(f.read("version", version));
    if (!zero_point.value_or(true)) {
      return unimplemented("{}: quantization_config.zero_point false is not supported", kFile);
    }
    std::string v = version.value_or("gemm");
    for (char& c : v)
      c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    if (v != "gemm") {
      return unimplemented("{}: quantization_config.version \"{}\" is not supported (gemm is)",
                           kFile, *version);
    }
    return Status();
  }
  std::optional<bool> desc_act, sym;
  std::optional<std::string> checkpoint_format, format;
  PAGODA_RETURN_IF_ERROR(f.read("desc_act", desc_act));
  PAGODA_RETURN_IF_ERROR(f.read("sym", sym));
  PAGODA_RETURN_IF_ERROR(f.read("checkpoint_format", checkpoint_format));
  PAGODA_RETURN_IF_ERROR(f.read("format", format));
  q.desc_act = desc_act.value_or(false);
  q.sym = sym.value_or(true);
  const std::string_view field = checkpoint_format ? "checkpoint_format" : "format";
  const std::string cf = checkpoint_format ? *checkpoint_format : format.value_or("gptq");
  if (cf == "gptq") {
    q.zeros_minus_one = true;
  } else if (cf == "gptq_v2") {
    q.zeros_minus_one = false;
  } else {
    return unimplemented(
        "{}: quantization_config.{} \"{}\" is not supported (gptq and gptq_v2 are)", kFile, field,
        cf);
  }
  return Status();
}

Status parse_fp8(const Fields& f, HfQuantConfig& q) {
  const json* b = f.get("weight_block_size");
  if (b == nullptr) return Status();
  if (!b->is_array() || b->size() != 2) {
    return f.wrong("weight_block_size", *b, "a list of two sizes [rows, cols]");
  }
  for (const json& e : *b) {
    if (!e.is_number_integer() || e.get<int64_t>() <= 0 || e.get<int64_t>() > kMaxGroupSize) {
      return f.wrong("weight_block_size", *b, "a list of two sizes [rows, cols]");
    }
    q.weight_block_size.push_back(e.get<int64_t>());
  }
  return Status();
}

// One config group's "weights" scheme → method + strategy.
Status parse_ct_weights(const json& weights, const std::string& field, HfQuantConfig& q) {
  if (!weights.is_object()) {
    return invalid_argument("{}: {} is {}, not an object", kFile, field, shorten(weights));
  }
  Fields w(weights, kFile, field + ".");
  std::optional<int64_t> num_bits;
  std::optional<std::string> type, strategy;
  std::optional<bool> symmetric, dynamic;
  PAGODA_RETURN_IF_ERROR(w.read("num_bits", num_bits));
  PAGODA_RETURN_IF_ERROR(w.read("type", type));
  PAGODA_RETURN_IF_ERROR(w.read("strategy", strategy));
  PAGODA_RETURN_IF_ERROR(w.read("symmetric", symmetric));
  PAGODA_RETURN_IF_ERROR(w.read("dynamic", dynamic));
  if (num_bits.value_or(0) != 8) {
    return unimplemented("{}: {}.num_bits is {}, not 8", kFile, field,
                         num_bits ? std::to_string(*num_bits) : "missing");
  }
  const std::string t = type.value_or("");
  HfQuantMethod method;
  if (t == "float") {
    method = HfQuantMethod::kFp8;
  } else if (t == "int") {
    method = HfQuantMethod::kInt8;
  } else {
    return unimplemented("{}: {}.type \"{}\" is not supported (float, int are)", kFile, field, t);
  }
  const std::string s = strategy.value_or("tensor");
  if (s != "tensor" && s != "channel") {
    return unimplemented("{}: {}.strategy \"{}\" is not supported (tensor, channel are)", kFile,
                         field, s);
  }
  if (!symmetric.value_or(true)) {
    return unimplemented("{}: {}.symmetric false is not supported", kFile, field);
  }
  if (dynamic.value_or(false)) {
    return unimplemented("{}: {}.dynamic true (weights quantised at run time) is not supported",
                         kFile, field);
  }
  if (!q.weight_strategy.empty() && (q.method != method || q.weight_strategy != s)) {
    return unimplemented("{}: {} differs from an earlier config group (mixed schemes)", kFile,
                         field);
  }
  q.method = method;
  q.weight_strategy = s;
  return Status();
}

Status parse_compressed_tensors(const Fields& f, HfQuantConfig& q) {
  std::optional<std::string> format;
  PAGODA_RETURN_IF_ERROR(f.read("format", format));
  const std::string fmt_name = format.value_or("");
  if (fmt_name != "float-quantized" && fmt_name != "int-quantized" &&
      fmt_name != "naive-quantized") {
    return unimplemented(
        "{}: quantization_config.format \"{}\" is not supported (float-quantized, "
        "int-quantized, naive-quantized are)",
        kFile, fmt_name);
  }
  const json* groups = f.get("config_groups");
  if (groups == nullptr || !groups->is_object() || groups->empty()) {
    return invalid_argument("{}: quantization_config.config_groups is missing or empty", kFile);
  }
  for (const auto& [name, group] : groups->items()) {
    const std::string field = "quantization_config.config_groups." + name;
    if (!group.is_object()) {
      return invalid_argument("{}: {} is {}, not an object", kFile, field, shorten(group));
    }
    auto w = group.find("weights");
    if (w == group.end() || w->is_null()) {
      return unimplemented("{}: {} quantises no weights", kFile, field);
    }
    PAGODA_RETURN_IF_ERROR(parse_ct_weights(*w, field + ".weights", q));
  }
  if ((fmt_name == "float-quantized" && q.method != HfQuantMethod::kFp8) ||
      (fmt_name == "int-quantized" && q.method != HfQuantMethod::kInt8)) {
    return invalid_argument("{}: quantization_config.format \"{}\" does not match its weights",
                            kFile, fmt_name);
  }
  return Status();
}

Status parse_bnb(const Fields& f, HfQuantConfig& q) {
  std::optional<bool> in4, in8, dq;
  std::optional<std::string> type;
  PAGODA_RETURN_IF_ERROR(f.read("load_in_4bit", in4));
  PAGODA_RETURN_IF_ERROR(f.read("load_in_8bit", in8));
  PAGODA_RETURN_IF_ERROR(f.read("bnb_4bit_quant_type", type));
  PAGODA_RETURN_IF_ERROR(f.read("bnb_4bit_use_double_quant", dq));
  if (in8.value_or(false)) {
    return unimplemented("{}: quantization_config.load_in_8bit (LLM.int8) is not supported", kFile);
  }
  if (!in4.value_or(false)) {
    return invalid_argument("{}: quantization_config.load_in_4bit is not true", kFile);
  }
  if (type.value_or("fp4") != "nf4") {
    return unimplemented(
        "{}: quantization_config.bnb_4bit_quant_type \"{}\" is not supported "
        "(nf4 is)",
        kFile, type.value_or("fp4"));
  }
  q.bits = 4;
  q.double_quant = dq.value_or(false);
  return Status();
}

}  // namespace

std::string_view hf_quant_method_name(HfQuantMethod method) {
  switch (method) {
    case HfQuantMethod::kGptq:
      return "GPTQ";
    case HfQuantMethod::kAwq:
      return "AWQ";
    case HfQuantMethod::kFp8:
      return "FP8";
    case HfQuantMethod::kInt8:
      return "INT8";
    case HfQuantMethod::kNf4:
      return "NF4";
  }
  return "?";
}

Result<std::optional<HfQuantConfig>> parse_hf_quant_config(std::string_view config_json) {
  PAGODA_ASSIGN_OR_RETURN(json root, parse_root(config_json, kFile));
  auto it = root.find("quantization_config");
  if (it == root.end() || it->is_null()) return std::optional<HfQuantConfig>();
  if (!it->is_object()) {
    return invalid_argument("{}: quantization_config is {}, not an object", kFile, shorten(*it));
  }
  Fields f(*it, kFile, "quantization_config.");
  std::optional<std::string> method;
  PAGODA_RETURN_IF_ERROR(f.read("quant_method", method));
  if (!method) return invalid_argument("{}: quantization_config.quant_method is missing", kFile);
  HfQuantConfig q;
  q.quant_method = *method;
  if (*method == "gptq") {
    q.method = HfQuantMethod::kGptq;
    PAGODA_RETURN_IF_ERROR(parse_gptq_awq(f, false, q));
  } else if (*method == "awq") {
    q.method = HfQuantMethod::kAwq;
    PAGODA_RETURN_IF_ERROR(parse_gptq_awq(f, true, q));
  } else if (*method == "fp8" || *method == "fbgemm_fp8") {
    q.method = HfQuantMethod::kFp8;
    PAGODA_RETURN_IF_ERROR(parse_fp8(f, q));
  } else if (*method == "compressed-tensors") {
    PAGODA_RETURN_IF_ERROR(parse_compressed_tensors(f, q));
  } else if (*method == "bitsandbytes") {
    q.method = HfQuantMethod::kNf4;
    PAGODA_RETURN_IF_ERROR(parse_bnb(f, q));
  } else {
    return unimplemented(
        "{}: quantization_config.quant_method \"{}\" is not supported (gptq, awq, fp8, "
        "fbgemm_fp8, compressed-tensors, bitsandbytes are)",
        kFile, *method);
  }
  return std::optional<HfQuantConfig>(std::move(q));
}

Result<BnbQuantState> parse_bnb_quant_state(std::string_view json_text) {
  constexpr std::string_view kState = "quant_state";
  PAGODA_ASSIGN_OR_RETURN(json root, parse_root(json_text, kState));
  Fields f(root, kState);
  BnbQuantState s;
  std::optional<std::string> type, dtype;
  std::optional<int64_t> blocksize, nested_blocksize;
  std::optional<double> nested_offset;
  PAGODA_RETURN_IF_ERROR(f.read("quant_type", type));
  PAGODA_RETURN_IF_ERROR(f.read("blocksize", blocksize));
  PAGODA_RETURN_IF_ERROR(f.read("dtype", dtype));
  PAGODA_RETURN_IF_ERROR(f.read("nested_blocksize", nested_blocksize));
  PAGODA_RETURN_IF_ERROR(f.read("nested_offset", nested_offset));
  if (type.value_or("") != "nf4") {
    return unimplemented("{}: quant_type \"{}\" is not supported (nf4 is)", kState,
                         type.value_or(""));
  }
  s.quant_type = *type;
  if (!blocksize || *blocksize <= 0 || *blocksize > kMaxGroupSize) {
    return invalid_argument("{}: blocksize is missing or out of range", kState);
  }
  s.blocksize = *blocksize;
  s.dtype = dtype.value_or("");
  if (s.dtype != "float16" && s.dtype != "bfloat16" && s.dtype != "float32") {
    return unimplemented("{}: dtype \"{}\" is not supported (float16, bfloat16, float32 are)",
                         kState, s.dtype);
  }
  const json* shape = f.get("shape");
  if (shape == nullptr || !shape->is_array() || shape->size() != 2) {
    return invalid_argument("{}: shape is missing or not [rows, cols]", kState);
  }
  for (const json& d : *shape) {
    if (!d.is_number_integer() || d.get<int64_t>() <= 0 || d.get<int64_t>() > (int64_t{1} << 31)) {
      return f.wrong("shape", *shape, "[rows, cols] of positive sizes");
    }
    s.shape.push_back(d.get<int64_t>());
  }
  s.nested = nested_blocksize.has_value() || nested_offset.has_value();
  if (s.nested) {
    if (!nested_blocksize || *nested_blocksize <= 0 || *nested_blocksize > kMaxGroupSize) {
      return invalid_argument("{}: nested_blocksize is missing or out of range", kState);
    }
    if (!nested_offset || !std::isfinite(*nested_offset) || std::fabs(*nested_offset) > 1e30) {
      return invalid_argument("{}: nested_offset is missing or not finite", kState);
    }
    s.nested_blocksize = *nested_blocksize;
    s.nested_offset = static_cast<float>(*nested_offset);
  }
  return s;
}

}  // namespace pagoda::format
