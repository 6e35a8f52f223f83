// LoRA over HTTP, with the real engine on the demo model and tools/lora_fixtures' adapters:
// /v1/models lists each adapter with the base model as parent; "model": ADAPTER runs it (greedy
// text equal to the engine's own run with that adapter, different from the base model's);
// POST /v1/load_lora_adapter and /v1/unload_lora_adapter need the API key, answer in OpenAI's
// error shape naming the field, and take effect at once; unknown adapters are 404.
#include <gtest/gtest.h>

#include <chrono>
#include <thread>

#include <nlohmann/json.hpp>

#include "golden/lora/lora_fixtures.h"
#include "pagoda/engine.h"
#include "server/http_server.h"
#include "server/raw_client.h"

namespace pagoda::server {
namespace {

using nlohmann::json;
using pagoda::testing::http_get;
using pagoda::testing::http_post;
using pagoda::testing::RawClient;
using pagoda::testing::RawResponse;
using namespace std::chrono_literals;

constexpr const char* kAuth = "Authorization: Bearer sekrit\r\n";

class LoraServer {
 public:
  explicit LoraServer(const fs::path& dir) {
    ServerConfig cfg;
    cfg.host = "127.0.0.1";
    cfg.port = 0;
    cfg.api_keys = {"sekrit"};
    EngineConfig ec;
    ec.model_path = demo_model().string();
    ec.served_model_name = "demo";
    ec.kv_cache_bytes = 16ull << 20;
    ec.max_model_len = 256;
    ec.warm_up = false;
    ec.max_loras = 3;
    ec.max_lora_rank = 16;
    ec.lora_adapters = {{"fox", (dir / "multi-0").string()}, {"owl", (dir / "multi-2").string()}};
    server_ = std::make_unique<HttpServer>(cfg, "demo", [ec] { return Engine::create(ec); });
    const Status st = server_->start();
    EXPECT_TRUE(st.ok()) << st.message();
    port_ = server_->port();
    for (int i = 0; i < 2000; ++i) {
      if (get("/health").status == 200) return;
      std::this_thread::sleep_for(5ms);
    }
    ADD_FAILURE() << "server not ready";
  }
  ~LoraServer() {
    server_->request_stop();
    server_->wait();
  }
  RawResponse request(const std::string& raw) {
    RawClient c(port_);
    EXPECT_TRUE(c.connected());
    c.send(raw);
    return c.read_response(60s);
  }
  RawResponse get(const std::string& path, const std::string& headers = kAuth) {
    return request(http_get(path, headers));
  }
  RawResponse post(const std::string& path, const json& body, const std::string& headers = kAuth) {
    return request(http_post(path, body.dump(), headers));
  }
  // Greedy completion text of `model`.
  std::string complete(const std::string& model, int* status = nullptr) {
    const RawResponse r = post("/v1/completions", json{{"model", model},
                                                       {"prompt", "Once upon a time, a little fox"},
                                                       {"max_tokens", 12},
                                                       {"temperature", 0}});
    if (status != nullptr) *status = r.status;
    if (r.status != 200) return r.body;
    return json::parse(r.body)["choices"][0]["text"].get<std::string>();
  }

