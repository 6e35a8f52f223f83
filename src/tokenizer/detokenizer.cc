// Each push appends the token's piece to the held-back bytes, emits everything except a trailing
// incomplete sequence, and sanitises what it emits (so invalid bytes never leave this class).
#include "tokenizer/detokenizer.h"

#include "tokenizer/utf8.h"

namespace pagoda::tokenizer {

IncrementalDetokenizer::IncrementalDetokenizer(const Tokenizer& tokenizer, bool skip_special,
                                               std::span<const TokenId> prompt_tail)
    : tokenizer_(tokenizer), skip_special_(skip_special) {
  for (TokenId id : prompt_tail) {
    const bool control =
        tokenizer_.is_control(id) ||
        (id >= 0 && id < tokenizer_.num_tokens() &&
         tokenizer_.vocab().token_types[static_cast<size_t>(id)] == TokenType::kUnknown);
    if (!control) {
      first_ = false;
      break;
    }
  }
}

std::string IncrementalDetokenizer::push(TokenId id) {
  std::string piece = tokenizer_.token_to_piece(id, !skip_special_);
  if (first_) {
    if (tokenizer_.vocab().add_space_prefix && !piece.empty() && piece.front() == ' ') {
      piece.erase(0, 1);
    }
    first_ = false;
  }
  pending_.append(piece);
  const size_t keep = utf8::incomplete_tail_length(pending_);
  std::string delta = utf8::sanitize(std::string_view(pending_).substr(0, pending_.size() - keep));
  pending_.erase(0, pending_.size() - keep);
  text_.append(delta);
  return delta;
}

std::string IncrementalDetokenizer::finish() {
  std::string delta = utf8::sanitize(pending_);
  pending_.clear();
  text_.append(delta);
  return delta;
}

}  // namespace pagoda::tokenizer
