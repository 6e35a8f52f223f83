// The HTTP server end to end over real sockets, with a FakeEngine whose phases (queued, prefill,
// decoding) the tests control: hostile requests get the right 4xx and the server stays up, path
// tricks are never answered without the key, a client that vanishes in any phase gets its
// request aborted and its blocks freed, a client that stops reading is cut off, the queue limit
// and queue timeout answer 429 (counted in /metrics), SIGTERM-style draining lets a running
// request finish, /health is 503 while loading.
#include <gtest/gtest.h>

#include <atomic>
#include <cstdio>
#include <future>
#include <thread>

#include <nlohmann/json.hpp>

#include "server/fake_engine.h"
#include "server/http_server.h"
#include "server/raw_client.h"

namespace pagoda::server {
namespace {

using nlohmann::json;
using pagoda::testing::FakeEngine;
using pagoda::testing::FakeEngineOptions;
using pagoda::testing::http_get;
using pagoda::testing::http_post;
using pagoda::testing::RawClient;
using pagoda::testing::RawResponse;
using namespace std::chrono_literals;

class Server {
 public:
  explicit Server(ServerConfig cfg = {}, FakeEngineOptions eo = {},
                  std::chrono::milliseconds load_delay = 0ms) {
    cfg.host = "127.0.0.1";
    cfg.port = 0;
    server_ = std::make_unique<HttpServer>(cfg, "fake-model", [this, eo, load_delay] {
      std::this_thread::sleep_for(load_delay);
      auto e = std::make_unique<FakeEngine>(eo);
      engine_ = e.get();
      return Result<std::unique_ptr<Engine>>(std::unique_ptr<Engine>(std::move(e)));
    });
    Status st = server_->start();
    EXPECT_TRUE(st.ok()) << st.message();
    port_ = server_->port();
    if (load_delay == 0ms) wait_ready();
  }
  ~Server() {
    if (server_) {
      server_->request_stop();
      server_->wait();
    }
  }

  void wait_ready() {
    for (int i = 0; i < 2000; ++i) {
      if (get("/health").status == 200) return;
      std::this_thread::sleep_for(5ms);
    }
    ADD_FAILURE() << "server not ready";
  }

  RawResponse request(const std::string& raw, std::chrono::milliseconds timeout = 10s) {
    RawClient c(port_);
    EXPECT_TRUE(c.connected());
    c.send(raw);
    return c.read_response(timeout);
  }
  RawResponse get(const std::string& path, const std::string& headers = "") {
    return request(http_get(path, headers));
  }
  RawResponse post(const std::string& path, const json& body, const std::string& headers = "") {
    return request(http_post(path, body.dump(), headers));
  }
  double metric(const std::string& name, const std::string& label = "") {
    const std::string text = get("/metrics").body;
    size_t pos = 0;
    while ((pos = text.find(name, pos)) != std::string::npos) {
      const size_t eol = text.find('\n', pos);
      const std::string line = text.substr(pos, eol - pos);
      pos = eol;
      if (line.size() > name.size() && line[name.size()] != '{' && line[name.size()] != ' ')
        continue;
      if (!label.empty() && line.find(label) == std::string::npos) continue;
      return std::stod(line.substr(line.rfind(' ') + 1));
    }
    return -1;
  }
  // Polls until the fake engine holds no blocks and no live requests; returns the ms it took.
  double wait_freed(std::chrono::milliseconds limit = 5s) {
    const auto t0 = std::chrono::steady_clock::now();
    while (std::chrono::steady_clock::now() - t0 < limit) {
      if (engine().stats().num_used_blocks == 0 && engine().num_live() == 0) break;
      std::this_thread::sleep_for(2ms);
    }
    return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
  }

  HttpServer& server() { return *server_; }
  FakeEngine& engine() { return *engine_; }
  uint16_t port() const { return port_; }

