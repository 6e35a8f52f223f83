#include "structured/parser.h"

#include <algorithm>

namespace pagoda::structured {

Parser::Parser(const CompiledGrammar& grammar) : grammar_(grammar) {
  predicted_.assign(grammar.num_rules(), 0);
  std::vector<Item> kernel;
  for (int32_t alt : grammar.alternatives(grammar.start_rule()))
    kernel.push_back(Item{alt, 0});
  const uint32_t root = make_node(kernel);
  if (grammar.nullable(grammar.start_rule())) nodes_[root].can_end = true;
  threads_.push_back(Thread{root, nodes_[root].lexer_start, true});
}

uint32_t Parser::make_node(const std::vector<Item>& kernel) {
  const auto id = static_cast<uint32_t>(nodes_.size());
  Node node;
  node.item_begin = static_cast<uint32_t>(items_.size());
  seen_.clear();
  allowed_.clear();
  auto add = [&](int32_t pos, uint32_t origin) {
    const uint64_t key = (static_cast<uint64_t>(origin) << 32) | static_cast<uint32_t>(pos);
    if (seen_.insert(key).second) items_.push_back(Item{pos, origin});
  };
  for (const Item& item : kernel)
    add(item.pos, item.origin);
  for (size_t k = node.item_begin; k < items_.size(); ++k) {
    const Item item = items_[k];
    const int32_t sym = grammar_.dot_symbol(item.pos);
    if (sym == kEnd) {
      if (item.origin == id) continue;  // an empty derivation: handled when predicted
      const int32_t rule = grammar_.lhs(item.pos);
      if (rule == grammar_.start_rule() && item.origin == 0) node.can_end = true;
      const Node& origin = nodes_[item.origin];
      for (uint32_t j = origin.item_begin; j < origin.item_end; ++j) {
        const Item parent = items_[j];
        if (grammar_.dot_symbol(parent.pos) == rule) add(parent.pos + 1, parent.origin);
      }
    } else if (sym >= 0) {
      if (predicted_[static_cast<size_t>(sym)] != id + 1) {
        predicted_[static_cast<size_t>(sym)] = id + 1;
        for (int32_t alt : grammar_.alternatives(sym))
          add(alt, id);
      }
      if (grammar_.nullable(sym)) add(item.pos + 1, item.origin);
    } else {
      allowed_.push_back(decode_lexeme(sym));
    }
  }
  node.item_end = static_cast<uint32_t>(items_.size());
  std::sort(allowed_.begin(), allowed_.end());
  allowed_.erase(std::unique(allowed_.begin(), allowed_.end()), allowed_.end());
  node.lexer_start = grammar_.lexer().start(allowed_);
  nodes_.push_back(node);
  return id;
}

uint32_t Parser::complete(uint32_t node_id, int32_t lexeme) {
  const uint64_t key = (static_cast<uint64_t>(node_id) << 32) | static_cast<uint32_t>(lexeme);
  auto it = memo_.find(key);
  if (it != memo_.end()) return it->second;
  kernel_.clear();
  const Node node = nodes_[node_id];
  const int32_t sym = encode_lexeme(lexeme);
  for (uint32_t j = node.item_begin; j < node.item_end; ++j) {
    const Item item = items_[j];
    if (grammar_.dot_symbol(item.pos) == sym) kernel_.push_back(Item{item.pos + 1, item.origin});
  }
  const uint32_t next = make_node(kernel_);  // make_node never calls complete()
  memo_.emplace(key, next);
  memo_log_.push_back(key);
  return next;
}

void Parser::step(const Threads& in, uint8_t byte, Threads& out) {
  out.clear();
  Lexer& lexer = grammar_.lexer();
  auto push = [&](Thread t) {
    if (std::find(out.begin(), out.end(), t) == out.end()) out.push_back(t);
  };
  for (const Thread& t : in) {
    const LexerState next = lexer.next(t.lexer, byte);
    if (next != kDeadLexerState) push(Thread{t.node, next, false});
    if (t.fresh) continue;
    // By index: complete() may grow the lexer's tables that accepting() points into (a state's
    // list itself never changes).
    for (size_t j = 0; j < lexer.accepting(t.lexer).size(); ++j) {
      const uint32_t node = complete(t.node, lexer.accepting(t.lexer)[j]);
      const LexerState s = lexer.next(nodes_[node].lexer_start, byte);
      if (s != kDeadLexerState) push(Thread{node, s, false});
    }
  }
}

bool Parser::feed(std::string_view bytes) {
  Threads cur = threads_;
  for (char c : bytes) {
    step(cur, static_cast<uint8_t>(c), scratch_);
    if (scratch_.empty()) return false;
    cur.swap(scratch_);
  }
  threads_ = std::move(cur);
  return true;
}

bool Parser::can_end(const Threads& threads) {
  Lexer& lexer = grammar_.lexer();
  for (const Thread& t : threads) {
    if (t.fresh) {
      if (nodes_[t.node].can_end) return true;
      continue;
    }
    for (size_t j = 0; j < lexer.accepting(t.lexer).size(); ++j) {
      if (nodes_[complete(t.node, lexer.accepting(t.lexer)[j])].can_end) return true;
    }
  }
  return false;
}

void Parser::truncate(const Mark& mark) {
  for (size_t i = mark.memo_log; i < memo_log_.size(); ++i)
    memo_.erase(memo_log_[i]);
  memo_log_.resize(mark.memo_log);
  nodes_.resize(mark.nodes);
  items_.resize(mark.items);
  // predicted_ stamps refer to node ids; a reused id must not see stale stamps.
  for (uint32_t& p : predicted_) {
    if (p > mark.nodes) p = 0;
  }
}

}  // namespace pagoda::structured
