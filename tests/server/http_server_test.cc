// The HTTP server end to end over real sockets, with a FakeEngine whose phases (queued, prefill,
// decoding) the tests control: hostile requests get the right 4xx and the server stays up, path
// tricks are never answered without the key, a client that vanishes in any phase gets its
// request aborted and its blocks freed, a client that stops reading is cut off, the queue limit
// and queue timeout answer 429 (counted in /metrics), SIGTERM-style draining lets a running
// request finish, /health is 503 while loading.
#include <gtest/gtest.h>

#include <atomic>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <future>
#include <iterator>
#include <set>
#include <thread>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "server/fake_engine.h"
#include "server/http_server.h"
#include "server/raw_client.h"
#include "server/web_assets.h"

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
    // The Host that wait_ready() sends: one the configuration allows.
    if (!cfg.allowed_hosts.empty() && cfg.allowed_hosts.front() != "*") {
      ready_host_ = cfg.allowed_hosts.front();
    }
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
      if (request("GET /health HTTP/1.1\r\nHost: " + ready_host_ + "\r\n\r\n").status == 200) {
        return;
      }
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
      const bool line_start = pos == 0 || text[pos - 1] == '\n';  // not a # HELP / # TYPE line
      pos = eol;
      if (!line_start) continue;
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
  std::string ready_host_ = "localhost";
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

// A request that arrives while the one before it is being answered (read during the handling)
// and one sent after both answers: each gets its own response. Reads once landed where the parse
// buffer had been before the parser consumed it, so the third request was answered as a second
// copy of the second (a /v1/models request got /metrics' body; seen under the multi-model test).
TEST(HttpServer, ARequestReadWhileAnsweringLeavesTheNextOneIntact) {
  FakeEngineOptions eo;
  eo.tick = 20ms;  // the chat's 8 tokens take ~160 ms
  Server s({}, eo);
  RawClient c(s.port());
  ASSERT_TRUE(c.send(http_post("/v1/chat/completions", chat_body(8).dump())));
  std::this_thread::sleep_for(50ms);  // the chat is being answered
  ASSERT_TRUE(c.send(http_get("/metrics")));
  const RawResponse chat = c.read_response();
  EXPECT_EQ(chat.status, 200);
  EXPECT_EQ(json::parse(chat.body)["object"], "chat.completion");
  const RawResponse metrics = c.read_response();
  EXPECT_EQ(metrics.status, 200);
  EXPECT_NE(metrics.body.find("# HELP"), std::string::npos);
  for (int i = 0; i < 3; ++i) {
    ASSERT_TRUE(c.send(http_get("/v1/models")));
    const RawResponse models = c.read_response();
    EXPECT_EQ(models.status, 200);
    EXPECT_EQ(models.headers.at("content-type"), "application/json") << models.body.substr(0, 80);
  }
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
       "GET /health HTTP/1.1\r\nHost: localhost\r\nX-Big: " + std::string(1 << 20, 'a') +
           "\r\n\r\n",
       431, ""},
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
  c.send("POST /v1/completions HTTP/1.1\r\nHost: localhost\r\nContent-Length: 10000000\r\n\r\n");
  RawResponse r = c.read_response(5s);
  EXPECT_EQ(r.status, 413);
  EXPECT_EQ(r.headers["connection"], "close");
  // A chunked body is cut off at the limit.
  RawClient d(s.port());
  d.send(
      "POST /v1/completions HTTP/1.1\r\nHost: localhost\r\nContent-Type: application/json\r\n"
      "Transfer-Encoding: chunked\r\n\r\n");
  for (int i = 0; i < 4; ++i)
    d.send("200\r\n" + std::string(512, 'x') + "\r\n");
  EXPECT_EQ(d.read_response(5s).status, 413);
  EXPECT_EQ(s.get("/health").status, 200);
}

