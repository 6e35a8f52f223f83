// pagoda bench serve: load-tests a running OpenAI-compatible server (pagoda, vLLM, llama-server)
// over HTTP, like vLLM's benchmark_serving. Prompts of exactly --input-len tokens are made by
// tokenizing random words with the server's /tokenize (vLLM or llama.cpp shape; falls back to
// text prompts of --input-len words) and sent as token ids to /v1/completions with stream=true,
// ignore_eos and max_tokens=--output-len, so every request has the same shape. Arrivals are a
// Poisson process of --request-rate per second (inf: all at once), at most --concurrency in
// flight. Reports TTFT, TPOT (time per output token after the first), ITL (gaps between streamed
// chunks) and end-to-end latency percentiles, request and token throughput, and can draw the
// latencies over time as a hand-written SVG (--plot). With a speculating server, the difference
// of its vllm:spec_decode_* counters over the run gives the draft acceptance rate and the mean
// accepted length (as vLLM's benchmark reports them).
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <deque>
#include <fstream>
#include <functional>
#include <limits>
#include <memory>
#include <optional>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include <fmt/format.h>
#include <boost/asio/connect.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/beast/core/flat_buffer.hpp>
#include <boost/beast/http.hpp>
#include <nlohmann/json.hpp>

#include "cli/commands/commands.h"
#include "cli/commands/spec_decode_metrics.h"

namespace pagoda::cli {
namespace {

namespace net = boost::asio;
namespace http = boost::beast::http;
using tcp = net::ip::tcp;
using nlohmann::json;
using Clock = std::chrono::steady_clock;

struct BenchServeOpts {
  std::string url = "http://127.0.0.1:8000";
  std::string model;
  std::string api_key;
  int32_t concurrency = 32;
  int32_t num_prompts = 128;
  double request_rate = std::numeric_limits<double>::infinity();
  int32_t input_len = 128;
  int32_t output_len = 64;
  uint64_t seed = 0;
  double timeout_s = 600;
  bool json_out = false;
  std::string plot;
};

struct Target {
  std::string host;
  std::string port;
  std::string base;  // path prefix without a trailing '/'
};

std::optional<Target> parse_url(const std::string& url) {
  const std::string scheme = "http://";
  if (url.compare(0, scheme.size(), scheme) != 0) return std::nullopt;
  std::string rest = url.substr(scheme.size());
  Target t;
  const auto slash = rest.find('/');
  std::string hostport = rest.substr(0, slash);
  if (slash != std::string::npos) t.base = rest.substr(slash);
  while (!t.base.empty() && t.base.back() == '/')
    t.base.pop_back();
  if (t.base == "/v1") t.base.clear();  // accept an OpenAI base URL too
  const auto colon = hostport.rfind(':');
  if (colon == std::string::npos) {
    t.host = hostport;
    t.port = "80";
  } else {
    t.host = hostport.substr(0, colon);
    t.port = hostport.substr(colon + 1);
  }
  if (t.host.empty() || t.port.empty()) return std::nullopt;
  return t;
}

struct SyncResult {
  int status = 0;
  std::string body;
  std::string error;
};

// One blocking request on a fresh connection (setup calls only).
SyncResult sync_call(net::io_context& ioc, const tcp::resolver::results_type& eps, const Target& t,
                     http::verb verb, const std::string& path, const std::string& body,
                     const std::string& api_key) {
  SyncResult r;
  try {
    tcp::socket sock(ioc);
    net::connect(sock, eps);
    http::request<http::string_body> req(verb, t.base + path, 11);
    req.set(http::field::host, t.host);
    req.set(http::field::content_type, "application/json");
    if (!api_key.empty()) req.set(http::field::authorization, "Bearer " + api_key);
    req.body() = body;
    req.prepare_payload();
    http::write(sock, req);
    boost::beast::flat_buffer buf;
    http::response_parser<http::string_body> parser;
    parser.body_limit(64u << 20);
    http::read(sock, buf, parser);
    r.status = static_cast<int>(parser.get().result_int());
    r.body = parser.get().body();
    boost::system::error_code ec;
    sock.shutdown(tcp::socket::shutdown_both, ec);
  } catch (const std::exception& e) {
    r.error = e.what();
  }
  return r;
}

// Prompt building ---------------------------------------------------------------------------

const char* const kWords[] = {
    "time",  "river",  "garden",  "stone",  "light",  "winter", "market", "silver", "forest",
    "north", "story",  "window",  "bridge", "yellow", "quiet",  "engine", "letter", "summer",
    "cloud", "paper",  "mirror",  "copper", "island", "music",  "circle", "number", "planet",
    "ocean", "valley", "thunder", "candle", "orange", "little", "simple", "moment", "signal"};

std::string random_words(std::mt19937_64& rng, int32_t count) {
  std::uniform_int_distribution<size_t> pick(0, std::size(kWords) - 1);
  std::string s;
  for (int32_t i = 0; i < count; ++i) {
    if (i) s += ' ';
    s += kWords[pick(rng)];
  }
  return s;
}

// Token ids from the server's /tokenize (vLLM shape, then llama.cpp's); empty if unsupported.
std::vector<int32_t> server_tokenize(net::io_context& ioc, const tcp::resolver::results_type& eps,
                                     const BenchServeOpts& o, const Target& t,
                                     const std::string& text) {
  SyncResult r = sync_call(
      ioc, eps, t, http::verb::post, "/tokenize",
      json{{"model", o.model}, {"prompt", text}, {"add_special_tokens", false}}.dump(), o.api_key);
  if (r.status != 200) {
    r = sync_call(ioc, eps, t, http::verb::post, "/tokenize", json{{"content", text}}.dump(),
                  o.api_key);
  }
  if (r.status != 200) return {};
  const json j = json::parse(r.body, nullptr, false);
  if (!j.is_object() || !j.contains("tokens") || !j["tokens"].is_array()) return {};
  std::vector<int32_t> ids;
  for (const json& v : j["tokens"]) {
    if (!v.is_number_integer()) return {};
    ids.push_back(v.get<int32_t>());
  }
  return ids;
}

// The async load phase ---------------------------------------------------------------------

struct RequestResult {
  bool ok = false;
  std::string error;
  double start = 0;  // seconds since the benchmark start
  double ttft = 0;
  double e2e = 0;
  int64_t output_tokens = 0;
  std::vector<double> itl;
};

class Flight : public std::enable_shared_from_this<Flight> {
 public:
  Flight(net::io_context& ioc, const tcp::resolver::results_type& eps, std::string request,
         Clock::time_point t0, double timeout_s, std::function<void(RequestResult)> done)
      : sock_(ioc),
        timer_(ioc),
        eps_(eps),
        request_(std::move(request)),
        t0_(t0),
        timeout_s_(timeout_s),
        done_(std::move(done)) {}

