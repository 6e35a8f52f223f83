// Masks over the real vocabularies of each tokenizer family we support (SPM with byte fallback:
// llama-spm, phi-3; byte-level BPE: gpt-2, deepseek-coder, falcon): the tokenization of valid
// JSON texts (ASCII and multi-byte UTF-8, which these vocabularies split into byte tokens) is
// allowed token by token, EOS only at the end, control tokens never; and at points along the
// way the mask equals the brute-force parse of every token.
#include <gtest/gtest.h>

#include "format/gguf_file.h"
#include "loader/gguf_vocab.h"
#include "structured/matcher.h"
#include "test_support.h"
#include "tokenizer/tokenizer.h"
#include "unit/structured/matcher/mask_oracle.h"
#include "unit/structured/matcher/test_grammars.h"

namespace pagoda::structured {
namespace {

class VocabMask : public ::testing::TestWithParam<std::string> {};

std::unique_ptr<tokenizer::Tokenizer> load(const std::filesystem::path& path) {
  auto file = format::GgufFile::open(path.string());
  EXPECT_TRUE(file.ok()) << file.status().to_string();
  if (!file.ok()) return nullptr;
  auto vocab = loader::load_vocab(**file);
  EXPECT_TRUE(vocab.ok()) << vocab.status().to_string();
  if (!vocab.ok()) return nullptr;
  auto tok = tokenizer::Tokenizer::create(std::move(vocab).value());
  EXPECT_TRUE(tok.ok()) << tok.status().to_string();
  return tok.ok() ? std::move(tok).value() : nullptr;
}

TEST_P(VocabMask, ValidTextIsAllowedTokenByToken) {
  const auto path = pagoda::testing::fixture("tokenizer/ggml-vocab-" + GetParam() + ".gguf");
  PAGODA_REQUIRE_FIXTURE(path);
  auto tok = load(path);
  ASSERT_TRUE(tok);
  auto table = TokenTable::create(*tok, tok->num_tokens());
  auto compiled = CompiledGrammar::compile(testing::json_value_grammar(), table);
  ASSERT_TRUE(compiled.ok()) << compiled.status().to_string();
  const std::vector<std::string> texts = {
      R"({"name": "Ada", "age": 36, "tags": ["x", "y"], "ok": true})",
      "{\"city\": \"Z\xc3\xbcrich \xe4\xb8\xad\xe6\x96\x87 \xf0\x9f\x98\x80\", \"n\": -1.5e3}",
      "[1, 2, {\"a\": null}]"};
  std::vector<uint64_t> mask(table->num_mask_words());
  for (const std::string& text : texts) {
    tokenizer::EncodeOptions options;
    options.add_special = false;
    options.parse_special = false;
    const std::vector<int32_t> ids = tok->encode(text, options);
    ASSERT_EQ(tok->decode(ids), text);  // the pieces concatenate to the text
    Matcher matcher(*compiled);
    std::string prefix;
    for (size_t i = 0; i < ids.size(); ++i) {
      matcher.fill_mask(mask);
      ASSERT_TRUE(mask_allows(mask, ids[i]))
          << GetParam() << ": token " << ids[i] << " '" << table->bytes(ids[i]) << "' after '"
          << prefix << "'";
      for (int32_t eog : table->eog_tokens())
        EXPECT_FALSE(mask_allows(mask, eog)) << "EOS allowed after '" << prefix << "'";
      for (int32_t t = 0; t < tok->num_tokens(); ++t) {
        if (tok->is_control(t) && !table->is_eog(t)) {
          ASSERT_FALSE(mask_allows(mask, t)) << t;
        }
      }
      // The whole mask, against the brute force, at a few points (it is slow).
      if (i == 0 || i == ids.size() / 2 || i + 1 == ids.size()) {
        const auto expected = testing::brute_force_mask(*compiled, prefix);
        ASSERT_EQ(mask, expected) << GetParam() << " after '" << prefix << "'";
      }
      ASSERT_TRUE(matcher.accept_token(ids[i]).ok());
      prefix += table->bytes(ids[i]);
    }
    matcher.fill_mask(mask);
    ASSERT_FALSE(table->eog_tokens().empty());
    EXPECT_TRUE(mask_allows(mask, table->eog_tokens()[0])) << GetParam();
  }
}

INSTANTIATE_TEST_SUITE_P(Families, VocabMask,
                         ::testing::Values("llama-spm", "phi-3", "gpt-2", "deepseek-coder",
                                           "falcon"));

}  // namespace
}  // namespace pagoda::structured
