// Constraint: always-on vs trigger-activated masks over a synthetic vocabulary whose tokens split
// the trigger ("<tool" + "_call>"), carry it with text after it ("ok<tool_call>\n{"), or carry it
// with text the grammar refuses ("<tool_call>Z"); repeat (tool calls) vs once (after </think>).
#include "structured/constraint.h"

#include <map>
#include <memory>

#include <gtest/gtest.h>

#include "structured/gbnf.h"
#include "structured/grammar_cache.h"

namespace pagoda::structured {
namespace {

class ConstraintTest : public ::testing::Test {
 protected:
  void SetUp() override {
    std::vector<std::string> pieces;
    for (int c = 0x20; c < 0x7f; ++c)
      pieces.push_back(std::string(1, static_cast<char>(c)));
    for (const char* p : {"\n", "<tool", "_call>", "<tool_call>", "ok<tool_call>\n{",
                          "<tool_call>Z", "</tool_call>", "</think>", "x</think> 4"}) {
      pieces.push_back(p);
    }
    eos_ = static_cast<int32_t>(pieces.size());
    pieces.push_back("</s>");
    for (size_t i = 0; i < pieces.size(); ++i)
      ids_[pieces[i]] = static_cast<int32_t>(i);
    table_ = TokenTable::from_pieces(std::move(pieces), {eos_});
  }

  std::shared_ptr<const CompiledGrammar> compile(const StructuredOutputs& spec) {
    Result<Grammar> g = build_grammar(spec);
    EXPECT_TRUE(g.ok()) << g.status().to_string();
    auto c = CompiledGrammar::compile(*g, table_);
    EXPECT_TRUE(c.ok()) << c.status().to_string();
    return *c;
  }
  int32_t id(const std::string& piece) { return ids_.at(piece); }
  void feed(Constraint& c, const std::string& text) {
    for (const char ch : text)
      ASSERT_TRUE(c.accept_token(id(std::string(1, ch))).ok()) << "at '" << ch << "'";
  }
  std::vector<uint64_t> mask_of(Constraint& c, bool* active) {
    std::vector<uint64_t> mask(table_->num_mask_words(), ~uint64_t{0});
    *active = c.fill_mask(mask);
    return mask;
  }