  void start() {
    start_ = Clock::now();
    result_.start = seconds(t0_, start_);
    timer_.expires_after(std::chrono::milliseconds(static_cast<int64_t>(timeout_s_ * 1000)));
    timer_.async_wait([self = shared_from_this()](const boost::system::error_code& ec) {
      if (!ec) self->finish("timed out");
    });
    net::async_connect(
        sock_, eps_,
        [self = shared_from_this()](const boost::system::error_code& ec, const tcp::endpoint&) {
          if (ec) return self->finish("connect: " + ec.message());
          net::async_write(self->sock_, net::buffer(self->request_),
                           [self](const boost::system::error_code& e, std::size_t) {
                             if (e) return self->finish("write: " + e.message());
                             self->parser_.body_limit(boost::none);
                             self->read();
                           });
        });
  }

 private:
  static double seconds(Clock::time_point a, Clock::time_point b) {
    return std::chrono::duration<double>(b - a).count();
  }

  void read() {
    http::async_read_some(sock_, buf_, parser_,
                          [self = shared_from_this()](const boost::system::error_code& ec,
                                                      std::size_t) { self->on_read(ec); });
  }

  void on_read(const boost::system::error_code& ec) {
    if (finished_) return;
    if (parser_.is_header_done() && parser_.get().result_int() != 200) {
      if (ec || parser_.is_done()) {
        return finish(fmt::format("HTTP {}: {}", parser_.get().result_int(),
                                  parser_.get().body().substr(0, 200)));
      }
      return read();
    }
    scan_events();
    if (finished_) return;
    if (ec) return finish(ec == http::error::end_of_stream ? "stream ended early" : ec.message());
    if (parser_.is_done()) return finish(saw_done_ ? "" : "stream ended without [DONE]");
    read();
  }

