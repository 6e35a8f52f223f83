// Fuzzes the tokenizers on arbitrary bytes: every pre-tokenizer over a byte-level BPE vocabulary
// and an SPM vocabulary with byte fallback (ids in range, decode(encode(x), special) == x, the
// detokenizer emits only valid UTF-8 and, for valid input, the text itself), plus vocabularies
// built from the input itself (create() must fail cleanly or produce a working tokenizer), and
// BERT's WordPiece (cased and uncased).
// Input: byte 0 picks the mode, byte 1 the pre-tokenizer and options, the rest is text.
#include <cstdint>
#include <cstdlib>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "tokenizer/byte_unicode.h"
#include "tokenizer/detokenizer.h"
#include "tokenizer/pre_tokenizer.h"
#include "tokenizer/tokenizer.h"
#include "tokenizer/utf8.h"

namespace {

using namespace pagoda::tokenizer;

constexpr const char* kPres[] = {"default",        "llama-bpe", "deepseek-llm", "deepseek-v3",
                                 "deepseek-coder", "falcon",    "starcoder",    "gpt-2",
                                 "qwen2",          "poro-chat", "viking",       "tekken",
                                 "gpt-4o",         "chameleon", "unknown-pre"};
constexpr size_t kNumPres = sizeof(kPres) / sizeof(kPres[0]);

void check(bool ok) {
  if (!ok) std::abort();
}

Vocab bpe_vocab(const char* pre) {
  Vocab v;
  v.kind = VocabKind::kBpe;
  v.pre = pre;
  for (int b = 0; b < 256; ++b)
    v.tokens.emplace_back(byte_to_unicode(static_cast<uint8_t>(b)));
  v.token_types.assign(256, TokenType::kNormal);
  const std::string sp(byte_to_unicode(' '));
  const char* merges[][2] = {{"t", "h"}, {"th", "e"}, {"i", "n"}, {"a", "n"}, {"e", "r"}};
  for (const auto& m : merges) {
    v.merges.push_back(std::string(m[0]) + " " + m[1]);
    v.tokens.push_back(std::string(m[0]) + m[1]);
    v.token_types.push_back(TokenType::kNormal);
  }
  v.merges.push_back(sp + " the");
  v.tokens.push_back(sp + "the");
  v.token_types.push_back(TokenType::kNormal);
  v.merges.push_back(sp + " " + sp);
  v.tokens.push_back(sp + sp);
  v.token_types.push_back(TokenType::kNormal);
  v.tokens.push_back("<|im_end|>");
  v.token_types.push_back(TokenType::kControl);
  v.tokens.push_back("<tool>");
  v.token_types.push_back(TokenType::kUserDefined);
  v.eos_id = static_cast<TokenId>(v.tokens.size() - 2);
  v.clean_spaces = false;
  v.add_space_prefix = false;  // as the GGUF loader sets it for BPE
  return v;
}

Vocab spm_vocab() {
  Vocab v;
  v.kind = VocabKind::kSpm;
  auto add = [&v](std::string t, float score, TokenType type) {
    v.tokens.push_back(std::move(t));
    v.scores.push_back(score);
    v.token_types.push_back(type);
  };
  add("<unk>", 0, TokenType::kUnknown);
  add("<s>", 0, TokenType::kControl);
  add("</s>", 0, TokenType::kControl);
  static const char kHex[] = "0123456789ABCDEF";
  for (int b = 0; b < 256; ++b) {
    add(std::string("<0x") + kHex[b >> 4] + kHex[b & 15] + ">", 0, TokenType::kByte);
  }
  const std::string sp = "\xE2\x96\x81";
  const char* pieces[] = {"a", "b", "e", "t", "h", "th", "the", "he", "in"};
  float score = -1;
  for (const char* p : pieces)
    add(p, score--, TokenType::kNormal);
  add(sp, -1, TokenType::kNormal);
  add(sp + "the", -2, TokenType::kNormal);
  add(sp + sp, -3, TokenType::kNormal);
  v.bos_id = 1;
  v.eos_id = 2;
  v.unk_id = 0;
  v.add_bos = true;
  return v;
}

// BERT's WordPiece (HF token form), uncased or cased by the selector.
Vocab wordpiece_vocab(bool lower_case) {
  Vocab v;
  v.kind = VocabKind::kWordPiece;
  v.tokens = {"[UNK]", "[CLS]", "[SEP]", "the", "un",           "##aff", "##able", "a",       "##a",
              "b",     "##b",   ",",     "!",   "\xE5\x8D\x9A", "caf",   "##e",    "\xC3\xA9"};
  v.token_types.assign(v.tokens.size(), TokenType::kNormal);
  v.token_types[0] = TokenType::kUnknown;
  v.token_types[1] = v.token_types[2] = TokenType::kControl;
  v.unk_id = 0;
  v.bos_id = 1;
  v.eos_id = 2;
  v.add_bos = v.add_eos = true;
  v.clean_spaces = true;
  v.lower_case = lower_case;
  return v;
}

struct Tokenizers {
  std::vector<std::unique_ptr<Tokenizer>> bpe;
  std::unique_ptr<Tokenizer> spm;
  std::unique_ptr<Tokenizer> wordpiece[2];
  Tokenizers() {
    for (const char* pre : kPres)
      bpe.push_back(std::move(Tokenizer::create(bpe_vocab(pre))).value());
    spm = std::move(Tokenizer::create(spm_vocab())).value();
    wordpiece[0] = std::move(Tokenizer::create(wordpiece_vocab(false))).value();
    wordpiece[1] = std::move(Tokenizer::create(wordpiece_vocab(true))).value();
  }
};

void check_stream(const Tokenizer& tok, const std::vector<TokenId>& ids, std::string_view text,
                  bool expect_text) {
  IncrementalDetokenizer detok(tok, /*skip_special=*/false);
  std::string all;
  for (TokenId id : ids) {
    const std::string delta = detok.push(id);
    check(utf8::is_valid(delta));
    all += delta;
  }
  const std::string tail = detok.finish();
  check(utf8::is_valid(tail));
  all += tail;
  if (expect_text && utf8::is_valid(text)) check(all == text);
}

// WordPiece is lossy (lower-casing, dropped controls, [UNK]): ids in range, [CLS] ... [SEP]
// when asked, a bounded number of pieces, valid UTF-8 out.
void fuzz_wordpiece(const Tokenizers& t, uint8_t sel, std::string_view text) {
  const Tokenizer& tok = *t.wordpiece[sel & 1];
  EncodeOptions opts;
  opts.parse_special = (sel & 0x40) != 0;
  opts.add_special = (sel & 0x80) != 0;
  const std::vector<TokenId> ids = tok.encode(text, opts);
  for (TokenId id : ids)
    check(id >= 0 && id < tok.num_tokens());
  check(ids.size() <= 3 * text.size() + 2);  // lower-casing may add characters
  if (opts.add_special) check(ids.size() >= 2 && ids.front() == 1 && ids.back() == 2);
  check_stream(tok, ids, text, false);
}

void fuzz_fixed(const Tokenizers& t, uint8_t sel, std::string_view text, bool spm) {
  const Tokenizer& tok = spm ? *t.spm : *t.bpe[sel % kNumPres];
  EncodeOptions opts;
  opts.parse_special = (sel & 0x40) != 0;
  opts.add_special = (sel & 0x80) != 0;
  const std::vector<TokenId> ids = tok.encode(text, opts);
  for (TokenId id : ids)
    check(id >= 0 && id < tok.num_tokens());
  if (spm) {
    // Lossless only for valid UTF-8 without a literal ▁ (which decodes as a space): like
    // llama.cpp, a bad lead byte swallows the bytes after it into one symbol, which falls back to
    // raw bytes (so an escaped space inside it stays "▁").
    const bool lossless = utf8::is_valid(text) && text.find("\xE2\x96\x81") == text.npos;
    if (!opts.parse_special && !opts.add_special && lossless) {
      check(tok.decode(ids, true) == text);
      check_stream(tok, ids, text, true);
    } else {
      check_stream(tok, ids, text, false);
    }
  } else {
    if (!opts.add_special) check(tok.decode(ids, true) == text);
    check_stream(tok, ids, text, !opts.add_special);
  }
}

// A vocabulary made of the input: lines are tokens; lines with a space are also merges.
void fuzz_vocab(uint8_t sel, std::string_view text) {
  Vocab v;
  v.kind = (sel & 1) ? VocabKind::kBpe : ((sel & 0x10) ? VocabKind::kWordPiece : VocabKind::kSpm);
  if (v.kind == VocabKind::kWordPiece && (sel & 0x08)) v.unk_id = 0;
  v.pre = kPres[(sel >> 1) % kNumPres];
  size_t pos = 0;
  while (pos <= text.size() && v.tokens.size() < 512) {
    size_t end = text.find('\n', pos);
    if (end == std::string_view::npos) end = text.size();
    const std::string line(text.substr(pos, end - pos));
    if (line.find(' ') != std::string::npos) v.merges.push_back(line);
    v.tokens.push_back(line);
    v.token_types.push_back(static_cast<TokenType>(line.empty() ? 0 : line[0] % 7));
    v.scores.push_back(static_cast<float>(line.size() % 5) - 2.0f);
    pos = end + 1;
  }
  if (sel & 0x20) v.bos_id = static_cast<TokenId>(text.size() % 7);
  v.add_bos = (sel & 0x40) != 0;
  v.rstrip_special = (sel & 0x80) != 0;
  auto tok = Tokenizer::create(std::move(v));
  if (!tok.ok()) return;
  const std::vector<TokenId> ids = (*tok)->encode(text, EncodeOptions{});
  for (TokenId id : ids)
    check(id >= 0 && id < (*tok)->num_tokens());
  (void)(*tok)->decode(ids, true);
  check_stream(**tok, ids, text, false);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static const Tokenizers tokenizers;
  if (size < 2 || size > 4096) return 0;
  const std::string_view text(reinterpret_cast<const char*>(data) + 2, size - 2);
  switch (data[0] % 4) {
    case 0:
      fuzz_fixed(tokenizers, data[1], text, false);
      break;
    case 1:
      fuzz_fixed(tokenizers, data[1], text, true);
      break;
    case 2:
      fuzz_vocab(data[1], text);
      break;
    default:
      fuzz_wordpiece(tokenizers, data[1], text);
      break;
  }
  return 0;
}
