// Per word: symbols in a linked list, a min-heap of (rank, left) candidate merges; an entry whose
// sides changed since it was queued is stale and skipped (same rule as llama.cpp, which compares
// the concatenated text: with a fixed left start, equal text means equal total size). Symbols
// carry their token id, so merge lookups are one probe in an id-pair table.
#include "tokenizer/bpe_encoder.h"

#include <algorithm>
#include <queue>

#include "tokenizer/byte_unicode.h"

namespace pagoda::tokenizer {
namespace {

struct Symbol {
  int64_t prev;
  int64_t next;
  size_t start;
  size_t size;  // 0 once merged into its left neighbour
  TokenId id;   // token id of the symbol's text, -1 if it is not a token
};

struct Bigram {
  int32_t rank;
  TokenId result;
  int64_t left;
  int64_t right;
  size_t size;
};

// Min-heap order for std::priority_queue: lower rank first, then the leftmost pair.
struct BigramGreater {
  bool operator()(const Bigram& a, const Bigram& b) const {
    return a.rank > b.rank || (a.rank == b.rank && a.left > b.left);
  }
};

}  // namespace

struct BpeEncoder::Scratch {
  std::string word;
  std::string key;
  std::vector<Symbol> symbols;
  std::vector<Bigram> heap;
};

void BpeEncoder::PairTable::reserve(size_t n) {
  size_t capacity = 16;
  int bits = 4;
  while (capacity < 2 * n) {
    capacity *= 2;
    ++bits;
  }
  keys_.assign(capacity, ~uint64_t{0});
  values_.assign(capacity, Merge{});
  shift_ = 64 - bits;
}

void BpeEncoder::PairTable::insert(TokenId left, TokenId right, Merge merge) {
  const uint64_t k = key(left, right);
  const size_t mask = keys_.size() - 1;
  for (size_t s = slot(k);; s = (s + 1) & mask) {
    if (keys_[s] == k) return;
    if (keys_[s] == ~uint64_t{0}) {
      keys_[s] = k;
      values_[s] = merge;
      return;
    }
  }
}

BpeEncoder::Merge BpeEncoder::PairTable::find(TokenId left, TokenId right) const {
  if (keys_.empty()) return Merge{};
  const uint64_t k = key(left, right);
  const size_t mask = keys_.size() - 1;
  for (size_t s = slot(k);; s = (s + 1) & mask) {
    if (keys_[s] == k) return values_[s];
    if (keys_[s] == ~uint64_t{0}) return Merge{};
  }
}

Result<std::unique_ptr<BpeEncoder>> BpeEncoder::create(const Vocab& vocab,
                                                       const TokenIndex& index) {
  std::unique_ptr<BpeEncoder> encoder(new BpeEncoder(vocab, index));
  PAGODA_ASSIGN_OR_RETURN(encoder->pre_, PreTokenizer::create(vocab.pre));
  for (int b = 0; b < 256; ++b) {
    encoder->byte_tokens_[static_cast<size_t>(b)] =
        index.find(byte_to_unicode(static_cast<uint8_t>(b)));
  }
  encoder->pairs_.reserve(vocab.merges.size());
  std::string merged;
  for (size_t i = 0; i < vocab.merges.size(); ++i) {
    const std::string& merge = vocab.merges[i];
    const size_t space = merge.size() > 1 ? merge.find(' ', 1) : std::string::npos;
    if (space == std::string::npos) {
      return invalid_argument("merges[{}] ('{}') is not two symbols separated by a space", i,
                              merge.substr(0, 64));
    }
    const std::string_view left = std::string_view(merge).substr(0, space);
    const std::string_view right = std::string_view(merge).substr(space + 1);
    merged.assign(left).append(right);
    const Merge m{static_cast<int32_t>(i), index.find(merged)};
    const TokenId left_id = index.find(left);
    const TokenId right_id = index.find(right);
    if (left_id >= 0 && right_id >= 0) {
      encoder->pairs_.insert(left_id, right_id, m);
    } else {
      encoder->strings_.emplace(merge, m);
    }
  }
  return encoder;
}

BpeEncoder::Merge BpeEncoder::find_merge(std::string_view left, TokenId left_id,
                                         std::string_view right, TokenId right_id,
                                         std::string& key) const {
  if (left_id >= 0 && right_id >= 0) return pairs_.find(left_id, right_id);
  if (strings_.empty()) return Merge{};
  key.assign(left);
  key.push_back(' ');
  key.append(right);
  auto it = strings_.find(std::string_view(key));
  return it == strings_.end() ? Merge{} : it->second;
}

void BpeEncoder::encode(std::string_view text, std::vector<TokenId>& out) const {
  std::vector<ByteRange> words;
  pre_->split(text, words);
  Scratch scratch;
  for (const auto& [begin, end] : words)
    encode_word(text.substr(begin, end - begin), scratch, out);
}

void BpeEncoder::encode_word(std::string_view raw, Scratch& scratch,
                             std::vector<TokenId>& out) const {
  if (raw.empty()) return;
  std::string& mapped = scratch.word;
  mapped.clear();
  bytes_to_unicode(raw, mapped);
  const std::string_view word = mapped;
  if (vocab_.ignore_merges) {
    const TokenId id = index_.find(word);
    if (id >= 0) {
      out.push_back(id);
      return;
    }
  }
  // One symbol per raw byte: its mapped code point (1-2 bytes of `word`).
  std::vector<Symbol>& symbols = scratch.symbols;
  symbols.clear();
  size_t offset = 0;
  for (size_t i = 0; i < raw.size(); ++i) {
    const auto byte = static_cast<uint8_t>(raw[i]);
    const size_t len = byte_to_unicode(byte).size();
    const auto index = static_cast<int64_t>(i);
    symbols.push_back(
        Symbol{index - 1, i + 1 == raw.size() ? -1 : index + 1, offset, len, byte_tokens_[byte]});
    offset += len;
  }
  if (symbols.size() == 1) {
    const Symbol& s = symbols[0];
    if (s.id >= 0) {
      out.push_back(s.id);
      return;
    }
  }

  std::vector<Bigram>& heap = scratch.heap;
  heap.clear();
  const BigramGreater cmp;
  auto try_add = [&](int64_t left, int64_t right) {
    if (left < 0 || right < 0) return;
    const Symbol& l = symbols[static_cast<size_t>(left)];
    const Symbol& r = symbols[static_cast<size_t>(right)];
    const Merge m = find_merge(word.substr(l.start, l.size), l.id, word.substr(r.start, r.size),
                               r.id, scratch.key);
    if (m.rank < 0) return;
    heap.push_back(Bigram{m.rank, m.result, left, right, l.size + r.size});
    std::push_heap(heap.begin(), heap.end(), cmp);
  };
  for (size_t i = 1; i < symbols.size(); ++i) {
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
    left.id = bigram.result;
    right.size = 0;
    left.next = right.next;
    if (right.next >= 0) symbols[static_cast<size_t>(right.next)].prev = bigram.left;
    try_add(left.prev, bigram.left);
    try_add(bigram.left, left.next);
  }

  for (const Symbol& s : symbols) {
    if (s.size == 0) continue;
    if (s.id >= 0) {
      out.push_back(s.id);
      continue;
    }
    const std::string_view piece = word.substr(s.start, s.size);
    for (size_t k = 0; k < piece.size(); ++k) {
      const TokenId byte_id = index_.find(piece.substr(k, 1));
      if (byte_id >= 0) out.push_back(byte_id);
    }
  }
}

}  // namespace pagoda::tokenizer