  void scan_events() {
    const std::string& body = parser_.get().body();
    for (;;) {
      const auto end = body.find("\n\n", scanned_);
      if (end == std::string::npos) return;
      std::string_view event(body.data() + scanned_, end - scanned_);
      scanned_ = end + 2;
      if (event.rfind("data: ", 0) != 0) continue;
      event.remove_prefix(6);
      if (event == "[DONE]") {
        saw_done_ = true;
        continue;
      }
      const json j = json::parse(event, nullptr, false);
      if (!j.is_object()) continue;
      if (j.contains("error")) {
        finish("error event: " + j["error"].dump().substr(0, 200));
        return;
      }
      if (j.contains("usage") && j["usage"].is_object()) {
        usage_tokens_ = j["usage"].value("completion_tokens", int64_t{-1});
      }
      if (!j.contains("choices") || !j["choices"].is_array() || j["choices"].empty()) continue;
      const json& c = j["choices"][0];
      std::string text;
      if (c.contains("text") && c["text"].is_string()) text = c["text"].get<std::string>();
      if (c.contains("delta") && c["delta"].is_object() && c["delta"].contains("content") &&
          c["delta"]["content"].is_string()) {
        text = c["delta"]["content"].get<std::string>();
      }
      if (text.empty()) continue;
      const auto now = Clock::now();
      if (chunks_ == 0) {
        result_.ttft = seconds(start_, now);
      } else {
        result_.itl.push_back(seconds(last_, now));
      }
      last_ = now;
      ++chunks_;
    }
  }

  void finish(const std::string& error) {
    if (finished_) return;
    finished_ = true;
    timer_.cancel();
    boost::system::error_code ec;
    sock_.shutdown(tcp::socket::shutdown_both, ec);
    sock_.close(ec);
    result_.e2e = seconds(start_, Clock::now());
    result_.output_tokens = usage_tokens_ >= 0 ? usage_tokens_ : chunks_;
    result_.ok = error.empty() && chunks_ > 0;
    result_.error = error.empty() && chunks_ == 0 ? "no tokens streamed" : error;
    done_(std::move(result_));
  }

