// Symbols form a doubly linked list over the text; a max-heap holds candidate merges with the
// total byte size they had when queued, so a stale entry (one side merged since) is recognised
// and skipped when popped, exactly like llama.cpp's work queue.
#include "tokenizer/spm_encoder.h"

#include <cstdint>
#include <queue>

#include "tokenizer/utf8.h"

namespace pagoda::tokenizer {
namespace {

struct Symbol {
  int64_t prev;
  int64_t next;
  size_t start;
  size_t size;  // 0 once merged into its left neighbour
};

struct Bigram {
  float score;
  int64_t left;
  int64_t right;
  size_t size;
};

// Max-heap order: higher score first, then the leftmost pair.
struct BigramLess {
  bool operator()(const Bigram& a, const Bigram& b) const {
    return a.score < b.score || (a.score == b.score && a.left > b.left);
  }
};

}  // namespace

SpmEncoder::SpmEncoder(const Vocab& vocab, const TokenIndex& index) : vocab_(vocab), index_(index) {
  static constexpr char kHex[] = "0123456789ABCDEF";
  for (int b = 0; b < 256; ++b) {
    const char name[6] = {'<', '0', 'x', kHex[b >> 4], kHex[b & 15], '>'};
    TokenId id = index_.find(std::string_view(name, 6));
    if (id < 0) id = index_.find(std::string_view(reinterpret_cast<const char*>(&b), 1));
    if (id < 0 && vocab_.unk_id.has_value()) id = *vocab_.unk_id;
    byte_tokens_[static_cast<size_t>(b)] = id;
  }
}

float SpmEncoder::score(TokenId id) const {
  return vocab_.scores.empty() ? 0.0f : vocab_.scores[static_cast<size_t>(id)];
}

void SpmEncoder::append_bytes(std::string_view bytes, std::vector<TokenId>& out) const {
  for (char c : bytes) {
    const TokenId id = byte_tokens_[static_cast<uint8_t>(c)];
    if (id >= 0) out.push_back(id);
  }
}

void SpmEncoder::encode(std::string_view text, std::vector<TokenId>& out) const {
  if (text.empty()) return;
  std::vector<Symbol> symbols;
  symbols.reserve(text.size());
  for (size_t offset = 0; offset < text.size();) {
    size_t len = utf8::lead_length(static_cast<uint8_t>(text[offset]));
    if (len > text.size() - offset) len = text.size() - offset;
    const auto index = static_cast<int64_t>(symbols.size());
    offset += len;
    symbols.push_back(Symbol{index - 1, offset == text.size() ? -1 : index + 1, offset - len, len});
  }

  std::priority_queue<Bigram, std::vector<Bigram>, BigramLess> queue;
  auto try_add = [&](int64_t left, int64_t right) {
    if (left < 0 || right < 0) return;
    const Symbol& l = symbols[static_cast<size_t>(left)];
    const size_t size = l.size + symbols[static_cast<size_t>(right)].size;
    const TokenId id = index_.find(text.substr(l.start, size));
    if (id < 0) return;
    queue.push(Bigram{score(id), left, right, size});
  };
  for (size_t i = 1; i < symbols.size(); ++i) {
    try_add(static_cast<int64_t>(i) - 1, static_cast<int64_t>(i));
  }

  while (!queue.empty()) {
    const Bigram bigram = queue.top();
    queue.pop();
    Symbol& left = symbols[static_cast<size_t>(bigram.left)];
    Symbol& right = symbols[static_cast<size_t>(bigram.right)];
    if (left.size == 0 || right.size == 0 || left.size + right.size != bigram.size) continue;
    left.size += right.size;
    right.size = 0;
    left.next = right.next;
    if (right.next >= 0) symbols[static_cast<size_t>(right.next)].prev = bigram.left;
    try_add(left.prev, bigram.left);
    try_add(bigram.left, left.next);
  }

  for (int64_t i = 0; i >= 0; i = symbols[static_cast<size_t>(i)].next) {
    const Symbol& s = symbols[static_cast<size_t>(i)];
    const std::string_view piece = text.substr(s.start, s.size);
    const TokenId id = index_.find(piece);
    if (id >= 0) {
      out.push_back(id);
    } else {
      append_bytes(piece, out);
    }
  }
}

}  // namespace pagoda::tokenizer