 private:
  std::unique_ptr<HttpServer> server_;
  std::atomic<FakeEngine*> engine_{nullptr};
  uint16_t port_ = 0;
};

json chat_body(int max_tokens = 8, bool stream = false) {
  return json{{"messages", json::array({{{"role", "user"}, {"content", "hi"}}})},
              {"max_tokens", max_tokens},
              {"stream", stream}};
}

// SSE payloads of a de-chunked body.
std::vector<std::string> sse_payloads(const std::string& body) {
  std::vector<std::string> out;
  size_t pos = 0;
  while (true) {
    const size_t end = body.find("\n\n", pos);
    if (end == std::string::npos) break;
    const std::string ev = body.substr(pos, end - pos);
    if (ev.rfind("data: ", 0) == 0) out.push_back(ev.substr(6));
    pos = end + 2;
  }
  return out;
}

TEST(HttpServer, ChatCompletionPlainAndStreamed) {
  Server s;
  RawResponse r = s.post("/v1/chat/completions", chat_body(5));
  ASSERT_EQ(r.status, 200) << r.body;
  const json j = json::parse(r.body);
  // The fake engine writes its script one byte per token.
  EXPECT_EQ(j["choices"][0]["message"]["content"], "The q");
  EXPECT_EQ(j["choices"][0]["finish_reason"], "length");
  EXPECT_EQ(j["usage"]["completion_tokens"], 5);

  json body = chat_body(5, true);
  body["stream_options"] = {{"include_usage", true}};
  r = s.post("/v1/chat/completions", body);
  ASSERT_EQ(r.status, 200);
  EXPECT_EQ(r.headers["content-type"], "text/event-stream");
  EXPECT_EQ(r.headers["transfer-encoding"], "chunked");
  const auto events = sse_payloads(r.body);
  ASSERT_GE(events.size(), 3u);
  EXPECT_EQ(events.back(), "[DONE]");
  std::string text;
  json usage;
  for (size_t i = 0; i + 1 < events.size(); ++i) {
    const json c = json::parse(events[i]);
    EXPECT_EQ(c["object"], "chat.completion.chunk");
    if (!c["usage"].is_null()) {
      usage = c["usage"];
      continue;
    }
    if (i == 0) {
      EXPECT_EQ(c["choices"][0]["delta"]["role"], "assistant");
    }
    text += c["choices"][0]["delta"].value("content", "");
  }
  EXPECT_EQ(text, "The q");
  EXPECT_EQ(usage["completion_tokens"], 5);
}

TEST(HttpServer, KeepAliveAndPipelining) {
  Server s;
  RawClient c(s.port());
  ASSERT_TRUE(c.send(http_get("/health") + http_get("/v1/models") + http_get("/health")));
  EXPECT_EQ(c.read_response().status, 200);
  RawResponse models = c.read_response();
  EXPECT_EQ(models.status, 200);
  EXPECT_EQ(json::parse(models.body)["data"][0]["id"], "fake-model");
  EXPECT_EQ(c.read_response().status, 200);
}

TEST(HttpServer, HostileRequestsGetTheRight4xxAndTheServerStaysUp) {
  ServerConfig cfg;
  cfg.max_body_bytes = 256 * 1024;
  Server s(cfg);
  struct Case {
    std::string name;
    std::string raw;
    int status;
    std::string param;
  };
  const std::string chat = "/v1/chat/completions";
  const auto with = [&](const char* key, json value) {
    json b = chat_body();
    b[key] = std::move(value);
    return http_post(chat, b.dump());
  };
  std::vector<Case> cases = {
      {"invalid json", http_post(chat, "{not json"), 400, ""},
      {"truncated json", http_post(chat, R"({"messages": [{"role": "user", "con)"), 400, ""},
      {"json array", http_post(chat, "[1,2,3]"), 400, ""},
      {"empty body", http_post(chat, ""), 400, ""},
      {"NaN temperature",
       http_post(chat, R"({"messages":[{"role":"user","content":"x"}],"temperature":NaN})"), 400,
       ""},
      {"inf temperature",
       http_post(chat, R"({"messages":[{"role":"user","content":"x"}],"temperature":1e999})"), 400,
       ""},
      {"wrong type messages", with("messages", 5), 400, "messages"},
      {"wrong type temperature", with("temperature", "hot"), 400, "temperature"},
      {"wrong type stream", with("stream", "yes"), 400, "stream"},
      {"empty prompt", http_post("/v1/completions", R"({"prompt": ""})"), 400, "prompt"},
      {"empty messages", with("messages", json::array()), 400, "messages"},
      {"huge n", with("n", 1000000), 400, "n"},
      {"huge max_tokens", with("max_tokens", 1LL << 40), 400, "max_tokens"},
      {"huge top_logprobs",
       [&] {
         json b = chat_body();
         b["logprobs"] = true;
         b["top_logprobs"] = 100000;
         return http_post(chat, b.dump());
       }(),
       400, "top_logprobs"},
      {"10000 stop strings", with("stop", std::vector<std::string>(10000, "stop")), 400, "stop"},
      {"deep nesting", http_post(chat, std::string(5000, '[') + std::string(5000, ']')), 400, ""},
      {"unknown model", with("model", "gpt-17"), 404, "model"},
      {"unknown route", http_get("/v2/nothing"), 404, ""},
      {"wrong method", http_get(chat), 405, ""},
      {"body over the limit", http_post(chat, std::string(300 * 1024, ' ')), 413, ""},
      {"1 MB header",
       "GET /health HTTP/1.1\r\nHost: x\r\nX-Big: " + std::string(1 << 20, 'a') + "\r\n\r\n", 431,
       ""},
      {"long uri", http_get("/v1/models?" + std::string(20000, 'q')), 414, ""},
      {"garbage request line", "HELLO\r\n\r\n", 400, ""},
      {"bad content-length", "POST " + chat + " HTTP/1.1\r\nContent-Length: abc\r\n\r\n", 400, ""},
  };
  for (const Case& c : cases) {
    RawResponse r = s.request(c.raw);
    EXPECT_EQ(r.status, c.status) << c.name << ": " << r.body;
    if (!c.param.empty()) {
      const json j = json::parse(r.body, nullptr, false);
      ASSERT_TRUE(j.is_object()) << c.name;
      EXPECT_EQ(j["error"]["param"], c.param) << c.name;
    }
    if (r.status >= 400 && !r.body.empty()) {
      const json j = json::parse(r.body, nullptr, false);
      EXPECT_TRUE(j.contains("error") && j["error"].contains("message") &&
                  j["error"].contains("type") && j["error"].contains("code"))
          << c.name << ": " << r.body;
    }
    std::printf("  %-24s -> %d in %.2f ms\n", c.name.c_str(), r.status, r.ms);
  }
  EXPECT_EQ(s.get("/health").status, 200);
  EXPECT_EQ(s.post("/v1/chat/completions", chat_body(3)).status, 200);
  EXPECT_GE(s.metric("pagoda:requests_rejected_total", "reason=\"invalid_request\""), 10);
}

TEST(HttpServer, UriLimitIs414) {
  ServerConfig cfg;
  cfg.max_uri_bytes = 100;
  Server s(cfg);
  EXPECT_EQ(s.get("/v1/models?" + std::string(200, 'q')).status, 414);
}

TEST(HttpServer, BodyLimitIsCheckedBeforeTheBodyArrives) {
  ServerConfig cfg;
  cfg.max_body_bytes = 1024;
  Server s(cfg);
  // Only the header is sent: the 413 must not wait for the 10 MB announced.
  RawClient c(s.port());
  c.send("POST /v1/completions HTTP/1.1\r\nHost: x\r\nContent-Length: 10000000\r\n\r\n");
  RawResponse r = c.read_response(5s);
  EXPECT_EQ(r.status, 413);
  EXPECT_EQ(r.headers["connection"], "close");
  // A chunked body is cut off at the limit.
  RawClient d(s.port());
  d.send("POST /v1/completions HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n");
  for (int i = 0; i < 4; ++i)
    d.send("200\r\n" + std::string(512, 'x') + "\r\n");
  EXPECT_EQ(d.read_response(5s).status, 413);
  EXPECT_EQ(s.get("/health").status, 200);
}

TEST(HttpServer, PathTricksAreNeverAnsweredWithoutTheKey) {
  ServerConfig cfg;
  cfg.api_key = "sekret";
  Server s(cfg);
  const std::string key = "Authorization: Bearer sekret\r\n";
  for (const std::string path :
       {"/v1/models", "//v1/models", "/v1/../v1/models", "/v1/%2e%2e/v1/models",
        "/%2e%2e/v1/models", "/v1/models/", "/V1/MODELS", "/health/../v1/models",
        "/v1/models?x=/health", "/metrics/../v1/models", "/v1/chat/completions", "/nothing",
        "http://x/v1/models", "*"}) {
    RawResponse r = s.get(path);
    EXPECT_EQ(r.status, 401) << path;
    EXPECT_EQ(r.body.find("fake-model"), std::string::npos) << path;
    EXPECT_EQ(s.get(path, "Authorization: Bearer wrong\r\n").status, 401) << path;
    EXPECT_EQ(s.get(path, "Authorization: sekret\r\n").status, 401) << path;
  }
  EXPECT_EQ(s.get("/v1/models", key).status, 200);
  EXPECT_EQ(s.get("/v1/models", "authorization: bearer sekret\r\n").status, 200);
  EXPECT_EQ(s.get("//v1/models", key).status, 404);
  EXPECT_EQ(s.get("/v1/../v1/models", key).status, 404);
  EXPECT_EQ(s.get("/v1/%2e%2e/v1/models", key).status, 404);
  EXPECT_EQ(s.get("/health").status, 200);   // public
  EXPECT_EQ(s.get("/metrics").status, 200);  // public, like vLLM
  EXPECT_EQ(s.post("/v1/chat/completions", chat_body(2)).status, 401);
  EXPECT_EQ(s.post("/v1/chat/completions", chat_body(2), key).status, 200);
}

// Sends a request and returns the connection once the engine has it.
std::unique_ptr<RawClient> send_and_wait_submitted(Server& s, const std::string& raw,
                                                   size_t submitted_before) {
  auto c = std::make_unique<RawClient>(s.port());
  c->send(raw);
  for (int i = 0; i < 2000 && s.engine().submitted().size() <= submitted_before; ++i) {
    std::this_thread::sleep_for(1ms);
  }
  EXPECT_GT(s.engine().submitted().size(), submitted_before);
  return c;
}

TEST(HttpServer, DisconnectInEveryPhaseAbortsAndFreesBlocks) {
  FakeEngineOptions eo;
  eo.max_running = 1;
  eo.tick = 5ms;
  Server s({}, eo);
  const std::string chat = "/v1/chat/completions";

  // Streaming: after the first chunks arrived.
  {
    auto c = send_and_wait_submitted(s, http_post(chat, chat_body(100000 / 1000, true).dump()), 0);
    EXPECT_FALSE(c->read_some(2s).empty());
    const std::string id = s.engine().submitted().back();
    c->close(/*reset=*/true);
    const double ms = s.wait_freed();
    EXPECT_TRUE(s.engine().aborted().count(id)) << "streaming";
    std::printf("  streaming: freed %.1f ms after the disconnect\n", ms);
  }
  // Non-streaming: mid-generation (no byte has been written to the client yet).
  {
    auto c = send_and_wait_submitted(s, http_post(chat, chat_body(200).dump()), 1);
    std::this_thread::sleep_for(30ms);
    const std::string id = s.engine().submitted().back();
    c->close();
    const double ms = s.wait_freed();
    EXPECT_TRUE(s.engine().aborted().count(id)) << "non-streaming";
    std::printf("  non-streaming: freed %.1f ms after the disconnect\n", ms);
  }
  // Queued: behind a running request (max_running 1).
  {
    auto running = send_and_wait_submitted(s, http_post(chat, chat_body(200, true).dump()), 2);
    auto queued = send_and_wait_submitted(s, http_post(chat, chat_body(5).dump()), 3);
    EXPECT_EQ(s.engine().stats().num_waiting, 1);
    const std::string id = s.engine().submitted().back();
    queued->close();
    for (int i = 0; i < 1000 && !s.engine().aborted().count(id); ++i)
      std::this_thread::sleep_for(1ms);
    EXPECT_TRUE(s.engine().aborted().count(id)) << "queued";
    running->close();
    std::printf("  queued + running: freed %.1f ms after the disconnects\n", s.wait_freed());
  }
  EXPECT_DOUBLE_EQ(s.engine().stats().kv_cache_usage, 0.0);
  EXPECT_GE(s.metric("pagoda:requests_aborted_total", "cause=\"client_disconnect\""), 4);
}

TEST(HttpServer, DisconnectDuringPrefillAborts) {
  FakeEngineOptions eo;
  eo.prefill_ticks = 1000;  // 2 s "prefill"
  Server s({}, eo);
  auto c = send_and_wait_submitted(
      s, http_post("/v1/completions", R"({"prompt":"x","max_tokens":4,"stream":true})"), 0);
  std::this_thread::sleep_for(20ms);
  EXPECT_EQ(s.engine().stats().num_running, 1);
  const std::string id = s.engine().submitted().back();
  c->close();
  std::printf("  prefill: freed %.1f ms after the disconnect\n", s.wait_freed());
  EXPECT_TRUE(s.engine().aborted().count(id));
  EXPECT_EQ(s.engine().stats().num_used_blocks, 0);
}

TEST(HttpServer, ASlowReaderIsCutOffWithBoundedMemory) {
  ServerConfig cfg;
  cfg.max_write_buffer_bytes = 16 * 1024;
  FakeEngineOptions eo;
  eo.tick = 0ms;  // as fast as possible
  eo.context_length = 1 << 20;
  Server s(cfg, eo);
  RawClient c(s.port(), /*rcvbuf=*/4096);
  c.send(http_post("/v1/completions",
                   json{{"prompt", "x"}, {"max_tokens", 500000}, {"stream", true}}.dump()));
  // Never read: the socket buffers fill, then the server's write queue, then it gives up.
  const auto t0 = std::chrono::steady_clock::now();
  while (s.engine().aborted().empty() && std::chrono::steady_clock::now() - t0 < 20s) {
    std::this_thread::sleep_for(5ms);
  }
  EXPECT_EQ(s.engine().aborted().size(), 1u);
  EXPECT_EQ(s.metric("pagoda:requests_aborted_total", "cause=\"slow_reader\""), 1);
  EXPECT_EQ(s.get("/health").status, 200);
}

TEST(HttpServer, QueueFullAnswers429AndMetricsCountThem) {
  FakeEngineOptions eo;
  eo.max_running = 1;
  eo.max_queue = 2;
  eo.tick = 5ms;
  Server s({}, eo);
  constexpr int kClients = 10;
  std::vector<std::future<RawResponse>> futures;
  for (int i = 0; i < kClients; ++i) {
    futures.push_back(std::async(std::launch::async,
                                 [&s] { return s.post("/v1/chat/completions", chat_body(20)); }));
  }
  int ok = 0, limited = 0;
  for (auto& f : futures) {
    RawResponse r = f.get();
    if (r.status == 200) ++ok;
    if (r.status == 429) {
      ++limited;
      EXPECT_EQ(r.headers["retry-after"], "1");
      EXPECT_EQ(json::parse(r.body)["error"]["code"], "queue_full");
    }
  }
  EXPECT_EQ(ok + limited, kClients);
  EXPECT_GE(limited, 1);
  EXPECT_EQ(s.metric("pagoda:requests_rejected_total", "reason=\"queue_full\""), limited);
  EXPECT_EQ(s.metric("pagoda:http_requests_total", "code=\"429\""), limited);
}

TEST(HttpServer, QueueTimeoutAnswers429) {
  ServerConfig cfg;
  cfg.queue_timeout = 100ms;
  FakeEngineOptions eo;
  eo.max_running = 1;
  eo.tick = 5ms;
  Server s(cfg, eo);
  auto running =
      send_and_wait_submitted(s, http_post("/v1/chat/completions", chat_body(200, true).dump()), 0);
  RawResponse r = s.post("/v1/chat/completions", chat_body(5));
  EXPECT_EQ(r.status, 429);
  EXPECT_EQ(json::parse(r.body)["error"]["code"], "queue_timeout");
  EXPECT_EQ(s.metric("pagoda:requests_rejected_total", "reason=\"queue_timeout\""), 1);
  running->close();
  s.wait_freed();
}

TEST(HttpServer, DrainLetsRunningRequestsFinish) {
  FakeEngineOptions eo;
  eo.tick = 10ms;
  ServerConfig cfg;
  cfg.drain_timeout = 10s;
  auto s = std::make_unique<Server>(cfg, eo);
  RawClient streaming(s->port());
  streaming.send(http_post("/v1/chat/completions", chat_body(30, true).dump()));
  EXPECT_FALSE(streaming.read_some(2s).empty());
  RawClient idle(s->port());  // keep-alive connection with no request
  idle.send(http_get("/health"));
  EXPECT_EQ(idle.read_response().status, 200);

  std::promise<int> exit_code;
  std::thread stopper([&] {
    s->server().request_stop();
    exit_code.set_value(s->server().wait());
  });
  // The idle connection is closed; the running stream completes.
  EXPECT_TRUE(idle.wait_closed(5s));
  RawResponse r = streaming.read_response(10s);
  const auto events = sse_payloads(r.body);
  ASSERT_FALSE(events.empty());
  EXPECT_EQ(events.back(), "[DONE]");
  const json last = json::parse(events[events.size() - 2]);
  EXPECT_EQ(last["choices"][0]["finish_reason"], "length");
  EXPECT_EQ(exit_code.get_future().get(), 0);
  stopper.join();
  // Nothing listens any more.
  RawClient late(s->port());
  EXPECT_FALSE(late.connected());
}

TEST(HttpServer, HealthIs503WhileLoading) {
  Server s({}, {}, 400ms);
  RawResponse r = s.get("/health");
  EXPECT_EQ(r.status, 503);
  EXPECT_EQ(s.post("/v1/chat/completions", chat_body()).status, 503);
  EXPECT_EQ(s.get("/metrics").status, 200);
  s.wait_ready();
  EXPECT_EQ(s.get("/health").status, 200);
  EXPECT_GE(s.metric("pagoda:requests_rejected_total", "reason=\"loading\""), 1);
}

TEST(HttpServer, TokenizeAndDetokenize) {
  Server s;
  RawResponse r = s.post("/tokenize", json{{"prompt", "ab"}});
  ASSERT_EQ(r.status, 200) << r.body;
  json j = json::parse(r.body);
  EXPECT_EQ(j["tokens"], json::array({1, 'a' + 3, 'b' + 3}));
  EXPECT_EQ(j["count"], 3);
  EXPECT_EQ(j["max_model_len"], 256);
  r = s.post("/tokenize",
             json{{"prompt", "ab"}, {"add_special_tokens", false}, {"return_token_strs", true}});
  j = json::parse(r.body);
  EXPECT_EQ(j["token_strs"], json::array({"a", "b"}));
  r = s.post("/detokenize", json{{"tokens", {'h' + 3, 'i' + 3}}});
  EXPECT_EQ(json::parse(r.body)["prompt"], "hi");
  EXPECT_EQ(s.post("/detokenize", json{{"tokens", {100000}}}).status, 400);
  r = s.post("/tokenize", json{{"messages", json::array({{{"role", "user"}, {"content", "x"}}})}});
  ASSERT_EQ(r.status, 200) << r.body;
  EXPECT_GT(json::parse(r.body)["count"].get<int>(), 10);
}

}  // namespace
}  // namespace pagoda::server