  tcp::socket sock_;
  net::steady_timer timer_;
  const tcp::resolver::results_type& eps_;
  std::string request_;
  Clock::time_point t0_, start_, last_;
  double timeout_s_;
  std::function<void(RequestResult)> done_;
  boost::beast::flat_buffer buf_;
  http::response_parser<http::string_body> parser_;
  size_t scanned_ = 0;
  int64_t chunks_ = 0;
  int64_t usage_tokens_ = -1;
  bool saw_done_ = false;
  bool finished_ = false;
  RequestResult result_;
};

// Statistics and reports ------------------------------------------------------------------------

double percentile(std::vector<double> v, double p) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  // Linear interpolation between closest ranks (numpy's default).
  const double pos = p / 100.0 * static_cast<double>(v.size() - 1);
  const auto lo = static_cast<size_t>(std::floor(pos));
  const size_t hi = std::min(lo + 1, v.size() - 1);
  return v[lo] + (v[hi] - v[lo]) * (pos - static_cast<double>(lo));
}

double mean(const std::vector<double>& v) {
  if (v.empty()) return 0;
  double s = 0;
  for (double x : v)
    s += x;
  return s / static_cast<double>(v.size());
}

json summary(const std::vector<double>& seconds_values) {
  return json{{"mean_ms", mean(seconds_values) * 1e3},
              {"p50_ms", percentile(seconds_values, 50) * 1e3},
              {"p90_ms", percentile(seconds_values, 90) * 1e3},
              {"p99_ms", percentile(seconds_values, 99) * 1e3}};
}

std::string svg_escape(const std::string& s) {
  std::string out;
  for (char c : s) {
    if (c == '<')
      out += "&lt;";
    else if (c == '>')
      out += "&gt;";
    else if (c == '&')
      out += "&amp;";
    else
      out += c;
  }
  return out;
}

// "Nice" axis step for a range: 1, 2 or 5 times a power of ten, about 5 ticks.
double nice_step(double range) {
  if (range <= 0) return 1;
  const double raw = range / 5;
  const double mag = std::pow(10.0, std::floor(std::log10(raw)));
  for (double m : {1.0, 2.0, 5.0, 10.0}) {
    if (m * mag >= raw) return m * mag;
  }
  return 10 * mag;
}

// Two panels over the request start time: TTFT and E2E latency, then TPOT.
std::string latency_svg(const std::vector<RequestResult>& results, const std::string& title) {
  const double W = 900, H = 620, left = 80, right = 160, top = 50, panel_h = 230, gap = 60;
  double max_x = 0, max_lat = 0, max_tpot = 0;
  for (const RequestResult& r : results) {
    if (!r.ok) continue;
    max_x = std::max(max_x, r.start);
    max_lat = std::max(max_lat, r.e2e * 1e3);
    if (r.output_tokens > 1) {
      max_tpot =
          std::max(max_tpot, (r.e2e - r.ttft) / static_cast<double>(r.output_tokens - 1) * 1e3);
    }
  }
  max_x = std::max(max_x, 1e-3);
  const double plot_w = W - left - right;
  std::string s = fmt::format(
      "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"{}\" height=\"{}\" "
      "font-family=\"sans-serif\" font-size=\"12\">\n<rect width=\"100%\" height=\"100%\" "
      "fill=\"white\"/>\n<text x=\"{}\" y=\"25\" font-size=\"15\">{}</text>\n",
      W, H, left, svg_escape(title));
  const auto panel = [&](double y0, double max_y, const char* ylabel) {
    const double step_y = nice_step(max_y);
    const double top_y = std::max(step_y, std::ceil(max_y / step_y) * step_y);
    const double step_x = nice_step(max_x);
    s += fmt::format(
        "<rect x=\"{}\" y=\"{}\" width=\"{}\" height=\"{}\" fill=\"none\" "
        "stroke=\"#444\"/>\n",
        left, y0, plot_w, panel_h);
    for (double v = 0; v <= top_y + 1e-9; v += step_y) {
      const double y = y0 + panel_h - v / top_y * panel_h;
      s += fmt::format(
          "<line x1=\"{}\" y1=\"{:.1f}\" x2=\"{}\" y2=\"{:.1f}\" stroke=\"#ddd\"/>"
          "<text x=\"{}\" y=\"{:.1f}\" text-anchor=\"end\">{:g}</text>\n",
          left, y, left + plot_w, y, left - 6, y + 4, v);
    }
    for (double v = 0; v <= max_x + 1e-9; v += step_x) {
      const double x = left + v / max_x * plot_w;
      s += fmt::format("<text x=\"{:.1f}\" y=\"{}\" text-anchor=\"middle\">{:g}</text>\n", x,
                       y0 + panel_h + 16, v);
    }
    s += fmt::format(
        "<text x=\"{}\" y=\"{}\" transform=\"rotate(-90 {} {})\" "
        "text-anchor=\"middle\">{}</text>\n",
        left - 55, y0 + panel_h / 2, left - 55, y0 + panel_h / 2, ylabel);
    s += fmt::format("<text x=\"{}\" y=\"{}\" text-anchor=\"middle\">request start (s)</text>\n",
                     left + plot_w / 2, y0 + panel_h + 34);
    return top_y;
  };
  const auto dot = [&](double y0, double top_y, double x, double v, const char* color) {
    s += fmt::format(
        "<circle cx=\"{:.1f}\" cy=\"{:.1f}\" r=\"2.5\" fill=\"{}\" "
        "fill-opacity=\"0.7\"/>\n",
        left + x / max_x * plot_w, y0 + panel_h - std::min(v / top_y, 1.0) * panel_h, color);
  };
  const double y1 = top, y2 = top + panel_h + gap;
  const double top1 = panel(y1, std::max(max_lat, 1e-3), "latency (ms)");
  const double top2 = panel(y2, std::max(max_tpot, 1e-3), "TPOT (ms)");
  for (const RequestResult& r : results) {
    if (!r.ok) continue;
    dot(y1, top1, r.start, r.e2e * 1e3, "#e67e22");
    dot(y1, top1, r.start, r.ttft * 1e3, "#2e86de");
    if (r.output_tokens > 1) {
      dot(y2, top2, r.start, (r.e2e - r.ttft) / static_cast<double>(r.output_tokens - 1) * 1e3,
          "#27ae60");
    }
  }
  const double lx = left + plot_w + 20;
  s += fmt::format(
      "<circle cx=\"{}\" cy=\"{}\" r=\"4\" fill=\"#e67e22\"/><text x=\"{}\" y=\"{}\">"
      "end-to-end</text>\n<circle cx=\"{}\" cy=\"{}\" r=\"4\" fill=\"#2e86de\"/>"
      "<text x=\"{}\" y=\"{}\">TTFT</text>\n<circle cx=\"{}\" cy=\"{}\" r=\"4\" "
      "fill=\"#27ae60\"/><text x=\"{}\" y=\"{}\">TPOT</text>\n",
      lx, y1 + 20, lx + 10, y1 + 24, lx, y1 + 40, lx + 10, y1 + 44, lx, y2 + 20, lx + 10, y2 + 24);
  s += "</svg>\n";
  return s;
}

int run_bench_serve(const BenchServeOpts& o_in) {
  BenchServeOpts o = o_in;
  const std::optional<Target> target = parse_url(o.url);
  if (!target) return fail("--url must look like http://host:port, got '" + o.url + "'");
  if (!(o.request_rate > 0)) return fail("--request-rate must be > 0 (or inf)");
  net::io_context ioc;
  boost::system::error_code ec;
  tcp::resolver resolver(ioc);
  const auto eps = resolver.resolve(target->host, target->port, ec);
  if (ec) return fail("cannot resolve " + target->host + ": " + ec.message());

  if (o.model.empty()) {
    const SyncResult r = sync_call(ioc, eps, *target, http::verb::get, "/v1/models", "", o.api_key);
    if (!r.error.empty()) return fail("cannot reach " + o.url + ": " + r.error);
    const json j = json::parse(r.body, nullptr, false);
    if (r.status != 200 || !j.is_object() || !j.contains("data") || !j["data"].is_array() ||
        j["data"].empty() || !j["data"][0].contains("id")) {
      return fail(fmt::format("GET /v1/models answered {}: {}", r.status, r.body.substr(0, 200)));
    }
    o.model = j["data"][0]["id"].get<std::string>();
  }

  // Prompts.
  std::mt19937_64 rng(o.seed);
  std::vector<json> prompts;
  bool exact = true;
  for (int32_t i = 0; i < o.num_prompts; ++i) {
    const std::string text = random_words(rng, o.input_len + 8);
    std::vector<int32_t> ids =
        exact ? server_tokenize(ioc, eps, o, *target, text) : std::vector<int32_t>();
    if (static_cast<int32_t>(ids.size()) >= o.input_len) {
      ids.resize(static_cast<size_t>(o.input_len));
      prompts.emplace_back(ids);
    } else {
      exact = false;
      prompts.emplace_back(random_words(rng, o.input_len));
    }
  }
  if (!exact) {
    std::fprintf(stderr,
                 "bench serve: the server has no usable /tokenize; prompts are %d words "
                 "(token counts approximate)\n",
                 o.input_len);
  }

  // Arrival offsets.
  std::vector<double> arrivals(static_cast<size_t>(o.num_prompts), 0.0);
  if (std::isfinite(o.request_rate)) {
    std::exponential_distribution<double> gap(o.request_rate);
    double t = 0;
    for (double& a : arrivals) {
      a = t;
      t += gap(rng);
    }
  }

  // Speculative decoding: the server's vllm:spec_decode_* counters before and after the run.
  const auto scrape_spec_decode = [&]() -> std::optional<SpecDecodeCounters> {
    const SyncResult r = sync_call(ioc, eps, *target, http::verb::get, "/metrics", "", o.api_key);
    if (!r.error.empty() || r.status != 200) return std::nullopt;
    return read_spec_decode_counters(r.body);
  };
  const std::optional<SpecDecodeCounters> spec_before = scrape_spec_decode();

  std::vector<RequestResult> results(static_cast<size_t>(o.num_prompts));
  const auto t0 = Clock::now();
  std::deque<size_t> ready;
  size_t next_arrival = 0;
  int32_t in_flight = 0;
  size_t completed = 0;
  net::steady_timer arrival_timer(ioc);
  std::function<void()> launch;
  std::function<void()> schedule_arrivals;
  const auto build_request = [&](size_t i) {
    json body = {{"model", o.model},
                 {"prompt", prompts[i]},
                 {"max_tokens", o.output_len},
                 {"min_tokens", o.output_len},
                 {"ignore_eos", true},
                 {"temperature", 0.0},
                 {"stream", true},
                 {"stream_options", {{"include_usage", true}}}};
    http::request<http::string_body> req(http::verb::post, target->base + "/v1/completions", 11);
    req.set(http::field::host, target->host);
    req.set(http::field::content_type, "application/json");
    req.set(http::field::connection, "close");
    if (!o.api_key.empty()) req.set(http::field::authorization, "Bearer " + o.api_key);
    req.body() = body.dump();
    req.prepare_payload();
    std::ostringstream os;
    os << req;
    return os.str();
  };
  launch = [&] {
    while (in_flight < o.concurrency && !ready.empty()) {
      const size_t i = ready.front();
      ready.pop_front();
      ++in_flight;
      auto f = std::make_shared<Flight>(ioc, eps, build_request(i), t0, o.timeout_s,
                                        [&, i](RequestResult r) {
                                          results[i] = std::move(r);
                                          --in_flight;
                                          ++completed;
                                          launch();
                                        });
      f->start();
    }
  };
  schedule_arrivals = [&] {
    const double now = std::chrono::duration<double>(Clock::now() - t0).count();
    while (next_arrival < arrivals.size() && arrivals[next_arrival] <= now) {
      ready.push_back(next_arrival++);
    }
    launch();
    if (next_arrival < arrivals.size()) {
      arrival_timer.expires_at(t0 + std::chrono::duration_cast<Clock::duration>(
                                        std::chrono::duration<double>(arrivals[next_arrival])));
      arrival_timer.async_wait([&](const boost::system::error_code& e) {
        if (!e) schedule_arrivals();
      });
    }
  };
  schedule_arrivals();
  ioc.run();
  const double duration = std::chrono::duration<double>(Clock::now() - t0).count();
  ioc.restart();
  const std::optional<SpecDecodeSummary> spec =
      spec_decode_delta(spec_before, spec_before ? scrape_spec_decode() : std::nullopt);

  std::vector<double> ttft, tpot, itl, e2e;
  int64_t out_tokens = 0, ok = 0;
  std::string first_error;
  double last_end = 0;
  for (const RequestResult& r : results) {
    if (!r.ok) {
      if (first_error.empty()) first_error = r.error;
      continue;
    }
    ++ok;
    ttft.push_back(r.ttft);
    e2e.push_back(r.e2e);
    out_tokens += r.output_tokens;
    if (r.output_tokens > 1) {
      tpot.push_back((r.e2e - r.ttft) / static_cast<double>(r.output_tokens - 1));
    }
    itl.insert(itl.end(), r.itl.begin(), r.itl.end());
    last_end = std::max(last_end, r.start + r.e2e);
  }
  const double span = last_end > 0 ? last_end : duration;
  const int64_t in_tokens = ok * o.input_len;
  json report = {
      {"url", o.url},
      {"model", o.model},
      {"num_prompts", o.num_prompts},
      {"concurrency", o.concurrency},
      {"request_rate", std::isfinite(o.request_rate) ? json(o.request_rate) : json("inf")},
      {"input_len", o.input_len},
      {"output_len", o.output_len},
      {"exact_input_len", exact},
      {"completed", ok},
      {"failed", o.num_prompts - ok},
      {"duration_s", span},
      {"request_throughput", static_cast<double>(ok) / span},
      {"output_token_throughput", static_cast<double>(out_tokens) / span},
      {"total_token_throughput", static_cast<double>(out_tokens + in_tokens) / span},
      {"total_output_tokens", out_tokens},
      {"ttft", summary(ttft)},
      {"tpot", summary(tpot)},
      {"itl", summary(itl)},
      {"e2e_latency", summary(e2e)}};
  if (!first_error.empty()) report["first_error"] = first_error;
  if (spec) {
    report["spec_decode_num_drafts"] = spec->num_drafts;
    report["spec_decode_num_draft_tokens"] = spec->num_draft_tokens;
    report["spec_decode_num_accepted_tokens"] = spec->num_accepted_tokens;
    if (spec->num_drafts > 0) {  // rates of nothing are not reported
      report["spec_decode_acceptance_rate"] = spec->acceptance_rate;
      report["spec_decode_mean_accepted_length"] = spec->mean_accepted_length;
    }
  }
  if (!o.plot.empty()) {
    std::ofstream f(o.plot);
    f << latency_svg(results,
                     fmt::format("{} — {} prompts, concurrency {}, {} in / {} out tokens", o.model,
                                 o.num_prompts, o.concurrency, o.input_len, o.output_len));
    if (!f) return fail("cannot write " + o.plot);
  }
  if (o.json_out) {
    std::printf("%s\n", report.dump(2).c_str());
  } else {
    std::printf("model                    %s\n", o.model.c_str());
    std::printf("completed / failed       %lld / %lld\n", static_cast<long long>(ok),
                static_cast<long long>(o.num_prompts - ok));
    if (!first_error.empty()) std::printf("first error              %s\n", first_error.c_str());
    std::printf("duration                 %.2f s\n", span);
    std::printf("request throughput       %.2f req/s\n", static_cast<double>(ok) / span);
    std::printf("output token throughput  %.1f tok/s\n", static_cast<double>(out_tokens) / span);
    std::printf("total token throughput   %.1f tok/s\n",
                static_cast<double>(out_tokens + in_tokens) / span);
    if (spec && spec->num_drafts > 0) {
      std::printf("draft acceptance rate    %.3f (%lld of %lld draft tokens)\n",
                  spec->acceptance_rate, static_cast<long long>(spec->num_accepted_tokens),
                  static_cast<long long>(spec->num_draft_tokens));
      std::printf("mean accepted length     %.2f tokens per verify step\n",
                  spec->mean_accepted_length);
    }
    std::printf("%-8s %10s %10s %10s %10s\n", "(ms)", "mean", "p50", "p90", "p99");
    for (const auto& [name, v] : {std::pair<const char*, const std::vector<double>*>{"TTFT", &ttft},
                                  {"TPOT", &tpot},
                                  {"ITL", &itl},
                                  {"E2E", &e2e}}) {
      std::printf("%-8s %10.2f %10.2f %10.2f %10.2f\n", name, mean(*v) * 1e3,
                  percentile(*v, 50) * 1e3, percentile(*v, 90) * 1e3, percentile(*v, 99) * 1e3);
    }
  }
  return ok == o.num_prompts ? 0 : 1;
}

}  // namespace

