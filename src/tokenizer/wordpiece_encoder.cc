#include "tokenizer/wordpiece_encoder.h"

#include <unicode/locid.h>
#include <unicode/normalizer2.h>
#include <unicode/uchar.h>
#include <unicode/unistr.h>
#include <unicode/utf8.h>

namespace pagoda::tokenizer {
namespace {

bool is_whitespace(UChar32 c) {
  return c == ' ' || c == '\t' || c == '\n' || c == '\r' || u_charType(c) == U_SPACE_SEPARATOR;
}

// Categories C* (Cc, Cf, Cs, Co, Cn) except the whitespace controls.
bool is_control(UChar32 c) {
  if (c == '\t' || c == '\n' || c == '\r') return false;
  return (U_GET_GC_MASK(c) & U_GC_C_MASK) != 0;
}

bool is_punctuation(UChar32 c) {
  if ((c >= 33 && c <= 47) || (c >= 58 && c <= 64) || (c >= 91 && c <= 96) ||
      (c >= 123 && c <= 126)) {
    return true;
  }
  return (U_GET_GC_MASK(c) & U_GC_P_MASK) != 0;
}

// The CJK Unified Ideographs blocks BERT's _is_chinese_char lists.
bool is_cjk(UChar32 c) {
  return (c >= 0x4E00 && c <= 0x9FFF) || (c >= 0x3400 && c <= 0x4DBF) ||
         (c >= 0x20000 && c <= 0x2A6DF) || (c >= 0x2A700 && c <= 0x2B73F) ||
         (c >= 0x2B740 && c <= 0x2B81F) || (c >= 0x2B820 && c <= 0x2CEAF) ||
         (c >= 0xF900 && c <= 0xFAFF) || (c >= 0x2F800 && c <= 0x2FA1F);
}

void append_utf8(UChar32 c, std::string& out) {
  char buf[4];
  int32_t n = 0;
  UBool error = false;
  U8_APPEND(reinterpret_cast<uint8_t*>(buf), n, 4, c, error);
  if (!error) out.append(buf, static_cast<size_t>(n));
}

// Lower-case (full case mapping, root locale, as Python's str.lower) and strip accents (NFD,
// then drop Mn).
std::string lower_strip_accents(const std::string& word) {
  icu::UnicodeString s = icu::UnicodeString::fromUTF8(word);
  s.toLower(icu::Locale::getRoot());
  UErrorCode status = U_ZERO_ERROR;
  const icu::Normalizer2* nfd = icu::Normalizer2::getNFDInstance(status);
  if (U_SUCCESS(status)) {
    icu::UnicodeString d = nfd->normalize(s, status);
    if (U_SUCCESS(status)) s = d;
  }
  std::string out;
  for (int32_t i = 0; i < s.length();) {
    const UChar32 c = s.char32At(i);
    i += U16_LENGTH(c);
    if (u_charType(c) == U_NON_SPACING_MARK) continue;
    append_utf8(c, out);
  }
  return out;
}

}  // namespace

std::vector<std::string> WordPieceEncoder::basic_tokenize(std::string_view text) const {
  // Clean, space out CJK, split on whitespace.
  std::vector<std::string> words(1);
  const auto* p = reinterpret_cast<const uint8_t*>(text.data());
  const auto n = static_cast<int32_t>(text.size());
  const auto split = [&] {
    if (!words.back().empty()) words.emplace_back();
  };
  for (int32_t i = 0; i < n;) {
    UChar32 c = 0;
    U8_NEXT(p, i, n, c);
    if (c < 0 || c == 0 || c == 0xFFFD || is_control(c)) continue;
    if (is_whitespace(c)) {
      split();
    } else if (is_cjk(c)) {
      split();
      append_utf8(c, words.back());
      split();
    } else {
      append_utf8(c, words.back());
    }
  }
  if (words.back().empty()) words.pop_back();
  // Lower-case / strip accents, then split off punctuation.
  std::vector<std::string> out;
  for (std::string& w : words) {
    const std::string word = lower_case_ ? lower_strip_accents(w) : std::move(w);
    const auto* q = reinterpret_cast<const uint8_t*>(word.data());
    const auto m = static_cast<int32_t>(word.size());
    bool start_new = true;
    for (int32_t i = 0; i < m;) {
      const int32_t begin = i;
      UChar32 c = 0;
      U8_NEXT(q, i, m, c);
      if (c < 0) continue;
      const std::string_view ch(word.data() + begin, static_cast<size_t>(i - begin));
      if (is_punctuation(c)) {
        out.emplace_back(ch);
        start_new = true;
      } else {
        if (start_new) out.emplace_back();
        start_new = false;
        out.back().append(ch);
      }
    }
  }
  return out;
}

void WordPieceEncoder::encode(std::string_view text, std::vector<TokenId>& out) const {
  std::string candidate;
  for (const std::string& word : basic_tokenize(text)) {
    // Character boundaries (byte offsets) of the word.
    std::vector<size_t> bounds;
    const auto* q = reinterpret_cast<const uint8_t*>(word.data());
    const auto m = static_cast<int32_t>(word.size());
    for (int32_t i = 0; i < m;) {
      bounds.push_back(static_cast<size_t>(i));
      U8_FWD_1(q, i, m);
    }
    bounds.push_back(word.size());
    if (bounds.size() - 1 > kMaxWordChars) {
      out.push_back(unk_id_);
      continue;
    }
    const size_t first = out.size();
    size_t start = 0;  // index into bounds
    bool bad = false;
    while (start + 1 < bounds.size()) {
      TokenId found = -1;
      size_t end = bounds.size() - 1;
      for (; end > start; --end) {
        candidate.assign(start > 0 ? "##" : "");
        candidate.append(word, bounds[start], bounds[end] - bounds[start]);
        found = index_.find(candidate);
        if (found >= 0) break;
      }
      if (found < 0) {
        bad = true;
        break;
      }
      out.push_back(found);
      start = end;
    }
    if (bad) {
      out.resize(first);
      out.push_back(unk_id_);
    }
  }
}

}  // namespace pagoda::tokenizer
