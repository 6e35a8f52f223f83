// TagMatcher: finds a fixed tag ("<tool_call>", "</think>", ...) in text that arrives one byte at
// a time, holding back only the bytes that may still be the start of the tag. The tag's first
// byte must not occur again inside it (true of every tag the output parsers look for), so a
// mismatch never hides a later start: the held bytes are released and matching restarts at the
// current byte.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>

namespace pagoda::structured {

class TagMatcher {
 public:
  explicit TagMatcher(std::string_view tag) : tag_(tag) {}

  // Consumes one byte. Returns true when it completes the tag (then nothing is held); otherwise
  // appends to `released` the bytes now known not to belong to the tag.
  bool step(char c, std::string& released) {
    if (c == tag_[matched_]) {
      if (++matched_ < tag_.size()) return false;
      matched_ = 0;
      return true;
    }
    released.append(tag_.substr(0, matched_));
    matched_ = 0;
    if (c == tag_[0]) {
      matched_ = 1;
    } else {
      released.push_back(c);
    }
    return false;
  }

  // The bytes held back: a proper prefix of the tag.
  std::string_view held() const { return tag_.substr(0, matched_); }
  bool holding() const { return matched_ > 0; }
  void reset() { matched_ = 0; }

 private:
  std::string_view tag_;
  size_t matched_ = 0;
};

inline bool is_json_space(char c) {
  return c == ' ' || c == '\t' || c == '\n' || c == '\r';
}

}  // namespace pagoda::structured
