// PreTokenizer: splits text into the words that byte-level BPE merges within, the way llama.cpp
// does for each `tokenizer.ggml.pre`: a list of regexes applied in sequence, each one splitting
// every current piece into its matches and the unmatched gaps between them (nothing is dropped;
// a piece's end acts as the end of the text for lookaheads and `$`). The regexes run on PCRE2
// (UTF + UCP + JIT); `\s` is pinned to the Unicode White_Space set llama.cpp uses.
#pragma once

#include <cstddef>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "base/status.h"

namespace pagoda::tokenizer {

// [begin, end) byte offsets into the text given to split().
using ByteRange = std::pair<size_t, size_t>;

class PreTokenizer {
 public:
  // The regex list for a pre-tokenizer name ("gpt-2", "llama-bpe", "qwen2", ...). Unknown names
  // fall back to "default" with a warning. Fails only if a pattern does not compile (a bug).
  static Result<std::unique_ptr<PreTokenizer>> create(std::string_view pre);
  ~PreTokenizer();

  // True if `pre` names a pre-tokenizer this class knows (aliases included).
  static bool is_known(std::string_view pre);

  // Appends the words of `text` to `words`, in order, covering every byte exactly once. Invalid
  // UTF-8 bytes become one-byte words of their own; the valid runs between them go through the
  // regexes. Thread-safe.
  void split(std::string_view text, std::vector<ByteRange>& words) const;

  // Translates a llama.cpp (std::regex flavoured) pattern into PCRE2 syntax: `\s`/`\S` become
  // explicit White_Space classes, `$` becomes `\z`. Exposed for tests.
  static std::string to_pcre2(std::string_view pattern);

 private:
  struct Regex;
  PreTokenizer();
  void apply(const Regex& regex, std::string_view text, const std::vector<ByteRange>& in,
             std::vector<ByteRange>& out) const;
  std::vector<std::unique_ptr<Regex>> regexes_;
};

}  // namespace pagoda::tokenizer
