// CallObjectScanner and parse_complete_call (see call_object_scanner.h).
#include "structured/call_object_scanner.h"

#include <nlohmann/json.hpp>

#include "structured/tag_matcher.h"

namespace pagoda::structured {
namespace {

constexpr size_t kMaxKeyBytes = 16;
constexpr int64_t kMaxCompleteCallDepth = 128;

// Whether brackets outside strings nest deeper than `limit` (nlohmann's dump recurses).
bool nests_deeper_than(std::string_view text, int64_t limit) {
  int64_t depth = 0;
  bool in_string = false, escape = false;
  for (char c : text) {
    if (in_string) {
      if (escape) {
        escape = false;
      } else if (c == '\\') {
        escape = true;
      } else if (c == '"') {
        in_string = false;
      }
    } else if (c == '"') {
      in_string = true;
    } else if (c == '{' || c == '[') {
      if (++depth > limit) return true;
    } else if ((c == '}' || c == ']') && depth > 0) {
      --depth;
    }
  }
  return false;
}

}  // namespace

void JsonScan::step(char c) {
  if (closed_) return;
  if (in_string_) {
    if (escape_) {
      escape_ = false;
    } else if (c == '\\') {
      escape_ = true;
    } else if (c == '"') {
      in_string_ = false;
    }
    return;
  }
  if (c == '"') {
    in_string_ = depth_ > 0;  // before the value opens, quotes are junk
  } else if (c == '{' || c == '[') {
    ++depth_;
  } else if ((c == '}' || c == ']') && depth_ > 0) {
    closed_ = --depth_ == 0;
  }
}

CallObjectScanner::Event CallObjectScanner::mismatch() {
  phase_ = Phase::kMismatch;
  return Event::kMismatch;
}

CallObjectScanner::Event CallObjectScanner::step(char c) {
  if (json_.closed()) return Event::kNone;
  json_.step(c);
  const bool space = is_json_space(c);
  switch (phase_) {
    case Phase::kOpen:
      if (space) return Event::kNone;
      if (c != '{') return mismatch();
      phase_ = Phase::kNameKeyOpen;
      return Event::kNone;
    case Phase::kNameKeyOpen:
    case Phase::kArgsKeyOpen:
      if (space) return Event::kNone;
      if (c != '"') return mismatch();
      key_.clear();
      phase_ = phase_ == Phase::kNameKeyOpen ? Phase::kNameKey : Phase::kArgsKey;
      return Event::kNone;
    case Phase::kNameKey:
    case Phase::kArgsKey:
      if (c == '"') {
        if (phase_ == Phase::kNameKey) {
          if (key_ != "name") return mismatch();
          phase_ = Phase::kNameColon;
        } else {
          if (key_ != "arguments" && key_ != "parameters") return mismatch();
          phase_ = Phase::kArgsColon;
        }
        return Event::kNone;
      }
      // An escaped key, or one longer than any we look for, is not the envelope.
      if (c == '\\' || key_.size() >= kMaxKeyBytes) return mismatch();
      key_.push_back(c);
      return Event::kNone;
    case Phase::kNameColon:
    case Phase::kArgsColon:
      if (space) return Event::kNone;
      if (c != ':') return mismatch();
      phase_ = phase_ == Phase::kNameColon ? Phase::kNameOpen : Phase::kArgsOpen;
      return Event::kNone;
    case Phase::kNameOpen:
      if (space) return Event::kNone;
      if (c != '"') return mismatch();
      phase_ = Phase::kName;
      return Event::kNone;
    case Phase::kName: {
      if (name_escape_) {
        name_escape_ = false;
      } else if (c == '\\') {
        name_escape_ = true;
      } else if (c == '"') {
        // Decode the string (escapes, UTF-8 validity) with the JSON library.
        const nlohmann::json value =
            nlohmann::json::parse("\"" + name_raw_ + "\"", nullptr, /*allow_exceptions=*/false);
        if (!value.is_string()) return mismatch();
        name_ = value.get<std::string>();
        name_raw_.clear();
        phase_ = Phase::kComma;
        return Event::kNone;
      }
      name_raw_.push_back(c);
      return Event::kNone;
    }
    case Phase::kComma:
      if (space) return Event::kNone;
      if (c != ',') return mismatch();
      phase_ = Phase::kArgsKeyOpen;
      return Event::kNone;
    case Phase::kArgsOpen:
      if (space) return Event::kNone;
      if (c != '{') return mismatch();
      phase_ = Phase::kArguments;
      return Event::kHeader;
    case Phase::kArguments:
      if (json_.depth() <= 1) phase_ = Phase::kTail;  // this byte closed the arguments
      return Event::kArguments;
    case Phase::kTail:
    case Phase::kMismatch:
      return Event::kNone;
  }
  return Event::kNone;
}

std::optional<CompleteCall> parse_complete_call(std::string_view text) {
  try {
    if (nests_deeper_than(text, kMaxCompleteCallDepth)) return std::nullopt;
    const nlohmann::json call = nlohmann::json::parse(text, nullptr, /*allow_exceptions=*/false);
    if (!call.is_object()) return std::nullopt;
    const auto name = call.find("name");
    if (name == call.end() || !name->is_string()) return std::nullopt;
    auto args = call.find("arguments");
    if (args == call.end()) args = call.find("parameters");
    if (args == call.end()) return std::nullopt;
    CompleteCall out;
    out.name = name->get<std::string>();
    if (args->is_object()) {
      out.arguments = args->dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
    } else if (args->is_string()) {
      out.arguments = args->get<std::string>();
      if (nests_deeper_than(out.arguments, kMaxCompleteCallDepth)) return std::nullopt;
      const nlohmann::json inner = nlohmann::json::parse(out.arguments, nullptr, false);
      if (!inner.is_object()) return std::nullopt;
    } else {
      return std::nullopt;
    }
    return out;
  } catch (...) {  // bad_alloc: never let an exception out of the parser
    return std::nullopt;
  }
}

}  // namespace pagoda::structured