 private:
  std::unique_ptr<HttpServer> server_;
  uint16_t port_ = 0;
};

json error_of(const RawResponse& r) {
  const json j = json::parse(r.body, nullptr, false);
  return j.is_object() && j.contains("error") ? j["error"] : json();
}

TEST(LoraServer, ModelsGenerationLoadAndUnload) {
  REQUIRE_LORA_FIXTURES(dir);
  LoraServer s(dir);
  // /v1/models: the base, then the adapters with the base as parent.
  RawResponse r = s.get("/v1/models");
  ASSERT_EQ(r.status, 200) << r.body;
  json models = json::parse(r.body)["data"];
  ASSERT_EQ(models.size(), 3u) << r.body;
  EXPECT_EQ(models[0]["id"], "demo");
  EXPECT_TRUE(models[0]["parent"].is_null());
  EXPECT_EQ(models[1]["id"], "fox");
  EXPECT_EQ(models[1]["parent"], "demo");
  EXPECT_EQ(models[1]["root"], (dir / "multi-0").string());
  EXPECT_EQ(models[2]["id"], "owl");
  r = s.get("/v1/models/fox");
  ASSERT_EQ(r.status, 200) << r.body;
  EXPECT_EQ(json::parse(r.body)["parent"], "demo");
  EXPECT_EQ(s.get("/v1/models/nope").status, 404);

  // Generation: each adapter's text differs from the base model's; unknown models are 404.
  const std::string base = s.complete("demo");
  const std::string fox = s.complete("fox");
  EXPECT_NE(fox, base);
  EXPECT_EQ(s.complete("fox"), fox);  // again (now from the prefix cache): the same
  int status = 0;
  s.complete("wolf", &status);
  EXPECT_EQ(status, 404);

  // The endpoints need the key.
  EXPECT_EQ(s.post("/v1/load_lora_adapter",
                   json{{"lora_name", "wolf"}, {"lora_path", (dir / "multi-1").string()}}, "")
                .status,
            401);
  EXPECT_EQ(s.post("/v1/unload_lora_adapter", json{{"lora_name", "fox"}}, "").status, 401);
  // Bad bodies name the field.
  r = s.post("/v1/load_lora_adapter", json{{"lora_name", "wolf"}});
  EXPECT_EQ(r.status, 400);
  EXPECT_EQ(error_of(r)["param"], "lora_path");
  r = s.post("/v1/load_lora_adapter",
             json{{"lora_name", "wolf"}, {"lora_path", "/x"}, {"lora_int_id", 3}});
  EXPECT_EQ(r.status, 400);
  EXPECT_EQ(error_of(r)["param"], "lora_int_id");
  r = s.post("/v1/load_lora_adapter",
             json{{"lora_name", "fox"}, {"lora_path", (dir / "multi-1").string()}});
  EXPECT_EQ(r.status, 400) << r.body;  // already loaded
  EXPECT_EQ(error_of(r)["param"], "lora_name");
  r = s.post("/v1/load_lora_adapter",
             json{{"lora_name", "wolf"}, {"lora_path", (dir / "does-not-exist").string()}});
  EXPECT_GE(r.status, 400);
  EXPECT_LT(r.status, 500);
  EXPECT_EQ(error_of(r)["param"], "lora_path");
  r = s.post("/v1/unload_lora_adapter", json{{"lora_name", "wolf"}});
  EXPECT_EQ(r.status, 404);
  EXPECT_EQ(error_of(r)["param"], "lora_name");

  // Load at runtime: listed and usable at once; unload: gone.
  r = s.post("/v1/load_lora_adapter",
             json{{"lora_name", "wolf"}, {"lora_path", (dir / "multi-1").string()}});
  ASSERT_EQ(r.status, 200) << r.body;
  EXPECT_EQ(json::parse(s.get("/v1/models").body)["data"].size(), 4u);
  const std::string wolf = s.complete("wolf", &status);
  EXPECT_EQ(status, 200) << wolf;
  // A fourth adapter over --max-loras 3: a 400 naming max_loras (as vLLM answers a failed load
  // with a 400), not a 429 "queue full" that invites retries that cannot succeed.
  r = s.post("/v1/load_lora_adapter",
             json{{"lora_name", "bear"}, {"lora_path", (dir / "multi-1").string()}});
  EXPECT_EQ(r.status, 400) << r.body;
  EXPECT_EQ(error_of(r)["param"], "lora_name");
  EXPECT_EQ(error_of(r)["code"], "max_loras_reached");
  EXPECT_NE(error_of(r)["message"].get<std::string>().find("--max-loras (3)"), std::string::npos)
      << r.body;
  EXPECT_EQ(json::parse(s.get("/v1/models").body)["data"].size(), 4u);
  r = s.post("/v1/unload_lora_adapter", json{{"lora_name", "wolf"}});
  ASSERT_EQ(r.status, 200) << r.body;
  s.complete("wolf", &status);
  EXPECT_EQ(status, 404);
  EXPECT_EQ(json::parse(s.get("/v1/models").body)["data"].size(), 3u);
  // Unloading one adapter leaves the others as they were.
  EXPECT_EQ(s.complete("fox"), fox);
}

}  // namespace
}  // namespace pagoda::server
