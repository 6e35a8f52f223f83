// CallObjectScanner: reads one tool call's JSON object, {"name": "<f>", "arguments": {...}}, a
// byte at a time, so that its arguments can stream while the model writes them. The envelope
// `{ "name" : <JSON string> , "arguments"|"parameters" : {` (any JSON whitespace between tokens)
// is matched exactly; once its arguments object opens, the call's name is known (kHeader) and
// every byte up to the arguments' closing brace is an arguments byte (kArguments). Any other
// shape (keys in another order, escaped keys, an extra key first, arguments that are a string)
// is a kMismatch: the caller then buffers the object and reads it whole (parse_complete_call).
// Throughout, a plain JSON scan (strings, escapes, nesting) says when the object has closed.
// Hostile input is fine: no byte sequence asserts, and the state is a few counters, the keys
// (at most 16 bytes) and the name.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace pagoda::structured {

// A plain JSON scan of one object or array, a byte at a time: strings, escapes and nesting, so
// that the caller knows when the value has closed. Bytes before its first '{' or '[' are junk.
class JsonScan {
 public:
  void step(char c);
  bool in_string() const { return in_string_; }
  int64_t depth() const { return depth_; }  // open objects and arrays
  bool closed() const { return closed_; }   // later bytes are ignored

 private:
  int64_t depth_ = 0;
  bool in_string_ = false;
  bool escape_ = false;
  bool closed_ = false;
};

class CallObjectScanner {
 public:
  enum class Event {
    kNone,       // nothing to report (the envelope goes on, or past the arguments)
    kHeader,     // the name is known and this byte ('{') opens the arguments: its first byte
    kArguments,  // this byte belongs to the arguments
    kMismatch,   // the object is not in the streaming shape (reported once)
  };

  // Consumes the next byte (the first is the object's '{', leading whitespace allowed).
  Event step(char c);

  // Whether the next byte would be inside a JSON string.
  bool in_string() const { return json_.in_string(); }
  // The object's closing brace has been consumed (later bytes are ignored).
  bool closed() const { return json_.closed(); }
  // kHeader has been reported and the arguments' closing brace not yet consumed.
  bool in_arguments() const { return phase_ == Phase::kArguments; }
  // Valid from kHeader on.
  const std::string& name() const { return name_; }

 private:
  enum class Phase {
    kOpen,
    kNameKeyOpen,
    kNameKey,
    kNameColon,
    kNameOpen,
    kName,
    kComma,
    kArgsKeyOpen,
    kArgsKey,
    kArgsColon,
    kArgsOpen,
    kArguments,
    kTail,
    kMismatch,
  };

  Event mismatch();

  Phase phase_ = Phase::kOpen;
  JsonScan json_;
  // The envelope.
  std::string key_;
  std::string name_raw_;
  bool name_escape_ = false;
  std::string name_;
};

struct CompleteCall {
  std::string name;
  std::string arguments;  // JSON text of an object
};

// Reads a whole call object: {"name": <string>, "arguments" (or "parameters"): <object, or a
// string holding an object's JSON>} in any key order, other keys ignored. The arguments are the
// object's compact JSON (or the string's text as written). nullopt for anything else (invalid
// JSON, another shape, nesting deeper than 128). Never throws.
std::optional<CompleteCall> parse_complete_call(std::string_view text);

}  // namespace pagoda::structured