void register_bench_serve(CLI::App& app, CommandAction& action) {
  CLI::App* bench = bench_group(app);
  auto o = std::make_shared<BenchServeOpts>();
  CLI::App* cmd = bench->add_subcommand("serve", "Load-test an OpenAI-compatible server");
  cmd->add_option("--url", o->url, "Server base URL")->capture_default_str();
  cmd->add_option("--model", o->model, "Model id (default: the first of GET /v1/models)");
  cmd->add_option("--api-key", o->api_key, "Bearer token");
  cmd->add_option("--concurrency", o->concurrency, "Requests in flight at most")
      ->check(CLI::Range(1, 100000))
      ->capture_default_str();
  cmd->add_option("--num-prompts", o->num_prompts, "Requests to send")
      ->check(CLI::Range(1, 10000000))
      ->capture_default_str();
  cmd->add_option("--request-rate", o->request_rate,
                  "Poisson arrivals per second (inf: as fast as concurrency allows)")
      ->capture_default_str();
  cmd->add_option("--input-len", o->input_len, "Prompt tokens")
      ->check(CLI::Range(1, 1 << 20))
      ->capture_default_str();
  cmd->add_option("--output-len", o->output_len, "Generated tokens per request")
      ->check(CLI::Range(1, 1 << 20))
      ->capture_default_str();
  cmd->add_option("--seed", o->seed, "Seed for prompts and arrivals")->capture_default_str();
  cmd->add_option("--timeout", o->timeout_s, "Seconds per request before it counts as failed")
      ->check(CLI::Range(0.001, 86400.0))
      ->capture_default_str();
  cmd->add_flag("--json", o->json_out, "Print the results as JSON");
  cmd->add_option("--plot", o->plot, "Write latency over time as an SVG file");
  cmd->callback([&action, o] { action = [o] { return run_bench_serve(*o); }; });
}

}  // namespace pagoda::cli
