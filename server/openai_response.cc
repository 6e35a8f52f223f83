#include "server/openai_response.h"

#include <cmath>
#include <random>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

namespace pagoda::server {

using nlohmann::json;

namespace {

// JSON has no -inf; OpenAI-compatible servers report an impossible token as -9999.
double finite_logprob(float lp) {
  if (!std::isfinite(lp)) return -9999.0;
  return std::max(static_cast<double>(lp), -9999.0);
}

json bytes_of(const std::string& s) {
  json b = json::array();
  for (const unsigned char c : s)
    b.push_back(static_cast<int>(c));
  return b;
}

// "bytes" is the token's raw bytes, always (a token may end inside a UTF-8 character; its
// "token" text then shows U+FFFD).
json chat_logprob_entry(int32_t token, float logprob, const TokenText& token_text,
                        const TokenText& token_bytes) {
  const std::string text = token_text(token);
  return json{{"token", text},
              {"logprob", finite_logprob(logprob)},
              {"bytes", bytes_of(token_bytes ? token_bytes(token) : text)}};
}

json chat_logprobs(const std::vector<TokenLogprobs>& lps, const TokenText& token_text,
                   const TokenText& token_bytes) {
  json content = json::array();
  for (const TokenLogprobs& lp : lps) {
    json entry = chat_logprob_entry(lp.token, lp.logprob, token_text, token_bytes);
    json top = json::array();
    for (const auto& [id, l] : lp.top)
      top.push_back(chat_logprob_entry(id, l, token_text, token_bytes));
    entry["top_logprobs"] = std::move(top);
    content.push_back(std::move(entry));
  }
  return json{{"content", std::move(content)}, {"refusal", nullptr}};
}

// The legacy completions shape. With `prompt` (echo), the prompt's tokens come first: the first
// with null logprob and top_logprobs, the others with their `prompt_top` best alternatives.
json completion_logprobs(const std::vector<TokenLogprobs>& lps, int64_t text_offset,
                         const TokenText& token_text, const PromptLogprobsPart& prompt = {},
                         int32_t prompt_top = 0) {
  json tokens = json::array();
  json token_logprobs = json::array();
  json top_logprobs = json::array();
  json offsets = json::array();
  int64_t offset = text_offset;
  if (prompt.first_token >= 0 && prompt.entries != nullptr) {
    const std::string first = token_text(prompt.first_token);
    tokens.push_back(first);
    token_logprobs.push_back(nullptr);
    top_logprobs.push_back(nullptr);
    offsets.push_back(offset);
    offset += static_cast<int64_t>(first.size());
    for (const TokenLogprobs& lp : *prompt.entries) {
      const std::string text = token_text(lp.token);
      tokens.push_back(text);
      token_logprobs.push_back(finite_logprob(lp.logprob));
      json top = json::object();
      for (size_t i = 0; i < lp.top.size() && i < static_cast<size_t>(prompt_top); ++i)
        top[token_text(lp.top[i].first)] = finite_logprob(lp.top[i].second);
      top_logprobs.push_back(std::move(top));
      offsets.push_back(offset);
      offset += static_cast<int64_t>(text.size());
    }
  }
  for (const TokenLogprobs& lp : lps) {
    const std::string text = token_text(lp.token);
    tokens.push_back(text);
    token_logprobs.push_back(finite_logprob(lp.logprob));
    json top = json::object();
    for (const auto& [id, l] : lp.top)
      top[token_text(id)] = finite_logprob(l);
    top_logprobs.push_back(std::move(top));
    offsets.push_back(offset);
    offset += static_cast<int64_t>(text.size());
  }
  return json{{"tokens", std::move(tokens)},
              {"token_logprobs", std::move(token_logprobs)},
              {"top_logprobs", std::move(top_logprobs)},
              {"text_offset", std::move(offsets)}};
}

// vLLM's prompt_logprobs: null for the first prompt token, then per token a map from token id
// (as a string) to {logprob, rank, decoded_token}: the prompt token and the `top` most likely.
json prompt_logprobs_json(const PromptLogprobsPart& prompt, int32_t top,
                          const TokenText& token_text) {
  json out = json::array();
  if (prompt.first_token < 0 || prompt.entries == nullptr) return out;
  out.push_back(nullptr);
  for (const TokenLogprobs& lp : *prompt.entries) {
    json entry = json::object();
    for (size_t i = 0; i < lp.top.size() && i < static_cast<size_t>(top); ++i) {
      const auto& [id, l] = lp.top[i];
      entry[std::to_string(id)] = {{"logprob", finite_logprob(l)},
                                   {"rank", static_cast<int64_t>(i) + 1},
                                   {"decoded_token", token_text(id)}};
    }
    entry[std::to_string(lp.token)] = {{"logprob", finite_logprob(lp.logprob)},
                                       {"rank", lp.rank},
                                       {"decoded_token", token_text(lp.token)}};
    out.push_back(std::move(entry));
  }
  return out;
}

json usage_json(const UsageTotals& u) {
  return json{{"prompt_tokens", u.prompt_tokens},
              {"completion_tokens", u.completion_tokens},
              {"total_tokens", u.prompt_tokens + u.completion_tokens},
              {"prompt_tokens_details", {{"cached_tokens", u.cached_tokens}}}};
}

json finish_json(FinishReason reason, bool made_tool_calls = false) {
  if (reason == FinishReason::kNone) return nullptr;
  if (made_tool_calls && reason == FinishReason::kStop) return "tool_calls";
  return std::string(to_string(reason));
}

json tool_call_delta_json(const ToolCallDelta& d) {
  json fn = json::object();
  if (!d.name.empty()) fn["name"] = d.name;
  fn["arguments"] = d.arguments;
  json j = {{"index", d.index}};
  if (!d.id.empty()) {
    j["id"] = d.id;
    j["type"] = "function";
  }
  j["function"] = std::move(fn);
  return j;
}

json stop_reason_json(std::string_view stop_reason, std::optional<int32_t> stop_token_id,
                      FinishReason reason) {
  if (reason != FinishReason::kStop) return nullptr;
  if (!stop_reason.empty()) return std::string(stop_reason);
  if (stop_token_id) return *stop_token_id;
  return nullptr;
}

std::string dump(const json& j) {
  return j.dump(-1, ' ', false, json::error_handler_t::replace);
}

}  // namespace

std::string make_response_id(std::string_view prefix) {
  thread_local std::mt19937_64 rng{std::random_device{}()};
  return fmt::format("{}{:016x}{:016x}", prefix, rng(), rng());
}

std::string full_response_json(const ResponseMeta& meta, const std::vector<ChoiceResult>& choices,
                               const UsageTotals& usage, const TokenText& token_text) {
  json out_choices = json::array();
  const bool chat = meta.endpoint == Endpoint::kChat;
  for (const ChoiceResult& c : choices) {
    json choice = {
        {"index", c.index},
        {"finish_reason", finish_json(c.finish_reason, !c.tool_calls.empty())},
        {"stop_reason", stop_reason_json(c.stop_reason, c.stop_token_id, c.finish_reason)}};
    if (chat) {
      json message = {{"role", "assistant"},
                      {"content", c.text.empty() && (!c.tool_calls.empty() || !c.reasoning.empty())
                                      ? json(nullptr)
                                      : json(c.text)},
                      {"refusal", nullptr}};
      if (!c.reasoning.empty()) message["reasoning_content"] = c.reasoning;
      if (!c.tool_calls.empty()) {
        json calls = json::array();
        for (const ToolCallResult& t : c.tool_calls) {
          calls.push_back({{"id", t.id},
                           {"type", "function"},
                           {"function", {{"name", t.name}, {"arguments", t.arguments}}}});
        }
        message["tool_calls"] = std::move(calls);
      }
      choice["message"] = std::move(message);
      choice["logprobs"] =
          meta.logprobs ? chat_logprobs(c.logprobs, token_text, meta.token_bytes) : json(nullptr);
    } else {
      choice["text"] = c.text;
      const PromptLogprobsPart prompt{c.prompt_first_token, &c.prompt_logprobs};
      choice["logprobs"] =
          meta.logprobs
              ? completion_logprobs(c.logprobs, 0, token_text,
                                    meta.echo_top_logprobs >= 0 ? prompt : PromptLogprobsPart{},
                                    meta.echo_top_logprobs)
              : json(nullptr);
      if (meta.prompt_logprobs >= 0) {
        choice["prompt_logprobs"] = prompt_logprobs_json(prompt, meta.prompt_logprobs, token_text);
      }
    }
    out_choices.push_back(std::move(choice));
  }
  json j = {{"id", meta.id},
            {"object", chat ? "chat.completion" : "text_completion"},
            {"created", meta.created},
            {"model", meta.model},
            {"choices", std::move(out_choices)},
            {"usage", usage_json(usage)}};
  return dump(j);
}

std::string chunk_json(const ResponseMeta& meta, const ChunkParts& p, const TokenText& token_text) {
  const bool chat = meta.endpoint == Endpoint::kChat;
  json choice = {{"index", p.index},
                 {"finish_reason", finish_json(p.finish_reason, p.made_tool_calls)}};
  if (p.finish_reason != FinishReason::kNone) {
    choice["stop_reason"] = stop_reason_json(p.stop_reason, p.stop_token_id, p.finish_reason);
  }
  const bool has_logprobs = meta.logprobs && p.logprobs != nullptr && !p.logprobs->empty();
  if (chat) {
    json delta = json::object();
    if (p.role) delta["role"] = "assistant";
    if (p.role || !p.text.empty()) delta["content"] = std::string(p.text);
    if (!p.reasoning.empty()) delta["reasoning_content"] = std::string(p.reasoning);
    if (p.tool_calls != nullptr && !p.tool_calls->empty()) {
      json calls = json::array();
      for (const ToolCallDelta& d : *p.tool_calls)
        calls.push_back(tool_call_delta_json(d));
      delta["tool_calls"] = std::move(calls);
    }
    choice["delta"] = std::move(delta);
    choice["logprobs"] =
        has_logprobs ? chat_logprobs(*p.logprobs, token_text, meta.token_bytes) : json(nullptr);
  } else {
    choice["text"] = std::string(p.text);
    const bool echo_prompt = meta.logprobs && meta.echo_top_logprobs >= 0 &&
                             p.prompt.first_token >= 0 && p.prompt.entries != nullptr;
    static const std::vector<TokenLogprobs> kNone;
    choice["logprobs"] =
        has_logprobs || echo_prompt
            ? completion_logprobs(has_logprobs ? *p.logprobs : kNone, p.text_offset, token_text,
                                  echo_prompt ? p.prompt : PromptLogprobsPart{},
                                  meta.echo_top_logprobs)
            : json(nullptr);
    if (meta.prompt_logprobs >= 0 && p.prompt.first_token >= 0) {
      choice["prompt_logprobs"] = prompt_logprobs_json(p.prompt, meta.prompt_logprobs, token_text);
    }
  }
  json j = {{"id", meta.id},
            {"object", chat ? "chat.completion.chunk" : "text_completion"},
            {"created", meta.created},
            {"model", meta.model},
            {"choices", json::array({std::move(choice)})}};
  if (p.usage_null) j["usage"] = nullptr;
  return dump(j);
}

std::string usage_chunk_json(const ResponseMeta& meta, const UsageTotals& usage) {
  const bool chat = meta.endpoint == Endpoint::kChat;
  json j = {{"id", meta.id},
            {"object", chat ? "chat.completion.chunk" : "text_completion"},
            {"created", meta.created},
            {"model", meta.model},
            {"choices", json::array()},
            {"usage", usage_json(usage)}};
  return dump(j);
}

std::string sse_event(std::string_view payload) {
  std::string s;
  s.reserve(payload.size() + 8);
  s += "data: ";
  s += payload;
  s += "\n\n";
  return s;
}

void append_parsed(const ParsedDelta& parts, std::string& text, std::string& reasoning,
                   std::vector<ToolCallResult>& tool_calls) {
  text += parts.content;
  reasoning += parts.reasoning;
  for (const ToolCallDelta& d : parts.tool_calls) {
    if (d.index < 0) continue;
    if (static_cast<size_t>(d.index) >= tool_calls.size()) {
      tool_calls.resize(static_cast<size_t>(d.index) + 1);
    }
    ToolCallResult& call = tool_calls[static_cast<size_t>(d.index)];
    if (!d.id.empty()) call.id = d.id;
    if (!d.name.empty()) call.name = d.name;
    call.arguments += d.arguments;
  }
}

}  // namespace pagoda::server
