// Per word: symbols in a linked list, a min-heap of (rank, left) candidate merges; an entry whose
// sides changed since it was queued is stale and skipped (same rule as llama.cpp, which compares
// the concatenated text: with a fixed left start, equal text means equal total size).
#include "tokenizer/bpe_encoder.h"

#include <cstdint>
#include <queue>

#include "tokenizer/byte_unicode.h"
#include "tokenizer/utf8.h"

namespace pagoda::tokenizer {
namespace {

struct Symbol {
  int64_t prev;
  int64_t next;
  size_t start;
  size_t size;
};

struct Bigram {
  int32_t rank;
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

Result<std::unique_ptr<BpeEncoder>> BpeEncoder::create(const Vocab& vocab,
                                                       const TokenIndex& index) {
  std::unique_ptr<BpeEncoder> encoder(new BpeEncoder(vocab, index));
  PAGODA_ASSIGN_OR_RETURN(encoder->pre_, PreTokenizer::create(vocab.pre));
  encoder->ranks_.reserve(vocab.merges.size());
  for (size_t i = 0; i < vocab.merges.size(); ++i) {
    const std::string& merge = vocab.merges[i];
    const size_t space = merge.size() > 1 ? merge.find(' ', 1) : std::string::npos;
    if (space == std::string::npos) {
      return invalid_argument("merges[{}] ('{}') is not two symbols separated by a space", i,
                              merge.substr(0, 64));
    }
    encoder->ranks_.emplace(merge, static_cast<int32_t>(i));
  }
  return encoder;
}

int32_t BpeEncoder::rank(std::string_view left, std::string_view right, std::string& key) const {
  key.assign(left);
  key.push_back(' ');
  key.append(right);
  auto it = ranks_.find(std::string_view(key));
  return it == ranks_.end() ? -1 : it->second;
}

void BpeEncoder::encode(std::string_view text, std::vector<TokenId>& out) const {
  std::vector<ByteRange> words;
  pre_->split(text, words);
  std::string word;
  for (const auto& [begin, end] : words) {
    word.clear();
    bytes_to_unicode(text.substr(begin, end - begin), word);
    encode_word(word, out);
  }
}

void BpeEncoder::encode_word(std::string_view word, std::vector<TokenId>& out) const {
  if (word.empty()) return;
  if (vocab_.ignore_merges) {
    const TokenId id = index_.find(word);
    if (id >= 0) {
      out.push_back(id);
      return;
    }
  }
  std::vector<Symbol> symbols;
  symbols.reserve(word.size());
  for (size_t offset = 0; offset < word.size();) {
    size_t len = utf8::lead_length(static_cast<uint8_t>(word[offset]));
    if (len > word.size() - offset) len = word.size() - offset;
    const auto index = static_cast<int64_t>(symbols.size());
    offset += len;
    symbols.push_back(Symbol{index - 1, offset == word.size() ? -1 : index + 1, offset - len, len});
  }

  std::string key;
  std::priority_queue<Bigram, std::vector<Bigram>, BigramGreater> queue;
  auto try_add = [&](int64_t left, int64_t right) {
    if (left < 0 || right < 0) return;
    const Symbol& l = symbols[static_cast<size_t>(left)];
    const Symbol& r = symbols[static_cast<size_t>(right)];
    const int32_t found = rank(word.substr(l.start, l.size), word.substr(r.start, r.size), key);
    if (found < 0) return;
    queue.push(Bigram{found, left, right, l.size + r.size});
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

  for (const Symbol& s : symbols) {
    if (s.size == 0) continue;
    const std::string_view piece = word.substr(s.start, s.size);
    const TokenId id = index_.find(piece);
    if (id >= 0) {
      out.push_back(id);
      continue;
    }
    for (size_t k = 0; k < piece.size(); ++k) {
      const TokenId byte_id = index_.find(piece.substr(k, 1));
      if (byte_id >= 0) out.push_back(byte_id);
    }
  }
}

}  // namespace pagoda::tokenizer
