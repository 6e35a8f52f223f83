// Broken templates give clear errors naming the line jinja2 names; hostile templates and
// inputs (runaway loops, huge output, deep recursion and nesting, reference cycles) end in a
// Status within the limits instead of a crash or a hang.
#include <gtest/gtest.h>

#include <atomic>
#include <thread>

#include "oracle_client.h"

namespace pagoda::tokenizer::testing {
namespace {

using json = nlohmann::ordered_json;

const char* const kBroken[] = {
    "line1\n{% if x %}\nno end",
    "{% for x in l %}\n{{ x }}",
    "a\nb {{ x ",
    "{# unclosed comment",
    "{% raw %} unclosed raw",
    "x\n{% endif %}",
    "{% foo %}",
    "{% if x %}{% endfor %}",
    "\n\n{{ x|nosuchfilter }}",
    "{{ x is nosuchtest }}",
    "{{ 1 + }}",
    "{{ ) }}",
    "{{ ] }}",
    "{{ (1, 2 }}",
    "{% set %}",
    "{% set x %}",
    "{% macro %}{% endmacro %}",
    "{{ 'unterminated }}",
    "{% for x in %}{% endfor %}",
    "{{ a b }}",
    "{{ 1 2 }}",
    "{% if x %}{% else %}{% else %}{% endif %}",
    "{% break %}",
    "{% for x in l %}{% endfor %}{% continue %}",
    "{{ x|default( }}",
    "{{ {'a' 1} }}",
    "{% macro m(a=1, b) %}{% endmacro %}",
    "{% set 1 = 2 %}",
    "{% set x.y.z = 2 %}",
    "{{ x is }}",
    "{% call m %}{% endcall %}",
    "{{ '\\xZZ' }}",
    "{{ }}",
    "{% %}",
    "{{ x !}}",
    "{{ x = 1 }}",
    "{% if %}{% endif %}",
    "{% for %}{% endfor %}",
    "{{ x.1a }}",
    "{{ f(*a, b) }}",
    "{{ f(a=1, 2) }}",
    "{% filter %}{% endfilter %}",
    "{{ x|f(1)(2) }}",
    "{{ x is defined is defined }}",
    "{% include 'other.jinja' %}",
    "{% extends 'base.jinja' %}",
    "{% do x.append(1) %}",
    "{% endraw %}",
};

TEST(ChatTemplateErrors, BrokenTemplatesFailLikeJinja2AtTheSameLine) {
  std::vector<Case> cases;
  for (const char* source : kBroken) {
    Case c;
    c.name = source;
    c.source = source;
    c.extra = json{{"l", json::array({1, 2})}};
    cases.push_back(std::move(c));
  }
  for (const Case& c : cases) {
    const auto ours = render_ours(c);
    ASSERT_FALSE(ours.ok()) << c.name << " rendered " << *ours;
    EXPECT_FALSE(ours.status().message().empty());
  }
  std::string why;
  const auto expected = run_oracle(cases, &why);
  if (!expected) GTEST_SKIP() << "jinja2 oracle unavailable: " << why;
  for (size_t k = 0; k < cases.size(); ++k) {
    EXPECT_EQ(compare(cases[k], (*expected)[k], render_ours(cases[k])), "");
  }
}

Result<std::string> render_source(const std::string& source, ChatTemplateLimits limits = {},
                                  const json& extra = json::object()) {
  Case c;
  c.source = source;
  c.extra = extra;
  return render_ours(c, limits);
}

TEST(ChatTemplateErrors, SyntaxErrorNamesTheLine) {
  const auto t = ChatTemplate::parse("ok\nok\n{% if x %}\n{{ y + }}\n{% endif %}");
  ASSERT_FALSE(t.ok());
  EXPECT_EQ(t.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(t.status().message().find("line 4"), std::string::npos) << t.status().message();
}

TEST(ChatTemplateErrors, RaiseExceptionGivesExactlyTheMessage) {
  const auto t = ChatTemplate::parse("{{ raise_exception('Roles must alternate: ' ~ 3) }}");
  ASSERT_TRUE(t.ok());
  const json messages = json::array();
  ChatTemplateInputs in;
  in.messages = &messages;
  const auto r = (*t)->render(in);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(r.status().message(), "Roles must alternate: 3");
}

TEST(ChatTemplateErrors, IntegersBeyond64BitsAreUnsupported) {
  const auto t = ChatTemplate::parse("{{ 99999999999999999999999 }}");
  ASSERT_FALSE(t.ok());
  EXPECT_EQ(t.status().code(), StatusCode::kUnimplemented);
  const auto r = render_source("{{ 9223372036854775807 + 1 }}");
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), StatusCode::kUnimplemented);
}

TEST(ChatTemplateErrors, InvalidUtf8TemplateIsRejected) {
  const auto t = ChatTemplate::parse(std::string("ok \xff\xfe {{ x }}"));
  ASSERT_FALSE(t.ok());
  EXPECT_EQ(t.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(t.status().message().find("UTF-8"), std::string::npos);
}

void expect_limit(const std::string& source, ChatTemplateLimits limits = {}) {
  const auto r = render_source(source, limits);
  ASSERT_FALSE(r.ok()) << source.substr(0, 80) << " rendered " << r->size() << " bytes";
  EXPECT_EQ(r.status().code(), StatusCode::kResourceExhausted)
      << source.substr(0, 80) << ": " << r.status().to_string();
}

// Sanitizer builds run ~20x slower; they check the same mechanism with a smaller budget.
#if defined(__SANITIZE_ADDRESS__)
constexpr bool kSanitized = true;
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
constexpr bool kSanitized = true;
#else
constexpr bool kSanitized = false;
#endif
#else
constexpr bool kSanitized = false;
#endif

TEST(ChatTemplateLimits, RunawayLoopsStopAtTheStepBudget) {
  // 10^10 iterations (range itself is capped at 100000 by the sandbox, as in jinja2), with
  // the default budget.
  ChatTemplateLimits defaults;
  if (kSanitized) defaults.max_steps = 2'000'000;
  expect_limit("{% for i in range(100000) %}{% for j in range(100000) %}{% endfor %}{% endfor %}",
               defaults);
  // 10^15 iterations of no-op macro calls, with a smaller budget.
  ChatTemplateLimits budget;
  budget.max_steps = 1'000'000;
  expect_limit(
      "{% macro m() %}{% endmacro %}{% for i in range(100000) %}{% for j in range(100000) %}"
      "{% for k in range(100000) %}{{ m() }}{% endfor %}{% endfor %}{% endfor %}",
      budget);
  budget.max_steps = 1000;
  expect_limit("{% for i in range(2000) %}{% endfor %}", budget);
  const auto ok = render_source("{% for i in range(100) %}{% endfor %}done", budget);
  ASSERT_TRUE(ok.ok()) << ok.status().to_string();
}

TEST(ChatTemplateLimits, HugeOutputStopsAtTheOutputLimit) {
  // 10^10 * 10 bytes = 100 GB if unbounded.
  expect_limit(
      "{% for i in range(100000) %}{% for j in range(100000) %}0123456789{% endfor %}"
      "{% endfor %}");
  expect_limit("{{ 'x' * 1000000000 }}");
  expect_limit("{{ ['x'] * 1000000000 }}");
  expect_limit(
      "{% set ns = namespace(s='x') %}{% for i in range(64) %}{% set ns.s = ns.s ~ ns.s %}"
      "{% endfor %}{{ ns.s|length }}");
  expect_limit(
      "{% set ns = namespace(s=['x']) %}{% for i in range(64) %}{% set ns.s = ns.s + ns.s %}"
      "{% endfor %}{{ ns.s|length }}");
  expect_limit("{{ 'abcdefghij'.replace('', 'x' * 1000000) }}");
  expect_limit("{{ ('x\\n' * 1000000)|indent(1000) }}");
  expect_limit("{% set s = 'x' * 5000000 %}{{ s ~ s }}");
  ChatTemplateLimits small;
  small.max_output_bytes = 100;
  expect_limit("{% for i in range(200) %}x{% endfor %}", small);
  const auto ok = render_source("{% for i in range(50) %}x{% endfor %}", small);
  ASSERT_TRUE(ok.ok()) << ok.status().to_string();
  EXPECT_EQ(*ok, std::string(50, 'x'));
}

TEST(ChatTemplateLimits, DeepRecursionAndNestingFailCleanly) {
  expect_limit("{% macro r(n) %}{{ r(n + 1) }}{% endmacro %}{{ r(0) }}");
  expect_limit(
      "{% macro r(n) %}{% for x in [1] %}{% if true %}{{ r(n + 1) }}{% endif %}{% endfor %}"
      "{% endmacro %}{{ r(0) }}");
  expect_limit(
      "{% set ns = namespace(x=[]) %}{% for i in range(5000) %}{% set ns.x = [ns.x] %}"
      "{% endfor %}{{ ns.x|length }}");
  expect_limit(
      "{% set ns = namespace(x={}) %}{% for i in range(5000) %}{% set ns.x = {'k': ns.x} %}"
      "{% endfor %}{{ ns.x|length }}");
  // A chain of namespaces holding each other: printing recurses, and must stop.
  expect_limit(
      "{% set ns = namespace(x=none) %}{% for i in range(5000) %}"
      "{% set ns.x = namespace(next=ns.x) %}{% endfor %}{{ ns }}");
  expect_limit("{% for x in [[1]] recursive %}{{ loop([x]) }}{% endfor %}");

  // The parser bounds nesting: syntax errors, not stack overflows.
  for (const std::string& source : {
           std::string(10000, '(') + "1" + std::string(10000, ')'),
           "{{ " + std::string(20000, '[') + std::string(20000, ']') + " }}",
           "{{ " + std::string(20000, '-') + "1 }}",
           [] {
             std::string s = "{{ ";
             for (int k = 0; k < 5000; ++k)
               s += "not ";
             return s + "x }}";
           }(),
           [] {
             std::string s = "{{ 1";
             for (int k = 0; k < 5000; ++k)
               s += " + 1";
             return s + " }}";
           }(),
           [] {
             std::string s = "{{ x";
             for (int k = 0; k < 5000; ++k)
               s += "|trim";
             return s + " }}";
           }(),
           [] {
             std::string s;
             for (int k = 0; k < 5000; ++k)
               s += "{% if true %}";
             return s;
           }(),
           [] {
             std::string s = "{{ 1";
             for (int k = 0; k < 5000; ++k)
               s += " if true else 1";
             return s + " }}";
           }(),
       }) {
    const auto t = ChatTemplate::parse("{{ 'x' }}" + source);
    if (t.ok()) {
      // Shallow enough to parse; then it must render or fail cleanly.
      ChatTemplateInputs in;
      (void)(*t)->render(in);
    } else {
      EXPECT_EQ(t.status().code(), StatusCode::kInvalidArgument) << t.status().to_string();
    }
  }
}

TEST(ChatTemplateLimits, DeepInputJsonIsRejected) {
  json deep = json::array();
  for (int k = 0; k < 1000; ++k)
    deep = json::array({deep});
  const auto r = render_source("{{ messages }}", {}, json{{"x", deep}});
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), StatusCode::kInvalidArgument);
}

TEST(ChatTemplateConcurrency, OneTemplateRendersFromManyThreads) {
  const auto t = ChatTemplate::parse(
      "{% set ns = namespace(n=0) %}{% for m in messages %}{% set ns.n = ns.n + 1 %}"
      "<{{ m.role }}>{{ m.content|trim }}{% endfor %}{{ ns.n }}{{ messages|tojson }}");
  ASSERT_TRUE(t.ok());
  const json messages = json::parse(R"([{"role": "user", "content": " a "},
                                        {"role": "assistant", "content": "b"}])");
  ChatTemplateInputs in;
  in.messages = &messages;
  const auto expected = (*t)->render(in);
  ASSERT_TRUE(expected.ok());
  std::vector<std::thread> threads;
  std::atomic<int> mismatches{0};
  for (int k = 0; k < 4; ++k) {
    threads.emplace_back([&] {
      for (int i = 0; i < 200; ++i) {
        const auto r = (*t)->render(in);
        if (!r.ok() || *r != *expected) ++mismatches;
      }
    });
  }
  for (auto& th : threads)
    th.join();
  EXPECT_EQ(mismatches.load(), 0);
}

}  // namespace
}  // namespace pagoda::tokenizer::testing
