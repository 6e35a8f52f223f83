// Parser: an Earley parser over lexemes whose scanner is the grammar's Lexer (lexer.h), fed a
// byte at a time. Its state is a small set of threads, each an Earley set (a node) plus the
// lexer state of the lexeme being read: where a lexeme could end or go on (`[0-9]+` before
// `[0-9]`), both continuations stay alive, so the parser accepts exactly the grammar's language
// with no lexing heuristics. Nodes are immutable and live in an arena; mask computation
// (matcher.h) builds nodes speculatively and drops them again with truncate().
//
// Not thread-safe; the caller holds the CompiledGrammar's mutex while calling in.
#pragma once

#include <cstdint>
#include <string_view>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "structured/compiled_grammar.h"

namespace pagoda::structured {

class Parser {
 public:
  struct Thread {
    uint32_t node = 0;
    LexerState lexer = kDeadLexerState;
    bool fresh = false;  // no byte of the current lexeme read yet (only at the very start)
    bool operator==(const Thread&) const = default;
  };
  using Threads = std::vector<Thread>;

  // Builds the root node. precondition: grammar.mutex() held.
  explicit Parser(const CompiledGrammar& grammar);

  const Threads& threads() const { return threads_; }
  // Advances every thread in `in` by `byte` into `out` (cleared first; deduplicated).
  void step(const Threads& in, uint8_t byte, Threads& out);
  // Feeds bytes to the parser's own threads; false (and no change) if no thread survives.
  bool feed(std::string_view bytes);
  // True if one of `threads` can end the text here (a complete parse of the start rule).
  bool can_end(const Threads& threads);
  bool can_end() { return can_end(threads_); }

  // Speculation: nodes built after mark() are dropped by truncate(mark) (with their memo
  // entries). The parser's own threads must not refer to them.
  struct Mark {
    size_t nodes = 0, items = 0, memo_log = 0;
  };
  Mark mark() const { return {nodes_.size(), items_.size(), memo_log_.size()}; }
  void truncate(const Mark& mark);

  size_t num_nodes() const { return nodes_.size(); }

 private:
  struct Item {
    int32_t pos = 0;      // dotted position (CompiledGrammar::dot_symbol)
    uint32_t origin = 0;  // node where this item's rule started
  };
  struct Node {
    uint32_t item_begin = 0, item_end = 0;
    LexerState lexer_start = kDeadLexerState;
    bool can_end = false;
  };

  uint32_t make_node(const std::vector<Item>& kernel);
  // The node after lexeme `lexeme` ends at `node` (memoised).
  uint32_t complete(uint32_t node, int32_t lexeme);

  const CompiledGrammar& grammar_;
  std::vector<Node> nodes_;
  std::vector<Item> items_;
  std::vector<int32_t> allowed_;  // scratch list of lexemes while building a node
  std::unordered_map<uint64_t, uint32_t> memo_;
  std::vector<uint64_t> memo_log_;   // keys added, in order (for truncate)
  std::vector<uint32_t> predicted_;  // [num rules]: 1 + node that predicted it
  std::unordered_set<uint64_t> seen_;
  std::vector<Item> kernel_;
  Threads threads_, scratch_;
};

}  // namespace pagoda::structured
