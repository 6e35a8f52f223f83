// ToolCallParser: the second stage of pagoda::OutputParser. Splits the answer part of a model's
// output (after the reasoning) into content and tool calls in one of the tool-call formats, as it
// streams. A call whose object starts in the streaming shape {"name": "f", "arguments": {...}}
// (CallObjectScanner) is announced as soon as its arguments open, and its arguments stream byte
// for byte (as written, whitespace included); any other shape is buffered and read whole
// (parse_complete_call) when it ends, becoming one complete call or, if it is not a call, content
// (its raw text, tags included). A started call stays a call: if the output ends inside its
// arguments, nothing more is emitted for it. The tags and separators around calls are dropped.
//
// kHermes: text outside <tool_call>...</tool_call> is content, verbatim, except that whitespace
//   after a call that only runs up to the next call or the end is dropped (the "\n" between
//   parallel calls). Inside a streamed call, a '<' outside a JSON string ends the call (the model
//   went on to its closing tag early); text between a call's object and its closing tag is content.
// kLlama3Json: an output that starts (after whitespace) with "<|python_tag|>" or "{" is a list of
//   call objects separated by ";" (or nothing) and whitespace; any other output is all content.
//   After a call, whitespace and one ';' are dropped; from the first thing that is not a call
//   on, the rest is content.
// kMistral: "[TOOL_CALLS]" then a JSON array of call objects ("id" and other keys tolerated), or
//   (Mistral's v11 tokenizers) "[TOOL_CALLS]name[ARGS]{arguments}", one call per tag, streamed
//   from its '{'; text before it (and after the array or call, whitespace-only runs dropped as
//   for hermes) is content. An element that is not a call, or a name not followed by "[ARGS]{",
//   turns the undecided text (from the tag, or from the last call) into content.
// kNone: everything is content.
// Streaming-exact: feed()+finish() give the same parts for every split of the same text; what is
// held back is only a possible tag prefix, whitespace after a call, or an undecided call.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "pagoda/output_parser.h"
#include "structured/call_object_scanner.h"
#include "structured/tag_matcher.h"

namespace pagoda::structured {

class ToolCallParser {
 public:
  ToolCallParser(ToolCallFormat format, std::string id_prefix);

  // Appends the now-certain content and tool-call deltas of `text` to `out`.
  void feed(std::string_view text, ParsedDelta& out);
  // The output ended: resolves what was held (an undecided call is read whole or is content).
  void finish(ParsedDelta& out);

  int32_t num_calls() const { return num_calls_; }

 private:
  enum class Mode {
    kText,            // hermes, mistral: content, looking for the start tag
    kContent,         // everything from here on is content
    kLlamaStart,      // llama3_json: the output's start (whitespace, <|python_tag|>)
    kEnvelope,        // a call object before its arguments, or one buffered whole
    kArguments,       // a streamed call: its arguments, then the rest of its object
    kAfterCall,       // hermes: whitespace, </tool_call>; llama3: ';'; mistral: ',' or ']'
    kMistralOpen,     // after [TOOL_CALLS]: the array's '[', or a function name
    kMistralElement,  // in the array: a call object or ']'
    kMistralName,     // [TOOL_CALLS]name: the rest of the name, then "[ARGS]"
    kMistralArgs,     // after [ARGS]: the arguments object (streamed from its '{')
  };

  static Mode initial_mode(ToolCallFormat format);
  void step(char c);
  void step_text(char c);
  void step_envelope(char c);
  void step_arguments(char c);
  void step_after_call(char c);
  void step_llama_start(char c);
  void step_mistral(char c);
  void step_mistral_name(char c);
  void step_mistral_args(char c);
  void finish_text();

  // A call object starts with this '{' (raw_ holds the text since the undecided region began).
  void start_object(char c);
  // The buffered call object (or hermes tag body) `text` is complete: a call, or else the
  // undecided region becomes content.
  void resolve_buffered(std::string_view text);
  // Leave the undecided region: raw_ but its last byte is content, and that byte is read again
  // as text.
  void abandon_region();
  void end_of_call();

  void begin_call(const std::string& name);
  void add_arguments(std::string_view bytes);

  ToolCallFormat format_;
  std::string id_prefix_;
  ParsedDelta* out_ = nullptr;  // during feed()/finish()
  Mode mode_;
  int32_t num_calls_ = 0;

  TagMatcher start_tag_;                     // "<tool_call>" or "[TOOL_CALLS]"
  TagMatcher end_tag_{"</tool_call>"};       // hermes
  TagMatcher python_tag_{"<|python_tag|>"};  // llama3_json
  bool python_tag_seen_ = false;
  bool after_call_ = false;      // kText: leading whitespace is dropped
  std::string space_;            // kText: that whitespace, held
  bool separator_seen_ = false;  // llama3_json kAfterCall: the ';'
  int32_t region_calls_ = 0;     // mistral: calls in the current array
  std::string call_name_;        // mistral name form: the function's name
  size_t args_tag_matched_ = 0;  // mistral name form: bytes of "[ARGS]" matched
  JsonScan args_;                // mistral name form: the arguments object

  std::string raw_;          // the undecided region's text (tags and separators included)
  size_t object_start_ = 0;  // where its call object starts in raw_
  CallObjectScanner scanner_;
};

}  // namespace pagoda::structured
