// RouterMetrics' text: the series of every known label value exist at 0 before the first event
// (so dashboards and rate() see them from the first scrape), and counting moves only its own.
#include "router/router_metrics.h"

#include <gtest/gtest.h>

#include <set>
#include <string>

namespace pagoda::router {
namespace {

bool has_line(const std::string& text, const std::string& line) {
  return text.find("\n" + line + "\n") != std::string::npos;
}

TEST(RouterMetrics, KnownLabelValuesStartAtZero) {
  RouterMetrics metrics;
  BackendPool::BackendView b;
  b.name = "r0";
  b.admitted = true;
  const std::string text = "\n" + metrics.render({b});
  std::set<std::string> causes;
  for (int c = 0; c <= static_cast<int>(ErrorCause::kCircuitOpen); ++c) {
    const std::string name = cause_name(static_cast<ErrorCause>(c));
    EXPECT_NE(name, "unknown") << c;
    causes.insert(name);
    EXPECT_TRUE(has_line(text, "pagoda_router_errors_total{cause=\"" + name + "\"} 0")) << name;
  }
  EXPECT_EQ(causes.size(), static_cast<size_t>(ErrorCause::kCircuitOpen) + 1);  // distinct
  for (int a = 0; a <= static_cast<int>(LadderAction::kPreset); ++a) {
    const std::string name = action_name(static_cast<LadderAction>(a));
    EXPECT_NE(name, "unknown") << a;
    EXPECT_TRUE(has_line(text, "pagoda_router_ladder_actions_total{action=\"" + name + "\"} 0"));
  }
  for (const char* line : {"pagoda_router_degradation_changes_total{direction=\"up\"} 0",
                           "pagoda_router_degradation_changes_total{direction=\"down\"} 0",
                           "pagoda_router_cache_lookups_total{result=\"hit\"} 0",
                           "pagoda_router_cache_lookups_total{result=\"miss\"} 0",
                           "pagoda_router_ejections_total{backend=\"r0\"} 0",
                           "pagoda_router_readmissions_total{backend=\"r0\"} 0",
                           "pagoda_router_backend_up{backend=\"r0\"} 1"}) {
    EXPECT_TRUE(has_line(text, line)) << line;
  }
}

TEST(RouterMetrics, CountsMoveOnlyTheirSeries) {
  RouterMetrics metrics;
  metrics.count_error(ErrorCause::kRateLimited);
  metrics.count_level_change(0, 2);
  metrics.count_level_change(2, 2);  // no change, not counted
  metrics.count_cache_lookup(true);
  metrics.count_ejection("r1");
  const std::string text = "\n" + metrics.render({});
  EXPECT_TRUE(has_line(text, "pagoda_router_errors_total{cause=\"rate_limited\"} 1"));
  EXPECT_TRUE(has_line(text, "pagoda_router_errors_total{cause=\"circuit_open\"} 0"));
  EXPECT_TRUE(has_line(text, "pagoda_router_degradation_changes_total{direction=\"up\"} 1"));
  EXPECT_TRUE(has_line(text, "pagoda_router_degradation_changes_total{direction=\"down\"} 0"));
  EXPECT_TRUE(has_line(text, "pagoda_router_cache_lookups_total{result=\"hit\"} 1"));
  EXPECT_TRUE(has_line(text, "pagoda_router_cache_lookups_total{result=\"miss\"} 0"));
  EXPECT_TRUE(has_line(text, "pagoda_router_ejections_total{backend=\"r1\"} 1"));
}

}  // namespace
}  // namespace pagoda::router
