// Symbols form a doubly linked list over the text; a max-heap holds candidate merges with the
// total byte size they had when queued, so a stale entry (one side merged since) is recognised
// and skipped when popped, exactly like llama.cpp's work queue. When the vocabulary allows it
// the text is merged word by word (see split_at_spaces_), which gives the same ids with a heap
// the size of a word instead of the whole text.
#include "tokenizer/spm_encoder.h"

#include <algorithm>
#include <cstdint>

#include "tokenizer/utf8.h"

namespace pagoda::tokenizer {

struct SpmEncoder::Symbol {
  int64_t prev;
  int64_t next;
  size_t start;
  size_t size;  // 0 once merged into its left neighbour
};

struct SpmEncoder::Bigram {
  float score;
  int64_t left;
  int64_t right;
  size_t size;
};

// Max-heap order: higher score first, then the leftmost pair.
struct SpmEncoder::BigramLess {
  bool operator()(const Bigram& a, const Bigram& b) const {
    return a.score < b.score || (a.score == b.score && a.left > b.left);
  }
};

namespace {
constexpr std::string_view kSpace = "\xE2\x96\x81";  // ▁
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
  split_at_spaces_ = true;
  for (const std::string& token : vocab_.tokens) {
    for (size_t k = token.find(kSpace, 1); k != std::string::npos; k = token.find(kSpace, k + 1)) {
      if (k < kSpace.size() || token.compare(k - kSpace.size(), kSpace.size(), kSpace) != 0) {
        split_at_spaces_ = false;
        break;
      }
    }
    if (!split_at_spaces_) break;
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
  // Symbols of the whole text (UTF-8 characters by lead byte, as llama.cpp splits them).
  std::vector<Symbol> symbols;
  symbols.reserve(text.size());
  for (size_t offset = 0; offset < text.size();) {
    size_t len = utf8::lead_length(static_cast<uint8_t>(text[offset]));
    if (len > text.size() - offset) len = text.size() - offset;
    symbols.push_back(Symbol{0, 0, offset, len});
    offset += len;
  }
  // Chunks of symbols merged independently: split before a ▁ whose preceding bytes are not ▁.
  std::vector<Bigram> heap;
  size_t chunk_begin = 0;
  for (size_t i = 1; i <= symbols.size(); ++i) {
    bool boundary = i == symbols.size();
    if (!boundary && split_at_spaces_) {
      const size_t start = symbols[i].start;
      boundary = text.compare(start, symbols[i].size, kSpace) == 0 &&
                 (start < kSpace.size() ||
                  text.compare(start - kSpace.size(), kSpace.size(), kSpace) != 0);
    }
    if (!boundary) continue;
    merge_chunk(text, symbols, chunk_begin, i, heap, out);
    chunk_begin = i;
  }
}

void SpmEncoder::merge_chunk(std::string_view text, std::vector<Symbol>& symbols, size_t begin,
                             size_t end, std::vector<Bigram>& heap,
                             std::vector<TokenId>& out) const {
  for (size_t i = begin; i < end; ++i) {
    symbols[i].prev = i == begin ? -1 : static_cast<int64_t>(i) - 1;
    symbols[i].next = i + 1 == end ? -1 : static_cast<int64_t>(i) + 1;
  }
  heap.clear();
  const BigramLess cmp;
  auto try_add = [&](int64_t left, int64_t right) {
    if (left < 0 || right < 0) return;
    const Symbol& l = symbols[static_cast<size_t>(left)];
    const size_t size = l.size + symbols[static_cast<size_t>(right)].size;
    const TokenId id = index_.find(text.substr(l.start, size));
    if (id < 0) return;
    heap.push_back(Bigram{score(id), left, right, size});
    std::push_heap(heap.begin(), heap.end(), cmp);
  };
  for (size_t i = begin + 1; i < end; ++i) {
    try_add(static_cast<int64_t>(i) - 1, static_cast<int64_t>(i));
  }

  while (!heap.empty()) {
    std::pop_heap(heap.begin(), heap.end(), cmp);
    const Bigram bigram = heap.back();
    heap.pop_back();
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

  for (int64_t i = static_cast<int64_t>(begin); i >= 0; i = symbols[static_cast<size_t>(i)].next) {
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