TEST(HttpServer, PathTricksAreNeverAnsweredWithoutTheKey) {
  ServerConfig cfg;
  cfg.api_keys = {"sekret"};
  Server s(cfg);
  const std::string key = "Authorization: Bearer sekret\r\n";
  for (const std::string path :
       {"/v1/models", "//v1/models", "/v1/../v1/models", "/v1/%2e%2e/v1/models",
        "/%2e%2e/v1/models", "/v1/models/", "/V1/MODELS", "/health/../v1/models",
        "/v1/models?x=/health", "/metrics/../v1/models", "/v1/chat/completions", "/nothing",
        "http://localhost/v1/models", "HTTP://LOCALHOST/v1/models", "*"}) {
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

// ---- Issue 40: hardening ----------------------------------------------------------------------

// Reads everything the server sends until it closes (or `limit` passes).
std::string read_all(RawClient& c, std::chrono::milliseconds limit = 3s) {
  std::string all;
  const auto deadline = std::chrono::steady_clock::now() + limit;
  while (std::chrono::steady_clock::now() < deadline) {
    const std::string got = c.read_some(200ms);
    if (got.empty() && c.wait_closed(1ms)) break;
    all += got;
  }
  return all;
}

size_t count_responses(const std::string& raw) {
  size_t n = 0;
  for (size_t pos = 0; (pos = raw.find("HTTP/1.1 ", pos)) != std::string::npos; pos += 9)
    ++n;
  return n;
}

// Item 1: a Transfer-Encoding whose framing is not exactly "chunked" (or that comes with a
// Content-Length, or in HTTP/1.0) is a 400 (501 for a coding we do not implement) and the
// connection closes: the bytes after the header are never parsed as a second request.
TEST(HttpServer, AmbiguousFramingIsRefusedAndNothingIsSmuggled) {
  Server s;
  const std::string smuggled = "GET /v1/models HTTP/1.1\r\nHost: localhost\r\n\r\n";
  struct Case {
    std::string headers;
    int status;
  };
  const std::vector<Case> cases = {
      {"Transfer-Encoding: identity\r\n", 400},
      {"Transfer-Encoding: xchunked\r\n", 400},
      {"Transfer-Encoding: chunked, identity\r\n", 400},
      {"Transfer-Encoding: chunked\r\nTransfer-Encoding: identity\r\n", 400},
      {"Transfer-Encoding: \r\n", 400},
      {"Transfer-Encoding: ,\r\n", 400},
      {"Transfer-Encoding: identity\r\nContent-Length: 5\r\n", 400},
      {"Content-Length: 5\r\nTransfer-Encoding: identity\r\n", 400},
      {"Content-Length: 5\r\nTransfer-Encoding: chunked\r\n", 400},
      {"Transfer-Encoding: chunked\r\nContent-Length: 5\r\n", 400},
      {"Transfer-Encoding: chunked\r\nTransfer-Encoding: chunked\r\n", 400},
      {"Content-Length: 5\r\nContent-Length: 6\r\n", 400},
      {"Content-Length: -1\r\n", 400},
      {"Transfer-Encoding : chunked\r\n", 400},
      {"Transfer-Encoding: gzip, chunked\r\n", 501},
      {"Transfer-Encoding: identity, chunked\r\n", 501},
      {"Transfer-Encoding: identity\r\nTransfer-Encoding: chunked\r\n", 501},
  };
  for (const Case& c : cases) {
    RawClient client(s.port());
    client.send(
        "POST /v1/completions HTTP/1.1\r\nHost: localhost\r\nContent-Type: application/json\r\n" +
        c.headers + "\r\n" + smuggled);
    const std::string all = read_all(client);
    EXPECT_EQ(all.substr(0, 12), "HTTP/1.1 " + std::to_string(c.status)) << c.headers << all;
    EXPECT_EQ(count_responses(all), 1u) << c.headers << all;
    EXPECT_EQ(all.find("fake-model"), std::string::npos) << c.headers << all;
    EXPECT_NE(all.find("Connection: close"), std::string::npos) << c.headers;
    EXPECT_TRUE(client.wait_closed(2s)) << c.headers;
  }
  // HTTP/1.0 has no chunked coding.
  {
    RawClient client(s.port());
    client.send(
        "POST /v1/completions HTTP/1.0\r\nHost: localhost\r\nContent-Type: application/json\r\n"
        "Transfer-Encoding: chunked\r\n\r\n0\r\n\r\n");
    EXPECT_EQ(client.read_response(5s).status, 400);
  }
  // The issue's repro, byte for byte (plus the Content-Type this server now requires).
  {
    RawClient client(s.port());
    client.send(
        "POST /v1/completions HTTP/1.1\r\nHost: localhost\r\nContent-Type: application/json\r\n"
        "Transfer-Encoding: identity\r\n\r\nGET /v1/models HTTP/1.1\r\nHost: localhost\r\n"
        "Connection: close\r\n\r\n");
    const std::string all = read_all(client);
    EXPECT_EQ(count_responses(all), 1u) << all;
    EXPECT_EQ(all.find("200 OK"), std::string::npos) << all;
  }
  // Proper chunked framing still works, in any letter case, and keeps the connection.
  for (const std::string te : {"chunked", "Chunked", "CHUNKED"}) {
    RawClient client(s.port());
    const std::string body = R"({"prompt": "ab", "max_tokens": 2})";
    client.send(
        "POST /v1/completions HTTP/1.1\r\nHost: localhost\r\nContent-Type: "
        "application/json\r\nTransfer-Encoding: " +
        te + "\r\n\r\n" + fmt::format("{:x}\r\n", body.size()) + body + "\r\n0\r\n\r\n" +
        http_get("/health"));
    EXPECT_EQ(client.read_response().status, 200) << te;
    EXPECT_EQ(client.read_response().status, 200) << te;
  }
  EXPECT_EQ(s.get("/health").status, 200);
}

// Item 2: Expect: 100-continue gets "100 Continue" once the header passed every check, and the
// final status at once (no 100, body unread) when the request is refused anyway.
TEST(HttpServer, ExpectContinueIsAnswered) {
  ServerConfig cfg;
  cfg.api_keys = {"k"};
  cfg.max_body_bytes = 4096;
  Server s(cfg);
  const std::string body = R"({"prompt": "ab", "max_tokens": 2})";
  const std::string head =
      "POST /v1/completions HTTP/1.1\r\nHost: localhost\r\nContent-Type: application/json\r\n"
      "Expect: 100-continue\r\n";
  {
    RawClient c(s.port());
    c.send(head + "Authorization: Bearer k\r\nContent-Length: " + std::to_string(body.size()) +
           "\r\n\r\n");
    const std::string interim = c.read_some(2s);  // curl would wait 1 s for this
    EXPECT_EQ(interim, "HTTP/1.1 100 Continue\r\n\r\n");
    c.clear_input();
    c.send(body);
    EXPECT_EQ(c.read_response().status, 200);
  }
  {  // refused anyway: 401 / 413 without a 100 and without waiting for the body
    RawClient c(s.port());
    c.send(head + "Content-Length: 10\r\n\r\n");
    EXPECT_EQ(c.read_response(2s).status, 401);
    RawClient d(s.port());
    d.send(head + "Authorization: Bearer k\r\nContent-Length: 100000\r\n\r\n");
    RawResponse r = d.read_response(2s);
    EXPECT_EQ(r.status, 413);
  }
  {  // an expectation we cannot meet
    RawClient c(s.port());
    c.send(
        "POST /v1/completions HTTP/1.1\r\nHost: localhost\r\nContent-Type: application/json\r\n"
        "Authorization: Bearer k\r\nExpect: something-else\r\nContent-Length: 2\r\n\r\n");
    EXPECT_EQ(c.read_response(2s).status, 417);
  }
}

// Item 5: DNS rebinding (Host), CSRF (Origin, simple content types), CORS for listed origins.
TEST(HttpServer, HostOriginAndContentTypeDefences) {
  Server s;
  const auto host = [&](const std::string& h) {
    return s.request("GET /health HTTP/1.1\r\nHost: " + h + "\r\n\r\n").status;
  };
  EXPECT_EQ(host("localhost"), 200);
  EXPECT_EQ(host("LOCALHOST:8000"), 200);
  EXPECT_EQ(host("127.0.0.1:" + std::to_string(s.port())), 200);
  EXPECT_EQ(host("[::1]:8000"), 200);
  EXPECT_EQ(host("app.localhost"), 200);
  EXPECT_EQ(host("evil.example"), 403);
  EXPECT_EQ(host("evil.example:8000"), 403);
  EXPECT_EQ(host("10.1.2.3"), 403);  // bound to 127.0.0.1: not this server's address
  EXPECT_EQ(host("localhost.evil.example"), 403);
  EXPECT_EQ(s.request("GET /health HTTP/1.1\r\n\r\n").status, 400);  // no Host
  EXPECT_EQ(s.request("GET /health HTTP/1.1\r\nHost: localhost\r\nHost: evil\r\n\r\n").status, 400);
  EXPECT_EQ(s.request("GET /health HTTP/1.0\r\n\r\n").status, 200);  // 1.0 may omit it
  const RawResponse rebound = s.request(
      http_post("/v1/chat/completions", chat_body(2).dump(), "")
          .replace(std::string("POST /v1/chat/completions HTTP/1.1\r\nHost: localhost").size() - 9,
                   9, "evil.test"));
  EXPECT_EQ(rebound.status, 403) << rebound.body;
  EXPECT_EQ(json::parse(rebound.body)["error"]["code"], "host_not_allowed");

  // Origin: cross-origin refused by default; same-origin allowed.
  const std::string chat = chat_body(2).dump();
  RawResponse r = s.post("/v1/chat/completions", chat_body(2), "Origin: http://evil.example\r\n");
  EXPECT_EQ(r.status, 403);
  EXPECT_EQ(json::parse(r.body)["error"]["code"], "origin_not_allowed");
  EXPECT_EQ(s.post("/v1/chat/completions", chat_body(2), "Origin: null\r\n").status, 403);
  r = s.request(
      "POST /v1/chat/completions HTTP/1.1\r\nHost: localhost:8000\r\nOrigin: "
      "http://localhost:8000\r\nContent-Type: application/json\r\nContent-Length: " +
      std::to_string(chat.size()) + "\r\n\r\n" + chat);
  EXPECT_EQ(r.status, 200) << r.body;
  EXPECT_EQ(r.headers.count("access-control-allow-origin"), 0u);

  // Content-Type: only application/json (a cross-site form or fetch() can send text/plain).
  const auto typed = [&](const std::string& type) {
    return s
        .request("POST /v1/chat/completions HTTP/1.1\r\nHost: localhost\r\n" + type +
                 "Content-Length: " + std::to_string(chat.size()) + "\r\n\r\n" + chat)
        .status;
  };
  EXPECT_EQ(typed("Content-Type: text/plain\r\n"), 415);
  EXPECT_EQ(typed("Content-Type: application/x-www-form-urlencoded\r\n"), 415);
  EXPECT_EQ(typed("Content-Type: multipart/form-data; boundary=x\r\n"), 415);
  EXPECT_EQ(typed(""), 415);
  EXPECT_EQ(typed("Content-Type: application/jsonx\r\n"), 415);
  EXPECT_EQ(typed("Content-Type: application/json; charset=utf-8\r\n"), 200);
  EXPECT_EQ(typed("Content-Type: Application/JSON\r\n"), 200);
  EXPECT_GE(s.metric("pagoda:http_requests_total", "code=\"415\""), 5);

  // --allowed-hosts / --allowed-origins.
  ServerConfig cfg;
  cfg.allowed_hosts = {"api.example.com"};
  cfg.allowed_origins = {"http://localhost:3000"};
  Server t(cfg);
  const auto thost = [&](const std::string& h) {
    return t.request("GET /health HTTP/1.1\r\nHost: " + h + "\r\n\r\n").status;
  };
  EXPECT_EQ(thost("api.example.com:443"), 200);
  EXPECT_EQ(thost("API.example.com."), 200);
  EXPECT_EQ(thost("localhost"), 403);
  const std::string h = "Host: api.example.com\r\n";
  r = t.request("POST /v1/chat/completions HTTP/1.1\r\n" + h +
                "Origin: http://localhost:3000\r\nContent-Type: application/json\r\n"
                "Content-Length: " +
                std::to_string(chat.size()) + "\r\n\r\n" + chat);
  EXPECT_EQ(r.status, 200) << r.body;
  EXPECT_EQ(r.headers["access-control-allow-origin"], "http://localhost:3000");
  EXPECT_EQ(r.headers["vary"], "Origin");
  // The preflight: answered without the key's check, with the CORS headers.
  r = t.request("OPTIONS /v1/chat/completions HTTP/1.1\r\n" + h +
                "Origin: http://localhost:3000\r\nAccess-Control-Request-Method: POST\r\n"
                "Access-Control-Request-Headers: authorization, content-type\r\n\r\n");
  EXPECT_EQ(r.status, 204);
  EXPECT_EQ(r.headers["access-control-allow-origin"], "http://localhost:3000");
  EXPECT_NE(r.headers["access-control-allow-methods"].find("POST"), std::string::npos);
  EXPECT_NE(r.headers["access-control-allow-headers"].find("Authorization"), std::string::npos);
  EXPECT_EQ(r.headers.count("content-length"), 0u);
  r = t.request("OPTIONS /v1/chat/completions HTTP/1.1\r\n" + h +
                "Origin: http://evil.example\r\nAccess-Control-Request-Method: POST\r\n\r\n");
  EXPECT_EQ(r.status, 403);
  EXPECT_EQ(r.headers.count("access-control-allow-origin"), 0u);
  ServerConfig any;
  any.allowed_hosts = {"*"};
  Server u(any);
  EXPECT_EQ(u.request("GET /health HTTP/1.1\r\nHost: whatever.example\r\n\r\n").status, 200);
}

// Item 8: HEAD /health is GET without the body (load balancers); the absolute form of the
// request target is accepted (RFC 9112 §3.2.2).
TEST(HttpServer, HeadHealthAndAbsoluteFormTargets) {
  Server s;
  RawClient c(s.port());
  c.send("HEAD /health HTTP/1.1\r\nHost: localhost\r\n\r\n" + http_get("/health"));
  std::string raw;
  while (count_responses(raw) < 2 || raw.find("\"ok\"") == std::string::npos) {
    const std::string got = c.read_some(2s);
    if (got.empty()) break;
    raw += got;
  }
  ASSERT_EQ(raw.substr(0, 15), "HTTP/1.1 200 OK") << raw;
  const size_t second = raw.find("HTTP/1.1 ", 9);
  ASSERT_NE(second, std::string::npos) << raw;
  const std::string head_response = raw.substr(0, second);
  EXPECT_EQ(head_response.substr(head_response.size() - 4), "\r\n\r\n");  // no body
  EXPECT_NE(head_response.find("Content-Length: 15"), std::string::npos) << head_response;
  EXPECT_EQ(raw.substr(second, 15), "HTTP/1.1 200 OK");  // the GET after it, on the same socket
  EXPECT_EQ(s.request("HEAD /v1/chat/completions HTTP/1.1\r\nHost: localhost\r\n\r\n").status, 405);

  // Absolute form: the authority is the host (and is checked as one).
  const std::string body = R"({"prompt": "ab", "max_tokens": 2})";
  RawResponse r = s.request("POST http://localhost:" + std::to_string(s.port()) +
                            "/v1/completions HTTP/1.1\r\nHost: localhost\r\nContent-Type: "
                            "application/json\r\nContent-Length: " +
                            std::to_string(body.size()) + "\r\n\r\n" + body);
  EXPECT_EQ(r.status, 200) << r.body;
  EXPECT_EQ(s.get("http://127.0.0.1/health").status, 200);
  EXPECT_EQ(s.get("HTTP://localhost/v1/models?x=1").status, 200);
  EXPECT_EQ(s.get("http://localhost").status, 200);  // path "/": the web page
  EXPECT_EQ(s.get("http://evil.example/v1/models").status, 403);
}

// Item 8: "no chat template" is a 400 (a 503 invites retries that can never succeed).
TEST(HttpServer, NoChatTemplateIs400) {
  FakeEngineOptions eo;
  eo.no_chat_template = true;
  Server s({}, eo);
  RawResponse r = s.post("/v1/chat/completions", chat_body(2));
  EXPECT_EQ(r.status, 400) << r.body;
  const json j = json::parse(r.body);
  EXPECT_EQ(j["error"]["code"], "no_chat_template");
  EXPECT_EQ(j["error"]["param"], "messages");
  EXPECT_EQ(s.post("/v1/completions", json{{"prompt", "ab"}, {"max_tokens", 2}}).status, 200);
}

// Item 8: preemptions are counted by reason; item 7 and issue 39: fields we do not implement and
// unknown fields are refused by name, on both endpoints (nothing is ignored, so nothing is counted
// as ignored any more).
TEST(HttpServer, PreemptionsByReasonAndUnknownFieldsAreRefused) {
  FakeEngineOptions eo;
  eo.num_preemptions = 3;
  Server s({}, eo);
  EXPECT_EQ(s.metric("pagoda:preemptions_total", "reason=\"kv_cache_full\""), 3);
  json b = chat_body(2);
  b["x_trace_id"] = "abc";
  RawResponse u = s.post("/v1/chat/completions", b);
  EXPECT_EQ(u.status, 400) << u.body;
  EXPECT_EQ(json::parse(u.body)["error"]["param"], "x_trace_id");
  EXPECT_EQ(json::parse(u.body)["error"]["code"], "unknown_field");
  u = s.post("/v1/completions",
             json{{"prompt", "ab"}, {"max_tokens", 2}, {"another_extension", 1}});
  EXPECT_EQ(u.status, 400) << u.body;
  EXPECT_EQ(json::parse(u.body)["error"]["param"], "another_extension");
  EXPECT_EQ(s.get("/metrics").body.find("pagoda:request_ignored_fields_total"), std::string::npos);
  b = chat_body(2);
  b["functions"] = json::array({json{{"name", "f"}}});
  RawResponse r = s.post("/v1/chat/completions", b);
  EXPECT_EQ(r.status, 400);
  EXPECT_EQ(json::parse(r.body)["error"]["param"], "functions");
  r = s.post("/v1/completions", json{{"prompt", "ab"}, {"tools", json::array()}});
  EXPECT_EQ(r.status, 400);
  EXPECT_EQ(json::parse(r.body)["error"]["param"], "tools");
}

// Issue 39: every POST endpoint that takes a request body refuses an unknown top-level field with a
// 400 naming it, in its own API's error shape; the same body without the field is accepted.
TEST(HttpServer, EveryEndpointRefusesAnUnknownFieldByName) {
  ServerConfig cfg;
  cfg.pooling = PoolingType::kLast;
  Server s(cfg);
  const json messages = json::array({{{"role", "user"}, {"content", "hi"}}});
  const std::vector<std::pair<std::string, json>> cases = {
      {"/v1/chat/completions", chat_body(2)},
      {"/v1/completions", json{{"prompt", "ab"}, {"max_tokens", 2}}},
      {"/v1/embeddings", json{{"input", "ab"}}},
      {"/v1/responses", json{{"model", "fake-model"}, {"input", "ab"}, {"max_output_tokens", 2}}},
      {"/v1/messages", json{{"model", "fake-model"}, {"messages", messages}, {"max_tokens", 2}}},
      {"/v1/messages/count_tokens", json{{"model", "fake-model"}, {"messages", messages}}},
      {"/tokenize", json{{"prompt", "ab"}, {"return_token_strs", true}}},
      {"/tokenize", json{{"messages", messages}, {"return_token_strs", true}}},
      {"/detokenize", json{{"tokens", json::array({5, 6})}}}};
  for (const auto& [path, body] : cases) {
    // The fake engine computes no embeddings: that body passes validation and fails later (500).
    RawResponse ok = s.post(path, body);
    EXPECT_EQ(ok.status, path == "/v1/embeddings" ? 500 : 200) << path << ": " << ok.body;
    json b = body;
    b["x_not_a_field"] = 1;
    RawResponse r = s.post(path, b);
    EXPECT_EQ(r.status, 400) << path << ": " << r.body;
    const json j = json::parse(r.body, nullptr, false);
    if (path.starts_with("/v1/messages")) {
      EXPECT_EQ(j["type"], "error") << r.body;
      EXPECT_NE(j["error"]["message"].get<std::string>().find("x_not_a_field"), std::string::npos)
          << path << ": " << r.body;
    } else {
      EXPECT_EQ(j["error"]["param"], "x_not_a_field") << path << ": " << r.body;
      if (path.starts_with("/tokenize") || path.starts_with("/detokenize")) {
        EXPECT_NE(j["error"]["message"].get<std::string>().find(path), std::string::npos) << r.body;
      }
    }
  }
}

// Speculative decoding counters, with vLLM's names.
TEST(HttpServer, SpeculativeDecodingCountersUseVllmNames) {
  FakeEngineOptions eo;
  eo.spec_drafts = 5;
  eo.spec_draft_tokens = 17;
  eo.spec_accepted = 9;
  eo.spec_accepted_per_pos = {5, 3, 1};
  Server s({}, eo);
  EXPECT_EQ(s.metric("vllm:spec_decode_num_drafts_total"), 5);
  EXPECT_EQ(s.metric("vllm:spec_decode_num_draft_tokens_total"), 17);
  EXPECT_EQ(s.metric("vllm:spec_decode_num_accepted_tokens_total"), 9);
  EXPECT_EQ(s.metric("vllm:spec_decode_num_accepted_tokens_per_pos", "position=\"0\""), 5);
  EXPECT_EQ(s.metric("vllm:spec_decode_num_accepted_tokens_per_pos", "position=\"2\""), 1);
  // Counters advance by the engine's increments only (a second scrape adds nothing).
  EXPECT_EQ(s.metric("vllm:spec_decode_num_accepted_tokens_total"), 9);
}

// Item 4: the prefix-cache chain of a request is seeded per tenant (--prefix-cache-isolation).
TEST(HttpServer, PrefixCacheIsolationSaltsRequestsPerTenant) {
  const auto salts_for = [](PrefixCacheIsolation mode) {
    ServerConfig cfg;
    cfg.api_keys = {"alice", "bob"};
    cfg.prefix_cache_isolation = mode;
    Server s(cfg);
    const std::string a = "Authorization: Bearer alice\r\n";
    const std::string b = "Authorization: Bearer bob\r\n";
    json salted = chat_body(2);
    salted["cache_salt"] = "s1";
    EXPECT_EQ(s.post("/v1/chat/completions", chat_body(2), a).status, 200);
    EXPECT_EQ(s.post("/v1/chat/completions", chat_body(2), a).status, 200);
    EXPECT_EQ(s.post("/v1/chat/completions", chat_body(2), b).status, 200);
    EXPECT_EQ(s.post("/v1/chat/completions", salted, a).status, 200);
    EXPECT_EQ(s.post("/v1/chat/completions", salted, b).status, 200);
    return s.engine().salts();
  };
  std::vector<std::string> k = salts_for(PrefixCacheIsolation::kApiKey);
  ASSERT_EQ(k.size(), 5u);
  EXPECT_EQ(k[0], k[1]);  // one key shares with itself
  EXPECT_NE(k[0], k[2]);  // two keys never share
  EXPECT_NE(k[0], k[3]);  // cache_salt separates within a key
  EXPECT_NE(k[3], k[4]);  // the same cache_salt under two keys does not share either
  std::vector<std::string> n = salts_for(PrefixCacheIsolation::kNone);
  EXPECT_EQ(n[0], n[2]);
  EXPECT_EQ(n[3], n[4]);
  EXPECT_NE(n[0], n[3]);
  std::vector<std::string> t = salts_for(PrefixCacheIsolation::kSalt);
  EXPECT_NE(t[0], t[1]);  // unsalted requests never share
  EXPECT_NE(t[0], t[2]);
  EXPECT_EQ(t[3], t[4]);  // the same cache_salt shares, whoever sends it
  // A client salt cannot forge another tenant's chain.
  for (const std::string& salt : k)
    EXPECT_NE(salt.find('|'), std::string::npos) << salt;
}

// The web page (GET /): every file of server/web/ is embedded byte for byte with its type, served
// without a key while the API still needs one, revalidated with its ETag (304, no body).
TEST(HttpServer, WebPageIsEmbeddedPublicAndRevalidated) {
  const std::filesystem::path dir = PAGODA_WEB_DIR;
  size_t num_files = 0;
  std::set<std::string_view> etags;
  for (const auto& entry : std::filesystem::directory_iterator(dir)) {
    const std::string name = entry.path().filename().string();
    const std::string ext = entry.path().extension().string();
    if (ext != ".html" && ext != ".mjs" && ext != ".css" && ext != ".svg") continue;
    ++num_files;
    std::ifstream in(entry.path(), std::ios::binary);
    const std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    const WebAsset* a = find_web_asset("/" + name);
    ASSERT_NE(a, nullptr) << name;
    EXPECT_EQ(a->body, bytes) << name;
    const std::string_view want = ext == ".html"  ? "text/html; charset=utf-8"
                                  : ext == ".mjs" ? "text/javascript; charset=utf-8"
                                  : ext == ".css" ? "text/css; charset=utf-8"
                                                  : "image/svg+xml";
    EXPECT_EQ(a->content_type, want) << name;
    EXPECT_TRUE(a->etag.size() == 34 && a->etag.front() == '"' && a->etag.back() == '"') << name;
    etags.insert(a->etag);
  }
  EXPECT_GE(num_files, 5u);
  EXPECT_EQ(embedded_web_assets().size(), num_files);
  EXPECT_EQ(etags.size(), num_files);  // different bytes, different tags
  ASSERT_EQ(find_web_asset("/"), find_web_asset("/index.html"));
  EXPECT_EQ(find_web_asset("/../index.html"), nullptr);
  EXPECT_EQ(find_web_asset("/index.html/"), nullptr);

  ServerConfig cfg;
  cfg.api_keys = {"sekret"};
  Server s(cfg);
  const WebAsset& index = *find_web_asset("/index.html");
  RawResponse r = s.get("/");
  EXPECT_EQ(r.status, 200);  // public
  EXPECT_EQ(r.headers["content-type"], "text/html; charset=utf-8");
  EXPECT_EQ(r.body, index.body);
  EXPECT_EQ(r.headers["etag"], index.etag);
  EXPECT_EQ(r.headers["cache-control"], "no-cache");
  EXPECT_NE(r.headers["content-security-policy"].find("script-src 'self'"), std::string::npos);
  for (const WebAsset& a : embedded_web_assets()) {
    RawResponse ar = s.get(std::string(a.path));
    EXPECT_EQ(ar.status, 200) << a.path;
    EXPECT_EQ(ar.body, a.body) << a.path;
    EXPECT_EQ(ar.headers["content-type"], a.content_type) << a.path;
  }
  // HEAD: the headers only.
  RawResponse head = s.request("HEAD / HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n");
  EXPECT_EQ(head.status, 200);
  EXPECT_EQ(head.headers["content-length"], std::to_string(index.body.size()));
  EXPECT_TRUE(head.body.empty());
  // If-None-Match: the tag (also weak, in a list, or *) is 304 without a body; another is 200.
  const std::string tag(index.etag);
  for (const std::string& inm : {tag, "W/" + tag, "\"x\", " + tag, std::string("*")}) {
    RawResponse nm = s.get("/", "If-None-Match: " + inm + "\r\nConnection: close\r\n");
    EXPECT_EQ(nm.status, 304) << inm;
    EXPECT_TRUE(nm.body.empty()) << inm;
    EXPECT_EQ(nm.headers.count("content-length"), 0u) << inm;
    EXPECT_EQ(nm.headers["etag"], tag);
  }
  EXPECT_EQ(s.get("/", "If-None-Match: \"other\"\r\n").status, 200);
  // The page is public, the API is not; nothing else is answered without the key.
  EXPECT_EQ(s.get("/v1/models").status, 401);
  EXPECT_EQ(s.get("/app.js").status, 401);
  EXPECT_EQ(s.get("/index.htm").status, 401);
  EXPECT_EQ(s.post("/", json::object()).status, 401);
  EXPECT_EQ(s.post("/", json::object(), "Authorization: Bearer sekret\r\n").status, 405);
}

}  // namespace
}  // namespace pagoda::server
