// The router's YAML config: a full valid file, defaults, and one refusal per rule, each naming
// the offending key.
#include <gtest/gtest.h>

#include <string>

#include "router/router_config.h"

namespace pagoda::router {
namespace {

constexpr const char* kFull = R"(
listen: {host: 0.0.0.0, port: 9000}
backends:
  - name: a
    url: http://10.0.0.1:8001
    models: [llama, qwen]
    weight: 2.5
    api_key: secret
  - url: http://10.0.0.2:8002/
    models: [llama]
aliases:
  gpt-4o-mini: llama
fallback:
  url: http://api.example.com/v1
  api_key: sk-x
  model: gpt-4o-mini
health: {interval_ms: 500, timeout_ms: 200, max_backoff_ms: 8000, failures_to_eject: 2}
limits: {max_attempts: 2, connect_timeout_ms: 300, stream_idle_timeout_ms: 1000, max_body_bytes: 1024}
)";

std::string error_of(const std::string& yaml) {
  auto r = parse_router_config(yaml);
  return r.ok() ? "" : r.status().message();
}

TEST(RouterConfig, ParsesEveryKey) {
  auto r = parse_router_config(kFull);
  ASSERT_TRUE(r.ok()) << r.status().message();
  const RouterConfig& c = *r;
  EXPECT_EQ(c.host, "0.0.0.0");
  EXPECT_EQ(c.port, 9000);
  ASSERT_EQ(c.backends.size(), 2u);
  EXPECT_EQ(c.backends[0].name, "a");
  EXPECT_EQ(c.backends[0].url.host, "10.0.0.1");
  EXPECT_EQ(c.backends[0].url.port, 8001);
  EXPECT_EQ(c.backends[0].models, (std::vector<std::string>{"llama", "qwen"}));
  EXPECT_DOUBLE_EQ(c.backends[0].weight, 2.5);
  EXPECT_EQ(c.backends[0].api_key, "secret");
  EXPECT_EQ(c.backends[1].name, "10.0.0.2:8002");  // defaults to host:port
  EXPECT_EQ(c.backends[1].url.path_prefix, "");    // trailing slash dropped
  EXPECT_DOUBLE_EQ(c.backends[1].weight, 1.0);
  EXPECT_EQ(c.resolve("gpt-4o-mini"), "llama");
  EXPECT_EQ(c.resolve("qwen"), "qwen");
  ASSERT_TRUE(c.fallback.has_value());
  EXPECT_EQ(c.fallback->url.host, "api.example.com");
  EXPECT_EQ(c.fallback->url.port, 80);
  EXPECT_EQ(c.fallback->url.path_prefix, "/v1");
  EXPECT_EQ(c.fallback->model, "gpt-4o-mini");
  EXPECT_EQ(c.health.interval_ms, 500u);
  EXPECT_EQ(c.health.failures_to_eject, 2u);
  EXPECT_EQ(c.limits.max_attempts, 2u);
  EXPECT_EQ(c.limits.max_body_bytes, 1024u);
}

TEST(RouterConfig, Defaults) {
  auto r = parse_router_config("backends: [{url: 'http://h:1', models: [m]}]");
  ASSERT_TRUE(r.ok()) << r.status().message();
  EXPECT_EQ(r->host, "127.0.0.1");
  EXPECT_EQ(r->port, 8080);
  EXPECT_FALSE(r->fallback.has_value());
  EXPECT_EQ(r->limits.max_attempts, LimitsConfig{}.max_attempts);
}

TEST(RouterConfig, ErrorsNameTheKey) {
  const std::string ok_backend = "backends: [{url: 'http://h:1', models: [m]}]\n";
  struct Case {
    std::string yaml;
    std::string expected;  // a substring of the message
  };
  const Case cases[] = {
      {"", "config: must be a mapping"},
      {"backends: []", "backends: must be a non-empty list"},
      {ok_backend + "bakends: 1", "bakends: unknown key"},
      {"backends: [{url: 'http://h:1', models: [m], wieght: 2}]",
       "backends[0].wieght: unknown key"},
      {"backends: [{models: [m]}]", "backends[0].url: missing"},
      {"backends: [{url: 'https://h:1', models: [m]}]", "backends[0].url: https"},
      {"backends: [{url: 'ftp://h', models: [m]}]", "backends[0].url: must start with http://"},
      {"backends: [{url: 'http://h:0', models: [m]}]", "backends[0].url: invalid port"},
      {"backends: [{url: 'http://h:99999', models: [m]}]", "backends[0].url: invalid port"},
      {"backends: [{url: 'http://:1', models: [m]}]", "backends[0].url: missing host"},
      {"backends: [{url: 'http://u@h:1', models: [m]}]", "backends[0].url: invalid character"},
      {"backends: [{url: 'http://h:1?x', models: [m]}]", "backends[0].url: invalid character"},
      {"backends: [{url: 'http://h:1', models: []}]", "backends[0].models: must be a non-empty"},
      {"backends: [{url: 'http://h:1', models: [[x]]}]", "backends[0].models[0]: must be a string"},
      {"backends: [{url: 'http://h:1', models: [m], weight: 0}]", "backends[0].weight"},
      {"backends: [{url: 'http://h:1', models: [m], weight: nan}]", "backends[0].weight"},
      {"backends: [{url: 'http://h:1', models: [m], weight: x}]", "backends[0].weight"},
      {"backends: [{name: a, url: 'http://h:1', models: [m]}, {name: a, url: 'http://h:2', "
       "models: [m]}]",
       "backends[1].name: 'a' is used by another backend"},
      {ok_backend + "aliases: {x: other}", "aliases.x: model 'other' is not served"},
      {ok_backend + "aliases: {m: m}", "aliases.m: 'm' is already a served model name"},
      {ok_backend + "aliases: [1]", "aliases: must be a mapping"},
      {ok_backend + "fallback: {api_key: k}", "fallback.url: missing"},
      {ok_backend + "fallback: {url: 'http://f', key: k}", "fallback.key: unknown key"},
      {ok_backend + "listen: {port: 70000}", "listen.port: must be in [0, 65535]"},
      {ok_backend + "listen: {port: -1}", "listen.port: must be an integer"},
      {ok_backend + "listen: {port: 80, port: 81}", "listen.port: duplicate key"},
      {ok_backend + "health: {interval_ms: 5}", "health.interval_ms: must be in"},
      {ok_backend + "health: {interval_ms: 1000, max_backoff_ms: 500}", "health.max_backoff_ms"},
      {ok_backend + "limits: {max_attempts: 0}", "limits.max_attempts: must be in [1, 16]"},
      {ok_backend + "limits: {max_body_bytes: 1.5}", "limits.max_body_bytes: must be an integer"},
      {"backends: [{url: 'http://h:1', models: [m]}", "YAML error at line"},
      {std::string(100, '[') + std::string(100, ']'), "nested deeper than 32"},
      {std::string(200, ' ') + "x: 1", "indented or nested deeper"},
  };
  for (const Case& c : cases) {
    std::string err = error_of(c.yaml);
    EXPECT_NE(err.find(c.expected), std::string::npos)
        << "yaml: " << c.yaml << "\nerror: " << err << "\nexpected: " << c.expected;
  }
}

TEST(RouterConfig, RefusesOversizedFiles) {
  std::string big = "backends: [{url: 'http://h:1', models: [m]}]\n#" + std::string(2 << 20, 'x');
  EXPECT_NE(error_of(big).find("larger than"), std::string::npos);
}

TEST(RouterConfig, LoadNamesThePath) {
  auto r = load_router_config("/nonexistent/router.yaml");
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("/nonexistent/router.yaml"), std::string::npos);
}

TEST(UpstreamUrl, Parses) {
  auto u = parse_upstream_url("http://example.com:8080/a/b/", "k");
  ASSERT_TRUE(u.ok());
  EXPECT_EQ(u->host, "example.com");
  EXPECT_EQ(u->port, 8080);
  EXPECT_EQ(u->path_prefix, "/a/b");
  EXPECT_EQ(u->authority(), "example.com:8080");
  auto v = parse_upstream_url("http://[::1]:80", "k");
  EXPECT_FALSE(v.ok());
}

}  // namespace
}  // namespace pagoda::router
