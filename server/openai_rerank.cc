#include "server/openai_rerank.h"

#include <algorithm>
#include <cmath>
#include <numeric>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "server/openai_request.h"

namespace pagoda::server {

using nlohmann::json;

namespace {

// Unknown (non-null) fields of `j` refused by name.
std::optional<ApiError> refuse_unknown(const json& j, std::span<const std::string_view> known) {
  for (const auto& [key, value] : j.items()) {
    if (std::find(known.begin(), known.end(), key) != known.end() || value.is_null()) continue;
    const std::string shown = key.substr(0, 64);
    ApiError e = bad_request(fmt::format("'{}' is not supported by this server", shown), shown);
    e.code = "unsupported_field";
    return e;
  }
  return std::nullopt;
}

// The model field (optional; must name the served model) and the classifier check.
std::optional<ApiError> check_model(const json& j, const ModelInfo& info, RerankSpec& out) {
  out.model = info.id;
  if (auto m = j.find("model"); m != j.end() && !m->is_null()) {
    if (!m->is_string()) return bad_request("'model' must be a string", "model");
    if (m->get<std::string>() != info.id) {
      return from_status(
          not_found("The model `{}` does not exist.", m->get<std::string>().substr(0, 256)),
          "model");
    }
  }
  if (info.num_labels != 1) {
    return bad_request(
        info.num_labels == 0
            ? fmt::format("model '{}' has no classifier head: it cannot score pairs (serve a "
                          "cross-encoder, e.g. a BertForSequenceClassification)",
                          info.id)
            : fmt::format("model '{}' has {} classifier outputs; scoring needs one", info.id,
                          info.num_labels),
        "model");
  }
  return std::nullopt;
}

// A non-empty string field.
std::optional<ApiError> text_of(const json& v, const std::string& where, std::string& out) {
  if (!v.is_string() || v.get_ref<const std::string&>().empty()) {
    return bad_request(fmt::format("'{}' must be a non-empty string", where), where);
  }
  out = v.get<std::string>();
  return std::nullopt;
}

// Appends the pair (a, b) tokenized as [CLS] a [SEP] b [SEP]; `where` names b in errors.
std::optional<ApiError> add_pair(const std::vector<int32_t>& a, const std::string& b,
                                 const Engine& engine, const std::string& where, RerankSpec& out) {
  std::vector<int32_t> b_ids = engine.tokenize(b, /*add_special=*/true, /*parse_special=*/false);
  if (b_ids.size() < 2) return bad_request(fmt::format("'{}' has no tokens", where), where);
  std::vector<int32_t> ids = a;
  ids.insert(ids.end(), b_ids.begin() + 1, b_ids.end());  // b's [CLS] dropped
  const auto n = static_cast<int64_t>(ids.size());
  const int64_t context = engine.model_info().context_length;
  // The request computes its prompt and one position's worth of room (max_tokens 1).
  if (n + 1 > context) {
    return bad_request(fmt::format("'{}' with its query has {} tokens; this model's context "
                                   "allows {}",
                                   where, n, context - 1),
                       where);
  }
  out.second_segment.push_back(static_cast<int32_t>(a.size()));
  out.inputs.push_back(std::move(ids));
  return std::nullopt;
}

std::vector<int32_t> tokenize_first(const Engine& engine, const std::string& text) {
  return engine.tokenize(text, /*add_special=*/true, /*parse_special=*/false);
}

json float_json(double v) {
  return std::isfinite(v) ? json(v) : json(nullptr);
}

}  // namespace

double relevance_score(float logit) {
  return 1.0 / (1.0 + std::exp(-static_cast<double>(logit)));
}

std::optional<ApiError> parse_rerank_request(const std::string& body, const Engine& engine,
                                             const ServerConfig& cfg, RerankSpec& out) {
  json j;
  if (auto err = parse_json_object(body, cfg.max_json_depth, j)) return err;
  static constexpr std::string_view kKnown[] = {"model", "query", "documents", "top_n",
                                                "return_documents"};
  if (auto err = refuse_unknown(j, kKnown)) return err;
  out = RerankSpec{};
  if (auto err = check_model(j, engine.model_info(), out)) return err;
  auto q = j.find("query");
  if (q == j.end() || q->is_null()) return bad_request("'query' is required", "query");
  std::string query;
  if (auto err = text_of(*q, "query", query)) return err;
  if (auto t = j.find("top_n"); t != j.end() && !t->is_null()) {
    if (!t->is_number_integer() || t->get<int64_t>() < 0) {
      return bad_request("'top_n' must be a non-negative integer", "top_n");
    }
    out.top_n = static_cast<size_t>(t->get<int64_t>());
  }
  if (auto r = j.find("return_documents"); r != j.end() && !r->is_null()) {
    if (!r->is_boolean())
      return bad_request("'return_documents' must be a boolean", "return_documents");
    out.return_documents = r->get<bool>();
  }
  auto docs = j.find("documents");
  if (docs == j.end() || docs->is_null()) {
    return bad_request("'documents' is required", "documents");
  }
  if (!docs->is_array() || docs->empty()) {
    return bad_request(
        "'documents' must be a non-empty array of strings or {\"text\": ...} objects", "documents");
  }
  if (docs->size() > static_cast<size_t>(cfg.max_embedding_inputs)) {
    return bad_request(fmt::format("'documents' has {} items; at most {} are allowed", docs->size(),
                                   cfg.max_embedding_inputs),
                       "documents");
  }
  const std::vector<int32_t> q_ids = tokenize_first(engine, query);
  for (size_t i = 0; i < docs->size(); ++i) {
    const json& d = (*docs)[i];
    const std::string where = fmt::format("documents[{}]", i);
    const json* text = &d;
    if (d.is_object()) {
      for (const auto& [key, value] : d.items()) {
        if (key != "text") {
          return bad_request(
              fmt::format("'{}.{}' is not supported (only 'text' is)", where, key.substr(0, 64)),
              where + "." + key.substr(0, 64));
        }
      }
      auto t = d.find("text");
      if (t == d.end()) return bad_request(fmt::format("'{}.text' is required", where), where);
      text = &*t;
    }
    std::string doc;
    if (auto err = text_of(*text, d.is_object() ? where + ".text" : where, doc)) return err;
    if (auto err = add_pair(q_ids, doc, engine, where, out)) return err;
    out.documents.push_back(std::move(doc));
  }
  return std::nullopt;
}

std::optional<ApiError> parse_score_request(const std::string& body, const Engine& engine,
                                            const ServerConfig& cfg, RerankSpec& out) {
  json j;
  if (auto err = parse_json_object(body, cfg.max_json_depth, j)) return err;
  static constexpr std::string_view kKnown[] = {"model", "text_1", "text_2"};
  if (auto err = refuse_unknown(j, kKnown)) return err;
  out = RerankSpec{};
  out.return_documents = false;
  if (auto err = check_model(j, engine.model_info(), out)) return err;
  // Each side: a string or a non-empty array of strings.
  auto side = [&](const char* name, std::vector<std::string>& texts) -> std::optional<ApiError> {
    auto v = j.find(name);
    if (v == j.end() || v->is_null())
      return bad_request(fmt::format("'{}' is required", name), name);
    if (v->is_string()) {
      texts.emplace_back();
      return text_of(*v, name, texts.back());
    }
    if (!v->is_array() || v->empty()) {
      return bad_request(fmt::format("'{}' must be a string or a non-empty array of strings", name),
                         name);
    }
    if (v->size() > static_cast<size_t>(cfg.max_embedding_inputs)) {
      return bad_request(fmt::format("'{}' has {} items; at most {} are allowed", name, v->size(),
                                     cfg.max_embedding_inputs),
                         name);
    }
    for (size_t i = 0; i < v->size(); ++i) {
      texts.emplace_back();
      if (auto err = text_of((*v)[i], fmt::format("{}[{}]", name, i), texts.back())) return err;
    }
    return std::nullopt;
  };
  std::vector<std::string> a, b;
  if (auto err = side("text_1", a)) return err;
  if (auto err = side("text_2", b)) return err;
  if (a.size() != 1 && a.size() != b.size()) {
    return bad_request(fmt::format("'text_1' has {} items and 'text_2' {}: give one text_1, or as "
                                   "many as text_2",
                                   a.size(), b.size()),
                       "text_1");
  }
  std::vector<int32_t> a_ids;
  for (size_t i = 0; i < b.size(); ++i) {
    if (i == 0 || a.size() > 1) a_ids = tokenize_first(engine, a[a.size() > 1 ? i : 0]);
    const std::string where = b.size() > 1 || j["text_2"].is_array() ? fmt::format("text_2[{}]", i)
                                                                     : std::string("text_2");
    if (auto err = add_pair(a_ids, b[i], engine, where, out)) return err;
  }
  return std::nullopt;
}

std::string rerank_response(const RerankSpec& spec, const std::vector<std::vector<float>>& logits,
                            int64_t prompt_tokens, const std::string& id) {
  std::vector<double> scores(logits.size());
  for (size_t i = 0; i < logits.size(); ++i)
    scores[i] = logits[i].empty() ? 0.0 : relevance_score(logits[i][0]);
  std::vector<size_t> order(scores.size());
  std::iota(order.begin(), order.end(), size_t{0});
  std::stable_sort(order.begin(), order.end(),
                   [&](size_t x, size_t y) { return scores[x] > scores[y]; });
  if (spec.top_n > 0 && spec.top_n < order.size()) order.resize(spec.top_n);
  json results = json::array();
  for (size_t i : order) {
    json r = {{"index", i}, {"relevance_score", float_json(scores[i])}};
    if (spec.return_documents && i < spec.documents.size()) {
      r["document"] = {{"text", spec.documents[i]}};
    }
    results.push_back(std::move(r));
  }
  const json body = {
      {"id", id},
      {"model", spec.model},
      {"results", std::move(results)},
      {"usage", {{"prompt_tokens", prompt_tokens}, {"total_tokens", prompt_tokens}}}};
  return body.dump(-1, ' ', false, json::error_handler_t::replace);
}

std::string score_response(const RerankSpec& spec, const std::vector<std::vector<float>>& logits,
                           int64_t prompt_tokens, const std::string& id, int64_t created) {
  json data = json::array();
  for (size_t i = 0; i < logits.size(); ++i) {
    const double s = logits[i].empty() ? 0.0 : relevance_score(logits[i][0]);
    data.push_back({{"index", i}, {"object", "score"}, {"score", float_json(s)}});
  }
  const json body = {
      {"id", id},
      {"object", "list"},
      {"created", created},
      {"model", spec.model},
      {"data", std::move(data)},
      {"usage", {{"prompt_tokens", prompt_tokens}, {"total_tokens", prompt_tokens}}}};
  return body.dump(-1, ' ', false, json::error_handler_t::replace);
}

}  // namespace pagoda::server
