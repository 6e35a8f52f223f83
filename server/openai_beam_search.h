// vLLM's beam-search extra fields on /v1/completions and /v1/chat/completions: use_beam_search,
// best_of (the beam width; default n), length_penalty, early_stopping (true, false or "never").
// Beam search is greedy over cumulative logprobs: temperature must be 0 (it defaults to 0 here),
// streaming and the sampling processors are refused by name, and n <= best_of. Without
// use_beam_search, length_penalty and early_stopping are refused and best_of must equal n.
// Header-only so that every translation unit that parses requests (the fuzz targets too) has it.
#pragma once

#include <cmath>
#include <optional>
#include <string>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "server/api_error.h"
#include "server/openai_request.h"

namespace pagoda::server {

// Called after the rest of the body is parsed into `spec` (the fields other than these).
inline std::optional<ApiError> parse_beam_search(const nlohmann::json& body, GenerationSpec& spec) {
  const auto present = [&body](const char* key) {
    const auto it = body.find(key);
    return it != body.end() && !it->is_null() ? &*it : nullptr;
  };
  bool beam = false;
  if (const nlohmann::json* v = present("use_beam_search")) {
    if (!v->is_boolean())
      return bad_request("'use_beam_search' must be a boolean", "use_beam_search");
    beam = v->get<bool>();
  }
  if (!beam) {
    for (const char* key : {"length_penalty", "early_stopping"}) {
      if (present(key)) {
        return bad_request(fmt::format("'{}' requires 'use_beam_search': true", key), key);
      }
    }
    if (const nlohmann::json* bo = present("best_of")) {
      if (!bo->is_number_integer() || bo->get<int64_t>() != spec.n) {
        return bad_request("'best_of' other than n is supported only with 'use_beam_search'",
                           "best_of");
      }
    }
    return std::nullopt;
  }
  BeamSearchParams p;
  p.beam_width = spec.n;
  if (const nlohmann::json* bo = present("best_of")) {
    if (!bo->is_number_integer() || bo->get<int64_t>() < 1 ||
        bo->get<int64_t>() > BeamSearchParams::kMaxBeamWidth) {
      return bad_request(fmt::format("'best_of' (the beam width) must be an integer in [1, {}]",
                                     BeamSearchParams::kMaxBeamWidth),
                         "best_of");
    }
    p.beam_width = static_cast<int32_t>(bo->get<int64_t>());
  }
  if (p.beam_width > BeamSearchParams::kMaxBeamWidth) {
    return bad_request(
        fmt::format("'n' must be at most {} with beam search", BeamSearchParams::kMaxBeamWidth),
        "n");
  }
  if (spec.n > p.beam_width) return bad_request("'n' must be <= 'best_of' with beam search", "n");
  if (const nlohmann::json* lp = present("length_penalty")) {
    if (!lp->is_number() || !std::isfinite(lp->get<double>()) ||
        std::fabs(lp->get<double>()) > 100.0) {
      return bad_request("'length_penalty' must be a number in [-100, 100]", "length_penalty");
    }
    p.length_penalty = static_cast<float>(lp->get<double>());
  }
  if (const nlohmann::json* es = present("early_stopping")) {
    using ES = BeamSearchParams::EarlyStopping;
    if (es->is_boolean()) {
      p.early_stopping = es->get<bool>() ? ES::kTrue : ES::kFalse;
    } else if (es->is_string() && es->get<std::string>() == "never") {
      p.early_stopping = ES::kNever;
    } else {
      return bad_request("'early_stopping' must be true, false or \"never\"", "early_stopping");
    }
  }
  if (spec.stream) {
    return bad_request("streaming is not supported with beam search ('use_beam_search')", "stream");
  }
  if (present("temperature") && spec.sampling.temperature > 0.0f) {
    return bad_request("'temperature' must be 0 with beam search", "temperature");
  }
  spec.sampling.temperature = 0.0f;
  const SamplingParams& s = spec.sampling;
  const auto refuse = [](const char* field) {
    return bad_request(fmt::format("'{}' is not supported with beam search", field), field);
  };
  if (s.top_p != 1.0f) return refuse("top_p");
  if (s.top_k > 0) return refuse("top_k");
  if (s.min_p != 0.0f) return refuse("min_p");
  if (s.repetition_penalty != 1.0f) return refuse("repetition_penalty");
  if (s.presence_penalty != 0.0f) return refuse("presence_penalty");
  if (s.frequency_penalty != 0.0f) return refuse("frequency_penalty");
  if (!s.logit_bias.empty()) return refuse("logit_bias");
  if (spec.logprobs) return refuse("logprobs");
  if (spec.prompt_logprobs >= 0) return refuse("prompt_logprobs");
  if (!s.structured.empty()) {
    for (const char* key :
         {"response_format", "guided_json", "guided_regex", "guided_grammar", "guided_choice",
          "structured_outputs", "grammar", "json_schema", "tools", "tool_choice"}) {
      if (present(key)) return refuse(key);
    }
    return refuse("response_format");
  }
  if (!spec.stop.stop_strings.empty()) return refuse("stop");
  if (spec.stop.min_tokens != 0) return refuse("min_tokens");
  spec.beam_search = p;
  return std::nullopt;
}

}  // namespace pagoda::server
