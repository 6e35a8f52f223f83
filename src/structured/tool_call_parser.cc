// ToolCallParser: one byte-at-a-time state machine for the three formats (see
// tool_call_parser.h). Every decision depends only on the bytes seen so far, never on how they
// were split, which is what makes the output split-invariant.
#include "structured/tool_call_parser.h"

#include <utility>

namespace pagoda::structured {
namespace {

constexpr std::string_view kHermesOpen = "<tool_call>";
constexpr std::string_view kHermesClose = "</tool_call>";
constexpr std::string_view kMistralTag = "[TOOL_CALLS]";
constexpr std::string_view kMistralArgsTag = "[ARGS]";
constexpr size_t kMaxNameBytes = 64;  // OpenAI's limit on function names

bool is_name_char(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' ||
         c == '-' || c == '.';
}

std::string_view start_tag_of(ToolCallFormat format) {
  return format == ToolCallFormat::kMistral ? kMistralTag : kHermesOpen;
}

}  // namespace

ToolCallParser::Mode ToolCallParser::initial_mode(ToolCallFormat format) {
  switch (format) {
    case ToolCallFormat::kHermes:
    case ToolCallFormat::kMistral:
      return ToolCallParser::Mode::kText;
    case ToolCallFormat::kLlama3Json:
      return ToolCallParser::Mode::kLlamaStart;
    case ToolCallFormat::kNone:
      break;
  }
  return ToolCallParser::Mode::kContent;
}

ToolCallParser::ToolCallParser(ToolCallFormat format, std::string id_prefix)
    : format_(format),
      id_prefix_(std::move(id_prefix)),
      mode_(initial_mode(format)),
      start_tag_(start_tag_of(format)) {}

void ToolCallParser::feed(std::string_view text, ParsedDelta& out) {
  out_ = &out;
  for (size_t i = 0; i < text.size(); ++i) {
    if (mode_ == Mode::kContent) {
      out.content.append(text.substr(i));
      break;
    }
    step(text[i]);
  }
  out_ = nullptr;
}

void ToolCallParser::step(char c) {
  switch (mode_) {
    case Mode::kText:
      return step_text(c);
    case Mode::kContent:
      out_->content.push_back(c);
      return;
    case Mode::kLlamaStart:
      return step_llama_start(c);
    case Mode::kEnvelope:
      return step_envelope(c);
    case Mode::kArguments:
      return step_arguments(c);
    case Mode::kAfterCall:
      return step_after_call(c);
    case Mode::kMistralOpen:
    case Mode::kMistralElement:
      return step_mistral(c);
    case Mode::kMistralName:
      return step_mistral_name(c);
    case Mode::kMistralArgs:
      return step_mistral_args(c);
  }
}

void ToolCallParser::begin_call(const std::string& name) {
  ToolCallDelta delta;
  delta.index = num_calls_++;
  delta.id = id_prefix_ + std::to_string(delta.index);
  delta.name = name;
  out_->tool_calls.push_back(std::move(delta));
}

void ToolCallParser::add_arguments(std::string_view bytes) {
  const int32_t index = num_calls_ - 1;
  if (out_->tool_calls.empty() || out_->tool_calls.back().index != index) {
    ToolCallDelta delta;
    delta.index = index;
    out_->tool_calls.push_back(std::move(delta));
  }
  out_->tool_calls.back().arguments.append(bytes);
}

void ToolCallParser::step_text(char c) {
  if (after_call_ && !start_tag_.holding() && is_json_space(c)) {
    space_.push_back(c);
    return;
  }
  std::string released;
  if (start_tag_.step(c, released)) {
    space_.clear();
    after_call_ = false;
    raw_.assign(start_tag_of(format_));
    region_calls_ = 0;
    if (format_ == ToolCallFormat::kHermes) {
      object_start_ = raw_.size();
      scanner_ = CallObjectScanner();
      mode_ = Mode::kEnvelope;
    } else {
      mode_ = Mode::kMistralOpen;
    }
    return;
  }
  if (released.empty()) return;
  out_->content += space_;
  out_->content += released;
  space_.clear();
  after_call_ = false;
}

void ToolCallParser::finish_text() {
  if (!after_call_ || start_tag_.holding()) {
    out_->content += space_;
    out_->content += start_tag_.held();
  }
  space_.clear();
  start_tag_.reset();
}

void ToolCallParser::start_object(char c) {
  object_start_ = raw_.size() - 1;
  scanner_ = CallObjectScanner();
  scanner_.step(c);
  mode_ = Mode::kEnvelope;
}

void ToolCallParser::end_of_call() {
  raw_.clear();
  ++region_calls_;
  separator_seen_ = false;
  end_tag_.reset();
  mode_ = Mode::kAfterCall;
}

void ToolCallParser::resolve_buffered(std::string_view text) {
  if (auto call = parse_complete_call(text)) {
    begin_call(call->name);
    add_arguments(call->arguments);
    end_of_call();
    if (format_ == ToolCallFormat::kHermes) {  // its closing tag is already read
      mode_ = Mode::kText;
      after_call_ = true;
    }
    return;
  }
  out_->content += raw_;
  raw_.clear();
  mode_ = format_ == ToolCallFormat::kLlama3Json ? Mode::kContent : Mode::kText;
  after_call_ = false;
}

void ToolCallParser::abandon_region() {
  const char last = raw_.back();
  raw_.pop_back();
  if (region_calls_ == 0) out_->content += raw_;  // else only separators since the last call
  raw_.clear();
  after_call_ = region_calls_ > 0;
  mode_ = format_ == ToolCallFormat::kLlama3Json ? Mode::kContent : Mode::kText;
  step(last);
}

void ToolCallParser::step_envelope(char c) {
  raw_.push_back(c);
  if (format_ == ToolCallFormat::kHermes &&
      raw_.size() >= kHermesOpen.size() + kHermesClose.size() &&
      std::string_view(raw_).substr(raw_.size() - kHermesClose.size()) == kHermesClose) {
    std::string_view body(raw_);
    body = body.substr(object_start_, body.size() - object_start_ - kHermesClose.size());
    return resolve_buffered(body);
  }
  const CallObjectScanner::Event event = scanner_.step(c);
  if (event == CallObjectScanner::Event::kHeader) {
    raw_.clear();
    begin_call(scanner_.name());
    add_arguments(std::string_view(&c, 1));
    mode_ = Mode::kArguments;
    return;
  }
  // hermes reads a buffered call at its closing tag (text may follow the object inside it)
  if (scanner_.closed() && format_ != ToolCallFormat::kHermes) {
    resolve_buffered(std::string_view(raw_).substr(object_start_));
  }
}

void ToolCallParser::step_arguments(char c) {
  if (format_ == ToolCallFormat::kHermes && c == '<' && !scanner_.in_string()) {
    end_of_call();  // a malformed call: its arguments end where a tag starts
    return step(c);
  }
  if (scanner_.step(c) == CallObjectScanner::Event::kArguments) {
    add_arguments(std::string_view(&c, 1));
  }
  if (scanner_.closed()) end_of_call();
}

void ToolCallParser::step_after_call(char c) {
  switch (format_) {
    case ToolCallFormat::kHermes: {
      if (!end_tag_.holding() && is_json_space(c)) return;
      std::string released;
      if (end_tag_.step(c, released)) {
        mode_ = Mode::kText;
        after_call_ = true;
        return;
      }
      if (released.empty()) return;
      released += end_tag_.held();  // c may have restarted the match
      end_tag_.reset();
      mode_ = Mode::kText;
      after_call_ = true;
      for (char r : released)
        step(r);
      return;
    }
    case ToolCallFormat::kLlama3Json:
      if (is_json_space(c)) return;
      if (c == ';' && !separator_seen_) {
        separator_seen_ = true;
        return;
      }
      if (c == '{') {
        raw_.assign(1, c);
        return start_object(c);
      }
      mode_ = Mode::kContent;
      out_->content.push_back(c);
      return;
    case ToolCallFormat::kMistral:
      raw_.push_back(c);
      if (is_json_space(c)) return;
      if (c == ',') {
        mode_ = Mode::kMistralElement;
        return;
      }
      if (c == ']') {
        raw_.clear();
        mode_ = Mode::kText;
        after_call_ = true;
        return;
      }
      return abandon_region();
    case ToolCallFormat::kNone:
      break;
  }
  mode_ = Mode::kContent;
  out_->content.push_back(c);
}

void ToolCallParser::step_llama_start(char c) {
  raw_.push_back(c);
  if (!python_tag_seen_ && (python_tag_.holding() || c == '<')) {
    std::string released;
    if (python_tag_.step(c, released)) {
      python_tag_seen_ = true;
    } else if (!released.empty()) {  // not the tag (raw_ holds every byte)
      python_tag_.reset();
      out_->content += raw_;
      raw_.clear();
      mode_ = Mode::kContent;
    }
    return;
  }
  if (is_json_space(c)) return;
  if (c == '{') return start_object(c);
  out_->content += raw_;
  raw_.clear();
  mode_ = Mode::kContent;
}

void ToolCallParser::step_mistral(char c) {
  raw_.push_back(c);
  if (is_json_space(c)) return;
  if (mode_ == Mode::kMistralOpen) {
    if (c == '[') {
      mode_ = Mode::kMistralElement;
      return;
    }
    if (is_name_char(c)) {
      call_name_.assign(1, c);
      args_tag_matched_ = 0;
      mode_ = Mode::kMistralName;
      return;
    }
    return abandon_region();
  }
  if (c == '{') return start_object(c);
  if (c == ']') {
    raw_.clear();
    mode_ = Mode::kText;
    after_call_ = true;
    return;
  }
  abandon_region();
}

void ToolCallParser::step_mistral_name(char c) {
  raw_.push_back(c);
  if (args_tag_matched_ == 0 && is_name_char(c) && call_name_.size() < kMaxNameBytes) {
    call_name_.push_back(c);
    return;
  }
  if (c == kMistralArgsTag[args_tag_matched_]) {
    if (++args_tag_matched_ == kMistralArgsTag.size()) {
      args_ = JsonScan();
      mode_ = Mode::kMistralArgs;
    }
    return;
  }
  abandon_region();
}

void ToolCallParser::step_mistral_args(char c) {
  if (args_.depth() == 0) {  // before the arguments' '{': still undecided
    raw_.push_back(c);
    if (is_json_space(c)) return;
    if (c != '{') return abandon_region();
    raw_.clear();
    begin_call(call_name_);
  }
  args_.step(c);
  add_arguments(std::string_view(&c, 1));
  if (!args_.closed()) return;
  end_of_call();
  mode_ = Mode::kText;  // another [TOOL_CALLS] may follow
  after_call_ = true;
}

void ToolCallParser::finish(ParsedDelta& out) {
  out_ = &out;
  switch (mode_) {
    case Mode::kText:
      finish_text();
      break;
    case Mode::kLlamaStart:
      out.content += raw_;
      break;
    case Mode::kEnvelope: {
      std::string_view body = std::string_view(raw_).substr(object_start_);
      if (format_ == ToolCallFormat::kHermes) {
        resolve_buffered(body);  // a call whose closing tag never came
      } else {
        out.content += raw_;  // an unclosed object (a closed one was resolved)
      }
      break;
    }
    case Mode::kMistralOpen:
    case Mode::kMistralElement:
    case Mode::kMistralName:
      if (region_calls_ == 0) out.content += raw_;
      break;
    case Mode::kMistralArgs:
      if (args_.depth() == 0 && !args_.closed()) out.content += raw_;  // no call started
      break;
    case Mode::kContent:
    case Mode::kArguments:
    case Mode::kAfterCall:
      break;
  }
  raw_.clear();
  mode_ = Mode::kContent;
  out_ = nullptr;
}

}  // namespace pagoda::structured
