// parse_backend_load against the text `pagoda serve` really exposes (rendered by prometheus-cpp's
// TextSerializer, the same as the server's /metrics) plus hostile lines.
#include <gtest/gtest.h>

#include <prometheus/gauge.h>
#include <prometheus/registry.h>
#include <prometheus/text_serializer.h>

#include "router/backend_load.h"

namespace pagoda::router {
namespace {

TEST(BackendLoad, ReadsPrometheusSerializerOutput) {
  prometheus::Registry registry;
  auto& waiting = prometheus::BuildGauge().Name("vllm:num_requests_waiting").Register(registry);
  waiting.Add({{"model_name", "a"}, {"engine", "0"}}).Set(3);
  waiting.Add({{"model_name", "b"}, {"engine", "0"}}).Set(4);
  prometheus::BuildGauge()
      .Name("vllm:kv_cache_usage_perc")
      .Register(registry)
      .Add({{"model_name", "a}\" x"}})
      .Set(0.25);
  prometheus::BuildGauge().Name("vllm:num_requests_running").Register(registry).Add({}).Set(100);
  std::string text = prometheus::TextSerializer().Serialize(registry.Collect());
  BackendLoad load = parse_backend_load(text);
  ASSERT_TRUE(load.num_waiting.has_value());
  EXPECT_DOUBLE_EQ(*load.num_waiting, 7.0);
  ASSERT_TRUE(load.kv_usage.has_value());
  EXPECT_DOUBLE_EQ(*load.kv_usage, 0.25);
}

TEST(BackendLoad, SkipsWhatDoesNotParse) {
  BackendLoad load = parse_backend_load(
      "vllm:num_requests_waiting NaN\n"
      "vllm:num_requests_waiting{a=\"unterminated 5\n"
      "vllm:num_requests_waiting -3\n"
      "vllm:num_requests_waiting 2 1700000000\r\n"
      "vllm:kv_cache_usage_perc 7\n"
      "# vllm:kv_cache_usage_perc 0.1\n");
  ASSERT_TRUE(load.num_waiting.has_value());
  EXPECT_DOUBLE_EQ(*load.num_waiting, 2.0);
  EXPECT_DOUBLE_EQ(*load.kv_usage, 1.0);  // clamped
  BackendLoad none = parse_backend_load("garbage{{{ \n\n{}");
  EXPECT_FALSE(none.num_waiting.has_value());
  EXPECT_FALSE(none.kv_usage.has_value());
}

}  // namespace
}  // namespace pagoda::router
