// pagoda::OutputParser (include/pagoda/output_parser.h): ReasoningParser, then ToolCallParser on
// what follows the reasoning, then a UTF-8 hold-back so that no delta's content, reasoning or
// arguments ends inside a multi-byte sequence (the server sends each as a JSON string). Plus the
// format names and the chat-template detection.
#include "pagoda/output_parser.h"

#include <string>
#include <utility>
#include <vector>

#include "structured/reasoning_parser.h"
#include "structured/tool_call_parser.h"

namespace pagoda {
namespace {

// How many bytes at the end of `s` are an incomplete (so far valid-looking) UTF-8 sequence.
size_t incomplete_utf8_tail(std::string_view s) {
  for (size_t k = 1; k <= 3 && k <= s.size(); ++k) {
    const auto b = static_cast<unsigned char>(s[s.size() - k]);
    if ((b & 0xC0) == 0x80) continue;  // a continuation byte: look further back
    size_t need = 0;
    if ((b & 0xE0) == 0xC0) {
      need = 2;
    } else if ((b & 0xF0) == 0xE0) {
      need = 3;
    } else if ((b & 0xF8) == 0xF0) {
      need = 4;
    }
    return need > k ? k : 0;
  }
  return 0;
}

// Moves the incomplete UTF-8 tail of `s` into `carry`, after prepending the previous carry.
void hold_utf8(std::string& s, std::string& carry) {
  if (!carry.empty()) {
    s.insert(0, carry);
    carry.clear();
  }
  const size_t tail = incomplete_utf8_tail(s);
  carry.assign(s, s.size() - tail, tail);
  s.resize(s.size() - tail);
}

}  // namespace

struct OutputParser::Impl {
  explicit Impl(OutputParserOptions options)
      : reasoning(options.reasoning), tools(options.tool_format, std::move(options.id_prefix)) {}

  void hold(ParsedDelta& out) {
    hold_utf8(out.content, content_carry);
    hold_utf8(out.reasoning, reasoning_carry);
    std::vector<ToolCallDelta> kept;
    for (ToolCallDelta& delta : out.tool_calls) {
      const auto index = static_cast<size_t>(delta.index);
      if (arguments_carry.size() <= index) arguments_carry.resize(index + 1);
      hold_utf8(delta.arguments, arguments_carry[index]);
      if (!delta.arguments.empty() || !delta.id.empty()) kept.push_back(std::move(delta));
    }
    out.tool_calls = std::move(kept);
  }

  void flush(ParsedDelta& out) {
    out.content += content_carry;
    out.reasoning += reasoning_carry;
    content_carry.clear();
    reasoning_carry.clear();
    for (size_t i = 0; i < arguments_carry.size(); ++i) {
      if (arguments_carry[i].empty()) continue;
      ToolCallDelta delta;
      delta.index = static_cast<int32_t>(i);
      delta.arguments = std::move(arguments_carry[i]);
      out.tool_calls.push_back(std::move(delta));
    }
    arguments_carry.clear();
  }

  structured::ReasoningParser reasoning;
  structured::ToolCallParser tools;
  std::string content_carry;
  std::string reasoning_carry;
  std::vector<std::string> arguments_carry;  // by call index
};

OutputParser::OutputParser(OutputParserOptions options)
    : impl_(std::make_unique<Impl>(std::move(options))) {}
OutputParser::~OutputParser() = default;
OutputParser::OutputParser(OutputParser&&) noexcept = default;
OutputParser& OutputParser::operator=(OutputParser&&) noexcept = default;

ParsedDelta OutputParser::feed(std::string_view text) {
  ParsedDelta out;
  if (!impl_) return out;  // moved from
  std::string rest;
  impl_->reasoning.feed(text, out.reasoning, rest);
  impl_->tools.feed(rest, out);
  impl_->hold(out);
  return out;
}

ParsedDelta OutputParser::finish() {
  ParsedDelta out;
  if (!impl_) return out;
  std::string rest;
  impl_->reasoning.finish(out.reasoning, rest);
  impl_->tools.feed(rest, out);
  impl_->tools.finish(out);
  impl_->hold(out);
  impl_->flush(out);
  return out;
}

int32_t OutputParser::num_tool_calls() const {
  return impl_ ? impl_->tools.num_calls() : 0;
}

std::optional<ToolCallFormat> tool_call_format_from_name(std::string_view name) {
  for (ToolCallFormat format : {ToolCallFormat::kNone, ToolCallFormat::kHermes,
                                ToolCallFormat::kLlama3Json, ToolCallFormat::kMistral}) {
    if (name == to_string(format)) return format;
  }
  return std::nullopt;
}

std::string_view to_string(ToolCallFormat format) {
  switch (format) {
    case ToolCallFormat::kNone:
      return "none";
    case ToolCallFormat::kHermes:
      return "hermes";
    case ToolCallFormat::kLlama3Json:
      return "llama3_json";
    case ToolCallFormat::kMistral:
      return "mistral";
  }
  return "none";
}

std::string_view tool_call_trigger(ToolCallFormat format) {
  switch (format) {
    case ToolCallFormat::kNone:
      return "";
    case ToolCallFormat::kHermes:
      return "<tool_call>";
    case ToolCallFormat::kLlama3Json:
      return "{\"name\"";
    case ToolCallFormat::kMistral:
      return "[TOOL_CALLS]";
  }
  return "";
}

std::optional<ReasoningFormat> reasoning_format_from_name(std::string_view name) {
  for (ReasoningFormat format :
       {ReasoningFormat::kNone, ReasoningFormat::kDeepSeekR1, ReasoningFormat::kQwen3}) {
    if (name == to_string(format)) return format;
  }
  return std::nullopt;
}

std::string_view to_string(ReasoningFormat format) {
  switch (format) {
    case ReasoningFormat::kNone:
      return "none";
    case ReasoningFormat::kDeepSeekR1:
      return "deepseek_r1";
    case ReasoningFormat::kQwen3:
      return "qwen3";
  }
  return "none";
}

ToolCallFormat detect_tool_call_format(std::string_view chat_template) {
  const auto has = [&](std::string_view s) {
    return chat_template.find(s) != std::string_view::npos;
  };
  if (has("<tool_call>")) return ToolCallFormat::kHermes;
  if (has("[TOOL_CALLS]")) return ToolCallFormat::kMistral;
  if (has("<|python_tag|>")) return ToolCallFormat::kLlama3Json;
  // Llama 3.2's template renders tools (JSON calls with "parameters") without the python tag.
  if (has("<|start_header_id|>") && has("tools")) return ToolCallFormat::kLlama3Json;
  return ToolCallFormat::kNone;
}

}  // namespace pagoda
