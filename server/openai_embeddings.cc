#include "server/openai_embeddings.h"

#include <bit>
#include <charconv>
#include <cstring>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "server/openai_request.h"

namespace pagoda::server {

using nlohmann::json;

namespace {

// A token-id array: every element an integer id of the vocabulary.
std::optional<ApiError> token_ids(const json& arr, int32_t vocab, const std::string& where,
                                  std::vector<int32_t>& out) {
  out.clear();
  out.reserve(arr.size());
  for (const json& v : arr) {
    if (!v.is_number_integer() || v.get<int64_t>() < 0 || v.get<int64_t>() >= vocab) {
      return bad_request(fmt::format("'{}' must hold token ids in [0, {})", where, vocab), "input");
    }
    out.push_back(static_cast<int32_t>(v.get<int64_t>()));
  }
  return std::nullopt;
}

std::optional<ApiError> parse_input(const json& input, const Engine& engine,
                                    const ServerConfig& cfg, EmbeddingsSpec& out) {
  const ModelInfo& info = engine.model_info();
  const auto text = [&](const json& s, const std::string& where) -> std::optional<ApiError> {
    if (s.get_ref<const std::string&>().empty()) {
      return bad_request(fmt::format("'{}' must not be an empty string", where), "input");
    }
    out.inputs.push_back(engine.tokenize(s.get<std::string>(), /*add_special=*/true,
                                         /*parse_special=*/false));
    return std::nullopt;
  };
  if (input.is_string()) return text(input, "input");
  if (!input.is_array() || input.empty()) {
    return bad_request(
        "'input' must be a non-empty string, array of strings, array of token ids or array of "
        "token-id arrays",
        "input");
  }
  if (input.size() > static_cast<size_t>(cfg.max_embedding_inputs)) {
    return bad_request(fmt::format("'input' has {} items; at most {} are allowed", input.size(),
                                   cfg.max_embedding_inputs),
                       "input");
  }
  if (input.front().is_number()) {
    out.inputs.emplace_back();
    return token_ids(input, info.vocab_size, "input", out.inputs.back());
  }
  for (size_t i = 0; i < input.size(); ++i) {
    const json& item = input[i];
    const std::string where = fmt::format("input[{}]", i);
    if (item.is_string()) {
      if (auto err = text(item, where)) return err;
    } else if (item.is_array() && !item.empty()) {
      out.inputs.emplace_back();
      if (auto err = token_ids(item, info.vocab_size, where, out.inputs.back())) return err;
    } else {
      return bad_request(
          fmt::format("'{}' must be a non-empty string or a non-empty array of token ids", where),
          "input");
    }
  }
  return std::nullopt;
}

// The float as JSON: its shortest decimal form (a float widened to double would print 17
// digits of noise).
json float_json(float v) {
  char buf[32];
  const auto r = std::to_chars(buf, buf + sizeof buf, v);
  double d = v;
  std::from_chars(buf, r.ptr, d);
  return d;
}

}  // namespace

PoolingType embedding_pooling(const ModelInfo& info, const ServerConfig& config) {
  if (config.pooling) return *config.pooling;
  return info.default_pooling;
}

std::optional<ApiError> parse_embeddings_request(const std::string& body, const Engine& engine,
                                                 const ServerConfig& cfg, EmbeddingsSpec& out) {
  json j;
  if (auto err = parse_json_object(body, cfg.max_json_depth, j)) return err;
  const ModelInfo& info = engine.model_info();
  static constexpr std::string_view kKnown[] = {"input", "model", "encoding_format", "dimensions",
                                                "user"};
  for (const auto& [key, value] : j.items()) {
    if (std::find(std::begin(kKnown), std::end(kKnown), key) != std::end(kKnown)) continue;
    if (value.is_null()) continue;
    const std::string shown = key.substr(0, 64);
    ApiError e = bad_request(fmt::format("'{}' is not supported by this server", shown), shown);
    e.code = "unsupported_field";
    return e;
  }
  out = EmbeddingsSpec{};
  out.model = info.id;
  if (auto m = j.find("model"); m != j.end() && !m->is_null()) {
    if (!m->is_string()) return bad_request("'model' must be a string", "model");
    if (m->get<std::string>() != info.id) {
      return from_status(
          not_found("The model `{}` does not exist.", m->get<std::string>().substr(0, 256)),
          "model");
    }
  }
  out.pooling = embedding_pooling(info, cfg);
  if (out.pooling == PoolingType::kNone) {
    return bad_request(fmt::format("model '{}' does not serve embeddings: it is a decoder and the "
                                   "server was started without --pooling (last or mean)",
                                   info.id),
                       "model");
  }
  if (out.pooling == PoolingType::kRank) {
    return bad_request(
        fmt::format("model '{}' is a cross-encoder (it scores pairs): use "
                    "/v1/rerank or /v1/score, or start the server with --pooling cls",
                    info.id),
        "model");
  }
  if (auto u = j.find("user"); u != j.end() && !u->is_null() && !u->is_string()) {
    return bad_request("'user' must be a string", "user");
  }
  if (auto f = j.find("encoding_format"); f != j.end() && !f->is_null()) {
    if (!f->is_string() || (*f != "float" && *f != "base64")) {
      return bad_request("'encoding_format' must be 'float' or 'base64'", "encoding_format");
    }
    out.base64 = *f == "base64";
  }
  if (auto d = j.find("dimensions"); d != j.end() && !d->is_null()) {
    if (!d->is_number_integer() || d->get<int64_t>() < 1) {
      return bad_request("'dimensions' must be a positive integer", "dimensions");
    }
    if (d->get<int64_t>() != info.hidden_size) {
      return bad_request(fmt::format("model '{}' does not support 'dimensions' other than its "
                                     "embedding size {} (it is not trained to be truncated)",
                                     info.id, info.hidden_size),
                         "dimensions");
    }
  }
  const auto input = j.find("input");
  if (input == j.end() || input->is_null()) return bad_request("'input' is required", "input");
  if (auto err = parse_input(*input, engine, cfg, out)) return err;
  for (size_t i = 0; i < out.inputs.size(); ++i) {
    const auto n = static_cast<int64_t>(out.inputs[i].size());
    if (n == 0) {
      return bad_request(fmt::format("input {} has no tokens", i), "input");
    }
    // The request computes its prompt and one position's worth of room (max_tokens 1).
    if (n + 1 > info.context_length) {
      return bad_request(fmt::format("input {} has {} tokens; this model's context allows {}", i, n,
                                     info.context_length - 1),
                         "input");
    }
  }
  return std::nullopt;
}

std::string base64_floats(const std::vector<float>& values) {
  static constexpr char kAlphabet[] =
      "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
  std::string bytes(values.size() * 4, '\0');
  for (size_t i = 0; i < values.size(); ++i) {
    const auto bits = std::bit_cast<uint32_t>(values[i]);
    for (int b = 0; b < 4; ++b)
      bytes[i * 4 + static_cast<size_t>(b)] = static_cast<char>((bits >> (8 * b)) & 0xff);
  }
  std::string out;
  out.reserve((bytes.size() + 2) / 3 * 4);
  for (size_t i = 0; i < bytes.size(); i += 3) {
    const size_t n = std::min<size_t>(3, bytes.size() - i);
    uint32_t v = 0;
    for (size_t k = 0; k < 3; ++k) {
      v = (v << 8) | (k < n ? static_cast<unsigned char>(bytes[i + k]) : 0u);
    }
    for (size_t k = 0; k < 4; ++k) {
      out.push_back(k <= n ? kAlphabet[(v >> (18 - 6 * k)) & 63] : '=');
    }
  }
  return out;
}

std::string embeddings_response(const EmbeddingsSpec& spec,
                                const std::vector<std::vector<float>>& embeddings,
                                int64_t prompt_tokens) {
  json data = json::array();
  for (size_t i = 0; i < embeddings.size(); ++i) {
    json e = {{"object", "embedding"}, {"index", i}};
    if (spec.base64) {
      e["embedding"] = base64_floats(embeddings[i]);
    } else {
      json values = json::array();
      for (float v : embeddings[i])
        values.push_back(float_json(v));
      e["embedding"] = std::move(values);
    }
    data.push_back(std::move(e));
  }
  const json body = {
      {"object", "list"},
      {"data", std::move(data)},
      {"model", spec.model},
      {"usage", {{"prompt_tokens", prompt_tokens}, {"total_tokens", prompt_tokens}}}};
  return body.dump(-1, ' ', false, json::error_handler_t::replace);
}

}  // namespace pagoda::server
