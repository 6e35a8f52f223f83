// Prefix affinity: the key covers exactly the first prefix_chars of the chat prefix or prompt;
// rendezvous choice is sticky, spreads keys, moves only a removed replica's keys, and respects
// the bounded load ceil(c * (m + 1) / n).
#include <gtest/gtest.h>

#include <map>
#include <nlohmann/json.hpp>

#include "router/backend_pool.h"
#include "router/prefix_affinity.h"

namespace pagoda::router {
namespace {

using json = nlohmann::json;

json chat(const std::string& system, const std::string& user) {
  return json{{"messages",
               {{{"role", "system"}, {"content", system}}, {{"role", "user"}, {"content", user}}}}};
}

json conversation(const std::string& system, const std::string& first, const std::string& last) {
  return json{{"messages",
               {{{"role", "system"}, {"content", system}},
                {{"role", "user"}, {"content", first}},
                {{"role", "assistant"}, {"content", "ok"}},
                {{"role", "user"}, {"content", last}}}}};
}

TEST(AffinityKey, CoversTheStablePrefixUpToPrefixChars) {
  const std::string sys(100, 's');
  // The newest turn is never part of the key; the system prompt is.
  EXPECT_EQ(affinity_key(chat(sys, "question one"), 2048), affinity_key(chat(sys, "other"), 2048));
  EXPECT_NE(affinity_key(chat(sys, "q"), 2048),
            affinity_key(chat(std::string(100, 't'), "q"), 2048));
  // A conversation keys on the system prompt and its first turn, not on later turns.
  EXPECT_EQ(affinity_key(conversation(sys, "first", "a"), 2048),
            affinity_key(conversation(sys, "first", "b"), 2048));
  EXPECT_NE(affinity_key(conversation(sys, "first", "a"), 2048),
            affinity_key(conversation(sys, "other", "a"), 2048));
  // Only the first prefix_chars count: "system\n" + 100 characters = 107.
  EXPECT_EQ(affinity_key(conversation(sys, "first", "a"), 107),
            affinity_key(conversation(sys, "other", "a"), 107));
  EXPECT_EQ(affinity_key(chat(sys + "x", "q"), 50), affinity_key(chat(sys + "y", "q"), 50));
  // A single message is its own prefix.
  json single{{"messages", {{{"role", "user"}, {"content", "hello"}}}}};
  EXPECT_TRUE(affinity_key(single, 2048).has_value());
  // Content parts count as their text.
  json parts = chat(sys, "q");
  parts["messages"][0]["content"] = json::array({{{"type", "text"}, {"text", sys}}});
  EXPECT_EQ(affinity_key(parts, 2048), affinity_key(chat(sys, "zzz"), 2048));
  EXPECT_EQ(affinity_key(json{{"prompt", "abcdef"}}, 3),
            affinity_key(json{{"prompt", "abcxyz"}}, 3));
  EXPECT_EQ(affinity_key(json{{"prompt", {"abcdef", "x"}}}, 3),
            affinity_key(json{{"prompt", "abc"}}, 3));
  EXPECT_FALSE(affinity_key(json{{"model", "m"}}, 100).has_value());
  EXPECT_FALSE(affinity_key(json{{"prompt", ""}}, 100).has_value());
  EXPECT_FALSE(affinity_key(json::array(), 100).has_value());
}

RouterConfig config_of(const std::string& yaml) {
  auto r = parse_router_config(yaml);
  EXPECT_TRUE(r.ok()) << r.status().message();
  return r.ok() ? *r : RouterConfig{};
}

const char* kThree = R"(
backends:
  - {name: a, url: 'http://h:1', models: [m]}
  - {name: b, url: 'http://h:2', models: [m]}
  - {name: c, url: 'http://h:3', models: [m]}
balancing: {load_factor: 1.25}
)";

std::string owner(BackendPool& pool, uint64_t key) {
  auto b = pool.acquire("m", {}, key);
  pool.release(*b);
  return b->config.name;
}

TEST(PrefixAffinity, StickySpreadAndConsistent) {
  BackendPool pool(config_of(kThree), {});
  std::map<std::string, int> counts;
  std::map<uint64_t, std::string> before;
  for (uint64_t k = 0; k < 3000; ++k) {
    uint64_t key = *affinity_key(json{{"prompt", "tenant " + std::to_string(k)}}, 64);
    std::string o = owner(pool, key);
    EXPECT_EQ(owner(pool, key), o);  // sticky
    before[key] = o;
    counts[o]++;
  }
  for (const char* name : {"a", "b", "c"}) {
    EXPECT_GT(counts[name], 800) << name;  // 1000 expected each
    EXPECT_LT(counts[name], 1200) << name;
  }
  // Remove c: a's and b's keys stay; c's move.
  pool.reconfigure(config_of(R"(
backends:
  - {name: a, url: 'http://h:1', models: [m]}
  - {name: b, url: 'http://h:2', models: [m]}
)"),
                   {});
  for (const auto& [key, o] : before) {
    if (o != "c") {
      EXPECT_EQ(owner(pool, key), o);
    }
  }
}

TEST(PrefixAffinity, BoundedLoadSpillsOver) {
  BackendPool pool(config_of(kThree), {});
  const uint64_t key = 42;
  std::string home = owner(pool, key);
  std::map<std::string, int64_t> held;
  std::vector<BackendPool::BackendPtr> keep;
  for (int i = 1; i <= 12; ++i) {
    auto b = pool.acquire("m", {}, key);
    keep.push_back(b);
    held[b->config.name]++;
    // After i requests, the home replica holds at most ceil(1.25 * i / 3).
    int64_t cap = (5 * i + 11) / 12;
    EXPECT_LE(held[home], cap) << "after " << i;
  }
  EXPECT_EQ(held[home], 5);  // ceil(1.25 * 12 / 3)
  EXPECT_EQ(held.size(), 3u);
  // Affinity off: plain least outstanding.
  BackendPool plain(config_of(R"(
backends:
  - {name: a, url: 'http://h:1', models: [m]}
  - {name: b, url: 'http://h:2', models: [m]}
balancing: {prefix_affinity: false}
)"),
                    {});
  std::map<std::string, int> c;
  for (int i = 0; i < 4; ++i)
    c[plain.acquire("m", {}, key)->config.name]++;
  EXPECT_EQ(c["a"], 2);
  EXPECT_EQ(c["b"], 2);
}

}  // namespace
}  // namespace pagoda::router
