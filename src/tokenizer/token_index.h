// TokenIndex: token text → id, looked up with string_view (no allocation per lookup).
#pragma once

#include <functional>
#include <string>
#include <string_view>
#include <unordered_map>

#include "tokenizer/vocab.h"

namespace pagoda::tokenizer {

struct StringViewHash {
  using is_transparent = void;
  size_t operator()(std::string_view s) const { return std::hash<std::string_view>{}(s); }
};

class TokenIndex {
 public:
  void reserve(size_t n) { map_.reserve(n); }
  // Returns false if `text` is already present.
  bool insert(const std::string& text, TokenId id) { return map_.emplace(text, id).second; }
  // The id of `text`, or -1.
  TokenId find(std::string_view text) const {
    auto it = map_.find(text);
    return it == map_.end() ? -1 : it->second;
  }
  size_t size() const { return map_.size(); }

 private:
  std::unordered_map<std::string, TokenId, StringViewHash, std::equal_to<>> map_;
};

}  // namespace pagoda::tokenizer
