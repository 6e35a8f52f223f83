// Matcher: one request's constraint state over tokens. fill_mask() writes which tokens keep the
// output a valid prefix of the grammar's language (their bytes, fed to the parser, leave a live
// thread; end-of-generation tokens only where the grammar may end); accept_token() advances.
//
// Masks come mostly from per-lexer-state token sets cached in the CompiledGrammar (a token that
// stays inside the current lexeme is allowed without asking the parser); only the trie subtrees
// holding tokens along whose bytes a lexeme may end are walked with the parser.
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <string_view>

#include "base/status.h"
#include "structured/compiled_grammar.h"
#include "structured/parser.h"

namespace pagoda::structured {

// Bit `token` of a mask fill_mask wrote (false for ids outside it).
inline bool mask_allows(std::span<const uint64_t> mask, int32_t token) {
  const auto word = static_cast<size_t>(token) / 64;
  return token >= 0 && word < mask.size() && ((mask[word] >> (token % 64)) & 1) != 0;
}

class Matcher {
 public:
  // precondition: grammar->tokens() is set.
  explicit Matcher(std::shared_ptr<const CompiledGrammar> grammar);

  // Writes the allowed set: bit t of mask (mask[t / 64] >> t % 64) for every token id;
  // mask.size() >= tokens().num_mask_words(). After the grammar has ended, only EOG tokens.
  void fill_mask(std::span<uint64_t> mask);
  // Advances by one token. invalid_argument if the token is not allowed (state unchanged).
  // An end-of-generation token ends the matcher (is_finished).
  Status accept_token(int32_t token);
  // Advances by raw bytes (`pagoda grammar check`); false and no change if they leave the
  // language.
  bool accept_bytes(std::string_view bytes);

  bool can_end();
  bool is_finished() const { return finished_; }
  // An independent copy in the same state (its own parser): speculative drafts advance a copy
  // and leave this one where the verified tokens put it.
  std::unique_ptr<Matcher> clone() const;
  const CompiledGrammar& grammar() const { return *grammar_; }

 private:
  Matcher(const Matcher& other);  // clone(): the parser copied, the scratch not
  // Sets the tokens in the trie subtree of `root` whose bytes (from the root's byte on) leave a
  // live thread when fed to the parser from `start`: a depth-first walk, so a prefix shared by
  // many tokens is parsed once and a dead prefix drops its whole subtree.
  void mark_subtree(const Parser::Thread& start, const TokenTable::Trie& trie, uint32_t root,
                    std::span<uint64_t> mask);
  // One token from its first possible lexeme end (`offset` bytes in, lexer state `state`).
  bool token_allowed_from(const Parser::Thread& thread, std::string_view bytes, size_t offset,
                          LexerState state);

  std::shared_ptr<const CompiledGrammar> grammar_;
  std::unique_ptr<Parser> parser_;
  bool finished_ = false;
  Parser::Threads a_, b_;
  std::vector<Parser::Threads> levels_;  // levels_[d]: the threads d bytes below a walk's root
};

}  // namespace pagoda::structured