  std::shared_ptr<const TokenTable> table_;
  std::map<std::string, int32_t> ids_;
  int32_t eos_ = 0;
};

StructuredOutputs call_body() {
  StructuredOutputs s;
  s.kind = StructuredOutputs::Kind::kRegex;
  s.spec = R"(\n\{"a": [0-9]\}\n</tool_call>)";
  s.trigger = "<tool_call>";
  s.repeat_trigger = true;
  return s;
}

TEST_F(ConstraintTest, RepeatTriggerConstrainsEachCallAndFreesTheTextBetween) {
  Constraint c(compile(call_body()), "<tool_call>", /*repeat=*/true);
  bool active = true;
  mask_of(c, &active);
  EXPECT_FALSE(active);  // free text: nothing masked
  feed(c, "hi <");
  EXPECT_FALSE(c.active());
  ASSERT_TRUE(c.accept_token(id("<tool")).ok());
  EXPECT_FALSE(c.active());
  ASSERT_TRUE(c.accept_token(id("_call>")).ok());  // the trigger split across two tokens
  ASSERT_TRUE(c.active());
  std::vector<uint64_t> mask = mask_of(c, &active);
  ASSERT_TRUE(active);
  EXPECT_TRUE(mask_allows(mask, id("\n")));
  EXPECT_FALSE(mask_allows(mask, id("x")));
  EXPECT_FALSE(mask_allows(mask, eos_));  // not in the middle of a call
  EXPECT_FALSE(c.accept_token(id("x")).ok());
  feed(c, "\n{\"a\": 7}\n");
  mask = mask_of(c, &active);
  EXPECT_TRUE(mask_allows(mask, id("</tool_call>")));
  EXPECT_TRUE(mask_allows(mask, id("<")));
  EXPECT_FALSE(mask_allows(mask, id("</think>")));
  ASSERT_TRUE(c.accept_token(id("</tool_call>")).ok());
  EXPECT_FALSE(c.active());  // the call is complete: free again
  feed(c, "text ");
  EXPECT_TRUE(c.accept_token(id("<tool_call>")).ok());  // a second call, one token
  EXPECT_TRUE(c.active());
  feed(c, "\n{\"a\": 1}\n</tool_call>");
  EXPECT_FALSE(c.active());
  EXPECT_TRUE(c.accept_token(eos_).ok());
}

TEST_F(ConstraintTest, TriggerInsideATokenHandsTheRestToTheMatcher) {
  Constraint c(compile(call_body()), "<tool_call>", true);
  ASSERT_TRUE(c.accept_token(id("ok<tool_call>\n{")).ok());
  ASSERT_TRUE(c.active());
  bool active = false;
  const std::vector<uint64_t> mask = mask_of(c, &active);
  EXPECT_TRUE(mask_allows(mask, id("\"")));
  EXPECT_FALSE(mask_allows(mask, id("{")));

  // Text after the trigger that the grammar refuses: that call stays free text.
  Constraint d(compile(call_body()), "<tool_call>", true);
  ASSERT_TRUE(d.accept_token(id("<tool_call>Z")).ok());
  EXPECT_FALSE(d.active());
  ASSERT_TRUE(d.accept_token(id("<tool_call>")).ok());  // the next one is constrained
  EXPECT_TRUE(d.active());
}

TEST_F(ConstraintTest, OnceTriggerConstrainsTheRestAfterWhitespace) {
  StructuredOutputs s;
  s.kind = StructuredOutputs::Kind::kRegex;
  s.spec = "[0-9]+";
  s.trigger = "</think>";
  Constraint c(compile(s), s.trigger, /*repeat=*/false);
  feed(c, "let me think {");
  EXPECT_FALSE(c.active());
  ASSERT_TRUE(c.accept_token(id("x</think> 4")).ok());  // trigger, whitespace and a digit
  ASSERT_TRUE(c.active());
  bool active = false;
  std::vector<uint64_t> mask = mask_of(c, &active);
  EXPECT_TRUE(mask_allows(mask, eos_));
  EXPECT_TRUE(mask_allows(mask, id("2")));
  EXPECT_FALSE(mask_allows(mask, id(" ")));
  feed(c, "2");
  EXPECT_TRUE(c.active());  // once: stays on to the end
  ASSERT_TRUE(c.accept_token(eos_).ok());

  Constraint d(compile(s), s.trigger, false);
  ASSERT_TRUE(d.accept_token(id("</think>")).ok());
  mask = mask_of(d, &active);
  EXPECT_TRUE(mask_allows(mask, id("\n")));  // whitespace before the answer
  EXPECT_FALSE(mask_allows(mask, eos_));     // but an answer is due
}

// Mistral's [TOOL_CALLS] is a control token: no bytes (never in a mask), but its text is what
// the trigger watches for, so tool_choice auto constrains the list that follows it.
TEST(ConstraintControlToken, ControlTokenTextActivatesTheTrigger) {
  std::vector<std::string> pieces;
  for (int c = 0x20; c < 0x7f; ++c)
    pieces.push_back(std::string(1, static_cast<char>(c)));
  const auto tool_calls = static_cast<int32_t>(pieces.size());
  pieces.push_back("[TOOL_CALLS]");
  const auto eos = static_cast<int32_t>(pieces.size());
  pieces.push_back("</s>");
  auto table = TokenTable::from_pieces(pieces, {eos}, {tool_calls});
  EXPECT_EQ(table->bytes(tool_calls), "");
  EXPECT_EQ(table->text(tool_calls), "[TOOL_CALLS]");
  StructuredOutputs s;
  s.kind = StructuredOutputs::Kind::kToolCalls;
  s.spec = R"({"format":"mistral","mode":"auto","tools":[{"name":"ping"}]})";
  s.trigger = "[TOOL_CALLS]";
  s.repeat_trigger = true;
  auto grammar = build_grammar(s);
  ASSERT_TRUE(grammar.ok()) << grammar.status().to_string();
  auto compiled = CompiledGrammar::compile(*grammar, table);
  ASSERT_TRUE(compiled.ok());
  Constraint c(*compiled, s.trigger, true);
  const auto byte = [](char ch) { return static_cast<int32_t>(ch - 0x20); };
  ASSERT_TRUE(c.accept_token(byte('[')).ok());  // "[" as text is no trigger
  EXPECT_FALSE(c.active());
  ASSERT_TRUE(c.accept_token(tool_calls).ok());
  ASSERT_TRUE(c.active());
  std::vector<uint64_t> mask(table->num_mask_words());
  ASSERT_TRUE(c.fill_mask(mask));
  EXPECT_TRUE(mask_allows(mask, byte('[')));
  EXPECT_FALSE(mask_allows(mask, byte('{')));
  EXPECT_FALSE(mask_allows(mask, tool_calls));
  for (char ch : std::string(R"([{"name": "ping", "arguments": {}}])"))
    ASSERT_TRUE(c.accept_token(byte(ch)).ok()) << ch;
  EXPECT_FALSE(c.active());  // the list is complete
}

TEST_F(ConstraintTest, WithoutTriggerItIsTheMatcher) {
  StructuredOutputs s;
  s.kind = StructuredOutputs::Kind::kRegex;
  s.spec = "ab";
  auto g = compile(s);
  Constraint c(g);
  Matcher m(g);
  bool active = false;
  std::vector<uint64_t> expected(table_->num_mask_words());
  m.fill_mask(expected);
  EXPECT_EQ(mask_of(c, &active), expected);
  EXPECT_TRUE(active);
  EXPECT_FALSE(c.accept_token(id("b")).ok());
  EXPECT_TRUE(c.accept_token(id("a")).ok());
}

// clone(): an independent copy in the same state (what a draft model advances through its
// drafts): the copy moves on without moving the original, and each then behaves as a fresh
// constraint fed the same tokens; also while free text waits for the trigger (partial trigger
// bytes copied) and inside a call.
TEST_F(ConstraintTest, CloneAdvancesIndependently) {
  const auto grammar = compile(call_body());
  Constraint c(grammar, "<tool_call>", true);
  feed(c, "hi ");
  ASSERT_TRUE(c.accept_token(id("<tool")).ok());
  std::unique_ptr<Constraint> free_copy = c.clone();
  ASSERT_TRUE(free_copy->accept_token(id("_call>")).ok());  // completes the copied partial trigger
  EXPECT_TRUE(free_copy->active());
  EXPECT_FALSE(c.active());
  ASSERT_TRUE(c.accept_token(id("_call>")).ok());
  feed(c, "\n{\"a\": ");
  std::unique_ptr<Constraint> copy = c.clone();
  feed(*copy, "7}\n");
  bool active = false;
  // The original still wants a digit; the copy the closing tag.
  std::vector<uint64_t> mask = mask_of(c, &active);
  ASSERT_TRUE(active);
  EXPECT_TRUE(mask_allows(mask, id("7")));
  EXPECT_FALSE(mask_allows(mask, id("</tool_call>")));
  mask = mask_of(*copy, &active);
  EXPECT_TRUE(mask_allows(mask, id("</tool_call>")));
  EXPECT_FALSE(mask_allows(mask, id("7")));
  // Same masks as a fresh constraint fed the same tokens.
  Constraint fresh(grammar, "<tool_call>", true);
  feed(fresh, "hi ");
  ASSERT_TRUE(fresh.accept_token(id("<tool_call>")).ok());
  feed(fresh, "\n{\"a\": 7}\n");
  EXPECT_EQ(mask_of(fresh, &active), mask);
  EXPECT_FALSE(c.accept_token(id("</tool_call>")).ok());  // the original did not move
  feed(c, "3}\n");
  ASSERT_TRUE(c.accept_token(id("</tool_call>")).ok());
  EXPECT_FALSE(c.active());
  EXPECT_TRUE(copy->active());
}

}  // namespace
}  // namespace pagoda::structured
