#include "structured/token_table.h"

#include <algorithm>
#include <numeric>

#include "structured/token_class_split.h"

namespace pagoda::structured {

std::shared_ptr<const TokenTable> TokenTable::create(const tokenizer::Tokenizer& tokenizer,
                                                     int32_t vocab_size) {
  auto table = std::make_shared<TokenTable>();
  table->vocab_size_ = std::max(vocab_size, tokenizer.num_tokens());
  table->pieces_.resize(static_cast<size_t>(table->vocab_size_));
  table->eog_.assign(static_cast<size_t>(table->vocab_size_), 0);
  for (int32_t id = 0; id < tokenizer.num_tokens(); ++id) {
    if (tokenizer.is_end_of_generation(id)) {
      table->eog_[static_cast<size_t>(id)] = 1;
      table->eog_ids_.push_back(id);
      continue;
    }
    if (tokenizer.is_control(id)) {
      std::string text = tokenizer.token_to_piece(id, true);
      if (!text.empty()) table->control_text_.emplace(id, std::move(text));
      continue;
    }
    table->pieces_[static_cast<size_t>(id)] = tokenizer.token_to_piece(id, false);
  }
  table->build_full_trie();
  return table;
}

std::shared_ptr<const TokenTable> TokenTable::from_pieces(std::vector<std::string> pieces,
                                                          std::vector<int32_t> eog,
                                                          std::vector<int32_t> control) {
  auto table = std::make_shared<TokenTable>();
  table->vocab_size_ = static_cast<int32_t>(pieces.size());
  table->pieces_ = std::move(pieces);
  table->eog_.assign(table->pieces_.size(), 0);
  for (int32_t id : eog) {
    if (id < 0 || static_cast<size_t>(id) >= table->pieces_.size()) continue;
    table->eog_[static_cast<size_t>(id)] = 1;
    table->eog_ids_.push_back(id);
    table->pieces_[static_cast<size_t>(id)].clear();
  }
  for (int32_t id : control) {
    if (id < 0 || static_cast<size_t>(id) >= table->pieces_.size()) continue;
    table->control_text_[id] = std::move(table->pieces_[static_cast<size_t>(id)]);
    table->pieces_[static_cast<size_t>(id)].clear();
  }
  table->build_full_trie();
  return table;
}

void TokenTable::build_full_trie() {
  std::vector<int32_t> order;
  for (int32_t id = 0; id < vocab_size_; ++id) {
    // A piece longer than any real token (1 KiB) is left out: never allowed.
    const size_t n = pieces_[static_cast<size_t>(id)].size();
    if (n > 0 && n <= 1024) order.push_back(id);
  }
  std::sort(order.begin(), order.end(), [&](int32_t a, int32_t b) {
    const std::string& pa = pieces_[static_cast<size_t>(a)];
    const std::string& pb = pieces_[static_cast<size_t>(b)];
    return pa != pb ? pa < pb : a < b;
  });
  // Preorder construction from the sorted list: a stack of open nodes, one per depth.
  Trie& trie = trie_;
  trie = Trie{};
  std::vector<TrieNode>& nodes = trie.nodes;
  nodes.push_back(TrieNode{});
  std::vector<uint32_t> open = {0};  // open[d] = node at depth d on the current path
  std::string_view prev;
  auto close_to = [&](size_t depth) {
    while (open.size() > depth + 1) {
      nodes[open.back()].subtree_end = static_cast<uint32_t>(nodes.size());
      open.pop_back();
    }
  };
  for (int32_t id : order) {
    const std::string_view p = pieces_[static_cast<size_t>(id)];
    size_t lcp = 0;
    while (lcp < p.size() && lcp < prev.size() && p[lcp] == prev[lcp])
      ++lcp;
    close_to(lcp);
    for (size_t d = lcp; d < p.size(); ++d) {
      TrieNode node;
      node.byte = static_cast<uint8_t>(p[d]);
      node.depth = static_cast<uint16_t>(std::min<size_t>(d + 1, UINT16_MAX));
      nodes.push_back(node);
      open.push_back(static_cast<uint32_t>(nodes.size() - 1));
    }
    TrieNode& last = nodes[open.back()];
    if (last.token_end == 0 && last.token_begin == 0) {
      last.token_begin = static_cast<uint32_t>(trie.tokens_by_node.size());
    }
    trie.tokens_by_node.push_back(id);
    last.token_end = static_cast<uint32_t>(trie.tokens_by_node.size());
    prev = p;
  }
  close_to(0);
  nodes[0].subtree_end = static_cast<uint32_t>(nodes.size());
}

namespace {
size_t split_bytes(const TokenClassSplit& s) {
  return s.pure.size() * sizeof(int32_t) + s.pure_len_end.size() * sizeof(uint32_t) +
         s.pure_mask.size() * sizeof(uint64_t) +
         s.mixed.nodes.size() * sizeof(TokenTable::TrieNode) +
         s.mixed.tokens_by_node.size() * sizeof(int32_t);
}
}  // namespace

std::shared_ptr<const TokenClassSplit> TokenTable::split(const ByteClass& cls) const {
  std::lock_guard lock(splits_mutex_);
  for (size_t i = 0; i < splits_.size(); ++i) {
    if (splits_[i]->cls != cls) continue;
    auto hit = splits_[i];
    splits_.erase(splits_.begin() + static_cast<std::ptrdiff_t>(i));
    splits_.push_back(hit);  // most recently used last
    return hit;
  }
  auto made = std::make_shared<const TokenClassSplit>(make_token_class_split(*this, cls));
  splits_bytes_ += split_bytes(*made);
  splits_.push_back(made);
  while (splits_.size() > 1 && (splits_.size() > kMaxSplits || splits_bytes_ > kMaxSplitBytes)) {
    splits_bytes_ -= split_bytes(*splits_.front());
    splits_.erase(splits_.begin());
  }
  return made;
}

}  // namespace pagoda::structured
