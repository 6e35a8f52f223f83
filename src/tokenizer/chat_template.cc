// ChatTemplate: Hugging Face-compatible chat template rendering on top of the src/jinja/
// interpreter. The variables match transformers' apply_chat_template: messages, tools (None
// when absent), documents (None), add_generation_prompt, bos_token, eos_token, then any extra
// context (which may override them).
#include "tokenizer/chat_template.h"

#include <nlohmann/json.hpp>

#include "jinja/template.h"

namespace pagoda::tokenizer {

namespace {

using jinja::DictData;
using jinja::Value;

// Converts request JSON to interpreter values; depth is capped like every other value.
Result<Value> to_value(const nlohmann::ordered_json& j, uint32_t depth) {
  if (depth > jinja::kMaxDepth) {
    return invalid_argument("chat template input nested deeper than {} levels", jinja::kMaxDepth);
  }
  switch (j.type()) {
    case nlohmann::ordered_json::value_t::null:
    case nlohmann::ordered_json::value_t::discarded:
      return Value::none();
    case nlohmann::ordered_json::value_t::boolean:
      return Value::boolean(j.get<bool>());
    case nlohmann::ordered_json::value_t::number_integer:
      return Value::integer(j.get<int64_t>());
    case nlohmann::ordered_json::value_t::number_unsigned: {
      const auto u = j.get<uint64_t>();
      if (u > static_cast<uint64_t>(INT64_MAX)) return Value::number(static_cast<double>(u));
      return Value::integer(static_cast<int64_t>(u));
    }
    case nlohmann::ordered_json::value_t::number_float:
      return Value::number(j.get<double>());
    case nlohmann::ordered_json::value_t::string:
      return Value::string(j.get<std::string>());
    case nlohmann::ordered_json::value_t::binary:
      return invalid_argument("chat template input holds binary data");
    case nlohmann::ordered_json::value_t::array: {
      std::vector<Value> items;
      items.reserve(j.size());
      for (const auto& item : j) {
        PAGODA_ASSIGN_OR_RETURN(Value v, to_value(item, depth + 1));
        items.push_back(std::move(v));
      }
      auto data = std::make_shared<jinja::ListData>();
      data->items = std::move(items);
      uint32_t d = 0;
      for (const Value& v : data->items)
        d = std::max(d, v.depth());
      data->depth = d + 1;
      return Value::list(std::move(data));
    }
    case nlohmann::ordered_json::value_t::object: {
      auto data = std::make_shared<DictData>();
      uint32_t d = 0;
      for (const auto& [key, item] : j.items()) {
        PAGODA_ASSIGN_OR_RETURN(Value v, to_value(item, depth + 1));
        d = std::max(d, v.depth());
        data->set(Value::string(key), std::move(v));
      }
      data->depth = d + 1;
      return Value::dict(std::move(data));
    }
  }
  return invalid_argument("unsupported JSON value in chat template input");
}

class ChatTemplateImpl final : public ChatTemplate {
 public:
  ChatTemplateImpl(std::unique_ptr<jinja::Template> t, ChatTemplateLimits limits)
      : template_(std::move(t)), limits_(limits) {}

  Result<std::string> render(const ChatTemplateInputs& inputs) const override {
    DictData context;
    try {
      if (inputs.messages != nullptr) {
        PAGODA_ASSIGN_OR_RETURN(Value messages, to_value(*inputs.messages, 0));
        context.set(Value::string("messages"), std::move(messages));
      } else {
        context.set(Value::string("messages"), jinja::make_list({}));
      }
      Value tools = Value::none();
      if (inputs.tools != nullptr && !inputs.tools->is_null()) {
        PAGODA_ASSIGN_OR_RETURN(tools, to_value(*inputs.tools, 0));
      }
      context.set(Value::string("tools"), std::move(tools));
      context.set(Value::string("documents"), Value::none());
      context.set(Value::string("add_generation_prompt"),
                  Value::boolean(inputs.add_generation_prompt));
      context.set(Value::string("bos_token"), Value::string(inputs.bos_token));
      context.set(Value::string("eos_token"), Value::string(inputs.eos_token));
      if (inputs.extra_context != nullptr) {
        if (!inputs.extra_context->is_object()) {
          return invalid_argument("chat template extra context must be a JSON object");
        }
        for (const auto& [key, item] : inputs.extra_context->items()) {
          PAGODA_ASSIGN_OR_RETURN(Value v, to_value(item, 0));
          context.set(Value::string(key), std::move(v));
        }
      }
    } catch (const jinja::TemplateError& e) {
      return jinja::to_status(e);
    } catch (const std::exception& e) {
      return invalid_argument("chat template input: {}", e.what());
    }
    jinja::RenderLimits limits;
    limits.max_steps = limits_.max_steps;
    limits.max_output_bytes = limits_.max_output_bytes;
    limits.now = inputs.now;
    return template_->render(context, limits);
  }

 private:
  std::unique_ptr<jinja::Template> template_;
  ChatTemplateLimits limits_;
};

}  // namespace

Result<std::unique_ptr<ChatTemplate>> ChatTemplate::parse(std::string_view source,
                                                          ChatTemplateLimits limits) {
  PAGODA_ASSIGN_OR_RETURN(auto t, jinja::Template::parse(source));
  return std::unique_ptr<ChatTemplate>(new ChatTemplateImpl(std::move(t), limits));
}

}  // namespace pagoda::tokenizer
