#include "server/openai_request.h"

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <limits>
#include <span>
#include <string_view>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "server/openai_beam_search.h"
#include "server/openai_constraints.h"

namespace pagoda::server {

using nlohmann::json;

int32_t json_nesting_depth(const std::string& text, int32_t limit) {
  int32_t depth = 0;
  int32_t max_depth = 0;
  bool in_string = false;
  bool escaped = false;
  for (const char c : text) {
    if (in_string) {
      if (escaped) {
        escaped = false;
      } else if (c == '\\') {
        escaped = true;
      } else if (c == '"') {
        in_string = false;
      }
      continue;
    }
    if (c == '"') {
      in_string = true;
    } else if (c == '[' || c == '{') {
      ++depth;
      if (depth > max_depth) max_depth = depth;
      if (max_depth > limit) return max_depth;
    } else if ((c == ']' || c == '}') && depth > 0) {
      --depth;
    }
  }
  return max_depth;
}

std::optional<ApiError> parse_json_object(const std::string& body, int32_t max_depth, json& out) {
  if (body.empty()) return bad_request("The request body is empty; expected a JSON object");
  if (json_nesting_depth(body, max_depth) > max_depth) {
    return bad_request(fmt::format("The request body nests deeper than {} levels", max_depth));
  }
  out = json::parse(body, nullptr, /*allow_exceptions=*/false);
  if (out.is_discarded()) return bad_request("The request body is not valid JSON");
  if (!out.is_object()) return bad_request("The request body must be a JSON object");
  return std::nullopt;
}

namespace {

// A field reader over one JSON object: typed getters that treat null as absent and report the
// first error with the field's name.
class Fields {
 public:
  explicit Fields(const json& obj) : obj_(obj) {}

  const json* find(const char* name) const {
    auto it = obj_.find(name);
    if (it == obj_.end() || it->is_null()) return nullptr;
    return &*it;
  }

  std::optional<ApiError> number(const char* name, double lo, double hi, float& out) const {
    const json* v = find(name);
    if (!v) return std::nullopt;
    if (!v->is_number()) return bad_request(fmt::format("'{}' must be a number", name), name);
    const double d = v->get<double>();
    if (!std::isfinite(d) || d < lo || d > hi) {
      return bad_request(fmt::format("'{}' must be in [{}, {}], got {}", name, lo, hi, d), name);
    }
    out = static_cast<float>(d);
    return std::nullopt;
  }

  std::optional<ApiError> integer(const char* name, int64_t lo, int64_t hi, int64_t& out) const {
    const json* v = find(name);
    if (!v) return std::nullopt;
    return to_integer(*v, name, lo, hi, out);
  }

  template <typename T>
  std::optional<ApiError> int_field(const char* name, int64_t lo, int64_t hi, T& out) const {
    int64_t x = 0;
    const json* v = find(name);
    if (!v) return std::nullopt;
    if (auto e = to_integer(*v, name, lo, hi, x)) return e;
    out = static_cast<T>(x);
    return std::nullopt;
  }

  std::optional<ApiError> boolean(const char* name, bool& out) const {
    const json* v = find(name);
    if (!v) return std::nullopt;
    if (!v->is_boolean()) return bad_request(fmt::format("'{}' must be a boolean", name), name);
    out = v->get<bool>();
    return std::nullopt;
  }

  std::optional<ApiError> string(const char* name, std::string& out) const {
    const json* v = find(name);
    if (!v) return std::nullopt;
    if (!v->is_string()) return bad_request(fmt::format("'{}' must be a string", name), name);
    out = v->get<std::string>();
    return std::nullopt;
  }

