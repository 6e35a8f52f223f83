// WordPieceEncoder against the published examples of google-research/bert's
// tokenization_test.py (BasicTokenizer lower / no-lower / Chinese / punctuation, WordPiece and
// the full tokenizer) and the README's "unaffable" -> un ##aff ##able.
#include "tokenizer/wordpiece_encoder.h"

#include <gtest/gtest.h>

#include "tokenizer/tokenizer.h"

namespace pagoda::tokenizer {
namespace {

struct TestVocab {
  explicit TestVocab(std::vector<std::string> t) : tokens(std::move(t)) {
    for (size_t i = 0; i < tokens.size(); ++i)
      index.insert(tokens[i], static_cast<TokenId>(i));
  }
  std::vector<std::string> pieces(const WordPieceEncoder& e, std::string_view text) const {
    std::vector<TokenId> ids;
    e.encode(text, ids);
    std::vector<std::string> out;
    for (TokenId id : ids)
      out.push_back(tokens[static_cast<size_t>(id)]);
    return out;
  }
  std::vector<std::string> tokens;
  TokenIndex index;
};

using Words = std::vector<std::string>;

TEST(WordPiece, BasicTokenizerLower) {
  TestVocab v({"[UNK]"});
  WordPieceEncoder e(v.index, 0, /*lower_case=*/true);
  EXPECT_EQ(e.basic_tokenize(" \tHeLLo!how  \n Are yoU?  "),
            (Words{"hello", "!", "how", "are", "you", "?"}));
  EXPECT_EQ(e.basic_tokenize("H\u00E9llo"), (Words{"hello"}));
}

TEST(WordPiece, BasicTokenizerNoLower) {
  TestVocab v({"[UNK]"});
  WordPieceEncoder e(v.index, 0, /*lower_case=*/false);
  EXPECT_EQ(e.basic_tokenize(" \tHeLLo!how  \n Are yoU?  "),
            (Words{"HeLLo", "!", "how", "Are", "yoU", "?"}));
}

TEST(WordPiece, ChineseCharactersAreWords) {
  TestVocab v({"[UNK]"});
  WordPieceEncoder e(v.index, 0, true);
  EXPECT_EQ(e.basic_tokenize("ah\u535A\u63A8zz"), (Words{"ah", "\u535A", "\u63A8", "zz"}));
}

TEST(WordPiece, ControlsAndInvalidCharactersAreDropped) {
  TestVocab v({"[UNK]"});
  WordPieceEncoder e(v.index, 0, true);
  // BERT's _clean_text: \x00, U+FFFD and Cc/Cf characters vanish (the zero-width joiner is Cf),
  // \t \r \n are whitespace.
  EXPECT_EQ(e.basic_tokenize(std::string("a\0b", 3) + "\u200Dc\uFFFDd\re"), (Words{"abcd", "e"}));
}

TEST(WordPiece, GreedyLongestMatchFirst) {
  TestVocab v({"[UNK]", "[CLS]", "[SEP]", "want", "##want", "##ed", "wa", "un", "runn", "##ing"});
  WordPieceEncoder e(v.index, 0, true);
  EXPECT_EQ(v.pieces(e, ""), Words{});
  EXPECT_EQ(v.pieces(e, "unwanted running"), (Words{"un", "##want", "##ed", "runn", "##ing"}));
  EXPECT_EQ(v.pieces(e, "unwantedX running"), (Words{"[UNK]", "runn", "##ing"}));
  // A word longer than 100 characters is [UNK] whatever the vocabulary.
  EXPECT_EQ(v.pieces(e, "un" + std::string(99, 'a')), (Words{"[UNK]"}));
}

TEST(WordPiece, FullTokenizer) {
  TestVocab v({"[UNK]", "[CLS]", "[SEP]", "want", "##want", "##ed", "wa", "un", "runn", "##ing",
               ",", "low", "lowest"});
  WordPieceEncoder e(v.index, 0, true);
  std::vector<TokenId> ids;
  e.encode("UNwant\u00E9d,running", ids);
  EXPECT_EQ(ids, (std::vector<TokenId>{7, 4, 5, 10, 8, 9}));
  TestVocab readme({"[UNK]", "un", "##aff", "##able"});
  WordPieceEncoder r(readme.index, 0, true);
  EXPECT_EQ(readme.pieces(r, "unaffable"), (Words{"un", "##aff", "##able"}));
}

// Through Tokenizer: [CLS] ... [SEP] added as bos / eos, and decoding as HF's
// convert_tokens_to_string + clean_up_tokenization_spaces ("unwanted , running" -> "unwanted,
// running").
TEST(WordPiece, TokenizerAddsClsSepAndDecodes) {
  Vocab v;
  v.kind = VocabKind::kWordPiece;
  v.tokens = {"[UNK]", "[CLS]", "[SEP]", "want", "##want", "##ed",  "wa",
              "un",    "runn",  "##ing", ",",    "low",    "lowest"};
  v.token_types.assign(v.tokens.size(), TokenType::kNormal);
  v.token_types[0] = TokenType::kUnknown;
  v.token_types[1] = v.token_types[2] = TokenType::kControl;
  v.unk_id = 0;
  v.bos_id = 1;
  v.eos_id = 2;
  v.add_bos = v.add_eos = true;
  v.clean_spaces = true;
  auto t = Tokenizer::create(v);
  ASSERT_TRUE(t.ok()) << t.status().to_string();
  const std::vector<TokenId> ids = (*t)->encode("UNwant\u00E9d,running", EncodeOptions{});
  EXPECT_EQ(ids, (std::vector<TokenId>{1, 7, 4, 5, 10, 8, 9, 2}));
  EXPECT_EQ((*t)->decode(std::vector<TokenId>(ids.begin() + 1, ids.end() - 1)),
            "unwanted, running");
  v.unk_id.reset();
  EXPECT_FALSE(Tokenizer::create(v).ok());
}

}  // namespace
}  // namespace pagoda::tokenizer
