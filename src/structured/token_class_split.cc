#include "structured/token_class_split.h"

#include <algorithm>

namespace pagoda::structured {

namespace {

// The part of `full` that leads to a token with `keep_token` set: the same preorder with the
// other nodes and tokens dropped (no string work: one pass for parents, one for the kept
// subtrees, one to copy).
TokenTable::Trie filter_trie(const TokenTable::Trie& full, const std::vector<uint8_t>& keep_token) {
  const std::vector<TokenTable::TrieNode>& nodes = full.nodes;
  const size_t n = nodes.size();
  std::vector<uint32_t> parent(n, 0), path(2, 0);
  std::vector<uint8_t> keep(n, 0);
  for (size_t i = 1; i < n; ++i) {
    const size_t d = nodes[i].depth;
    if (path.size() < d + 1) path.resize(d + 1);
    parent[i] = path[d - 1];
    path[d] = static_cast<uint32_t>(i);
    for (uint32_t t = nodes[i].token_begin; t < nodes[i].token_end; ++t) {
      if (keep_token[t]) keep[i] = 1;
    }
  }
  keep[0] = 1;
  for (size_t i = n - 1; i >= 1; --i) {
    if (keep[i]) keep[parent[i]] = 1;
  }
  // new_index[i]: kept nodes before old node i (so a subtree's end maps to its new end).
  std::vector<uint32_t> new_index(n + 1, 0);
  for (size_t i = 0; i < n; ++i)
    new_index[i + 1] = new_index[i] + keep[i];
  TokenTable::Trie out;
  out.nodes.reserve(new_index[n]);
  for (size_t i = 0; i < n; ++i) {
    if (!keep[i]) continue;
    TokenTable::TrieNode node = nodes[i];
    node.subtree_end = new_index[node.subtree_end];
    node.token_begin = static_cast<uint32_t>(out.tokens_by_node.size());
    for (uint32_t t = nodes[i].token_begin; t < nodes[i].token_end; ++t) {
      if (keep_token[t]) out.tokens_by_node.push_back(full.tokens_by_node[t]);
    }
    node.token_end = static_cast<uint32_t>(out.tokens_by_node.size());
    out.nodes.push_back(node);
  }
  return out;
}

}  // namespace

TokenClassSplit make_token_class_split(const TokenTable& table, const ByteClass& cls) {
  TokenClassSplit split;
  split.cls = cls;
  split.pure_mask.assign(table.num_mask_words(), 0);
  const std::vector<int32_t>& order = table.tokens_by_node();
  std::vector<uint8_t> mixed(order.size(), 0);  // by position in the full trie's token list
  size_t max_len = 0;
  for (size_t k = 0; k < order.size(); ++k) {
    const int32_t token = order[k];
    const std::string_view bytes = table.bytes(token);
    const bool pure = std::all_of(bytes.begin(), bytes.end(),
                                  [&](char c) { return cls.has(static_cast<uint8_t>(c)); });
    if (!pure) {
      mixed[k] = 1;
      continue;
    }
    split.pure.push_back(token);
    split.pure_mask[static_cast<size_t>(token) / 64] |= uint64_t{1} << (token % 64);
    max_len = std::max(max_len, bytes.size());
  }
  // By length (a counting sort; stable, though nothing depends on the order within a length).
  split.pure_len_end.assign(max_len + 1, 0);
  for (int32_t token : split.pure)
    ++split.pure_len_end[table.bytes(token).size()];
  for (size_t l = 1; l <= max_len; ++l)
    split.pure_len_end[l] += split.pure_len_end[l - 1];
  std::vector<uint32_t> fill(max_len + 1, 0);
  for (size_t l = 1; l <= max_len; ++l)
    fill[l] = split.pure_len_end[l - 1];
  std::vector<int32_t> by_length(split.pure.size());
  for (int32_t token : split.pure)
    by_length[fill[table.bytes(token).size()]++] = token;
  split.pure = std::move(by_length);
  split.mixed = filter_trie(table.full_trie(), mixed);
  return split;
}

}  // namespace pagoda::structured
