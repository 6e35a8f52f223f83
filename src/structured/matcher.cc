#include "structured/matcher.h"

namespace pagoda::structured {

Matcher::Matcher(std::shared_ptr<const CompiledGrammar> grammar) : grammar_(std::move(grammar)) {
  std::lock_guard lock(grammar_->mutex());
  parser_ = std::make_unique<Parser>(*grammar_);
}

std::unique_ptr<Matcher> Matcher::clone() const {
  std::lock_guard lock(grammar_->mutex());
  std::unique_ptr<Matcher> copy(new Matcher(*this));
  return copy;
}

Matcher::Matcher(const Matcher& other)
    : grammar_(other.grammar_),
      parser_(std::make_unique<Parser>(*other.parser_)),
      finished_(other.finished_) {}

bool Matcher::token_allowed_from(const Parser::Thread& thread, std::string_view bytes,
                                 size_t offset, LexerState state) {
  a_.assign(1, Parser::Thread{thread.node, state, false});
  for (size_t i = offset; i < bytes.size(); ++i) {
    parser_->step(a_, static_cast<uint8_t>(bytes[i]), b_);
    if (b_.empty()) return false;
    a_.swap(b_);
  }
  return true;
}

void Matcher::mark_subtree(const Parser::Thread& start, const TokenTable::Trie& tokens,
                           uint32_t root, std::span<uint64_t> mask) {
  const std::vector<TokenTable::TrieNode>& trie = tokens.nodes;
  const std::vector<int32_t>& by_node = tokens.tokens_by_node;
  const size_t base = trie[root].depth;  // level 0: the threads before the root's byte
  if (levels_.empty()) levels_.resize(2);
  levels_[0].assign(1, start);
  const uint32_t end = trie[root].subtree_end;
  for (uint32_t i = root; i < end;) {
    const TokenTable::TrieNode& node = trie[i];
    const size_t d = node.depth - base;  // the parent's level
    if (levels_.size() < d + 2) levels_.resize(d + 2);
    Parser::Threads& out = levels_[d + 1];
    parser_->step(levels_[d], node.byte, out);
    if (out.empty()) {
      i = node.subtree_end;  // no thread survives this prefix: nothing below is allowed
      continue;
    }
    for (uint32_t t = node.token_begin; t < node.token_end; ++t) {
      const int32_t token = by_node[t];
      mask[static_cast<size_t>(token) / 64] |= uint64_t{1} << (token % 64);
    }
    ++i;
  }
}

void Matcher::fill_mask(std::span<uint64_t> mask) {
  std::fill(mask.begin(), mask.end(), 0);
  const TokenTable& table = *grammar_->tokens();
  auto set = [&](int32_t token) {
    mask[static_cast<size_t>(token) / 64] |= uint64_t{1} << (token % 64);
  };
  std::lock_guard lock(grammar_->mutex());
  if (finished_) {
    for (int32_t t : table.eog_tokens())
      set(t);
    return;
  }
  const Parser::Mark mark = parser_->mark();
  const Parser::Threads threads = parser_->threads();
  const size_t words = std::min(mask.size(), table.num_mask_words());
  for (const Parser::Thread& thread : threads) {
    const LexerTokenSets& sets = grammar_->token_sets(thread.lexer);
    for (size_t w = 0; w < words; ++w)
      mask[w] |= sets.inside[w];
  }
  for (const Parser::Thread& thread : threads) {
    // The entry stays put while this loop runs (only token_sets() inserts into or clears the
    // cache; the parser steps below touch the lexer alone).
    const LexerTokenSets& sets = grammar_->token_sets(thread.lexer);
    for (const LexerTokenSets::Root& r : sets.roots)
      mark_subtree(Parser::Thread{thread.node, r.state, false}, *sets.trie, r.node, mask);
    for (const LexerTokenSets::Boundary& b : sets.boundary) {
      if ((mask[static_cast<size_t>(b.token) / 64] >> (b.token % 64)) & 1) continue;
      if (token_allowed_from(thread, table.bytes(b.token), b.offset, b.state)) set(b.token);
    }
  }
  if (parser_->can_end(threads)) {
    for (int32_t t : table.eog_tokens())
      set(t);
  }
  parser_->truncate(mark);
}

Status Matcher::accept_token(int32_t token) {
  const TokenTable& table = *grammar_->tokens();
  std::lock_guard lock(grammar_->mutex());
  if (table.is_eog(token)) {
    if (!finished_ && !parser_->can_end())
      return invalid_argument("token {} ends the output where the grammar cannot end", token);
    finished_ = true;
    return Status();
  }
  if (finished_) return invalid_argument("token {} after the grammar ended", token);
  const std::string_view bytes = table.bytes(token);
  if (bytes.empty()) return invalid_argument("token {} has no text the grammar can accept", token);
  if (!parser_->feed(bytes))
    return invalid_argument("token {} leaves the grammar's language", token);
  return Status();
}

bool Matcher::accept_bytes(std::string_view bytes) {
  std::lock_guard lock(grammar_->mutex());
  if (finished_) return bytes.empty();
  return parser_->feed(bytes);
}

bool Matcher::can_end() {
  std::lock_guard lock(grammar_->mutex());
  return finished_ || parser_->can_end();
}

}  // namespace pagoda::structured