  static std::optional<ApiError> to_integer(const json& v, const std::string& name, int64_t lo,
                                            int64_t hi, int64_t& out) {
    if (v.is_number_unsigned()) {
      const uint64_t u = v.get<uint64_t>();
      if (u > static_cast<uint64_t>(std::numeric_limits<int64_t>::max()) ||
          static_cast<int64_t>(u) > hi || static_cast<int64_t>(u) < lo) {
        return bad_request(fmt::format("'{}' must be in [{}, {}], got {}", name, lo, hi, u), name);
      }
      out = static_cast<int64_t>(u);
      return std::nullopt;
    }
    if (v.is_number_integer()) {
      const int64_t i = v.get<int64_t>();
      if (i < lo || i > hi) {
        return bad_request(fmt::format("'{}' must be in [{}, {}], got {}", name, lo, hi, i), name);
      }
      out = i;
      return std::nullopt;
    }
    if (v.is_number_float()) {
      // 2.0 is accepted as 2 (JSON has one number type); 2.5 is not an integer.
      const double d = v.get<double>();
      if (std::isfinite(d) && d == std::floor(d) && d >= static_cast<double>(lo) &&
          d <= static_cast<double>(hi)) {
        out = static_cast<int64_t>(d);
        return std::nullopt;
      }
      if (std::isfinite(d) && d == std::floor(d)) {
        return bad_request(fmt::format("'{}' must be in [{}, {}], got {}", name, lo, hi, d), name);
      }
    }
    return bad_request(fmt::format("'{}' must be an integer", name), name);
  }

