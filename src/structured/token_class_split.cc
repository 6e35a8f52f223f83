#include "structured/token_class_split.h"

#include <algorithm>

namespace pagoda::structured {

TokenClassSplit make_token_class_split(const TokenTable& table, const ByteClass& cls) {
  TokenClassSplit split;
  split.cls = cls;
  split.pure_mask.assign(table.num_mask_words(), 0);
  std::vector<int32_t> mixed;  // in the full trie's order (sorted by piece), as build_trie wants
  size_t max_len = 0;
  for (int32_t token : table.tokens_by_node()) {
    const std::string_view bytes = table.bytes(token);
    const bool pure = std::all_of(bytes.begin(), bytes.end(),
                                  [&](char c) { return cls.has(static_cast<uint8_t>(c)); });
    if (!pure) {
      mixed.push_back(token);
      continue;
    }
    split.pure.push_back(token);
    split.pure_mask[static_cast<size_t>(token) / 64] |= uint64_t{1} << (token % 64);
    max_len = std::max(max_len, bytes.size());
  }
  std::stable_sort(split.pure.begin(), split.pure.end(), [&](int32_t a, int32_t b) {
    return table.bytes(a).size() < table.bytes(b).size();
  });
  split.pure_len_end.assign(max_len + 1, 0);
  for (int32_t token : split.pure)
    ++split.pure_len_end[table.bytes(token).size()];
  for (size_t l = 1; l <= max_len; ++l)
    split.pure_len_end[l] += split.pure_len_end[l - 1];
  split.mixed = table.build_trie(mixed);
  return split;
}

}  // namespace pagoda::structured
