// The partition finds every occurrence of every special token with one trie walk per text
// position, then replays llama.cpp's "longest token first, leftmost occurrences" order over those
// candidates with a per-byte claim map, which gives the same fragments as its repeated
// find-and-split over a linked list without its O(tokens × text) scans.
#include "tokenizer/special_tokens.h"

#include <algorithm>
#include <optional>
#include <string>
#include <unordered_map>
#include <utility>

namespace pagoda::tokenizer {
namespace {

using TextIndex = std::unordered_map<std::string_view, TokenId>;

std::optional<TokenId> find_first(const TextIndex& index,
                                  std::initializer_list<std::string_view> texts) {
  for (std::string_view t : texts) {
    auto it = index.find(t);
    if (it != index.end()) return it->second;
  }
  return std::nullopt;
}

// Sets `id` from the first of `texts` present (forcing it to kControl) when it is unset.
void infer_id(Vocab& vocab, const TextIndex& index, std::optional<TokenId>& id,
              std::initializer_list<std::string_view> texts) {
  if (id.has_value()) return;
  id = find_first(index, texts);
  if (id.has_value()) vocab.token_types[static_cast<size_t>(*id)] = TokenType::kControl;
}

bool is_ascii_space(char c) {
  return c == ' ' || c == '\t' || c == '\n' || c == '\v' || c == '\f' || c == '\r';
}

}  // namespace

void infer_special_tokens(Vocab& vocab) {
  if (vocab.token_types.empty()) vocab.token_types.assign(vocab.tokens.size(), TokenType::kNormal);
  TextIndex index;
  index.reserve(vocab.tokens.size());
  for (size_t i = 0; i < vocab.tokens.size(); ++i) {
    index.emplace(vocab.tokens[i], static_cast<TokenId>(i));
  }

  infer_id(vocab, index, vocab.eot_id,
           {"<|eot_id|>", "<|im_end|>", "<|end|>", "<end_of_turn>", "<|endoftext|>", "<EOT>",
            "<\xEF\xBD\x9C"
            "end\xE2\x96\x81of\xE2\x96\x81sentence\xEF\xBD\x9C>"});
  infer_id(vocab, index, vocab.eom_id, {"<|eom_id|>"});
  infer_id(vocab, index, vocab.fim_pre_id,
           {"<|fim_prefix|>", "<fim-prefix>",
            "<\xEF\xBD\x9C"
            "fim\xE2\x96\x81"
            "begin\xEF\xBD\x9C>",
            "<PRE>"});
  infer_id(vocab, index, vocab.fim_suf_id,
           {"<|fim_suffix|>", "<fim-suffix>",
            "<\xEF\xBD\x9C"
            "fim\xE2\x96\x81hole\xEF\xBD\x9C>",
            "<SUF>"});
  infer_id(vocab, index, vocab.fim_mid_id,
           {"<|fim_middle|>", "<fim-middle>",
            "<\xEF\xBD\x9C"
            "fim\xE2\x96\x81"
            "end\xEF\xBD\x9C>",
            "<MID>"});
  infer_id(vocab, index, vocab.fim_pad_id, {"<|fim_pad|>", "<fim-pad>", "<PAD>"});
  infer_id(vocab, index, vocab.fim_rep_id,
           {"<|fim_repo|>", "<|repo_name|>", "<fim-repo>", "<REPO>"});
  infer_id(vocab, index, vocab.fim_sep_id, {"<|file_sep|>"});

  std::vector<TokenId>& eog = vocab.extra_eog_ids;
  auto add = [&eog](std::optional<TokenId> id) {
    if (id.has_value() && std::find(eog.begin(), eog.end(), *id) == eog.end()) eog.push_back(*id);
  };
  add(vocab.fim_pad_id);
  add(vocab.fim_rep_id);
  add(vocab.fim_sep_id);
  for (std::string_view text : {"<|eot_id|>", "<|im_end|>", "<|end|>", "<end_of_turn>",
                                "<|endoftext|>", "<|eom_id|>", "<EOT>"}) {
    auto it = index.find(text);
    if (it == index.end()) continue;
    vocab.token_types[static_cast<size_t>(it->second)] = TokenType::kControl;
    add(it->second);
  }
}

SpecialTokenMatcher::SpecialTokenMatcher(const Vocab& vocab) : root_(256, -1) {
  for (size_t i = 0; i < vocab.tokens.size(); ++i) {
    const TokenType type = vocab.token_types.empty() ? TokenType::kNormal : vocab.token_types[i];
    if (type != TokenType::kControl && type != TokenType::kUserDefined &&
        type != TokenType::kUnknown) {
      continue;
    }
    const std::string& text = vocab.tokens[i];
    if (text.empty()) continue;
    const bool rstrip =
        vocab.rstrip_special && text != "<unk>" && text != "<s>" && text != "<|endoftext|>";
    entries_.push_back(Entry{static_cast<TokenId>(i), static_cast<uint32_t>(text.size()),
                             type == TokenType::kUserDefined, rstrip});
  }
  num_special_ = entries_.size();
  std::stable_sort(entries_.begin(), entries_.end(),
                   [](const Entry& a, const Entry& b) { return a.length > b.length; });

  nodes_.emplace_back();  // root
  for (size_t rank = 0; rank < entries_.size(); ++rank) {
    const std::string& text = vocab.tokens[static_cast<size_t>(entries_[rank].id)];
    int32_t node = 0;
    for (size_t k = 0; k < text.size(); ++k) {
      const auto byte = static_cast<uint8_t>(text[k]);
      int32_t next = child(node, byte);
      if (next < 0) {
        next = static_cast<int32_t>(nodes_.size());
        nodes_.emplace_back();
        if (node == 0) {
          root_[byte] = next;
        } else {
          nodes_[static_cast<size_t>(node)].children.emplace_back(byte, next);
        }
      }
      node = next;
    }
    nodes_[static_cast<size_t>(node)].rank = static_cast<int32_t>(rank);
  }
}

int32_t SpecialTokenMatcher::child(int32_t node, uint8_t byte) const {
  if (node == 0) return root_[byte];
  for (const auto& [b, next] : nodes_[static_cast<size_t>(node)].children) {
    if (b == byte) return next;
  }
  return -1;
}

void SpecialTokenMatcher::partition(std::string_view text, bool parse_special,
                                    std::vector<Fragment>& out) const {
  // 1. Every occurrence of every eligible special token: (rank, start).
  std::vector<std::pair<int32_t, size_t>> candidates;
  if (!entries_.empty()) {
    for (size_t pos = 0; pos < text.size(); ++pos) {
      int32_t node = root_[static_cast<uint8_t>(text[pos])];
      for (size_t k = pos + 1; node >= 0; ++k) {
        const int32_t rank = nodes_[static_cast<size_t>(node)].rank;
        if (rank >= 0 && (parse_special || entries_[static_cast<size_t>(rank)].user_defined)) {
          candidates.emplace_back(rank, pos);
        }
        if (k >= text.size()) break;
        node = child(node, static_cast<uint8_t>(text[k]));
      }
    }
  }
  if (candidates.empty()) {
    if (!text.empty()) out.push_back(Fragment{false, -1, 0, text.size()});
    return;
  }
  std::sort(candidates.begin(), candidates.end());

  // 2. Claim them in llama.cpp's order. state: 0 free, 1 token, 2 dropped whitespace.
  std::vector<uint8_t> state(text.size(), 0);
  struct Accepted {
    size_t start;
    size_t end;
    TokenId id;
    bool operator<(const Accepted& o) const { return start < o.start; }
  };
  std::vector<Accepted> accepted;
  size_t i = 0;
  while (i < candidates.size()) {
    const int32_t rank = candidates[i].first;
    const Entry& entry = entries_[static_cast<size_t>(rank)];
    size_t last_end = 0;
    for (; i < candidates.size() && candidates[i].first == rank; ++i) {
      const size_t start = candidates[i].second;
      const size_t end = start + entry.length;
      if (start < last_end) continue;  // overlaps the previous occurrence of this token
      bool free = true;
      for (size_t k = start; k < end && free; ++k)
        free = state[k] == 0;
      if (!free) continue;
      std::fill(state.begin() + static_cast<std::ptrdiff_t>(start),
                state.begin() + static_cast<std::ptrdiff_t>(end), uint8_t{1});
      accepted.push_back(Accepted{start, end, entry.id});
      last_end = end;
      if (entry.rstrip) {
        for (size_t k = end; k < text.size() && state[k] == 0 && is_ascii_space(text[k]); ++k) {
          state[k] = 2;
          last_end = k + 1;
        }
      }
    }
  }
  std::sort(accepted.begin(), accepted.end());

  // 3. Fragments in text order: raw runs of free bytes, tokens, dropped whitespace skipped.
  size_t next_token = 0;
  size_t pos = 0;
  while (pos < text.size()) {
    if (state[pos] == 0) {
      const size_t begin = pos;
      while (pos < text.size() && state[pos] == 0)
        ++pos;
      out.push_back(Fragment{false, -1, begin, pos});
    } else if (state[pos] == 2) {
      ++pos;
    } else {
      const Accepted& token = accepted[next_token++];
      out.push_back(Fragment{true, token.id, token.start, token.end});
      pos = token.end;
    }
  }
}

}  // namespace pagoda::tokenizer