 private:
  const json& obj_;
};

#define PAGODA_TRY(expr)             \
  do {                               \
    if (auto e_ = (expr)) return e_; \
  } while (0)

std::optional<ApiError> parse_stop(const Fields& f, const ServerConfig& cfg, int32_t vocab,
                                   StopConditions& stop) {
  if (const json* v = f.find("stop")) {
    std::vector<std::string> list;
    if (v->is_string()) {
      list.push_back(v->get<std::string>());
    } else if (v->is_array()) {
      if (v->size() > static_cast<size_t>(cfg.max_stop_strings)) {
        return bad_request(fmt::format("'stop' has {} strings; at most {} are allowed", v->size(),
                                       cfg.max_stop_strings),
                           "stop");
      }
      for (const json& s : *v) {
        if (!s.is_string())
          return bad_request("'stop' must be a string or a list of strings", "stop");
        list.push_back(s.get<std::string>());
      }
    } else {
      return bad_request("'stop' must be a string or a list of strings", "stop");
    }
    for (const std::string& s : list) {
      if (s.empty()) return bad_request("'stop' strings must not be empty", "stop");
      if (s.size() > static_cast<size_t>(cfg.max_stop_string_bytes)) {
        return bad_request(
            fmt::format("'stop' strings must be at most {} bytes", cfg.max_stop_string_bytes),
            "stop");
      }
    }
    stop.stop_strings = std::move(list);
  }
  if (const json* v = f.find("stop_token_ids")) {
    if (!v->is_array())
      return bad_request("'stop_token_ids' must be a list of integers", "stop_token_ids");
    if (v->size() > static_cast<size_t>(cfg.max_stop_token_ids)) {
      return bad_request(fmt::format("'stop_token_ids' has {} ids; at most {} are allowed",
                                     v->size(), cfg.max_stop_token_ids),
                         "stop_token_ids");
    }
    for (const json& id : *v) {
      int64_t x = 0;
      PAGODA_TRY(Fields::to_integer(id, "stop_token_ids", 0, vocab - 1, x));
      stop.stop_token_ids.push_back(static_cast<int32_t>(x));
    }
  }
  return std::nullopt;
}

std::optional<ApiError> parse_logit_bias(const Fields& f, const ServerConfig& cfg, int32_t vocab,
                                         SamplingParams& sp) {
  const json* v = f.find("logit_bias");
  if (!v) return std::nullopt;
  if (!v->is_object())
    return bad_request("'logit_bias' must be an object of token id -> bias", "logit_bias");
  if (v->size() > static_cast<size_t>(cfg.max_logit_bias)) {
    return bad_request(fmt::format("'logit_bias' has {} entries; at most {} are allowed", v->size(),
                                   cfg.max_logit_bias),
                       "logit_bias");
  }
  for (auto it = v->begin(); it != v->end(); ++it) {
    const std::string& key = it.key();
    char* end = nullptr;
    errno = 0;
    const long long id = key.empty() ? -1 : std::strtoll(key.c_str(), &end, 10);
    if (key.empty() || errno != 0 || end == nullptr || *end != '\0' || id < 0 || id >= vocab) {
      return bad_request(fmt::format("'logit_bias' keys must be token ids in [0, {}), got '{}'",
                                     vocab, key.size() > 32 ? key.substr(0, 32) + "..." : key),
                         "logit_bias");
    }
    if (!it->is_number() || !std::isfinite(it->get<double>()) || it->get<double>() < -100 ||
        it->get<double>() > 100) {
      return bad_request("'logit_bias' values must be numbers in [-100, 100]", "logit_bias");
    }
    sp.logit_bias.emplace_back(static_cast<int32_t>(id), it->get<float>());
  }
  return std::nullopt;
}

// Every top-level field a request may carry, in three sets: the fields we implement (per
// endpoint; docs/design/server.md lists them); the fields of the OpenAI, vLLM and llama.cpp
// request schemas that we do not implement, or that belong to the other endpoint, refused by name
// (a 400, code unsupported_field) whatever their value but null, so a client never gets output
// that silently ignored what it asked for; and anything else, refused by name too (code
// unknown_field: a typo such as "max_token" must not pass as a default), unless null (null is
// absent). `user` (an end-user id for the caller's own monitoring) has no effect on generation
// and is accepted.
std::optional<ApiError> check_known_fields(const json& body, Endpoint endpoint) {
  static constexpr std::string_view kCommon[] = {"model",
                                                 "stream",
                                                 "stream_options",
                                                 "temperature",
                                                 "top_p",
                                                 "top_k",
                                                 "min_p",
                                                 "n",
                                                 "max_tokens",
                                                 "stop",
                                                 "stop_token_ids",
                                                 "seed",
                                                 "presence_penalty",
                                                 "frequency_penalty",
                                                 "repetition_penalty",
                                                 "logit_bias",
                                                 "ignore_eos",
                                                 "min_tokens",
                                                 "include_stop_str_in_output",
                                                 "skip_special_tokens",
                                                 "priority",
                                                 "cache_salt",
                                                 "response_format",
                                                 "guided_json",
                                                 "guided_regex",
                                                 "guided_grammar",
                                                 "guided_choice",
                                                 "structured_outputs",
                                                 "grammar",
                                                 "json_schema",
                                                 "best_of",
                                                 "use_beam_search",
                                                 "length_penalty",
                                                 "early_stopping",
                                                 "user",
                                                 "logprobs",
                                                 "add_special_tokens"};
  static constexpr std::string_view kChat[] = {
      "messages",    "top_logprobs",          "max_completion_tokens", "tools",
      "tool_choice", "add_generation_prompt", "parallel_tool_calls"};
  static constexpr std::string_view kCompletion[] = {"prompt", "echo", "suffix", "prompt_logprobs"};
  // Request fields of OpenAI (chat + legacy completions), vLLM (sampling params and its extra
  // chat / completion fields) and llama.cpp's server (/completion, /v1/chat/completions) that
  // pagoda does not implement.
  static constexpr std::string_view kUnimplemented[] = {
      // OpenAI
      "functions", "function_call", "audio", "modalities", "prediction", "store", "metadata",
      "service_tier", "web_search_options", "reasoning_effort", "verbosity", "prompt_cache_key",
      "safety_identifier",
      // vLLM
      "spaces_between_special_tokens", "truncate_prompt_tokens", "allowed_token_ids", "bad_words",
      "guided_decoding_backend", "guided_whitespace_pattern", "logits_processors",
      "return_tokens_as_token_ids", "return_token_ids", "documents", "chat_template",
      "chat_template_kwargs", "mm_processor_kwargs", "continue_final_message", "request_id",
      "kv_transfer_params", "vllm_xargs", "prompt_embeds", "include_reasoning",
      "thinking_token_budget", "repetition_detection",
      // llama.cpp
      "n_predict", "n_probs", "typical_p", "tfs_z", "mirostat", "mirostat_tau", "mirostat_eta",
      "penalize_nl", "repeat_last_n", "repeat_penalty", "dry_multiplier", "dry_base",
      "dry_allowed_length", "dry_penalty_last_n", "dry_sequence_breakers", "xtc_probability",
      "xtc_threshold", "top_n_sigma", "dynatemp_range", "dynatemp_exponent", "n_keep", "n_discard",
      "cache_prompt", "id_slot", "samplers", "image_data", "min_keep", "n_indent",
      "t_max_prompt_ms", "t_max_predict_ms", "return_tokens", "timings_per_token",
      "post_sampling_probs", "lora", "response_fields", "reasoning_format", "parse_tool_calls",
      "input_prefix", "input_suffix", "input_extra"};
  const auto listed = [](std::span<const std::string_view> names, const std::string& key) {
    return std::find(names.begin(), names.end(), key) != names.end();
  };
  const bool chat = endpoint == Endpoint::kChat;
  const std::span<const std::string_view> own =
      chat ? std::span<const std::string_view>(kChat)
           : std::span<const std::string_view>(kCompletion);
  const std::span<const std::string_view> other =
      chat ? std::span<const std::string_view>(kCompletion)
           : std::span<const std::string_view>(kChat);
  for (const auto& [key, value] : body.items()) {
    if (listed(kCommon, key) || listed(own, key)) continue;
    const std::string shown = key.substr(0, 64);
    if (listed(other, key)) {
      if (value.is_null()) continue;
      return bad_request(fmt::format("'{}' is a field of {}, not of this endpoint", shown,
                                     chat ? "/v1/completions" : "/v1/chat/completions"),
                         shown);
    }
    if (listed(kUnimplemented, key)) {
      if (value.is_null()) continue;
      ApiError e = bad_request(fmt::format("'{}' is not supported by this server", shown), shown);
      e.code = "unsupported_field";
      return e;
    }
    if (value.is_null()) continue;
    ApiError e = bad_request(fmt::format("'{}' is not a field of {}", shown,
                                         chat ? "/v1/chat/completions" : "/v1/completions"),
                             shown);
    e.code = "unknown_field";
    return e;
  }
  return std::nullopt;
}

// True if `name` is a loaded LoRA adapter (a valid "model" for generation requests).
bool is_lora_adapter(const Engine& engine, const std::string& name) {
  for (const LoraAdapterInfo& a : engine.lora_adapters()) {
    if (a.name == name) return true;
  }
  return false;
}

std::optional<ApiError> parse_common(const json& body, const Fields& f, const Engine& engine,
                                     const ServerConfig& cfg, GenerationSpec& spec) {
  const ModelInfo& info = engine.model_info();
  spec.model = info.id;
  if (const json* m = f.find("model")) {
    if (!m->is_string()) return bad_request("'model' must be a string", "model");
    if (is_lora_adapter(engine, m->get<std::string>())) {
      spec.model = m->get<std::string>();  // an adapter over this model (vLLM's convention)
      spec.lora_name = spec.model;
    } else if (m->get<std::string>() != info.id) {
      return from_status(
          not_found("The model `{}` does not exist.", m->get<std::string>().substr(0, 256)),
          "model");
    }
  }
  SamplingParams& sp = spec.sampling;
  PAGODA_TRY(f.int_field("n", 1, cfg.max_n, spec.n));
  PAGODA_TRY(f.number("temperature", 0.0, 100.0, sp.temperature));
  PAGODA_TRY(f.number("top_p", 0.0, 1.0, sp.top_p));
  if (f.find("top_p") && sp.top_p <= 0.0f) return bad_request("'top_p' must be in (0, 1]", "top_p");
  PAGODA_TRY(f.int_field("top_k", -1, std::numeric_limits<int32_t>::max(), sp.top_k));
  PAGODA_TRY(f.number("min_p", 0.0, 1.0, sp.min_p));
  PAGODA_TRY(f.number("presence_penalty", -2.0, 2.0, sp.presence_penalty));
  PAGODA_TRY(f.number("frequency_penalty", -2.0, 2.0, sp.frequency_penalty));
  PAGODA_TRY(f.number("repetition_penalty", 0.0, 100.0, sp.repetition_penalty));
  if (f.find("repetition_penalty") && sp.repetition_penalty <= 0.0f) {
    return bad_request("'repetition_penalty' must be > 0", "repetition_penalty");
  }
  PAGODA_TRY(parse_logit_bias(f, cfg, info.vocab_size, sp));
  if (const json* s = f.find("seed")) {
    if (s->is_number_unsigned()) {
      sp.seed = s->get<uint64_t>();
    } else if (s->is_number_integer()) {
      sp.seed = static_cast<uint64_t>(s->get<int64_t>());
    } else {
      return bad_request("'seed' must be an integer", "seed");
    }
  }
  PAGODA_TRY(parse_stop(f, cfg, info.vocab_size, spec.stop));
  PAGODA_TRY(f.boolean("ignore_eos", spec.stop.ignore_eos));
  PAGODA_TRY(f.boolean("include_stop_str_in_output", spec.stop.include_stop_str_in_output));
  PAGODA_TRY(f.boolean("skip_special_tokens", spec.skip_special_tokens));
  PAGODA_TRY(
      f.int_field("min_tokens", 0, std::numeric_limits<int32_t>::max(), spec.stop.min_tokens));
  PAGODA_TRY(f.int_field("priority", std::numeric_limits<int32_t>::min(),
                         std::numeric_limits<int32_t>::max(), spec.priority));
  PAGODA_TRY(f.string("cache_salt", spec.cache_salt));
  PAGODA_TRY(f.boolean("stream", spec.stream));
  if (const json* so = f.find("stream_options")) {
    if (!so->is_object())
      return bad_request("'stream_options' must be an object", "stream_options");
    Fields sf(*so);
    PAGODA_TRY(sf.boolean("include_usage", spec.include_usage));
  }
  PAGODA_TRY(parse_structured_outputs(body, sp.structured));
  // best_of: checked with the beam-search fields (parse_beam_search).
  return std::nullopt;
}

// max_tokens: explicit (checked against the context) or the default for the endpoint.
std::optional<ApiError> resolve_max_tokens(const Fields& f, Endpoint endpoint,
                                           const ModelInfo& info, GenerationSpec& spec) {
  const char* field = "max_tokens";
  int64_t requested = -1;
  if (endpoint == Endpoint::kChat && f.find("max_completion_tokens")) {
    field = "max_completion_tokens";
  }
  PAGODA_TRY(f.integer(field, 1, std::numeric_limits<int32_t>::max(), requested));
  const char* prompt_field = endpoint == Endpoint::kChat ? "messages" : "prompt";
  size_t longest = 0;
  for (const PromptInput& p : spec.prompts)
    longest = std::max(longest, p.tokens.size());
  const int64_t ctx = info.context_length;
  if (static_cast<int64_t>(longest) >= ctx) {
    return bad_request(
        fmt::format("This model's maximum context length is {} tokens. However, your request has "
                    "{} input tokens. Please reduce the length of the input.",
                    ctx, longest),
        prompt_field);
  }
  const int64_t room = ctx - static_cast<int64_t>(longest);
  if (requested < 0) {
    spec.stop.max_tokens =
        static_cast<int32_t>(endpoint == Endpoint::kChat ? room : std::min<int64_t>(16, room));
  } else {
    if (requested > room) {
      return bad_request(
          fmt::format("This model's maximum context length is {} tokens. However, you requested "
                      "{} tokens ({} in the input, {} for the completion). Please reduce the "
                      "length of the input or of the completion.",
                      ctx, static_cast<int64_t>(longest) + requested, longest, requested),
          field);
    }
    spec.stop.max_tokens = static_cast<int32_t>(requested);
  }
  if (spec.stop.min_tokens > spec.stop.max_tokens) {
    return bad_request("'min_tokens' must be <= max_tokens", "min_tokens");
  }
  return std::nullopt;
}

constexpr int32_t kMaxArgumentsDepth = 64;

// The rendered chat prompt ends with "</think>" (and whitespace): the model answers directly.
bool reasoning_closed_in_prompt(std::string_view prompt) {
  while (!prompt.empty() && (prompt.back() == ' ' || prompt.back() == '\n' ||
                             prompt.back() == '\r' || prompt.back() == '\t')) {
    prompt.remove_suffix(1);
  }
  constexpr std::string_view kClose = "</think>";
  return prompt.size() >= kClose.size() && prompt.substr(prompt.size() - kClose.size()) == kClose;
}

// Flattens a message's content to the string form chat templates expect: a string stays, null
// stays, a list of {"type": "text", "text": ...} parts is joined with newlines.
std::optional<ApiError> normalize_message(const json& in, size_t index, json& out) {
  const std::string param = fmt::format("messages[{}]", index);
  if (!in.is_object()) return bad_request(param + " must be an object", param);
  const auto role = in.find("role");
  if (role == in.end() || !role->is_string() || role->get<std::string>().empty()) {
    return bad_request(param + ".role must be a non-empty string", param + ".role");
  }
  out = in;
  // Assistant tool calls: OpenAI sends each call's arguments as a JSON string; chat templates
  // (Qwen2.5, Llama 3.1, Mistral) render them with `| tojson` and expect the object, as vLLM
  // hands it to them.
  if (const auto calls = in.find("tool_calls"); calls != in.end() && !calls->is_null()) {
    if (!calls->is_array()) {
      return bad_request(param + ".tool_calls must be a list", param + ".tool_calls");
    }
    for (size_t k = 0; k < calls->size(); ++k) {
      const json& call = (*calls)[k];
      const std::string cparam = fmt::format("{}.tool_calls[{}]", param, k);
      const auto fn = call.is_object() ? call.find("function") : call.end();
      if (fn == call.end() || !fn->is_object() || !fn->contains("name") ||
          !(*fn)["name"].is_string()) {
        return bad_request(cparam +
                               " must be {\"id\", \"type\": \"function\", \"function\": "
                               "{\"name\", \"arguments\"}}",
                           cparam);
      }
      const auto args = fn->find("arguments");
      if (args != fn->end() && args->is_string()) {
        if (json_nesting_depth(args->get_ref<const std::string&>(), kMaxArgumentsDepth) >
            kMaxArgumentsDepth) {
          return bad_request(cparam + ".function.arguments nests too deep",
                             cparam + ".function.arguments");
        }
        json parsed = json::parse(args->get<std::string>(), nullptr, /*allow_exceptions=*/false);
        if (parsed.is_discarded()) {
          return bad_request(cparam + ".function.arguments must be a JSON text",
                             cparam + ".function.arguments");
        }
        out["tool_calls"][k]["function"]["arguments"] = std::move(parsed);
      }
    }
  }
  const auto content = in.find("content");
  if (content == in.end() || content->is_null() || content->is_string()) return std::nullopt;
  if (!content->is_array()) {
    return bad_request(param + ".content must be a string or a list of content parts",
                       param + ".content");
  }
  std::string text;
  bool first = true;
  for (const json& part : *content) {
    const auto type = part.is_object() ? part.find("type") : part.end();
    const auto t = part.is_object() ? part.find("text") : part.end();
    if (type == part.end() || !type->is_string() || type->get<std::string>() != "text" ||
        t == part.end() || !t->is_string()) {
      return from_status(unimplemented("{}.content: only text parts are supported", param),
                         param + ".content");
    }
    if (!first) text += '\n';
    text += t->get<std::string>();
    first = false;
  }
  out["content"] = text;
  return std::nullopt;
}

std::optional<ApiError> parse_chat_prompt(const json& body, const Fields& f, const Engine& engine,
                                          ToolCallFormat tool_format, GenerationSpec& spec) {
  const json* messages = f.find("messages");
  if (!messages) return bad_request("'messages' is required", "messages");
  if (!messages->is_array() || messages->empty()) {
    return bad_request("'messages' must be a non-empty list", "messages");
  }
  json normalized = json::array();
  for (size_t i = 0; i < messages->size(); ++i) {
    json m;
    PAGODA_TRY(normalize_message((*messages)[i], i, m));
    normalized.push_back(std::move(m));
  }
  ToolRequest tools;
  PAGODA_TRY(parse_tools(body, tool_format, tools));
  if (!tools.constraint.empty() && !tools.constraint.trigger.empty() &&
      !spec.sampling.structured.empty()) {
    tools.constraint = StructuredOutputs();  // auto: an explicit response format wins
  }
  if (!tools.constraint.empty()) {
    if (!spec.sampling.structured.empty()) {
      return bad_request(
          "'tool_choice' requires a tool call, which a structured-output field "
          "(response_format, guided_*, ...) cannot also constrain",
          "tool_choice");
    }
    spec.sampling.structured = std::move(tools.constraint);
  }
  spec.tool_format = tools.format;
  const std::string& tools_json = tools.tools_json;
  bool add_generation_prompt = true;
  bool add_special_tokens = false;
  PAGODA_TRY(f.boolean("add_generation_prompt", add_generation_prompt));
  PAGODA_TRY(f.boolean("add_special_tokens", add_special_tokens));
  const std::string messages_json = normalized.dump(-1, ' ', false, json::error_handler_t::replace);
  Result<std::string> rendered =
      engine.apply_chat_template(messages_json, tools_json, add_generation_prompt);
  if (!rendered.ok()) {
    // A model without a chat template will never render one: 400 (a 503 would invite retries).
    if (rendered.status().code() == StatusCode::kFailedPrecondition) {
      ApiError e =
          bad_request(rendered.status().message() +
                          "; use /v1/completions, or start the server with --chat-template FILE",
                      "messages");
      e.code = "no_chat_template";
      return e;
    }
    return from_status(rendered.status(), "messages");
  }
  PromptInput p;
  p.tokens = engine.tokenize(*rendered, add_special_tokens, /*parse_special=*/true);
  if (p.tokens.empty()) return bad_request("The rendered chat prompt is empty", "messages");
  p.text = std::move(rendered).value();
  spec.prompts.push_back(std::move(p));
  return std::nullopt;
}

std::optional<ApiError> token_list(const json& v, int32_t vocab, std::vector<int32_t>& out) {
  out.reserve(v.size());
  for (const json& id : v) {
    int64_t x = 0;
    PAGODA_TRY(Fields::to_integer(id, "prompt", 0, vocab - 1, x));
    out.push_back(static_cast<int32_t>(x));
  }
  if (out.empty()) return bad_request("'prompt' must not be empty", "prompt");
  return std::nullopt;
}

std::optional<ApiError> parse_completion_prompt(const Fields& f, const Engine& engine,
                                                const ServerConfig& cfg, GenerationSpec& spec) {
  const json* prompt = f.find("prompt");
  if (!prompt) return bad_request("'prompt' is required", "prompt");
  bool add_special_tokens = true;
  PAGODA_TRY(f.boolean("add_special_tokens", add_special_tokens));
  const int32_t vocab = engine.model_info().vocab_size;
  const auto add_text = [&](const std::string& text) -> std::optional<ApiError> {
    if (text.empty()) return bad_request("'prompt' must not be empty", "prompt");
    PromptInput p;
    p.tokens = engine.tokenize(text, add_special_tokens, /*parse_special=*/true);
    if (p.tokens.empty()) return bad_request("'prompt' tokenizes to nothing", "prompt");
    p.text = text;
    spec.prompts.push_back(std::move(p));
    return std::nullopt;
  };
  const auto add_tokens = [&](const json& ids) -> std::optional<ApiError> {
    PromptInput p;
    PAGODA_TRY(token_list(ids, vocab, p.tokens));
    if (spec.echo) p.text = engine.detokenize(p.tokens);
    spec.prompts.push_back(std::move(p));
    return std::nullopt;
  };
  if (prompt->is_string()) return add_text(prompt->get<std::string>());
  if (!prompt->is_array() || prompt->empty()) {
    return bad_request(
        "'prompt' must be a string, a list of strings, a list of token ids or a "
        "list of token-id lists",
        "prompt");
  }
  const json& first = prompt->front();
  if (first.is_number()) return add_tokens(*prompt);
  if (prompt->size() > static_cast<size_t>(cfg.max_batch_prompts)) {
    return bad_request(fmt::format("'prompt' has {} prompts; at most {} are allowed",
                                   prompt->size(), cfg.max_batch_prompts),
                       "prompt");
  }
  for (const json& item : *prompt) {
    if (item.is_string()) {
      PAGODA_TRY(add_text(item.get<std::string>()));
    } else if (item.is_array()) {
      PAGODA_TRY(add_tokens(item));
    } else {
      return bad_request("'prompt' list items must be strings or token-id lists", "prompt");
    }
  }
  return std::nullopt;
}

}  // namespace

std::optional<ApiError> parse_generation_request(const std::string& body, Endpoint endpoint,
                                                 const Engine& engine, const ServerConfig& cfg,
                                                 GenerationSpec& spec) {
  json j;
  PAGODA_TRY(parse_json_object(body, cfg.max_json_depth, j));
  spec = GenerationSpec();
  PAGODA_TRY(check_known_fields(j, endpoint));
  Fields f(j);
  spec.endpoint = endpoint;
  PAGODA_TRY(parse_common(j, f, engine, cfg, spec));

  if (endpoint == Endpoint::kChat) {
    PAGODA_TRY(f.boolean("logprobs", spec.logprobs));
    PAGODA_TRY(f.int_field("top_logprobs", 0, cfg.max_logprobs, spec.top_logprobs));
    if (f.find("top_logprobs") && !spec.logprobs) {
      return bad_request("'top_logprobs' requires 'logprobs' to be true", "top_logprobs");
    }
    const ToolCallFormat tool_format =
        cfg.tool_call_format ? *cfg.tool_call_format
                             : detect_tool_call_format(engine.model_info().chat_template);
    PAGODA_TRY(parse_chat_prompt(j, f, engine, tool_format, spec));
    spec.reasoning = cfg.reasoning_format;
    // A reasoning model thinks first: the constraint applies to the answer after "</think>",
    // unless the prompt already closed the reasoning (Qwen3's template with thinking switched
    // off ends with "<think>\n\n</think>\n\n").
    StructuredOutputs& so = spec.sampling.structured;
    if (spec.reasoning != ReasoningFormat::kNone && !so.empty() && so.trigger.empty() &&
        !reasoning_closed_in_prompt(spec.prompts.front().text)) {
      so.trigger = "</think>";
    }
    // Llama 3's <|python_tag|> and Mistral's [TOOL_CALLS] are special tokens: the parser needs
    // their text unless the client chose otherwise.
    if ((spec.tool_format == ToolCallFormat::kLlama3Json ||
         spec.tool_format == ToolCallFormat::kMistral) &&
        !f.find("skip_special_tokens")) {
      spec.skip_special_tokens = false;
    }
  } else {
    if (const json* lp = f.find("logprobs")) {
      int64_t k = 0;
      PAGODA_TRY(Fields::to_integer(*lp, "logprobs", 0, cfg.max_logprobs, k));
      spec.logprobs = true;
      spec.top_logprobs = static_cast<int32_t>(k);
    }
    PAGODA_TRY(f.boolean("echo", spec.echo));
    PAGODA_TRY(f.int_field("prompt_logprobs", 0, cfg.max_logprobs, spec.prompt_logprobs));
    if (const json* suffix = f.find("suffix")) {
      if (!suffix->is_string() || !suffix->get<std::string>().empty()) {
        return from_status(
            unimplemented("'suffix' is not supported (no fill-in-the-middle template)"), "suffix");
      }
    }
    PAGODA_TRY(parse_completion_prompt(f, engine, cfg, spec));
  }
  const size_t total = spec.prompts.size() * static_cast<size_t>(spec.n);
  if (total > static_cast<size_t>(cfg.max_batch_prompts) * 4) {
    return bad_request(fmt::format("The request asks for {} completions (prompts x n); at most {} "
                                   "are allowed",
                                   total, cfg.max_batch_prompts * 4),
                       "n");
  }
  PAGODA_TRY(resolve_max_tokens(f, endpoint, engine.model_info(), spec));
  spec.sampling.logprobs = spec.logprobs ? spec.top_logprobs : -1;
  // Echo with logprobs reports the prompt tokens' logprobs too: one prompt pass serves both.
  spec.sampling.prompt_logprobs =
      std::max(spec.echo && spec.logprobs ? spec.top_logprobs : -1, spec.prompt_logprobs);
  PAGODA_TRY(parse_beam_search(j, spec));
  return std::nullopt;
}

}  // namespace pagoda::server
