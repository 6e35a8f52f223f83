// GrammarCache: one compile per distinct constraint (kind, text, trigger), shared by get() and
// compile_async(); background compiles from many threads agree with synchronous ones; failures
// are reported to every waiter and not cached; LRU eviction; the destructor with compiles queued.
#include "structured/grammar_cache.h"

#include <gtest/gtest.h>

#include <thread>
#include <vector>

#include "structured/matcher.h"

namespace pagoda::structured {
namespace {

std::shared_ptr<const TokenTable> ascii_table() {
  std::vector<std::string> pieces;
  for (int c = 0x20; c < 0x7f; ++c)
    pieces.push_back(std::string(1, static_cast<char>(c)));
  pieces.push_back("</s>");
  return TokenTable::from_pieces(std::move(pieces), {static_cast<int32_t>(0x7f - 0x20)});
}

StructuredOutputs regex(std::string pattern) {
  StructuredOutputs s;
  s.kind = StructuredOutputs::Kind::kRegex;
  s.spec = std::move(pattern);
  return s;
}

StructuredOutputs gbnf(std::string text) {
  StructuredOutputs s;
  s.kind = StructuredOutputs::Kind::kGrammar;
  s.spec = std::move(text);
  return s;
}

bool accepts(const std::shared_ptr<const CompiledGrammar>& g, const std::string& text) {
  Matcher m(g);
  return m.accept_bytes(text) && m.can_end();
}

TEST(GrammarCache, AsyncAndSyncShareOneCompile) {
  GrammarCache cache(ascii_table());
  Result<std::shared_future<CompileResult>> f = cache.compile_async(regex("ab+c"));
  ASSERT_TRUE(f.ok()) << f.status().to_string();
  CompileResult a = f->get();
  ASSERT_TRUE(a.ok()) << a.status().to_string();
  CompileResult b = cache.get(regex("ab+c"));
  ASSERT_TRUE(b.ok());
  EXPECT_EQ(a->get(), b->get());  // the same compiled grammar, not a second compile
  EXPECT_TRUE(accepts(*a, "abbbc"));
  EXPECT_FALSE(accepts(*a, "ac"));
  // Cached: compile_async answers at once.
  EXPECT_EQ(cache.compile_async(regex("ab+c"))->wait_for(std::chrono::seconds(0)),
            std::future_status::ready);
  // A trigger makes a different constraint.
  StructuredOutputs triggered = regex("ab+c");
  triggered.trigger = "</think>";
  CompileResult c = cache.get(triggered);
  ASSERT_TRUE(c.ok());
  EXPECT_NE(c->get(), a->get());
  EXPECT_EQ(cache.size(), 2u);
}

TEST(GrammarCache, ManyThreadsGetTheSameAnswers) {
  GrammarCache cache(ascii_table());
  std::vector<std::string> patterns;
  for (int i = 0; i < 12; ++i)
    patterns.push_back("x{" + std::to_string(i + 1) + "}[a-z]*");
  std::vector<std::shared_future<CompileResult>> futures;
  for (const std::string& p : patterns)
    futures.push_back(*cache.compile_async(regex(p)));
  std::vector<std::thread> threads;
  std::vector<const CompiledGrammar*> seen(patterns.size() * 4);
  for (size_t t = 0; t < 4; ++t) {
    threads.emplace_back([&, t] {
      for (size_t i = 0; i < patterns.size(); ++i) {
        CompileResult r = cache.get(regex(patterns[(i + t) % patterns.size()]));
        seen[t * patterns.size() + (i + t) % patterns.size()] = r.ok() ? r->get() : nullptr;
      }
    });
  }
  for (auto& th : threads)
    th.join();
  for (size_t i = 0; i < patterns.size(); ++i) {
    CompileResult r = futures[i].get();
    ASSERT_TRUE(r.ok());
    for (size_t t = 0; t < 4; ++t)
      EXPECT_EQ(seen[t * patterns.size() + i], r->get()) << patterns[i];
    EXPECT_TRUE(accepts(*r, std::string(i + 1, 'x') + "abc"));
    EXPECT_FALSE(accepts(*r, std::string(i + 2, 'x') + "1"));
  }
}

TEST(GrammarCache, FailuresReachEveryWaiterAndAreNotCached) {
  GrammarCache cache(ascii_table());
  // Parses, but no text satisfies it: found only when compiled.
  const StructuredOutputs bad = gbnf("root ::= root \"a\"\n");
  ASSERT_TRUE(build_grammar(bad).ok());
  Result<std::shared_future<CompileResult>> f = cache.compile_async(bad);
  ASSERT_TRUE(f.ok());  // it parses: the failure comes from the background compile
  const CompileResult r = f->get();
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(r.status().message().find("no text satisfies it"), std::string::npos);
  EXPECT_EQ(cache.size(), 0u);
  EXPECT_FALSE(cache.get(bad).ok());
  EXPECT_EQ(cache.size(), 0u);
}

TEST(GrammarCache, AsyncRefusesWhatDoesNotBuildAndQueuesNothing) {
  GrammarCache cache(ascii_table());
  Result<std::shared_future<CompileResult>> f = cache.compile_async(regex("a(?=b)"));
  ASSERT_FALSE(f.ok());
  EXPECT_EQ(f.status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(cache.size(), 0u);
}

TEST(GrammarCache, EvictsTheLeastRecentlyUsed) {
  GrammarCache cache(ascii_table(), 2);
  CompileResult a = cache.get(regex("a"));
  CompileResult b = cache.get(regex("b"));
  ASSERT_TRUE(a.ok() && b.ok());
  EXPECT_EQ(cache.get(regex("a"))->get(), a->get());  // a is now the most recent
  ASSERT_TRUE(cache.get(regex("c")).ok());            // evicts b
  EXPECT_EQ(cache.size(), 2u);
  EXPECT_EQ(cache.get(regex("a"))->get(), a->get());
  EXPECT_NE(cache.get(regex("b"))->get(), b->get());  // compiled again
}

TEST(GrammarCache, DestroyedWithCompilesQueuedAnswersEveryFuture) {
  std::vector<std::shared_future<CompileResult>> futures;
  {
    GrammarCache cache(ascii_table());
    for (int i = 0; i < 50; ++i)
      futures.push_back(*cache.compile_async(regex("[a-z]{" + std::to_string(i + 1) + "}")));
  }
  for (auto& f : futures) {
    ASSERT_EQ(f.wait_for(std::chrono::seconds(0)), std::future_status::ready);
    const CompileResult& r = f.get();
    EXPECT_TRUE(r.ok() || r.status().code() == StatusCode::kCancelled) << r.status().to_string();
  }
}

}  // namespace
}  // namespace pagoda::structured
