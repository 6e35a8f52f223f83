// jinja::Template on its own: parse once, render with a DictData context, errors and limits
// as Status codes. The interpreter's behaviour against python3-jinja2 is checked through
// ChatTemplate (tests/unit/tokenizer/chat_template).
#include "jinja/template.h"

#include <gtest/gtest.h>

#include <chrono>
#include <string>

#include "jinja/py_text.h"

namespace pagoda::jinja {
namespace {

Result<std::string> render(std::string_view source, const DictData& context,
                           RenderLimits limits = {}) {
  PAGODA_ASSIGN_OR_RETURN(auto t, Template::parse(source));
  return t->render(context, limits);
}

DictData context() {
  DictData d;
  d.set(Value::string("name"), Value::string("wörld"));
  d.set(Value::string("l"), make_list({Value::integer(3), Value::integer(1), Value::integer(2)}));
  return d;
}

TEST(JinjaTemplate, RendersWithTheContextAndHfSettings) {
  // trim_blocks + lstrip_blocks, filters, loops and the environment's globals.
  const auto r = render(
      "Hi {{ name|upper }}\n  {% for x in l|sort %}\n{{ loop.index }}={{ x }};{% endfor %}\n"
      "{{ l|tojson }} {{ range(3)|list }} {{ missing is defined }}",
      context());
  ASSERT_TRUE(r.ok()) << r.status().to_string();
  EXPECT_EQ(*r, "Hi WÖRLD\n1=1;2=2;3=3;[3, 1, 2] [0, 1, 2] False");
}

TEST(JinjaTemplate, ParsedOnceRenderedManyTimes) {
  const auto t = Template::parse("{{ name }}{{ l|length }}");
  ASSERT_TRUE(t.ok()) << t.status().to_string();
  for (int k = 0; k < 3; ++k) {
    const auto r = (*t)->render(context(), {});
    ASSERT_TRUE(r.ok()) << r.status().to_string();
    EXPECT_EQ(*r, "wörld3");
  }
  EXPECT_EQ(*(*t)->render({}, {}), "0");  // undefined renders empty; its length is 0
}

TEST(JinjaTemplate, SyntaxErrorNamesTheLine) {
  const auto t = Template::parse("ok\nok\n{% if x %}\n{{ y + }}\n{% endif %}");
  ASSERT_FALSE(t.ok());
  EXPECT_EQ(t.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(t.status().message().find("line 4"), std::string::npos) << t.status().message();
}

TEST(JinjaTemplate, RaiseExceptionGivesExactlyTheMessage) {
  const auto r = render("{{ raise_exception('bad: ' ~ l|length) }}", context());
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(r.status().message(), "bad: 3");
}

TEST(JinjaTemplate, UnsupportedAndInvalidInput) {
  const auto big = Template::parse("{{ 99999999999999999999999 }}");
  ASSERT_FALSE(big.ok());
  EXPECT_EQ(big.status().code(), StatusCode::kUnimplemented);
  const std::string bad = "ok \xff\xfe {{ x }}";
  EXPECT_EQ(find_invalid_utf8(bad), 3u);
  const auto t = Template::parse(bad);
  ASSERT_FALSE(t.ok());
  EXPECT_EQ(t.status().code(), StatusCode::kInvalidArgument);
}

TEST(JinjaTemplate, LimitsGiveResourceExhausted) {
  RenderLimits steps;
  steps.max_steps = 10'000;
  const auto loop = render("{% for i in range(100000) %}{{ i }}{% endfor %}", {}, steps);
  ASSERT_FALSE(loop.ok());
  EXPECT_EQ(loop.status().code(), StatusCode::kResourceExhausted);
  RenderLimits output;
  output.max_output_bytes = 1000;
  const auto huge = render("{{ 'x' * 2000 }}", {}, output);
  ASSERT_FALSE(huge.ok());
  EXPECT_EQ(huge.status().code(), StatusCode::kResourceExhausted);
}

TEST(JinjaTemplate, StrftimeNowUsesTheGivenClock) {
  RenderLimits limits;
  limits.now = std::chrono::system_clock::time_point(std::chrono::seconds(1721995200));
  const auto r = render("{{ strftime_now('%Y') }}", {}, limits);
  ASSERT_TRUE(r.ok()) << r.status().to_string();
  EXPECT_EQ(*r, "2024");
}

}  // namespace
}  // namespace pagoda::jinja
