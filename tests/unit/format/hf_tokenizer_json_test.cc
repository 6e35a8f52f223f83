// tokenizer.json → Vocab on handcrafted files: which pipelines map to which tokenizer, the
// derived SentencePiece scores, special tokens and flags, and errors for everything else.
// Expected token ids are worked out by hand from the merge ranks (HF BPE's rule).
#include "tokenizer/hf_tokenizer_json.h"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "tokenizer/tokenizer.h"

namespace pagoda::tokenizer {
namespace {

using nlohmann::json;

const std::string kSpace = "\xE2\x96\x81";  // ▁

json spm_json() {
  json vocab = {{"<unk>", 0},      {"<s>", 1},         {"</s>", 2},   {"<0x0A>", 3},
                {kSpace, 4},       {"a", 5},           {"b", 6},      {"ab", 7},
                {kSpace + "a", 8}, {kSpace + "ab", 9}, {"<0x62>", 10}};
  return {
      {"version", "1.0"},
      {"added_tokens",
       {{{"id", 0}, {"content", "<unk>"}, {"special", true}},
        {{"id", 1}, {"content", "<s>"}, {"special", true}},
        {{"id", 2}, {"content", "</s>"}, {"special", true}},
        {{"id", 12}, {"content", "<tool>"}, {"special", false}}}},
      {"normalizer",
       {{"type", "Sequence"},
        {"normalizers",
         {{{"type", "Prepend"}, {"prepend", kSpace}},
          {{"type", "Replace"}, {"pattern", {{"String", " "}}}, {"content", kSpace}}}}}},
      {"pre_tokenizer", nullptr},
      {"post_processor",
       {{"type", "TemplateProcessing"},
        {"single",
         {{{"SpecialToken", {{"id", "<s>"}, {"type_id", 0}}}},
          {{"Sequence", {{"id", "A"}, {"type_id", 0}}}}}},
        {"special_tokens", {{"<s>", {{"id", "<s>"}, {"ids", {1}}, {"tokens", {"<s>"}}}}}}}},
      {"decoder",
       {{"type", "Sequence"},
        {"decoders",
         {{{"type", "Replace"}, {"pattern", {{"String", kSpace}}}, {"content", " "}},
          {{"type", "ByteFallback"}},
          {{"type", "Fuse"}},
          {{"type", "Strip"}, {"content", " "}, {"start", 1}, {"stop", 0}}}}}},
      {"model",
       {{"type", "BPE"},
        {"unk_token", "<unk>"},
        {"byte_fallback", true},
        {"fuse_unk", true},
        {"vocab", vocab},
        {"merges", {"a b", kSpace + " a", kSpace + " ab", kSpace + "a b"}}}},
  };
}

json byte_level_json(const json& pre_tokenizer) {
  // Byte-level texts: "Ġ" is the space byte.
  json vocab = {{"a", 0},
                {"b", 1},
                {"\xC4\xA0", 2},
                {"ab", 3},
                {"\xC4\xA0"
                 "ab",
                 4},
                {"c", 5},
                {"abc", 6}};
  return {{"added_tokens", {{{"id", 7}, {"content", "<|end|>"}, {"special", true}}}},
          {"normalizer", nullptr},
          {"pre_tokenizer", pre_tokenizer},
          {"decoder", {{"type", "ByteLevel"}}},
          {"model",
           {{"type", "BPE"},
            {"vocab", vocab},
            {"merges", json::array({json::array({"a", "b"}), json::array({"\xC4\xA0", "ab"}),
                                    json::array({"ab", "c"})})}}}};
}

Result<Vocab> load(const json& j, const HfTokenizerOptions& options = {},
                   HfTokenizerSummary* summary = nullptr) {
  return vocab_from_hf_tokenizer_json(j.dump(), options, summary);
}

TEST(HfTokenizerJsonTest, SentencePieceStyleBpe) {
  HfTokenizerSummary summary;
  auto v = load(spm_json(), {}, &summary);
  ASSERT_TRUE(v.ok()) << v.status().to_string();
  EXPECT_EQ(v->kind, VocabKind::kSpm);
  EXPECT_TRUE(v->add_space_prefix);
  EXPECT_TRUE(v->add_bos);  // from the TemplateProcessing post-processor
  EXPECT_FALSE(v->add_eos);
  EXPECT_EQ(v->bos_id, 1);
  EXPECT_EQ(v->eos_id, 2);
  EXPECT_EQ(v->unk_id, 0);
  ASSERT_EQ(v->tokens.size(), 13u);  // id 11 is a hole
  EXPECT_EQ(v->tokens[11], "[PAD11]");
  EXPECT_EQ(v->token_types[11], TokenType::kUnused);
  EXPECT_EQ(v->token_types[0], TokenType::kUnknown);
  EXPECT_EQ(v->token_types[1], TokenType::kControl);
  EXPECT_EQ(v->token_types[3], TokenType::kByte);
  EXPECT_EQ(v->token_types[12], TokenType::kUserDefined);
  // Scores: -(first merge rank producing the token); others below all merges.
  EXPECT_EQ(v->scores[7], 0.0f);   // ab: merge 0
  EXPECT_EQ(v->scores[8], -1.0f);  // ▁a: merge 1
  EXPECT_EQ(v->scores[9], -2.0f);  // ▁ab: merge 2 (merge 3 also makes it)
  EXPECT_LT(v->scores[5], -3.0f);
  EXPECT_EQ(summary.style, "SentencePiece-style BPE");
  EXPECT_EQ(summary.num_merges, 4u);

  auto tok = Tokenizer::create(std::move(v).value());
  ASSERT_TRUE(tok.ok()) << tok.status().to_string();
  // "ab ab" → ▁ab▁ab: a+b (rank 0) then ▁+ab (rank 2) in each word.
  EXPECT_EQ((*tok)->encode("ab ab", {}), (std::vector<TokenId>{1, 9, 9}));
  // "a\n" → ▁a (rank 1), then "\n" is no token: byte fallback <0x0A>.
  EXPECT_EQ((*tok)->encode("a\n", {.add_special = false}), (std::vector<TokenId>{8, 3}));
  // A user-defined added token is matched in the text.
  EXPECT_EQ((*tok)->encode("a<tool>", {.add_special = false}), (std::vector<TokenId>{8, 12}));
  EXPECT_EQ((*tok)->decode({9, 9, 3}), "ab ab\n");
}

TEST(HfTokenizerJsonTest, MetaspaceVariantAndOptions) {
  json j = spm_json();
  j["normalizer"] = nullptr;
  j["pre_tokenizer"] = {{"type", "Metaspace"},
                        {"replacement", kSpace},
                        {"prepend_scheme", "never"},
                        {"split", false}};
  j["decoder"] = {{"type", "Metaspace"}, {"replacement", kSpace}, {"prepend_scheme", "never"}};
  j.erase("post_processor");
  HfTokenizerOptions options;
  options.bos_token = "</s>";
  options.eos_token = "<s>";
  options.add_bos = false;
  options.add_eos = true;
  options.extra_eos_ids = {12, 1, 99};  // 1 is EOS already; 99 is out of range (ignored)
  auto v = load(j, options);
  ASSERT_TRUE(v.ok()) << v.status().to_string();
  EXPECT_FALSE(v->add_space_prefix);
  EXPECT_EQ(v->bos_id, 2);
  EXPECT_EQ(v->eos_id, 1);
  EXPECT_FALSE(v->add_bos);
  EXPECT_TRUE(v->add_eos);
  EXPECT_EQ(v->extra_eog_ids, std::vector<TokenId>{12});
  auto tok = Tokenizer::create(std::move(v).value());
  ASSERT_TRUE(tok.ok());
  EXPECT_EQ((*tok)->encode("ab ab", {}), (std::vector<TokenId>{7, 9, 1}));
}

TEST(HfTokenizerJsonTest, ByteLevelPipelines) {
  const json gpt2_pre = {{"type", "ByteLevel"}, {"add_prefix_space", false}, {"use_regex", true}};
  HfTokenizerSummary summary;
  auto v = load(byte_level_json(gpt2_pre), {}, &summary);
  ASSERT_TRUE(v.ok()) << v.status().to_string();
  EXPECT_EQ(v->kind, VocabKind::kBpe);
  EXPECT_EQ(v->pre, "gpt-2");
  EXPECT_EQ(v->merges, (std::vector<std::string>{"a b", "\xC4\xA0 ab", "ab c"}));
  EXPECT_FALSE(v->add_bos);
  EXPECT_TRUE(v->clean_spaces);
  EXPECT_EQ(v->token_types[7], TokenType::kControl);
  EXPECT_EQ(summary.style, "byte-level BPE");
  auto tok = Tokenizer::create(std::move(v).value());
  ASSERT_TRUE(tok.ok()) << tok.status().to_string();
  // Words "abc", " ab": a+b then ab+c; Ġ+ab.
  EXPECT_EQ((*tok)->encode("abc ab<|end|>", {}), (std::vector<TokenId>{6, 4, 7}));

  const char* llama3 =
      R"((?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+)";
  const char* qwen2 =
      R"((?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+)";
  for (auto [regex, pre] : {std::pair{llama3, "llama3"}, std::pair{qwen2, "qwen2"}}) {
    json split = {{"type", "Sequence"},
                  {"pretokenizers",
                   {{{"type", "Split"},
                     {"pattern", {{"Regex", regex}}},
                     {"behavior", "Isolated"},
                     {"invert", false}},
                    {{"type", "ByteLevel"}, {"add_prefix_space", false}, {"use_regex", false}}}}};
    json j = byte_level_json(split);
    j["model"]["ignore_merges"] = true;
    j["normalizer"] = {{"type", "NFC"}};
    HfTokenizerSummary s;
    auto lv = load(j, {}, &s);
    ASSERT_TRUE(lv.ok()) << pre << ": " << lv.status().to_string();
    EXPECT_EQ(lv->pre, pre);
    EXPECT_TRUE(lv->ignore_merges);
    EXPECT_EQ(lv->clean_spaces, std::string(pre) != "qwen2");
    EXPECT_FALSE(s.notes.empty());  // NFC not applied
  }
}

TEST(HfTokenizerJsonTest, UnsupportedComponentsAreNamed) {
  const json gpt2_pre = {{"type", "ByteLevel"}, {"use_regex", true}};
  auto unimpl = [](const json& j, const std::string& want) {
    auto v = load(j);
    ASSERT_FALSE(v.ok()) << want;
    EXPECT_EQ(v.status().code(), StatusCode::kUnimplemented) << v.status().message();
    EXPECT_NE(v.status().message().find(want), std::string::npos) << v.status().message();
  };
  json j = spm_json();
  j["model"]["type"] = "WordPiece";
  unimpl(j, "WordPiece");
  j = spm_json();
  j["normalizer"]["normalizers"].push_back({{"type", "Lowercase"}});
  unimpl(j, "normalizer.normalizers[2] of type Lowercase");
  j = spm_json();
  j["decoder"]["decoders"].push_back({{"type", "CTC"}});
  unimpl(j, "CTC");
  j = spm_json();
  j["normalizer"] = nullptr;
  unimpl(j, "neither maps spaces");
  j = byte_level_json({{"type", "ByteLevel"}, {"add_prefix_space", true}});
  unimpl(j, "add_prefix_space");
  j = byte_level_json(
      {{"type", "Sequence"},
       {"pretokenizers",
        {{{"type", "Split"}, {"pattern", {{"Regex", "\\d+"}}}, {"behavior", "Isolated"}},
         {{"type", "ByteLevel"}, {"use_regex", false}}}}});
  unimpl(j, "regex \"\\d+\"");
  j = byte_level_json(gpt2_pre);
  j["model"]["continuing_subword_prefix"] = "##";
  unimpl(j, "continuing_subword_prefix");
  j = byte_level_json(gpt2_pre);
  j["model"]["dropout"] = 0.1;
  unimpl(j, "dropout");
}

TEST(HfTokenizerJsonTest, MalformedFilesAreInvalid) {
  auto invalid = [](const json& j, const std::string& want) {
    auto v = load(j);
    ASSERT_FALSE(v.ok()) << want;
    EXPECT_EQ(v.status().code(), StatusCode::kInvalidArgument) << v.status().message();
    EXPECT_NE(v.status().message().find(want), std::string::npos) << v.status().message();
  };
  json j = spm_json();
  j["model"]["merges"].push_back("a c");
  invalid(j, "model.merges[4] uses \"c\"");
  j = spm_json();
  j["model"]["merges"].push_back("b a");
  invalid(j, "makes \"ba\"");
  j = spm_json();
  j["model"]["merges"].push_back("a b c");
  invalid(j, "not two tokens");
  j = spm_json();
  j["model"]["merges"].push_back(json::array({"a"}));
  invalid(j, "model.merges[4]");
  j = spm_json();
  j["model"]["vocab"]["zz"] = 5;
  invalid(j, "gives id 5 to both");
  j = spm_json();
  j["model"]["vocab"]["zz"] = -1;
  invalid(j, "model.vocab[\"zz\"]");
  j = spm_json();
  j["model"]["vocab"]["zz"] = 1 << 23;
  invalid(j, "model.vocab[\"zz\"]");
  j = spm_json();
  j["added_tokens"].push_back({{"id", 5}, {"content", "<x>"}, {"special", true}});
  invalid(j, "added_tokens[4] gives id 5");
  j = spm_json();
  j["added_tokens"].push_back({{"id", 20}, {"content", ""}});
  invalid(j, "added_tokens[4].content");
  j = spm_json();
  j["added_tokens"].push_back({{"id", 20}, {"content", "x"}, {"special", "yes"}});
  invalid(j, "added_tokens[4].special");
  j = spm_json();
  j.erase("model");
  invalid(j, "model is missing");
  j = spm_json();
  j["model"]["vocab"] = json::object();
  j.erase("added_tokens");
  j["model"]["merges"] = json::array();
  invalid(j, "model.vocab is empty");
  j = spm_json();
  j["normalizer"]["normalizers"] = 3;
  invalid(j, "Sequence without a normalizers list");
  auto dup = vocab_from_hf_tokenizer_json(R"({"model": {}, "model": {}})", {});
  ASSERT_FALSE(dup.ok());
  EXPECT_NE(dup.status().message().find("duplicate key \"model\""), std::string::npos);
  EXPECT_FALSE(vocab_from_hf_tokenizer_json("{", {}).ok());
  EXPECT_FALSE(vocab_from_hf_tokenizer_json("[]", {}).ok());
  // Texts duplicated across vocab and added tokens are caught by Tokenizer::create.
  j = spm_json();
  j["added_tokens"].push_back({{"id", 20}, {"content", "ab"}});
  auto v = load(j);
  ASSERT_TRUE(v.ok());
  EXPECT_FALSE(Tokenizer::create(std::move(v).value()).ok());
}

}  // namespace
}  // namespace pagoda::tokenizer
